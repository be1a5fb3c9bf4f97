/* The watchdog of tool plugins; the contract is watchdog.h.
 *
 * Parking: the watchdog decides while holding its mutex, which the main
 * thread needs to enter or leave a host call, so the main thread cannot be
 * inside a sandbox RPC when it is parked, and on_stop may use the sandbox
 * connection. The park handler only sets a flag and pause()s, both
 * async-signal-safe; other handlers (SIGTERM, SIGALRM) still run nested. */
#include "agent/watchdog.h"

#include "agent/crash.h"
#include "common/agent_spawn.h" /* LB_AGENT_TOOL_XATTR */
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define LB_WD_TICK_MS 100
#define LB_WD_PARK_WAIT_MS 2000
#define LB_WD_PARK_SIGNAL SIGUSR2
#define LB_WD_CRASH_WAIT_MS 120000 /* for on_stop to end a crashed task */

/* AddressSanitizer reports a crash itself (and the tests expect its abort):
 * leave the crash signals to it. */
#if defined(__SANITIZE_ADDRESS__)
#define LB_WD_CATCH_CRASHES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LB_WD_CATCH_CRASHES 0
#endif
#endif
#ifndef LB_WD_CATCH_CRASHES
#define LB_WD_CATCH_CRASHES 1
#endif

static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv = PTHREAD_COND_INITIALIZER;
static volatile sig_atomic_t wd_parked;
static volatile sig_atomic_t wd_crash_sig;  /* set by the crash handler for the thread */
static char wd_crash_where[200];            /* written before wd_crash_sig */

static struct {
    int running, stop;
    pthread_t thread, main_thread;
    int64_t limit_ms;
    int marker_fd;
    int marker_xfd; /* the file whose attribute is the marker (marker_on), or -1 */
    char marker[4096];
    lb_watchdog_fn fn;
    void *arg;
    /* the call being watched (volatile: the crash handler reads them) */
    volatile int armed, in_host;
    char tool[80];
    int64_t start_ms, host_ms, host_since;
} W = {.marker_fd = -1, .marker_xfd = -1};

static void wd_park(int sig)
{
    (void)sig;
    wd_parked = 1;
    for (;;)
        pause();
}

static void nap_ms(long ms);

/* The crash handler (watchdog.h). Only async-signal-safe calls: write,
 * nanosleep, sigaction, raise, and the formatting of agent/crash.h. */
static void wd_crash(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    char line[512], sigbuf[24];
    const char *name = lb_crash_signame(sig, sigbuf, sizeof sigbuf);
    uintptr_t pc = lb_crash_pc(uc, si);
    int in_plugin = W.armed && !W.in_host;
    size_t n = lb_crash_cat(line, sizeof line, 0, "llmbox agent: ");
    if (W.armed) {
        n = lb_crash_cat(line, sizeof line, n, "the tool ");
        n = lb_crash_cat(line, sizeof line, n, W.tool);
        n = lb_crash_cat(line, sizeof line, n, in_plugin ? " crashed (" : " crashed in a host function (");
    } else {
        n = lb_crash_cat(line, sizeof line, n, "crashed outside any tool (");
    }
    n = lb_crash_cat(line, sizeof line, n, name);
    n = lb_crash_cat(line, sizeof line, n, ") at ");
    n = lb_crash_where(pc, line, sizeof line, n);
    if (sig == SIGSEGV || sig == SIGBUS) {
        n = lb_crash_cat(line, sizeof line, n, ", fault address ");
        n = lb_crash_hex(line, sizeof line, n, (uintptr_t)si->si_addr);
    }
    n = lb_crash_cat(line, sizeof line, n, "\n");
    ssize_t unused = write(2, line, n);
    (void)unused;
    if (in_plugin && W.running && !wd_crash_sig && pthread_equal(pthread_self(), W.main_thread)) {
        lb_crash_where(pc, wd_crash_where, sizeof wd_crash_where, 0); /* for on_stop's message */
        wd_crash_sig = sig;
        /* the watchdog thread ends the task and the process; this thread
         * must not run the plugin's code again */
        for (int i = 0; i < LB_WD_CRASH_WAIT_MS / 10; i++)
            nap_ms(10);
        static const char late[] = "llmbox agent: the crashed task could not be ended in time; dying of the signal\n";
        unused = write(2, late, sizeof late - 1);
    }
    /* die of the signal, as without this handler (the web's reaper reads it):
     * blocked while the handler runs, it is delivered when it returns */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

static int wd_catch_crashes(void)
{
    if (!LB_WD_CATCH_CRASHES)
        return LB_OK;
    /* a stack overflow in a plugin must still find a stack to report on */
    static char altstack[64 << 10];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
    if (sigaltstack(&ss, NULL) != 0)
        return LB_E_INTERNAL;
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = wd_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return LB_E_INTERNAL;
    return LB_OK;
}

/* Milliseconds the plugin has spent in its own code in this call. */
static int64_t own_ms(int64_t now)
{
    int64_t host = W.host_ms + (W.in_host ? now - W.host_since : 0);
    return now - W.start_ms - host;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void *wd_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&wd_mu);
    while (!W.stop) {
        if (wd_crash_sig) {
            /* the main thread waits in the crash handler; the mutex stays
             * taken, as for a hang */
            char tool[sizeof W.tool];
            memcpy(tool, W.tool, sizeof tool);
            W.fn(W.arg, tool, (int)(W.limit_ms / 1000), wd_crash_sig, wd_crash_where);
            _exit(1);
        }
        if (W.armed && !W.in_host && own_ms(lb_mono_ms()) > W.limit_ms) {
            char tool[sizeof W.tool];
            memcpy(tool, W.tool, sizeof tool);
            lb_warn("watchdog: the tool %s has run its own code for more than %lld s; stopping the task", tool,
                    (long long)(W.limit_ms / 1000));
            pthread_kill(W.main_thread, LB_WD_PARK_SIGNAL);
            for (int i = 0; i < LB_WD_PARK_WAIT_MS / 10 && !wd_parked; i++)
                nap_ms(10);
            if (!wd_parked)
                lb_warn("watchdog: the main thread did not stop; going on anyway");
            /* the mutex stays taken: the main thread must never run again */
            W.fn(W.arg, tool, (int)(W.limit_ms / 1000), 0, "");
            _exit(1); /* on_stop must not return; if it does, end here */
        }
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += LB_WD_TICK_MS * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&wd_cv, &wd_mu, &dl);
    }
    pthread_mutex_unlock(&wd_mu);
    return NULL;
}

