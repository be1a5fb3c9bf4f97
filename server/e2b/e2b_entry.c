/* E2B's EntryInfo from sandboxd's stat and list answers (e2b_entry.h). */
#include "e2b/e2b_entry.h"

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

/* an owner's name: sandboxd gives ids as the sandbox sees them; only root's
 * name is certain (the image's /etc/passwd is the sandbox's to change), so
 * other ids are given as numbers, as envd does for an id without a name */
static void lb_e2b_id_name(uint32_t id, char *out, size_t outsz)
{
    if (id == 0)
        snprintf(out, outsz, "root");
    else
        snprintf(out, outsz, "%u", id);
}

cJSON *lb_e2b_entry(const char *path, const lbsb_entry *e)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    const char *slash = strrchr(path, '/');
    char sz[24], perm[32], owner[16], group[16], when[48];
    snprintf(sz, sizeof sz, "%llu", (unsigned long long)e->size);
    int kind = e->has_meta ? e->kind : e->type == 1 ? LBSB_KIND_FILE : e->type == 2 ? LBSB_KIND_DIR : LBSB_KIND_OTHER;
    /* symlinks are never followed: their own entry, with the target */
    const char *t = kind == LBSB_KIND_FILE ? "FILE_TYPE_FILE" : kind == LBSB_KIND_DIR ? "FILE_TYPE_DIRECTORY"
                  : kind == LBSB_KIND_SYMLINK ? "FILE_TYPE_SYMLINK" : "FILE_TYPE_UNSPECIFIED";
    lb_e2b_id_name(e->has_meta ? e->uid : 0, owner, sizeof owner);
    lb_e2b_id_name(e->has_meta ? e->gid : 0, group, sizeof group);
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
        if (ok && e->target)
            ok = cJSON_AddStringToObject(o, "symlinkTarget", e->target) != NULL;
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
