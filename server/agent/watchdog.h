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
 * The marker file names the tool whose code is running (it is empty
 * between calls), so that when a plugin crashes the agent (SIGSEGV), the
 * web can tell which tool it was. */
#ifndef LB_WATCHDOG_H
#define LB_WATCHDOG_H

typedef void (*lb_watchdog_fn)(void *arg, const char *tool, int limit_s);

/* marker may be NULL. Returns an lb_status. */
int lb_watchdog_start(int limit_s, const char *marker, lb_watchdog_fn on_hang, void *arg);
/* Stops the thread and removes the marker. */
void lb_watchdog_stop(void);
/* Around a plugin's invoke(). */
void lb_watchdog_enter(const char *tool);
void lb_watchdog_leave(void);
/* Around host functions that wait on the sandbox. */
void lb_watchdog_host_enter(void);
void lb_watchdog_host_leave(void);

#endif
