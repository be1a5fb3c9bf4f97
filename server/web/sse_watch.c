/* The event-stream watcher: one thread per web process that tells idle
 * streams when their task has new events.
 *
 * Each open stream holds a worker thread. When every stream read the store
 * every 100 ms on its own, 1,000 idle streams cost 10,000 queries and
 * 10,000 thread wakes a second (80 % of a core) while nothing happened.
 * Now a stream registers its task here and sleeps on its thread's
 * eventfd. Every 100 ms this thread asks SQLite whether anyone committed
 * at all (PRAGMA data_version: no table read); only then does it read the
 * newest seq of every watched task in one statement, and it writes to the
 * eventfd of each stream that has not sent that seq yet. Agents write the
 * store from their own processes, so there is nothing to hook in a write
 * path: the watcher sees their commits like anyone else's.
 *
 * Why no wake is lost: a stream registers before its first read and
 * reports the seq it has sent (under the lock) before each wait. A commit
 * made after a stream's read changes the data version after that read;
 * the watcher's next tick sees the change, and its query (made after it
 * read the version, over the tasks registered by then) sees the commit.
 * When the watcher found the events before the stream reported, report
 * itself sees them in the task's `newest` and wakes the stream. A woken
 * stream empties its eventfd before it reads, and reads by seq from the
 * store: a late or needless wake repeats and loses nothing.
 *
 * On PostgreSQL (several nodes) the thread LISTENs instead (every statement
 * that adds events NOTIFYs, store_schema_pg.c): it looks when told, at
 * once, and besides every LB_SSE_WATCH_BACKSTOP_MS in case a notification
 * was lost with a connection. The same look, so the same argument: a
 * commit after a stream's read notifies after that read.
 *
 * Bounded: at most LB_SSE_WATCH_MAX tasks (one slot per task, shared by
 * its streams, which link themselves in from their own frames); a stream
 * of a task beyond that, or with no watcher, polls the store itself as
 * every stream used to.
 */
#include "web/sse_watch.h"

#include "common/log.h"
#include "common/status.h"
#include "common/util.h"
#include "store/store.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct lb_watched {
    char id[33];
    unsigned gen;             /* changes each time the slot is taken */
    int64_t newest;           /* newest seq the watcher has read */
    lb_sse_waiter *waiters;   /* NULL: the slot is free */
} lb_watched;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* the first task watched, or stop */
    pthread_t thread;
    int running;              /* the thread runs and takes streams */
    int stop;
    int full_warned;
    lb_store *store;          /* the thread's own connection */
    lb_watched *tasks;
    int cap, used;
    /* the thread's copy of the watched ids, so the query runs unlocked */
    char (*idbuf)[33];
    const char **ids;
    int *slot;
    unsigned *gen;
    int64_t *newest;
} W = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Under the lock. Once per report: a stream that is slow to come back is
 * not written to again every tick. */
static void lb_watch_wake(lb_sse_waiter *w)
{
    if (w->woken)
        return;
    uint64_t one = 1;
    ssize_t n = write(w->fd, &one, sizeof one); /* EFD_NONBLOCK; the counter never fills */
    (void)n;
    w->woken = 1;
}

static void lb_watch_wake_all(void)
{
    for (int i = 0; i < W.cap; i++)
        for (lb_sse_waiter *w = W.tasks[i].waiters; w; w = w->next)
            lb_watch_wake(w);
}

/* One look at the store; *seen is the data version of the last look that
 * read the newest seqs. */
static void lb_watch_tick(int64_t *seen, int *failing)
{
    int64_t dv = 0;
    int rc = lb_store_data_version(W.store, &dv);
    if (rc == LB_OK && dv == *seen)
        return; /* nobody has committed anything since */
    size_t n = 0;
    if (rc == LB_OK) {
        pthread_mutex_lock(&W.mu);
        for (int i = 0; i < W.cap; i++) {
            if (!W.tasks[i].waiters)
                continue;
            memcpy(W.idbuf[n], W.tasks[i].id, sizeof W.idbuf[n]);
            W.ids[n] = W.idbuf[n];
            W.slot[n] = i;
            W.gen[n] = W.tasks[i].gen;
            n++;
        }
        pthread_mutex_unlock(&W.mu);
        rc = lb_store_events_newest(W.store, W.ids, n, W.newest);
    }
    pthread_mutex_lock(&W.mu);
    if (rc != LB_OK) {
        /* every stream reads the store itself this time; the next tick
         * tries again (seen is kept, so it queries) */
        if (!*failing)
            lb_warn("web: event-stream watcher: cannot read the store (%s); streams poll until it can",
                    lb_strerror(rc));
        *failing = 1;
        lb_watch_wake_all();
    } else {
        if (*failing)
            lb_info("web: event-stream watcher: reading the store again");
        *failing = 0;
        for (size_t k = 0; k < n; k++) {
            lb_watched *t = &W.tasks[W.slot[k]];
            if (!t->waiters || t->gen != W.gen[k])
                continue; /* its streams ended meanwhile */
            t->newest = W.newest[k];
            for (lb_sse_waiter *w = t->waiters; w; w = w->next)
                if (w->sent < t->newest)
                    lb_watch_wake(w);
        }
        *seen = dv;
    }
    pthread_mutex_unlock(&W.mu);
}

