/* E2B's EntryInfo from sandboxd's stat and list answers (e2b_entry.h). */
#include "e2b/e2b_entry.h"

#include "common/util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void lb_e2b_perm_string(int kind, uint32_t mode, char *out, size_t outsz)
{
    /* Go's order of the type letters ("dalTLDpSugct?"), of which a stat on
     * Linux sets d, L, D, p, S, u, g, c and t */
    char b[32];
    size_t n = 0;
    if (kind == LBSB_KIND_DIR)
        b[n++] = 'd';
    if (kind == LBSB_KIND_SYMLINK)
        b[n++] = 'L';
    if (kind == LBSB_KIND_CHARDEV || kind == LBSB_KIND_BLOCKDEV)
        b[n++] = 'D';
    if (kind == LBSB_KIND_FIFO)
        b[n++] = 'p';
    if (kind == LBSB_KIND_SOCKET)
        b[n++] = 'S';
    if (mode & 04000)
        b[n++] = 'u';
    if (mode & 02000)
        b[n++] = 'g';
    if (kind == LBSB_KIND_CHARDEV)
        b[n++] = 'c';
    if (mode & 01000)
        b[n++] = 't';
    if (kind == LBSB_KIND_OTHER)
        b[n++] = '?';
    if (!n)
        b[n++] = '-';
    static const char rwx[] = "rwxrwxrwx";
    for (int i = 0; i < 9; i++)
        b[n++] = mode & (0400u >> i) ? rwx[i] : '-';
    b[n] = '\0';
    snprintf(out, outsz, "%s", b);
}

int lb_e2b_rfc3339(int64_t s, uint32_t ns, char *out, size_t outsz)
{
    /* 0001-01-01 .. 9999-12-31T23:59:59 */
    if (s < -62135596800LL || s > 253402300799LL || ns > 999999999u)
        return -1;
    time_t t = (time_t)s;
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return -1;
    char day[32], frac[16] = "";
    if (!strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm))
        return -1;
    if (ns)
        snprintf(frac, sizeof frac, ".%09u", ns);
    int w = snprintf(out, outsz, "%s%sZ", day, frac);
    return w > 0 && (size_t)w < outsz ? 0 : -1;
}

int lb_e2b_id_lookup(const char *db, size_t len, uint32_t id, char *out, size_t outsz)
{
    /* "name:passwd:id:..." lines; the file is the sandbox's to write, so a
     * name is taken only when it looks like one (what useradd allows) */
    size_t i = 0;
    while (db && i < len) {
        const char *line = db + i;
        const char *nl = memchr(line, '\n', len - i);
        size_t n = nl ? (size_t)(nl - line) : len - i;
        i += n + 1;
        const char *c1 = memchr(line, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
        if (!c2)
            continue;
        size_t nlen = (size_t)(c1 - line);
        const char *num = c2 + 1, *end = line + n;
        uint64_t v = 0;
        size_t d = 0;
        while (num + d < end && num[d] >= '0' && num[d] <= '9' && d < 10)
            v = v * 10 + (uint64_t)(num[d++] - '0');
        if (!d || num + d >= end || num[d] != ':' || v != id)
            continue;
        /* the id's first line decides: a later one is not taken instead */
        int ok = nlen && nlen <= 32 && nlen + 1 <= outsz && line[0] != '-';
        for (size_t k = 0; ok && k < nlen; k++) {
            char ch = line[k];
            ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                 ch == '.' || ch == '-' || (ch == '$' && k == nlen - 1);
        }
        if (!ok)
            return 0;
        memcpy(out, line, nlen);
        out[nlen] = '\0';
        return 1;
    }
    return 0;
}

int lb_e2b_user_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 1 || n > 32 || name[0] == '-')
        return 0;
    for (size_t k = 0; k < n; k++) {
        char ch = name[k];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '.' || ch == '-' || (ch == '$' && k == n - 1)))
            return 0;
    }
    return 1;
}

/* Field k of the ':'-separated line [s, s+n) as [*f, *f+*fl) (common/util.h's
 * lb_colon_field, as lengths); 0 when the line has fewer fields. */
static int lb_e2b_field(const char *s, size_t n, int k, const char **f, size_t *fl)
{
    const char *fe;
    if (!lb_colon_field(s, s + n, k, f, &fe))
        return 0;
    *fl = (size_t)(fe - *f);
    return 1;
}

/* a decimal id below 65536 (those a sandbox maps: sandboxd's image_user.h) */
static int lb_e2b_small_id(const char *f, size_t n)
{
    if (n < 1 || n > 5)
        return 0;
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (f[i] < '0' || f[i] > '9')
            return 0;
        v = v * 10 + (uint32_t)(f[i] - '0');
    }
    return v < 65536;
}

int lb_e2b_user_home(const char *db, size_t len, const char *name, char *out, size_t outsz)
{
    /* the same rules as sandboxd's lookup (image_user.c), which decides the
     * ids: so a user this finds is one sandboxd runs as */
    size_t nl = name ? strlen(name) : 0, i = 0;
    if (outsz < 2 || !lb_e2b_user_name_ok(name))
        return 0;
    while (db && i < len) {
        const char *line = db + i, *f, *h;
        const char *end = memchr(line, '\n', len - i);
        size_t n = end ? (size_t)(end - line) : len - i, fl, hl;
        i += n + 1;
        if (!lb_e2b_field(line, n, 0, &f, &fl) || fl != nl || memcmp(f, name, nl) ||
            !lb_e2b_field(line, n, 2, &f, &fl) || !lb_e2b_small_id(f, fl) || !lb_e2b_field(line, n, 3, &f, &fl) ||
            !lb_e2b_small_id(f, fl))
            continue;
        int ok = lb_e2b_field(line, n, 5, &h, &hl) && hl >= 1 && hl < outsz && h[0] == '/';
        for (size_t k = 0; ok && k < hl; k++)
            ok = (unsigned char)h[k] >= 0x20 && h[k] != 0x7f;
        if (ok) {
            memcpy(out, h, hl);
            out[hl] = '\0';
        } else {
            snprintf(out, outsz, "/");
        }
        return 1;
    }
    return 0;
}

