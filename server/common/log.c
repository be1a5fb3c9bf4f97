#include "log.h"
#include "llmbox/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *lb_log_comp = "llmbox";
static int lb_log_min = LB_LOG_INFO;

void lb_log_init(const char *comp)
{
    lb_log_comp = comp;
    const char *lv = getenv("LLMBOX_LOG_LEVEL");
    if (lv && !strcmp(lv, "debug"))
        lb_log_min = LB_LOG_DEBUG;
}

/* JSON string contents: quotes, backslashes and control characters
 * escaped, bytes that are not UTF-8 (a raw request path may hold any)
 * replaced by U+FFFD, so every line stays valid JSON. */
static void lb_log_escape(char *out, size_t outsz, const char *in)
{
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)in;
    while (*p && o + 7 < outsz) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
            p++;
        } else if (c < 0x20 || c == 0x7f) {
            o += (size_t)snprintf(out + o, outsz - o, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            out[o++] = (char)c;
            p++;
        } else {
            /* the string ends at its NUL, which no sequence can hold */
            size_t n = llmbox_utf8_decode(p, strnlen((const char *)p, 4), NULL);
            if (n) {
                memcpy(out + o, p, n);
                o += n;
                p += n;
            } else {
                memcpy(out + o, "\\ufffd", 6);
                o += 6;
                p++;
            }
        }
    }
    out[o] = '\0';
}

int lb_log_enabled(int level)
{
    return level >= lb_log_min;
}

/* The common start of every line: {"ts":...,"msg":"<esc>" (no closing brace). */
static int lb_log_head(char *line, size_t linesz, int level, const char *esc)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    char ts[32];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    int n = snprintf(line, linesz,
                     "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"comp\":\"%s\",\"pid\":%d,\"msg\":\"%s\"",
                     ts, now.tv_nsec / 1000000, names[level & 3], lb_log_comp, (int)getpid(), esc);
    return n < 0 ? 0 : (size_t)n >= linesz ? (int)linesz - 1 : n;
}

/* Ends the line and writes it: one write() per line, so lines from many
 * processes and threads do not interleave. */
static void lb_log_emit(char *line, size_t linesz, size_t n)
{
    if (n + 3 > linesz)
        n = linesz - 3;
    line[n++] = '}';
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}

void lb_log(int level, const char *fmt, ...)
{
    if (level < lb_log_min)
        return;
    char msg[2048], esc[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lb_log_escape(esc, sizeof esc, msg);
    char line[4400];
    int n = lb_log_head(line, sizeof line, level, esc);
    lb_log_emit(line, sizeof line, (size_t)n);
}

void lb_log_fields(int level, const char *msg, const lb_log_field *f, int nf)
{
    if (level < lb_log_min)
        return;
    char esc[4096], line[8192];
    lb_log_escape(esc, 600, msg);
    size_t n = (size_t)lb_log_head(line, sizeof line, level, esc);
    for (int i = 0; i < nf; i++) {
        if (!f[i].is_int && !f[i].s)
            continue;
        int k;
        if (f[i].is_int) {
            k = snprintf(line + n, sizeof line - n, ",\"%s\":%lld", f[i].key, f[i].i);
        } else {
            char v[520];
            snprintf(v, sizeof v, "%.512s", f[i].s);
            lb_log_escape(esc, sizeof esc, v);
            k = snprintf(line + n, sizeof line - n, ",\"%s\":\"%s\"", f[i].key, esc);
        }
        if (k < 0 || (size_t)k >= sizeof line - n - 3)
            break; /* a member that does not fit is left out whole: the line stays JSON */
        n += (size_t)k;
    }
    lb_log_emit(line, sizeof line, n);
}