int lb_watchdog_start(int limit_s, const char *marker, const char *marker_on, lb_watchdog_fn on_stop, void *arg)
{
    if (W.running)
        return LB_E_EXISTS;
    W.stop = 0;
    W.armed = W.in_host = 0;
    W.limit_ms = (int64_t)(limit_s > 0 ? limit_s : 60) * 1000;
    W.fn = on_stop;
    W.arg = arg;
    W.main_thread = pthread_self();
    W.marker[0] = '\0';
    if (marker_on && *marker_on) {
        /* the web's log of this agent, not created here: an attribute of
         * an inode that exists costs no new one */
        int fd = open(marker_on, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd >= 0 && fsetxattr(fd, LB_AGENT_TOOL_XATTR, "", 0, 0) == 0)
            W.marker_xfd = fd;
        else if (fd >= 0)
            close(fd);
    }
    if (W.marker_xfd < 0 && marker && *marker && strlen(marker) < sizeof W.marker) {
        W.marker_fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
        if (W.marker_fd >= 0)
            snprintf(W.marker, sizeof W.marker, "%s", marker);
        else
            lb_warn("watchdog: cannot create %s: %s", marker, strerror(errno));
    }
    if (!on_stop)
        return LB_OK; /* a marker without a thread */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = wd_park;
    sigemptyset(&sa.sa_mask);
    if (sigaction(LB_WD_PARK_SIGNAL, &sa, NULL) != 0 || wd_catch_crashes() != LB_OK)
        return LB_E_INTERNAL;
    /* the thread takes no signal: they are all the main thread's */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int e = pthread_create(&W.thread, NULL, wd_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0)
        return LB_E_INTERNAL;
    W.running = 1;
    return LB_OK;
}

void lb_watchdog_stop(void)
{
    if (W.running) {
        pthread_mutex_lock(&wd_mu);
        W.stop = 1;
        pthread_cond_broadcast(&wd_cv);
        pthread_mutex_unlock(&wd_mu);
        pthread_join(W.thread, NULL);
        W.running = 0;
    }
    if (W.marker_fd >= 0) {
        close(W.marker_fd);
        W.marker_fd = -1;
        unlink(W.marker);
    }
    if (W.marker_xfd >= 0) {
        close(W.marker_xfd); /* its value is "" between calls already */
        W.marker_xfd = -1;
    }
}

static void marker_set(const char *tool)
{
    size_t n = tool ? strlen(tool) : 0;
    if (W.marker_xfd >= 0) {
        (void)fsetxattr(W.marker_xfd, LB_AGENT_TOOL_XATTR, tool ? tool : "", n, 0); /* as the file's write: best effort */
        return;
    }
    if (W.marker_fd < 0)
        return;
    if (n && pwrite(W.marker_fd, tool, n, 0) != (ssize_t)n)
        return;
    if (ftruncate(W.marker_fd, (off_t)n) != 0)
        return;
}

void lb_watchdog_enter(const char *tool)
{
    marker_set(tool);
    pthread_mutex_lock(&wd_mu);
    snprintf(W.tool, sizeof W.tool, "%s", tool ? tool : "?");
    W.start_ms = lb_mono_ms();
    W.host_ms = 0;
    W.in_host = 0;
    W.armed = 1;
    pthread_mutex_unlock(&wd_mu);
}

void lb_watchdog_leave(void)
{
    pthread_mutex_lock(&wd_mu);
    W.armed = 0;
    W.in_host = 0;
    pthread_mutex_unlock(&wd_mu);
    marker_set(NULL);
}

void lb_watchdog_host_enter(void)
{
    pthread_mutex_lock(&wd_mu);
    if (W.armed && !W.in_host++)
        W.host_since = lb_mono_ms();
    pthread_mutex_unlock(&wd_mu);
}

void lb_watchdog_host_leave(void)
{
    pthread_mutex_lock(&wd_mu);
    if (W.armed && W.in_host && !--W.in_host)
        W.host_ms += lb_mono_ms() - W.host_since;
    pthread_mutex_unlock(&wd_mu);
}
