#include "mime.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <magic.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static _Thread_local magic_t lb_magic;

static magic_t lb_magic_open(void)
{
    magic_t m = magic_open(MAGIC_MIME_TYPE | MAGIC_ERROR | MAGIC_NO_CHECK_COMPRESS);
    if (!m)
        return NULL;
    if (magic_load(m, NULL) != 0) {
        magic_close(m);
        return NULL;
    }
    return m;
}

/* The first file libmagic types costs ~5 ms of CPU (it compiles the text
 * tests' regexes on first use); an agent types its outputs only at the
 * end, when that time adds to what the user waits. lb_mime_preload() makes
 * and warms a handle on a helper thread while the task runs; the first
 * lb_mime_of_file of any thread takes it over (a handle is used by one
 * thread at a time, never shared). The handle's tables (~2.4 MB) are then
 * held for the whole task instead of its last milliseconds. */
static pthread_mutex_t lb_preload_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t lb_preload_thread;
static int lb_preload_pending;
/* lb_mime_warm_here's handle, made before this process was forked (the
 * agent zygote): each forked agent takes its own copy, already warm */
static magic_t lb_inherited;
/* the same handle once taken: never closed (lb_mime_release) */
static magic_t lb_inherited_taken;

static void *lb_preload_main(void *arg)
{
    (void)arg;
    magic_t m = lb_magic_open();
    if (m)
        (void)magic_buffer(m, "warm up\n", 8);
    return m;
}

void lb_mime_warm_here(void)
{
    pthread_mutex_lock(&lb_preload_mu);
    if (!lb_inherited)
        lb_inherited = lb_preload_main(NULL);
    pthread_mutex_unlock(&lb_preload_mu);
    /* OpenSSL loads its provider and builds its method tables on the
     * first digest (~1 ms): done here once, inherited by every fork */
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    (void)EVP_Digest("", 0, md, &mdlen, EVP_sha256(), NULL); /* a warm-up: its digest is not used */
}

void lb_mime_preload(void)
{
    pthread_mutex_lock(&lb_preload_mu);
    if (!lb_preload_pending && !lb_inherited) {
        /* signals stay with the caller's threads: the helper blocks them all */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        lb_preload_pending = pthread_create(&lb_preload_thread, NULL, lb_preload_main, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_mutex_unlock(&lb_preload_mu);
}

void lb_mime_release(void)
{
    magic_t m = NULL;
    pthread_mutex_lock(&lb_preload_mu);
    if (lb_preload_pending) {
        void *ret = NULL;
        if (pthread_join(lb_preload_thread, &ret) == 0)
            m = ret;
        lb_preload_pending = 0;
    }
    /* the inherited handle is not closed: its memory is the parent's,
     * shared copy-on-write, and freeing its thousands of allocations
     * (compiled regexes) would copy every page they touch (~4 ms of a
     * forked agent's CPU, bench/RESULTS.md); the process ends with its
     * task, and a static pointer keeps it reachable */
    magic_t taken = lb_inherited_taken;
    pthread_mutex_unlock(&lb_preload_mu);
    if (m)
        magic_close(m);
    if (lb_magic) {
        if (lb_magic != taken)
            magic_close(lb_magic);
        lb_magic = NULL;
    }
}

static magic_t lb_magic_get(void)
{
    if (lb_magic)
        return lb_magic;
    magic_t m = NULL;
    pthread_mutex_lock(&lb_preload_mu);
    if (lb_inherited) {
        m = lb_inherited;
        lb_inherited_taken = m;
        lb_inherited = NULL;
    } else if (lb_preload_pending) {
        void *ret = NULL;
        if (pthread_join(lb_preload_thread, &ret) == 0)
            m = ret;
        lb_preload_pending = 0;
    }
    pthread_mutex_unlock(&lb_preload_mu);
    if (!m)
        m = lb_magic_open();
    lb_magic = m;
    return m;
}

/* libmagic sees most text formats as text/plain; the name decides those. */
static const char *lb_mime_by_ext(const char *path, const char *magic_type)
{
    static const struct { const char *ext, *mime; } map[] = {
        {".css", "text/css"},       {".js", "text/javascript"},
        {".mjs", "text/javascript"}, {".csv", "text/csv"},
        {".md", "text/markdown"},   {".json", "application/json"},
        {".svg", "image/svg+xml"},  {".html", "text/html"},
        {".htm", "text/html"},      {".tsv", "text/tab-separated-values"},
        {".py", "text/x-python"},   {".txt", "text/plain"},
    };
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash))
        return NULL;
    int is_text = !strncmp(magic_type, "text/", 5) || !strcmp(magic_type, "application/json") ||
                  !strcmp(magic_type, "image/svg+xml") || !strcmp(magic_type, "application/csv");
    if (!is_text)
        return NULL;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcasecmp(dot, map[i].ext))
            return map[i].mime;
    return NULL;
}

int lb_mime_of_file(const char *path, char *out, size_t outsz)
{
    snprintf(out, outsz, "application/octet-stream");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? LB_E_NOTFOUND : LB_E_IO;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return LB_E_IO;
    }
    magic_t m = lb_magic_get();
    const char *t = m ? magic_descriptor(m, fd) : NULL;
    close(fd);
    if (!t)
        return LB_OK;
    const char *refined = lb_mime_by_ext(path, t);
    snprintf(out, outsz, "%s", refined ? refined : t);
    return LB_OK;
}

int lb_sha256_file(const char *path, char out[65])
{
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return LB_E_IO;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        close(fd);
        return LB_E_INTERNAL;
    }
    unsigned char buf[65536];
    int rc = LB_OK;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = LB_E_IO;
            break;
        }
        if (n == 0)
            break;
        EVP_DigestUpdate(ctx, buf, (size_t)n);
    }
    close(fd);
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (rc == LB_OK && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32) {
        for (int i = 0; i < 32; i++)
            snprintf(out + 2 * i, 3, "%02x", md[i]);
    } else if (rc == LB_OK) {
        rc = LB_E_INTERNAL;
    }
    EVP_MD_CTX_free(ctx);
    return rc;
}

int lb_mime_is_active(const char *mime)
{
    return strstr(mime, "html") || strstr(mime, "svg") || strstr(mime, "xml") ||
           strstr(mime, "javascript");
}
