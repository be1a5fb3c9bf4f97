/* Stable status codes shared by every component.
 * The enum only grows; 0 is success. Never renumber. */
#ifndef LB_STATUS_H
#define LB_STATUS_H

typedef enum lb_status {
    LB_OK = 0,
    LB_E_NOMEM = 1,      /* allocation failed */
    LB_E_INVAL = 2,      /* bad argument or malformed input */
    LB_E_TOOBIG = 3,     /* a cap was reached */
    LB_E_IO = 4,         /* read/write/open failed (errno is kept) */
    LB_E_NOTFOUND = 5,
    LB_E_EXISTS = 6,
    LB_E_PROTO = 7,      /* peer spoke the protocol wrong */
    LB_E_TIMEOUT = 8,
    LB_E_CANCELLED = 9,
    LB_E_UNAVAILABLE = 10, /* a peer (model, sandboxd) cannot be reached */
    LB_E_SANDBOX = 11,   /* the sandbox itself failed */
    LB_E_DENIED = 12,    /* refused (auth, permissions) */
    LB_E_INTERNAL = 13,
    LB_E_ISDIR = 14,     /* a file was expected, a directory was found */
    LB_E_BUSY = 15,      /* the peer is busy with an earlier request (a command still runs) */
    LB_E_NOSPACE = 16,   /* the disk (or the database's disk) is full */
    LB_E__COUNT
} lb_status;

/* Never NULL; a static string. */
const char *lb_strerror(int status);

/* A function whose status must not be dropped: the compiler warns (and
 * -Werror fails the build) at a call that ignores it. Put it on every
 * declaration that returns an lb_status, or a -1/0 that means failure. */
#if defined(__GNUC__) || defined(__clang__)
#define LB_MUST_CHECK __attribute__((warn_unused_result))
#else
#define LB_MUST_CHECK
#endif

/* Drops a must-check status on purpose. GCC does not accept a plain
 * (void) cast for warn_unused_result (GCC bug 66425), so the cast goes
 * through a `!`. Every use has a comment on the same or the line before
 * saying why failing there is fine (scripts/checksrc: ignored-status). */
#define LB_IGNORE(call) ((void)!(call))

/* An invariant of our own code (never of input: input is checked and
 * refused with a status). Checked unless NDEBUG; on failure prints the
 * file, line and condition and aborts, so tests and fuzzers stop there. */
#ifdef NDEBUG
#define LB_ASSERT(cond) ((void)0)
#else
#define LB_ASSERT(cond) \
    ((cond) ? (void)0 : lb_assert_fail(#cond, __FILE__, __LINE__, __func__))
#endif
__attribute__((noreturn)) void lb_assert_fail(const char *cond, const char *file, int line,
                                              const char *func);

#endif
