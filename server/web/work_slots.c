/* Places for long work in a request's thread.
 *
 * Each FastCGI request holds one of the web's worker threads until it is
 * answered. Work that takes seconds or more (a bundle built, a relayed
 * request a sandbox's server answers slowly) must not be able to take
 * them all: one user with 40 such requests froze everyone's task list.
 * A table per kind of work counts the places held, per key (a user, a
 * client address, a sandbox) and in total; a request that finds no place
 * is refused at once (429 or 503 with Retry-After, by its caller) instead
 * of waiting in a thread. The table is small and guarded by one mutex.
 */
#include "web/work_slots.h"

#include <stdio.h>
#include <string.h>

static int lb_slots_find(lb_slots *s, const char *key)
{
    for (int i = 0; i < LB_SLOTS_MAX; i++)
        if (s->held[i].n && !strcmp(s->held[i].key, key))
            return i;
    return -1;
}

int lb_slots_take(lb_slots *s, int total, int per_key, const char *key)
{
    if (total < 1)
        total = 1;
    if (per_key < 1)
        per_key = 1;
    if (total > LB_SLOTS_MAX)
        total = LB_SLOTS_MAX;
    int rc = LB_OK;
    pthread_mutex_lock(&s->mu);
    int i = lb_slots_find(s, key);
    if (i >= 0 && s->held[i].n >= per_key) {
        rc = LB_E_TOOBIG;
    } else if (s->used >= total) {
        rc = LB_E_BUSY;
    } else {
        if (i < 0) {
            for (i = 0; i < LB_SLOTS_MAX && s->held[i].n; i++)
                ;
            /* used < LB_SLOTS_MAX places, each entry holds one at least: one is free */
            snprintf(s->held[i].key, sizeof s->held[i].key, "%s", key);
        }
        s->held[i].n++;
        s->used++;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void lb_slots_release(lb_slots *s, const char *key)
{
    pthread_mutex_lock(&s->mu);
    int i = lb_slots_find(s, key);
    if (i >= 0) {
        s->held[i].n--;
        s->used--;
    }
    pthread_mutex_unlock(&s->mu);
}

int lb_slots_count(lb_slots *s, const char *key)
{
    pthread_mutex_lock(&s->mu);
    int n = 0;
    if (!key)
        n = s->used;
    else if ((n = lb_slots_find(s, key)) >= 0)
        n = s->held[n].n;
    else
        n = 0;
    pthread_mutex_unlock(&s->mu);
    return n;
}
