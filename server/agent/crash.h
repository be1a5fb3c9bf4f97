/* Where a crash happened, told from inside the signal handler.
 *
 * dladdr() would name the object holding the faulting instruction, but it
 * takes the dynamic loader's lock, which the crashing code may hold: not
 * something to call from a SIGSEGV handler. So the plugin host records
 * each plugin's address range when it loads it (lb_crash_note_module),
 * and the handler only reads that table (lb_crash_where). Everything in
 * this header but note/forget is async-signal-safe. */
#ifndef LB_CRASH_H
#define LB_CRASH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Records the address range of a loaded plugin (handle from dlopen) under
 * its name for messages ("plugins/x.so"). Not async-signal-safe. */
void lb_crash_note_module(const char *file, void *handle);
/* Forgets it again before dlclose. */
void lb_crash_forget_module(void *handle);

/* The instruction address of a crash, from the handler's ucontext (the
 * faulting address of si as a fallback on an architecture we do not know). */
uintptr_t lb_crash_pc(const void *ucontext, const siginfo_t *si);
/* Appends "plugins/x.so+0x1139" (the offset addr2line -e takes) or
 * "0x7f...: not in a plugin" at buf[at]; returns the new length. */
size_t lb_crash_where(uintptr_t pc, char *buf, size_t bufsz, size_t at);
/* "SIGSEGV", "SIGABRT" ... or "signal N" (static storage or buf). */
const char *lb_crash_signame(int sig, char *buf, size_t bufsz);
/* Appends s, or v in hex ("0x..."), at buf[at], NUL-terminated and capped;
 * return the new length. */
size_t lb_crash_cat(char *buf, size_t bufsz, size_t at, const char *s);
size_t lb_crash_hex(char *buf, size_t bufsz, size_t at, uintptr_t v);

#endif
