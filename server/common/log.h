/* Logging: one JSON object per line on stderr, so logs can be parsed.
 * {"ts":"2026-11-22T03:04:05.123Z","level":"info","comp":"web","pid":12,"msg":"..."}
 * Structured lines (lb_log_fields) add their own members after "msg", e.g.
 * the web's access lines {"msg":"request","method":"GET","status":200,...}. */
#ifndef LB_LOG_H
#define LB_LOG_H

enum { LB_LOG_DEBUG = 0, LB_LOG_INFO = 1, LB_LOG_WARN = 2, LB_LOG_ERROR = 3 };

/* comp names the process ("web", "sandboxd", "agent"); kept by pointer. */
void lb_log_init(const char *comp);
void lb_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One member of a structured line: a string (s != NULL; NULL skips the
 * member) or, with LB_LF_INT, an integer. */
typedef struct lb_log_field {
    const char *key;            /* a plain identifier: not escaped */
    const char *s;
    long long i;
    int is_int;
} lb_log_field;
#define LB_LF_STR(k, v) ((lb_log_field){.key = (k), .s = (v)})
#define LB_LF_INT(k, v) ((lb_log_field){.key = (k), .i = (long long)(v), .is_int = 1})

/* A line whose msg is a fixed word ("request", "event") followed by the
 * fields, each string escaped and cut at 512 bytes. */
void lb_log_fields(int level, const char *msg, const lb_log_field *f, int n);
/* Whether a line of that level would be written. */
int lb_log_enabled(int level);

#define lb_debug(...) lb_log(LB_LOG_DEBUG, __VA_ARGS__)
#define lb_info(...) lb_log(LB_LOG_INFO, __VA_ARGS__)
#define lb_warn(...) lb_log(LB_LOG_WARN, __VA_ARGS__)
#define lb_error(...) lb_log(LB_LOG_ERROR, __VA_ARGS__)

#endif