/* an owner's name from the sandbox's own /etc/passwd or /etc/group (db,
 * NULL when it could not be read); root for 0 always, the number for an
 * id without a name, as envd does */
static void lb_e2b_id_name(const lb_e2b_iddb *db, int group, uint32_t id, char *out, size_t outsz)
{
    const char *f = db ? (group ? db->group : db->passwd) : NULL;
    size_t n = db ? (group ? db->group_len : db->passwd_len) : 0;
    if (id == 0)
        snprintf(out, outsz, "root");
    else if (!lb_e2b_id_lookup(f, n, id, out, outsz))
        snprintf(out, outsz, "%u", id);
}

void lb_e2b_link_abs(const char *link, const char *target, char *out, size_t outsz)
{
    /* the link's folder, then the target, as one path to clean */
    char joined[2 * 4096 + 2];
    const char *slash = strrchr(link, '/');
    int dir = slash ? (int)(slash - link) : 0;
    if (target[0] == '/')
        snprintf(joined, sizeof joined, "%s", target);
    else
        snprintf(joined, sizeof joined, "%.*s/%s", dir, link, target);
    /* Go's filepath.Clean of an absolute path: no ".", "..", empty names */
    size_t n = 0, cap = outsz;
    if (cap < 2) {
        if (cap)
            out[0] = '\0';
        return;
    }
    out[n++] = '/';
    const char *p = joined;
    while (*p) {
        while (*p == '/')
            p++;
        size_t len = strcspn(p, "/");
        if (!len)
            break;
        if (len == 1 && p[0] == '.') {
            /* nothing */
        } else if (len == 2 && p[0] == '.' && p[1] == '.') {
            while (n > 1 && out[n - 1] != '/')
                n--;
            if (n > 1)
                n--; /* the slash before the dropped name */
        } else if (n + (n > 1) + len < cap) {
            if (n > 1)
                out[n++] = '/';
            memcpy(out + n, p, len);
            n += len;
        }
        p += len;
    }
    out[n] = '\0';
}

cJSON *lb_e2b_entry(const char *path, const lbsb_entry *e)
{
    return lb_e2b_entry_db(path, e, NULL);
}

cJSON *lb_e2b_entry_db(const char *path, const lbsb_entry *e, const lb_e2b_iddb *db)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    const char *slash = strrchr(path, '/');
    char sz[24], perm[32], owner[40], group[40], when[48];
    /* envd's size is the filesystem's, a directory's 4096 included */
    snprintf(sz, sizeof sz, "%llu", (unsigned long long)(e->has_meta ? e->fs_size : e->size));
    int kind = e->has_meta ? e->kind : e->type == 1 ? LBSB_KIND_FILE : e->type == 2 ? LBSB_KIND_DIR : LBSB_KIND_OTHER;
    /* symlinks are never followed: their own entry, with the target */
    const char *t = kind == LBSB_KIND_FILE ? "FILE_TYPE_FILE" : kind == LBSB_KIND_DIR ? "FILE_TYPE_DIRECTORY"
                  : kind == LBSB_KIND_SYMLINK ? "FILE_TYPE_SYMLINK" : "FILE_TYPE_UNSPECIFIED";
    lb_e2b_id_name(db, 0, e->has_meta ? e->uid : 0, owner, sizeof owner);
    lb_e2b_id_name(db, 1, e->has_meta ? e->gid : 0, group, sizeof group);
    int ok = cJSON_AddStringToObject(o, "name", slash && slash[1] ? slash + 1 : path) &&
             cJSON_AddStringToObject(o, "type", t) && cJSON_AddStringToObject(o, "path", path) &&
             cJSON_AddStringToObject(o, "size", sz) && cJSON_AddStringToObject(o, "owner", owner) &&
             cJSON_AddStringToObject(o, "group", group);
    if (ok && e->has_meta) {
        lb_e2b_perm_string(kind, e->mode, perm, sizeof perm);
        /* envd's mode is Go's FileMode.Perm(): the nine rwx bits */
        ok = cJSON_AddNumberToObject(o, "mode", (double)(e->mode & 0777)) &&
             cJSON_AddStringToObject(o, "permissions", perm);
        if (ok && lb_e2b_rfc3339(e->mtime_s, e->mtime_ns, when, sizeof when) == 0)
            ok = cJSON_AddStringToObject(o, "modifiedTime", when) != NULL;
        if (ok && e->target) {
            /* envd gives the path the link resolves to, absolute: the link's
             * folder joined with its text, cleaned */
            char abs[4096];
            lb_e2b_link_abs(path, e->target, abs, sizeof abs);
            ok = cJSON_AddStringToObject(o, "symlinkTarget", abs) != NULL;
        }
        /* envd 0.6.2's file metadata (checked by the client: an object of
         * short strings) */
        cJSON *m = ok && e->file_meta ? cJSON_Parse(e->file_meta) : NULL;
        if (m && !cJSON_AddItemToObject(o, "metadata", m)) {
            cJSON_Delete(m);
            ok = 0;
        }
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
