/* Places for long work done in a web request's thread (work_slots.c):
 * folder bundles built, E2B port requests relayed. */
#ifndef LB_WEB_WORK_SLOTS_H
#define LB_WEB_WORK_SLOTS_H

#include <pthread.h>

#include "common/status.h"

#define LB_SLOTS_MAX 256    /* places one table holds: more threads than any default setting */
#define LB_SLOT_KEY_MAX 112 /* "s:" + a sandbox id, or "u:" + a user name, or "a:" + an address */

/* One kind of work: who holds how many places. Guarded by mu. */
typedef struct lb_slots {
    pthread_mutex_t mu;
    int used;
    struct {
        char key[LB_SLOT_KEY_MAX];
        int n; /* 0: the entry is free */
    } held[LB_SLOTS_MAX];
} lb_slots;

#define LB_SLOTS_INIT {.mu = PTHREAD_MUTEX_INITIALIZER}

/* Takes a place for key: LB_OK (give it back with lb_slots_release),
 * LB_E_TOOBIG (key holds per_key places already) or LB_E_BUSY (total
 * places are held, or LB_SLOTS_MAX). total and per_key below 1 count as 1:
 * the caller passes settings. */
LB_MUST_CHECK int lb_slots_take(lb_slots *s, int total, int per_key, const char *key);
/* Gives back a place that lb_slots_take gave key. */
void lb_slots_release(lb_slots *s, const char *key);
/* Places held now, by key (NULL: by all). */
int lb_slots_count(lb_slots *s, const char *key);

#endif
