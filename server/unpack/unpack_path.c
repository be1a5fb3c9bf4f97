/* Layer entry names and symlink targets (unpack_path.h). */
#include "unpack/unpack_path.h"

#include "llmbox/utf8.h"

#include <string.h>

static int utf8_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t l = llmbox_utf8_decode((const unsigned char *)s + i, n - i, NULL);
        if (!l)
            return 0;
        i += l;
    }
    return 1;
}

int lbup_entry_path(const char *name, char *rel, size_t relsz, const char **why)
{
    if (!name || !*name) {
        *why = "has no name";
        return -1;
    }
    size_t n = strlen(name);
    if (n > LBUP_PATH_MAX) {
        *why = "has a path longer than 4096 bytes";
        return -1;
    }
    if (!utf8_ok(name, n)) {
        *why = "has a name that is not UTF-8";
        return -1;
    }
    if (name[0] == '/') {
        *why = "is an absolute path";
        return -1;
    }
    const char *p = name;
    while (p[0] == '.' && p[1] == '/') {
        p += 2;
        while (*p == '/')
            p++;
    }
    if (!strcmp(p, "."))
        p += 1;
    size_t len = strlen(p);
    while (len && p[len - 1] == '/')
        len--;
    if (len >= relsz) {
        *why = "has a path longer than 4096 bytes";
        return -1;
    }
    memcpy(rel, p, len);
    rel[len] = '\0';
    int depth = 0;
    for (const char *c = rel; *c;) {
        const char *e = strchr(c, '/');
        size_t cl = e ? (size_t)(e - c) : strlen(c);
        if (cl == 0 || (cl == 1 && c[0] == '.') || (cl == 2 && c[0] == '.' && c[1] == '.')) {
            *why = "has an empty, \".\" or \"..\" component (a way out of the layer)";
            return -1;
        }
        if (cl > LBUP_NAME_MAX) {
            *why = "has a name longer than 255 bytes";
            return -1;
        }
        if (++depth > LBUP_DEPTH_MAX) {
            *why = "is nested deeper than 128 folders";
            return -1;
        }
        c += cl + (e ? 1 : 0);
    }
    return 0;
}

int lbup_link_target_ok(const char *rel, const char *target, const char **why)
{
    size_t n = target ? strlen(target) : 0;
    if (!n || n > LBUP_PATH_MAX) {
        *why = "is a symlink with an empty or over-long target";
        return -1;
    }
    if (!utf8_ok(target, n)) {
        *why = "is a symlink whose target is not UTF-8";
        return -1;
    }
    if (target[0] == '/')
        return 0;
    /* the depth of the link's folder, then walk the target */
    long depth = 0;
    for (const char *c = rel; *c; c++)
        depth += *c == '/';
    for (const char *c = target; *c;) {
        const char *e = strchr(c, '/');
        size_t cl = e ? (size_t)(e - c) : strlen(c);
        if (cl == 2 && c[0] == '.' && c[1] == '.') {
            if (--depth < 0) {
                *why = "is a symlink that points outside the layer";
                return -1;
            }
        } else if (cl && !(cl == 1 && c[0] == '.')) {
            depth++;
        }
        c += cl + (e ? 1 : 0);
    }
    return 0;
}
