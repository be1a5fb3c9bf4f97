#include "util.h"
#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int lb_parse_ll(const char *s, long long lo, long long hi, long long *out)
{
    if (!s || !*s)
        return LB_E_INVAL;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi)
        return LB_E_INVAL;
    *out = x;
    return LB_OK;
}

int lb_random_hex(char *out, size_t outsz, size_t nbytes)
{
    unsigned char raw[64];
    if (nbytes > sizeof raw || outsz < nbytes * 2 + 1)
        return LB_E_INVAL;
    size_t got = 0;
    while (got < nbytes) {
        ssize_t n = getrandom(raw + got, nbytes - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return LB_E_IO;
        }
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[nbytes * 2] = '\0';
    return LB_OK;
}

int lb_id_valid(const char *s)
{
    if (!s)
        return 0;
    size_t i = 0;
    for (; s[i]; i++) {
        if (i >= LB_ID_HEX_LEN)
            return 0;
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
    }
    return i == LB_ID_HEX_LEN;
}

static int64_t lb_clock_ms(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t lb_now_ms(void) { return lb_clock_ms(CLOCK_REALTIME); }
int64_t lb_mono_ms(void) { return lb_clock_ms(CLOCK_MONOTONIC); }

int lb_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return LB_E_IO;
        }
        c += w;
        n -= (size_t)w;
    }
    return LB_OK;
}

int lb_read_full(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return LB_E_IO;
        }
        if (r == 0)
            return LB_E_IO;
        c += r;
        n -= (size_t)r;
    }
    return LB_OK;
}

static int lb_write_replace(const char *path, const void *data, size_t len, int mode, int sync)
{
    char tmp[4096], rnd[17];
    if (lb_random_hex(rnd, sizeof rnd, 8))
        return LB_E_IO;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%s", path, rnd) >= sizeof tmp)
        return LB_E_INVAL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return LB_E_IO;
    int rc = lb_write_all(fd, data, len);
    if (rc == LB_OK && sync && fsync(fd) != 0)
        rc = LB_E_IO;
    if (close(fd) != 0 && rc == LB_OK)
        rc = LB_E_IO;
    if (rc == LB_OK && rename(tmp, path) != 0)
        rc = LB_E_IO;
    if (rc != LB_OK) {
        int e = errno;
        unlink(tmp);
        errno = e;
    }
    return rc;
}

int lb_write_file_atomic(const char *path, const void *data, size_t len, int mode)
{
    return lb_write_replace(path, data, len, mode, 1);
}

int lb_write_file_replace(const char *path, const void *data, size_t len, int mode)
{
    return lb_write_replace(path, data, len, mode, 0);
}

int lb_read_file(const char *path, size_t max, char **data, size_t *len)
{
    *data = NULL;
    if (len)
        *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? LB_E_NOTFOUND : LB_E_IO;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return LB_E_IO;
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return LB_E_TOOBIG;
    }
    size_t cap = (size_t)st.st_size;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return LB_E_NOMEM;
    }
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            close(fd);
            return LB_E_IO;
        }
        if (r == 0 || got + (size_t)r == cap) {
            got += (size_t)r;
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *data = buf;
    if (len)
        *len = got;
    return LB_OK;
}

int lb_mkdirs(const char *path, int mode)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp)
        return LB_E_INVAL;
    /* most calls make one folder in one that exists, or none: a single
     * mkdir answers those (an agent calls this dozens of times a task);
     * only a missing parent walks the path from the root */
    if (mkdir(path, (mode_t)mode) == 0 || errno == EEXIST)
        return LB_OK;
    if (errno != ENOENT)
        return LB_E_IO;
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST)
            return LB_E_IO;
        *p = '/';
    }
    if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST)
        return LB_E_IO;
    return LB_OK;
}

static int lb_rmtree_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int r = (flag == FTW_DP) ? rmdir(p) : unlink(p);
    return r != 0 && errno != ENOENT ? -1 : 0;
}

int lb_rmtree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? LB_OK : LB_E_IO;
    if (!S_ISDIR(st.st_mode))
        return unlink(path) == 0 ? LB_OK : LB_E_IO;
    return nftw(path, lb_rmtree_cb, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) == 0 ? LB_OK : LB_E_IO;
}

int lb_drop_privileges(const char *user)
{
    if (geteuid() != 0 || !user || !*user)
        return LB_OK;
    struct passwd *pw = getpwnam(user);
    if (!pw)
        return LB_E_NOTFOUND;
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
        return LB_E_DENIED;
    if (setuid(0) == 0) /* must not be able to regain root */
        return LB_E_DENIED;
    return LB_OK;
}

unsigned long long lb_raise_nofile(unsigned long long need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur >= (rlim_t)need)
        return (unsigned long long)rl.rlim_cur;
    struct rlimit want = {(rlim_t)need, rl.rlim_max};
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)need) {
        want.rlim_max = (rlim_t)need;
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            return need;
        want.rlim_cur = want.rlim_max = rl.rlim_max; /* the most we may have */
    }
    return (unsigned long long)(setrlimit(RLIMIT_NOFILE, &want) == 0 ? want.rlim_cur : rl.rlim_cur);
}

int lb_thread_detached(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    pthread_attr_t at;
    if (pthread_attr_init(&at) != 0)
        return LB_E_NOMEM;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256u << 10);
    int e = pthread_create(&t, &at, fn, arg);
    pthread_attr_destroy(&at);
    return e ? LB_E_NOMEM : LB_OK;
}

void lb_say(char *msg, size_t msgsz, const char *fmt, ...)
{
    if (!msg || !msgsz)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msgsz, fmt, ap);
    va_end(ap);
}

int lb_colon_field(const char *s, const char *e, int k, const char **fs, const char **fe)
{
    const char *p = s;
    for (int i = 0; i < k; i++) {
        const char *c = memchr(p, ':', (size_t)(e - p));
        if (!c)
            return 0;
        p = c + 1;
    }
    const char *c = memchr(p, ':', (size_t)(e - p));
    *fs = p;
    *fe = c ? c : e;
    return 1;
}

void lb_free_wiped(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}
