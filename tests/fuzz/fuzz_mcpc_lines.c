/* libFuzzer target for the stdio framing of MCP servers
 * (server/mcpclient/mcpc_lines.c): the bytes a server inside the sandbox
 * writes to its stdout, fed in pieces of the sizes the first byte picks
 * (sandboxd's events split the stream anywhere). Promises: every line
 * handed out is at most the cap, holds no newline, is not blank and ends
 * with its NUL; the bytes held never grow past the cap (and a "\r") plus one piece;
 * lines of the input that fit come out whole and in order (their count
 * matches a plain split of the input). */
#include "mcpclient/mcpc_lines.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CAP 64

static size_t expected(const uint8_t *p, size_t n)
{
    size_t count = 0, start = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '\n') {
            size_t len = i - start;
            if (len && p[i - 1] == '\r')
                len--;
            int blank = 1;
            for (size_t k = start; k < start + len; k++)
                blank &= p[k] == ' ' || p[k] == '\t' || p[k] == '\r';
            /* a NUL inside cuts the line short but it still comes out */
            count += len <= CAP && !blank;
            start = i + 1;
        }
    return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    size_t piece = 1 + data[0] % 97;
    data++, size--;
    lb_mcpc_lines l;
    lb_mcpc_lines_init(&l, CAP);
    size_t got = 0;
    for (size_t at = 0; at < size;) {
        size_t n = size - at < piece ? size - at : piece;
        if (lb_mcpc_lines_feed(&l, (const char *)data + at, n) != LB_OK)
            __builtin_trap();
        at += n;
        if (l.pend.len - l.off > CAP + 1 + piece)
            __builtin_trap();
        const char *line;
        size_t len;
        while (lb_mcpc_lines_next(&l, &line, &len)) {
            if (len > CAP || len == 0 || memchr(line, '\n', len) || line[len] != '\0')
                __builtin_trap();
            got++;
        }
    }
    if (got != expected(data, size))
        __builtin_trap();
    lb_mcpc_lines_free(&l);
    return 0;
}
