/* Logging: one JSON object per line on stderr, so logs can be parsed.
 * {"ts":"2026-11-22T03:04:05.123Z","level":"info","comp":"web","msg":"..."} */
#ifndef LB_LOG_H
#define LB_LOG_H

enum { LB_LOG_DEBUG = 0, LB_LOG_INFO = 1, LB_LOG_WARN = 2, LB_LOG_ERROR = 3 };

/* comp names the process ("web", "sandboxd", "agent"); kept by pointer. */
void lb_log_init(const char *comp);
void lb_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define lb_debug(...) lb_log(LB_LOG_DEBUG, __VA_ARGS__)
#define lb_info(...) lb_log(LB_LOG_INFO, __VA_ARGS__)
#define lb_warn(...) lb_log(LB_LOG_WARN, __VA_ARGS__)
#define lb_error(...) lb_log(LB_LOG_ERROR, __VA_ARGS__)

#endif