/* PostgreSQL's way: one wait of at most a tick for a notification (so a
 * stop or a new stream is seen as soon as with the timer), then a look
 * when one came, the connection was made again, or the backstop is due.
 * Called and returns with W.mu held. */
static void lb_watch_listen_step(int64_t *seen, int *failing, int64_t *backstop)
{
    pthread_mutex_unlock(&W.mu);
    int woke = 0;
    int rc = lb_store_wait_events(W.store, LB_SSE_WATCH_TICK_MS, &woke);
    if (rc != LB_OK) {
        /* the server is away: the look below says so (streams poll) */
        struct timespec ts = {0, LB_SSE_WATCH_TICK_MS * 1000000L};
        nanosleep(&ts, NULL);
        woke = 1;
    }
    int64_t now = lb_mono_ms();
    if (woke || now >= *backstop) {
        *backstop = now + LB_SSE_WATCH_BACKSTOP_MS;
        lb_watch_tick(seen, failing);
    }
    pthread_mutex_lock(&W.mu);
}

static void *lb_watch_main(void *arg)
{
    (void)arg;
    int64_t seen = -1, next = 0, backstop = 0;
    int failing = 0;
    int listening = lb_store_listen_events(W.store) == LB_OK; /* SQLite: LB_E_INVAL, the timer */
    if (listening)
        lb_info("web: event-stream watcher: woken by PostgreSQL's notifications, and a look every %d ms",
                LB_SSE_WATCH_BACKSTOP_MS);
    pthread_mutex_lock(&W.mu);
    while (!W.stop) {
        if (!W.used) {
            pthread_cond_wait(&W.cv, &W.mu); /* no stream open: no tick */
            continue;
        }
        if (listening) {
            lb_watch_listen_step(&seen, &failing, &backstop);
            continue;
        }
        int64_t now = lb_mono_ms();
        if (now < next) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            int64_t ns = ts.tv_nsec + (next - now) * 1000000;
            ts.tv_sec += ns / 1000000000;
            ts.tv_nsec = ns % 1000000000;
            pthread_cond_timedwait(&W.cv, &W.mu, &ts);
            continue;
        }
        next = now + LB_SSE_WATCH_TICK_MS;
        pthread_mutex_unlock(&W.mu);
        lb_watch_tick(&seen, &failing);
        pthread_mutex_lock(&W.mu);
    }
    pthread_mutex_unlock(&W.mu);
    return NULL;
}

static void lb_watch_free(void)
{
    free(W.tasks);
    free(W.idbuf);
    free(W.ids);
    free(W.slot);
    free(W.gen);
    free(W.newest);
    W.tasks = NULL;
    W.idbuf = NULL;
    W.ids = NULL;
    W.slot = NULL;
    W.gen = NULL;
    W.newest = NULL;
    W.cap = W.used = 0;
    lb_store_close(W.store);
    W.store = NULL;
}

