/* The image's Env, WorkingDir and User in the sandbox, and a named user's
 * ids from the sandbox's /etc/passwd and /etc/group (image_user.h). */
#include "sandboxd/image_user.h"

#include "sandboxd/image_layers.h"

#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

static char g_env[LBSD_IMG_ENV_BYTES];
static size_t g_envlen;
static char g_workdir[LBSD_IMG_WORKDIR_MAX + 1];
static int64_t g_uid = -1, g_gid = -1;

void lbsd_img_proc_set(const char *env, size_t envlen, const char *workdir, int64_t uid, int64_t gid)
{
    g_envlen = env && envlen <= sizeof g_env ? envlen : 0;
    if (g_envlen)
        memcpy(g_env, env, g_envlen);
    size_t wl = workdir ? strlen(workdir) : 0;
    if (wl >= sizeof g_workdir)
        wl = 0;
    memcpy(g_workdir, workdir ? workdir : "", wl);
    g_workdir[wl] = '\0';
    g_uid = uid;
    g_gid = gid;
}

static int same_name(const char *a, const char *b)
{
    size_t la = strcspn(a, "="), lb = strcspn(b, "=");
    return la == lb && !memcmp(a, b, la);
}

int lbsd_img_proc_env(const char *const *base, char **out, int max)
{
    int n = 0;
    for (int i = 0; base[i] && n < max; i++) {
        int over = 0;
        for (size_t at = 0; at < g_envlen && !over; at += strlen(g_env + at) + 1)
            over = same_name(base[i], g_env + at);
        if (!over)
            out[n++] = (char *)base[i];
    }
    for (size_t at = 0; at < g_envlen && n < max; at += strlen(g_env + at) + 1)
        out[n++] = g_env + at;
    out[n] = NULL;
    return n;
}

const char *lbsd_img_proc_workdir(void)
{
    return g_workdir;
}

int lbsd_img_proc_become(void)
{
    if (g_uid < 0)
        return 0;
    gid_t g = (gid_t)g_gid;
    if (setgroups(1, &g) != 0 || setresgid(g, g, g) != 0 || setresuid((uid_t)g_uid, (uid_t)g_uid, (uid_t)g_uid) != 0)
        return -1;
    return 0;
}

/* ---- a named user of the sandbox, read from the host ---------------------- */

int lbsd_user_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 1 || n > LBSD_USER_NAME_MAX || name[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                 c == '-' || (c == '$' && i == n - 1);
        if (!ok)
            return 0;
    }
    return 1;
}

/* The next line of db[*at..n) as [*s, *e) without its newline; 0 at the end. */
static int iu_line(const char *db, size_t n, size_t *at, const char **s, const char **e)
{
    if (*at >= n)
        return 0;
    *s = db + *at;
    const char *nl = memchr(*s, '\n', n - *at);
    *e = nl ? nl : db + n;
    *at = (size_t)(*e - db) + (nl ? 1 : 0);
    return 1;
}

static int iu_eq(const char *s, const char *e, const char *name)
{
    size_t n = strlen(name);
    return (size_t)(e - s) == n && !memcmp(s, name, n);
}

