/* Admission of event streams: a per-client and a total bound (sse_admit.h). */
#include "web/sse_admit.h"

#include "common/status.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lb_sse_place {
    int used;
    char key[LB_SSE_KEY_MAX];
} lb_sse_place;

static pthread_mutex_t lb_admit_mu = PTHREAD_MUTEX_INITIALIZER;
static lb_sse_place *lb_places;   /* `total` places: one per stream that may be open */
static int lb_total, lb_per_client, lb_open;

int lb_sse_reserve_for(int web_threads, int reserve)
{
    int most = web_threads / 4;
    if (reserve > most)
        reserve = most;
    return reserve < 0 ? 0 : reserve;
}

int lb_sse_admit_init(int total, int per_client)
{
    if (total < 0)
        total = 0;
    lb_sse_place *p = calloc((size_t)(total ? total : 1), sizeof *p);
    if (!p)
        return LB_E_NOMEM;
    pthread_mutex_lock(&lb_admit_mu);
    free(lb_places);
    lb_places = p;
    lb_total = total;
    lb_per_client = per_client < 1 ? 1 : per_client;
    lb_open = 0;
    pthread_mutex_unlock(&lb_admit_mu);
    return LB_OK;
}

static int lb_count_locked(const char *key)
{
    int n = 0;
    for (int i = 0; i < lb_total; i++)
        if (lb_places[i].used && (!key || !strcmp(lb_places[i].key, key)))
            n++;
    return n;
}

/* Keys are compared as stored: cut to the slot's size (a longer key
 * shares its count with others of the same start, which errs on the side
 * of fewer streams, never more). */
static void lb_key_norm(const char *key, char out[LB_SSE_KEY_MAX])
{
    snprintf(out, LB_SSE_KEY_MAX, "%s", key ? key : "");
}

int lb_sse_admit_take(const char *key_in, int *slot)
{
    char key[LB_SSE_KEY_MAX];
    lb_key_norm(key_in, key);
    *slot = -1;
    pthread_mutex_lock(&lb_admit_mu);
    int rc = LB_OK;
    if (lb_open >= lb_total) {
        rc = LB_E_BUSY;
    } else if (lb_count_locked(key) >= lb_per_client) {
        rc = LB_E_TOOBIG;
    } else {
        for (int i = 0; i < lb_total; i++) {
            if (!lb_places[i].used) {
                lb_places[i].used = 1;
                memcpy(lb_places[i].key, key, sizeof key);
                lb_open++;
                *slot = i;
                break;
            }
        }
        if (*slot < 0)
            rc = LB_E_BUSY; /* cannot happen while lb_open counts right */
    }
    pthread_mutex_unlock(&lb_admit_mu);
    return rc;
}

void lb_sse_admit_release(int slot)
{
    pthread_mutex_lock(&lb_admit_mu);
    if (slot >= 0 && slot < lb_total && lb_places[slot].used) {
        lb_places[slot].used = 0;
        lb_open--;
    }
    pthread_mutex_unlock(&lb_admit_mu);
}

int lb_sse_admit_count(const char *key_in)
{
    char key[LB_SSE_KEY_MAX];
    lb_key_norm(key_in, key);
    pthread_mutex_lock(&lb_admit_mu);
    int n = key_in ? lb_count_locked(key) : lb_open;
    pthread_mutex_unlock(&lb_admit_mu);
    return n;
}

int lb_sse_admit_total(void)
{
    return lb_total;
}

int lb_sse_admit_per_client(void)
{
    return lb_per_client;
}