int lb_sse_watch_start(const char *db_path, int max_tasks)
{
    pthread_mutex_lock(&W.mu);
    int busy = W.running || W.tasks;
    pthread_mutex_unlock(&W.mu);
    if (busy)
        return LB_E_EXISTS;
    int cap = max_tasks < 1 ? 1 : max_tasks > LB_SSE_WATCH_MAX ? LB_SSE_WATCH_MAX : max_tasks;
    W.tasks = calloc((size_t)cap, sizeof *W.tasks);
    W.idbuf = calloc((size_t)cap, sizeof *W.idbuf);
    W.ids = calloc((size_t)cap, sizeof *W.ids);
    W.slot = calloc((size_t)cap, sizeof *W.slot);
    W.gen = calloc((size_t)cap, sizeof *W.gen);
    W.newest = calloc((size_t)cap, sizeof *W.newest);
    if (!W.tasks || !W.idbuf || !W.ids || !W.slot || !W.gen || !W.newest) {
        lb_watch_free();
        return LB_E_NOMEM;
    }
    int rc = lb_store_open(db_path, &W.store);
    if (rc != LB_OK) {
        W.store = NULL;
        lb_watch_free();
        return rc;
    }
    W.cap = cap;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&W.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_lock(&W.mu);
    W.stop = 0;
    W.full_warned = 0;
    W.running = 1;
    pthread_mutex_unlock(&W.mu);
    if (pthread_create(&W.thread, NULL, lb_watch_main, NULL) != 0) {
        pthread_mutex_lock(&W.mu);
        W.running = 0;
        pthread_mutex_unlock(&W.mu);
        pthread_cond_destroy(&W.cv);
        lb_watch_free();
        return LB_E_NOMEM;
    }
    pthread_setname_np(W.thread, "sse-watch"); /* its CPU shows apart in top -H */
    return LB_OK;
}

void lb_sse_watch_stop(void)
{
    pthread_mutex_lock(&W.mu);
    if (!W.running) {
        pthread_mutex_unlock(&W.mu);
        return;
    }
    W.running = 0; /* no stream joins from now on */
    W.stop = 1;
    pthread_cond_broadcast(&W.cv);
    pthread_mutex_unlock(&W.mu);
    pthread_join(W.thread, NULL);
    pthread_mutex_lock(&W.mu);
    /* the streams still open find slot -1 at their next report and poll;
     * the wake makes that now rather than at their next timer */
    for (int i = 0; i < W.cap; i++) {
        lb_sse_waiter *w = W.tasks[i].waiters;
        W.tasks[i].waiters = NULL;
        while (w) {
            lb_sse_waiter *next = w->next;
            lb_watch_wake(w);
            w->slot = -1;
            w->next = NULL;
            w = next;
        }
    }
    lb_watch_free();
    pthread_mutex_unlock(&W.mu);
    pthread_cond_destroy(&W.cv);
}

int lb_sse_watch_add(lb_sse_waiter *w, const char *id, int fd, int64_t sent)
{
    memset(w, 0, sizeof *w);
    w->slot = -1;
    w->fd = fd;
    w->sent = sent;
    if (fd < 0 || !lb_id_valid(id))
        return 0;
    pthread_mutex_lock(&W.mu);
    if (!W.running) {
        pthread_mutex_unlock(&W.mu);
        return 0;
    }
    int found = -1, free_slot = -1;
    for (int i = 0; i < W.cap; i++) {
        if (!W.tasks[i].waiters) {
            if (free_slot < 0)
                free_slot = i;
        } else if (!strcmp(W.tasks[i].id, id)) {
            found = i;
            break;
        }
    }
    if (found < 0) {
        if (free_slot < 0) {
            if (!W.full_warned)
                lb_warn("web: event streams are open on %d tasks, the most the watcher takes; streams of "
                        "further tasks poll the store themselves",
                        W.cap);
            W.full_warned = 1;
            pthread_mutex_unlock(&W.mu);
            return 0;
        }
        found = free_slot;
        lb_watched *t = &W.tasks[found];
        memcpy(t->id, id, sizeof t->id);
        t->gen++;
        t->newest = 0;
        if (W.used++ == 0)
            pthread_cond_broadcast(&W.cv);
    }
    w->slot = found;
    w->next = W.tasks[found].waiters;
    W.tasks[found].waiters = w;
    pthread_mutex_unlock(&W.mu);
    return 1;
}

int lb_sse_watch_report(lb_sse_waiter *w, int64_t sent)
{
    pthread_mutex_lock(&W.mu);
    int watched = w->slot >= 0;
    if (watched) {
        w->sent = sent;
        w->woken = 0;
        if (W.tasks[w->slot].newest > sent)
            lb_watch_wake(w); /* found by a tick while the stream was reading */
    }
    pthread_mutex_unlock(&W.mu);
    return watched;
}

void lb_sse_watch_remove(lb_sse_waiter *w)
{
    pthread_mutex_lock(&W.mu);
    if (w->slot >= 0) {
        lb_watched *t = &W.tasks[w->slot];
        for (lb_sse_waiter **p = &t->waiters; *p; p = &(*p)->next) {
            if (*p == w) {
                *p = w->next;
                break;
            }
        }
        if (!t->waiters)
            W.used--;
        w->slot = -1;
    }
    pthread_mutex_unlock(&W.mu);
}
