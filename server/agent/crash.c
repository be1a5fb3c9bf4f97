/* The crash location table; see crash.h. */
#include "agent/crash.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <ucontext.h>

#define LB_CRASH_MODULES 128 /* as many as plugin_host loads */

typedef struct {
    void *handle;
    uintptr_t base, lo, hi; /* load bias; [lo, hi) covers its PT_LOAD segments */
    char file[120];
} lb_crash_module;

/* Written by the main thread while no plugin code runs; a slot is filled
 * before n counts it, so a handler never reads a half-written entry. */
static lb_crash_module mods[LB_CRASH_MODULES];
static volatile sig_atomic_t n_mods;

typedef struct {
    uintptr_t base, lo, hi;
    int found;
} lb_range_q;

static int range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    lb_range_q *q = arg;
    if (info->dlpi_addr != q->base)
        return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (lo < hi) {
        q->lo = lo;
        q->hi = hi;
        q->found = 1;
    }
    return q->found;
}

void lb_crash_note_module(const char *file, void *handle)
{
    struct link_map *lm = NULL;
    if (n_mods >= LB_CRASH_MODULES || !handle || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return;
    lb_range_q q = {.base = lm->l_addr};
    dl_iterate_phdr(range_cb, &q);
    if (!q.found)
        return;
    lb_crash_module *m = &mods[n_mods];
    m->handle = handle;
    m->base = q.base;
    m->lo = q.lo;
    m->hi = q.hi;
    size_t l = strnlen(file, sizeof m->file - 1);
    memcpy(m->file, file, l);
    m->file[l] = '\0';
    n_mods = n_mods + 1;
}

void lb_crash_forget_module(void *handle)
{
    for (sig_atomic_t i = 0; i < n_mods; i++) {
        if (mods[i].handle != handle)
            continue;
        n_mods = n_mods - 1;
        mods[i] = mods[n_mods];
        return;
    }
}

uintptr_t lb_crash_pc(const void *ucontext, const siginfo_t *si)
{
    const ucontext_t *uc = ucontext;
#if defined(__x86_64__)
    if (uc)
        return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    if (uc)
        return (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
#endif
    return si ? (uintptr_t)si->si_addr : 0;
}

size_t lb_crash_cat(char *buf, size_t bufsz, size_t at, const char *s)
{
    while (*s && at + 1 < bufsz)
        buf[at++] = *s++;
    if (at < bufsz)
        buf[at] = '\0';
    return at;
}

size_t lb_crash_hex(char *buf, size_t bufsz, size_t at, uintptr_t v)
{
    char tmp[2 + 2 * sizeof v + 1];
    size_t i = sizeof tmp - 1;
    tmp[i] = '\0';
    do {
        tmp[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    return lb_crash_cat(buf, bufsz, at, tmp + i);
}

size_t lb_crash_where(uintptr_t pc, char *buf, size_t bufsz, size_t at)
{
    for (sig_atomic_t i = 0; i < n_mods; i++) {
        const lb_crash_module *m = &mods[i];
        if (pc >= m->lo && pc < m->hi) {
            at = lb_crash_cat(buf, bufsz, at, m->file);
            at = lb_crash_cat(buf, bufsz, at, "+");
            return lb_crash_hex(buf, bufsz, at, pc - m->base);
        }
    }
    at = lb_crash_hex(buf, bufsz, at, pc);
    return lb_crash_cat(buf, bufsz, at, ": not in a plugin");
}

const char *lb_crash_signame(int sig, char *buf, size_t bufsz)
{
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGILL:
        return "SIGILL";
    case SIGFPE:
        return "SIGFPE";
    case SIGABRT:
        return "SIGABRT";
    default:
        break;
    }
    size_t at = lb_crash_cat(buf, bufsz, 0, "signal ");
    char d[12];
    size_t i = sizeof d - 1;
    unsigned v = sig < 0 ? 0u : (unsigned)sig;
    d[i] = '\0';
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    lb_crash_cat(buf, bufsz, at, d + i);
    return buf;
}
