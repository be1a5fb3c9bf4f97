#include "log.h"

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

static void lb_log_escape(char *out, size_t outsz, const char *in)
{
    size_t o = 0;
    for (; *in && o + 7 < outsz; in++) {
        unsigned char c = (unsigned char)*in;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(out + o, outsz - o, "\\u%04x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
}

void lb_log(int level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < lb_log_min)
        return;
    char msg[2048], esc[4096], ts[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lb_log_escape(esc, sizeof esc, msg);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    char line[4400];
    int n = snprintf(line, sizeof line,
                     "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"comp\":\"%s\",\"pid\":%d,\"msg\":\"%s\"}\n",
                     ts, now.tv_nsec / 1000000, names[level & 3], lb_log_comp,
                     (int)getpid(), esc);
    if (n > 0) {
        /* one write() per line so lines from many processes do not interleave */
        ssize_t w = write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)w;
    }
}
