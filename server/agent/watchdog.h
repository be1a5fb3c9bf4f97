/* The watchdog of tool plugins (one task per agent process, so its state
 * is process-wide).
 *
 * A plugin's invoke() runs on the agent's main thread. When it stays in
 * its own code (an endless loop, a blocking read) longer than
 * tool_timeout_s, nothing on that thread can stop it: the watchdog thread
 * notices, parks the main thread (a signal whose handler never returns,
 * so the plugin's code never runs again), and calls on_hang, which records
 * the end of the task and must end the process. Time the plugin spends in
 * host functions that wait on the sandbox is not counted: those have their
 * own timeouts.
 *
 * A crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) is caught too. The
 * handler writes one line to stderr (the agent's log; the terminal under
 * `llmbox run`) naming the tool, the signal and the faulting instruction as
 * plugins/x.so+0xOFFSET (agent/crash.h), all async-signal-safe. When the
 * crash is in a plugin's own code on the main thread, the handler parks
 * that thread like a hang and the watchdog thread calls on_stop with the
 * signal, which ends the task as the loop would (outputs collected, the
 * trajectory written) and the process. If that has not happened within
 * LB_WD_CRASH_WAIT_MS (the crash may have left the heap or a lock
 * broken), or the crash was elsewhere, the process dies of the signal as
 * it would have without the handler.
 *
 * The marker file names the tool whose code is running (it is empty
 * between calls), so that when the agent dies anyway, the web can tell
 * which tool it was. */
#ifndef LB_WATCHDOG_H
#define LB_WATCHDOG_H

#include "common/status.h"

/* How a tool was stopped: sig 0 for a hang (limit_s is the limit), else the
 * crash's signal, where its location ("plugins/x.so+0x1139"). */
typedef void (*lb_watchdog_fn)(void *arg, const char *tool, int limit_s, int sig, const char *where);

/* marker may be NULL; without on_stop only the marker is kept (no thread,
 * no crash handler). marker_on (or NULL): an existing file (the agent's
 * log) whose attribute LB_AGENT_TOOL_XATTR holds the marker instead, when
 * its file system takes one; the marker file is made only when it does
 * not. Returns an lb_status. */
LB_MUST_CHECK int lb_watchdog_start(int limit_s, const char *marker, const char *marker_on, lb_watchdog_fn on_stop,
                                    void *arg);
/* Stops the thread and removes the marker. */
void lb_watchdog_stop(void);
/* Around a plugin's invoke(). */
void lb_watchdog_enter(const char *tool);
void lb_watchdog_leave(void);
/* Around host functions that wait on the sandbox. */
void lb_watchdog_host_enter(void);
void lb_watchdog_host_leave(void);

#endif
