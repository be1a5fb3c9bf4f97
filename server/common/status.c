#include "status.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const lb_status_text[LB_E__COUNT] = {
    [LB_OK] = "ok",
    [LB_E_NOMEM] = "out of memory",
    [LB_E_INVAL] = "invalid input",
    [LB_E_TOOBIG] = "size limit exceeded",
    [LB_E_IO] = "i/o error",
    [LB_E_NOTFOUND] = "not found",
    [LB_E_EXISTS] = "already exists",
    [LB_E_PROTO] = "protocol error",
    [LB_E_TIMEOUT] = "timed out",
    [LB_E_CANCELLED] = "cancelled",
    [LB_E_UNAVAILABLE] = "unavailable",
    [LB_E_SANDBOX] = "sandbox error",
    [LB_E_DENIED] = "permission denied",
    [LB_E_INTERNAL] = "internal error",
    [LB_E_ISDIR] = "is a directory",
    [LB_E_BUSY] = "busy",
    [LB_E_NOSPACE] = "no space left on the disk",
};

const char *lb_strerror(int status)
{
    if (status < 0 || status >= LB_E__COUNT || !lb_status_text[status])
        return "unknown error";
    return lb_status_text[status];
}

void lb_assert_fail(const char *cond, const char *file, int line, const char *func)
{
    /* stderr is every process's log (agents and sandboxd redirect it), so
     * the broken invariant is the last line before the abort */
    fprintf(stderr, "%s:%d: %s: assertion failed: %s\n", file, line, func, cond);
    fflush(stderr);
    abort();
}