/* A decimal id below LBSD_USER_ID_LIMIT (the ids a sandbox maps), or -1. */
static int64_t iu_id(const char *s, const char *e)
{
    if (s == e || e - s > 6)
        return -1;
    int64_t v = 0;
    for (const char *p = s; p < e; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v < LBSD_USER_ID_LIMIT ? v : -1;
}

static void iu_add_group(lbsd_user_ids *out, uint32_t gid)
{
    for (int i = 0; i < out->ngroups; i++)
        if (out->groups[i] == gid)
            return;
    if (out->ngroups < LBSD_USER_GROUPS_MAX)
        out->groups[out->ngroups++] = gid;
}

int lbsd_user_parse(const char *pw, size_t pn, const char *gr, size_t gn, const char *name, lbsd_user_ids *out)
{
    memset(out, 0, sizeof out[0]);
    if (!lbsd_user_name_ok(name))
        return -1;
    const char *s, *e, *fs, *fe;
    size_t at = 0;
    int found = 0;
    while (!found && pw && iu_line(pw, pn, &at, &s, &e)) {
        const char *us, *ue, *gs, *ge;
        if (!lb_colon_field(s, e, 0, &fs, &fe) || !iu_eq(fs, fe, name) || !lb_colon_field(s, e, 2, &us, &ue) ||
            !lb_colon_field(s, e, 3, &gs, &ge))
            continue;
        int64_t uid = iu_id(us, ue), gid = iu_id(gs, ge);
        if (uid < 0 || gid < 0)
            continue; /* not an id the sandbox maps: as if absent */
        out->uid = (uint32_t)uid;
        out->gid = (uint32_t)gid;
        /* home: absolute, printable, short; else "/" (as login does) */
        int home_ok = lb_colon_field(s, e, 5, &fs, &fe) && fe - fs >= 1 && fe - fs <= LBSD_USER_HOME_MAX && fs[0] == '/';
        for (const char *p = fs; home_ok && p < fe; p++)
            home_ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
        if (home_ok) {
            memcpy(out->home, fs, (size_t)(fe - fs));
            out->home[fe - fs] = '\0';
        } else {
            snprintf(out->home, sizeof out->home, "/");
        }
        found = 1;
    }
    if (!found && !strcmp(name, "root")) {
        snprintf(out->home, sizeof out->home, "/root"); /* an image without /etc/passwd is still root's */
        found = 1;
    }
    if (!found)
        return -1;
    snprintf(out->name, sizeof out->name, "%s", name);
    /* the primary group, then every group that lists the user (initgroups) */
    iu_add_group(out, out->gid);
    at = 0;
    while (gr && iu_line(gr, gn, &at, &s, &e)) {
        const char *ids, *ide;
        if (!lb_colon_field(s, e, 2, &ids, &ide) || !lb_colon_field(s, e, 3, &fs, &fe))
            continue;
        int64_t gid = iu_id(ids, ide);
        if (gid < 0)
            continue;
        for (const char *p = fs; p < fe;) {
            const char *c = memchr(p, ',', (size_t)(fe - p));
            const char *me = c ? c : fe;
            if (iu_eq(p, me, name))
                iu_add_group(out, (uint32_t)gid);
            p = c ? c + 1 : fe;
        }
    }
    return 0;
}

/* fd of a directory or file on the sandbox's own filesystems (its overlay
 * root or a tmpfs of it), never /proc or a host mount. */
static int iu_sandbox_fs(int fd)
{
    struct statfs sf;
    return fstatfs(fd, &sf) == 0 && (sf.f_type == OVERLAYFS_SUPER_MAGIC || sf.f_type == TMPFS_MAGIC);
}

/* etc/<leaf> of the sandbox, read as host root: no symlink followed, a
 * regular file only, at most LBSD_USER_DB_MAX bytes. A missing file is
 * empty; 0, or -1 with a sentence. */
static int iu_read(int etc, const char *leaf, char **out, size_t *len, char *msg, size_t msgsz)
{
    *out = NULL;
    *len = 0;
    int fd = openat(etc, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !iu_sandbox_fs(fd)) {
        snprintf(msg, msgsz, "the sandbox's /etc/%s is not a regular file (symlinks are not followed)", leaf);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (st.st_size > (off_t)LBSD_USER_DB_MAX) {
        snprintf(msg, msgsz, "the sandbox's /etc/%s is over %u bytes", leaf, (unsigned)LBSD_USER_DB_MAX);
        close(fd);
        return -1;
    }
    char *b = malloc(LBSD_USER_DB_MAX + 1);
    size_t got = 0;
    while (b && got < LBSD_USER_DB_MAX) {
        ssize_t r = read(fd, b + got, LBSD_USER_DB_MAX - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!b) {
        snprintf(msg, msgsz, "out of memory");
        return -1;
    }
    *out = b;
    *len = got; /* a file grown since the fstat is cut at the cap */
    return 0;
}

int lbsd_user_lookup(int root_fd, const char *name, lbsd_user_ids *out, char *msg, size_t msgsz)
{
    memset(out, 0, sizeof out[0]);
    if (!lbsd_user_name_ok(name)) {
        snprintf(msg, msgsz, "a user name is 1 to %d characters of [A-Za-z0-9_.-] (a '$' last)", LBSD_USER_NAME_MAX);
        return LB_E_INVAL;
    }
    if (!strcmp(name, "root")) {
        /* root is 0:0 in /root whatever the files say: code of the sandbox
         * that breaks its /etc/passwd must not lock E2B's root out */
        snprintf(out->name, sizeof out->name, "root");
        snprintf(out->home, sizeof out->home, "/root");
        out->ngroups = 1;
        return LB_OK;
    }
    int etc = openat(root_fd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char *pw = NULL, *gr = NULL;
    size_t pn = 0, gn = 0;
    int rc = LB_E_INVAL;
    if (etc >= 0 && !iu_sandbox_fs(etc)) {
        snprintf(msg, msgsz, "the sandbox's /etc is not on its own filesystem");
        goto out;
    }
    if (etc >= 0 && (iu_read(etc, "passwd", &pw, &pn, msg, msgsz) || iu_read(etc, "group", &gr, &gn, msg, msgsz)))
        goto out;
    if (lbsd_user_parse(pw, pn, gr, gn, name, out) != 0) {
        snprintf(msg, msgsz, "the sandbox has no user \"%s\" in its /etc/passwd (or its ids are over %d)", name,
                 LBSD_USER_ID_LIMIT - 1);
        rc = LB_E_NOTFOUND;
        goto out;
    }
    rc = LB_OK;
out:
    free(pw);
    free(gr);
    if (etc >= 0)
        close(etc);
    return rc;
}

int lbsd_user_become(const lbsd_user_ids *ids)
{
    gid_t g[LBSD_USER_GROUPS_MAX];
    int n = ids->ngroups < LBSD_USER_GROUPS_MAX ? ids->ngroups : LBSD_USER_GROUPS_MAX;
    for (int i = 0; i < n; i++)
        g[i] = (gid_t)ids->groups[i];
    if (setgroups((size_t)n, g) != 0 || setresgid(ids->gid, ids->gid, ids->gid) != 0 ||
        setresuid(ids->uid, ids->uid, ids->uid) != 0)
        return -1;
    return 0;
}
