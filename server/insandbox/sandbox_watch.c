/* The watcher of E2B's watchDir, inside the sandbox (sandbox_watch.h). */
#include "insandbox/sandbox_watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <unistd.h>

#define W_MASK (IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF | \
                IN_MOVE_SELF | IN_DONT_FOLLOW | IN_ONLYDIR | IN_EXCL_UNLINK)

typedef struct w_dir {
    int wd;
    char *rel;          /* relative to the watched dir, "" for itself */
} w_dir;

static w_dir g_dirs[LBSB_WATCH_DIRS];
static int g_ndirs, g_ifd, g_recursive;
static const char *g_root;
static char g_out[8192];
static size_t g_outlen;

static void w_flush(void)
{
    size_t at = 0;
    while (at < g_outlen) {
        ssize_t n = write(1, g_out + at, g_outlen - at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(0); /* nobody reads us any more */
        at += (size_t)n;
    }
    g_outlen = 0;
}

/* One line: t, then " name" escaped when name is not NULL. */
static void w_line(char t, const char *name)
{
    char buf[2 * PATH_MAX + 8];
    size_t n = 0;
    buf[n++] = t;
    if (name) {
        buf[n++] = ' ';
        for (const char *p = name; *p && n < sizeof buf - 3; p++) {
            if (*p == '\\' || *p == '\n') {
                buf[n++] = '\\';
                buf[n++] = *p == '\n' ? 'n' : '\\';
            } else {
                buf[n++] = *p;
            }
        }
    }
    buf[n++] = '\n';
    if (g_outlen + n > sizeof g_out)
        w_flush();
    memcpy(g_out + g_outlen, buf, n);
    g_outlen += n;
}

static w_dir *w_find(int wd)
{
    for (int i = 0; i < g_ndirs; i++)
        if (g_dirs[i].wd == wd)
            return &g_dirs[i];
    return NULL;
}

static __attribute__((noreturn)) void w_end(char t)
{
    w_line(t, NULL);
    w_flush();
    _exit(0);
}

/* Watches dir root/rel and, recursive, what is under it. A directory that
 * went away meanwhile is skipped; past a cap (directories, or levels: each
 * holds two paths on the stack) the watcher ends with "L". */
static void w_add(const char *rel, int level)
{
    if (level > LBSB_WATCH_LEVELS)
        w_end('L');
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s%s%s", g_root, rel[0] ? "/" : "", rel);
    if (n < 0 || (size_t)n >= sizeof path)
        return;
    int wd = inotify_add_watch(g_ifd, path, W_MASK);
    if (wd < 0) {
        if (!rel[0]) {
            fprintf(stderr, "cannot watch %s: %s\n", g_root, strerror(errno));
            _exit(2);
        }
        if (errno == ENOSPC)
            w_end('L'); /* the sandbox's max_user_watches */
        return;
    }
    if (!w_find(wd)) {
        if (g_ndirs >= LBSB_WATCH_DIRS) {
            inotify_rm_watch(g_ifd, wd);
            w_end('L');
        }
        char *copy = strdup(rel);
        if (!copy)
            w_end('L');
        g_dirs[g_ndirs].wd = wd;
        g_dirs[g_ndirs].rel = copy;
        g_ndirs++;
    }
    if (!g_recursive)
        return;
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        /* d_type, never a stat that would follow: symlinks are not entered */
        if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char sub[PATH_MAX];
        n = snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        if (n > 0 && (size_t)n < sizeof sub)
            w_add(sub, level + 1);
    }
    closedir(d);
}

/* Levels of rel below the watched dir, less one: its slashes. */
static int w_depth(const char *rel)
{
    int n = 0;
    for (const char *p = strchr(rel, '/'); p; p = strchr(p + 1, '/'))
        n++;
    return n;
}

static void w_forget(int wd)
{
    for (int i = 0; i < g_ndirs; i++)
        if (g_dirs[i].wd == wd) {
            free(g_dirs[i].rel);
            g_dirs[i] = g_dirs[--g_ndirs];
            return;
        }
}

static void w_event(const struct inotify_event *ev)
{
    if (ev->mask & IN_Q_OVERFLOW)
        w_end('O');
    w_dir *d = w_find(ev->wd);
    if (!d)
        return;
    if (ev->mask & IN_IGNORED) {
        int root = !d->rel[0];
        w_forget(ev->wd);
        if (root)
            w_end('X');
        return;
    }
    if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        if (!d->rel[0])
            w_end('X');
        return; /* a subdirectory's own end: its parent's watch reports it */
    }
    if (!ev->len || !ev->name[0])
        return;
    char name[PATH_MAX];
    int n = snprintf(name, sizeof name, "%s%s%s", d->rel, d->rel[0] ? "/" : "", ev->name);
    if (n < 0 || (size_t)n >= sizeof name)
        return;
    char t = ev->mask & (IN_CREATE | IN_MOVED_TO) ? 'C' : ev->mask & IN_MODIFY ? 'W'
           : ev->mask & IN_DELETE ? 'D' : ev->mask & IN_MOVED_FROM ? 'N' : ev->mask & IN_ATTRIB ? 'M' : 0;
    if (!t)
        return;
    w_line(t, name);
    if (g_recursive && (ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
        w_add(name, w_depth(name) + 1);
}

void lbsd_watch_main(char *const *argv)
{
    if (!argv[1] || !argv[2] || argv[1][0] != '/') {
        fprintf(stderr, "usage: %s /dir 0|1\n", LBSB_WATCH_ARGV0);
        _exit(2);
    }
    prctl(PR_SET_NAME, "llmbox-watch"); /* what ps in the sandbox shows */
    g_root = argv[1];
    g_recursive = argv[2][0] == '1';
    g_ifd = inotify_init1(IN_CLOEXEC);
    if (g_ifd < 0) {
        fprintf(stderr, "inotify: %s\n", strerror(errno));
        _exit(2);
    }
    w_add("", 0);
    w_line('R', NULL);
    w_flush();
    /* aligned as the kernel writes struct inotify_event */
    static char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(g_ifd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "inotify read: %s\n", n < 0 ? strerror(errno) : "end");
            _exit(2);
        }
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            w_event(ev);
            p += sizeof *ev + ev->len;
        }
        w_flush();
    }
}
