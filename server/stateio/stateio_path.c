/* The check of a saved state's entry names (stateio_path.h). Any bytes
 * but '/' and NUL may stand in a name (a sandbox's files may be called
 * anything); what may not is a way out: "..", ".", an empty component, a
 * leading '/', or a path outside "layer/". */
#include "stateio/stateio_path.h"

#include "stateio/stateio.h"

#include <string.h>

int lbst_entry_path(const char *name, char *rel, size_t relsz, const char **why)
{
    if (!name) {
        *why = "has no name";
        return -1;
    }
    if (strlen(name) > LBST_PATH_MAX + 6) {
        *why = "has a path longer than 4096 bytes";
        return -1;
    }
    if (strncmp(name, "layer/", 6) != 0 && strcmp(name, "layer") != 0) {
        *why = "is not under layer/";
        return -1;
    }
    const char *p = name + (name[5] ? 6 : 5);
    size_t len = strlen(p);
    while (len && p[len - 1] == '/')
        len--;
    if (len >= relsz || len > LBST_PATH_MAX) {
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
            *why = "has an empty, \".\" or \"..\" component (a path out of the sandbox)";
            return -1;
        }
        if (cl > LBST_NAME_MAX) {
            *why = "has a name longer than 255 bytes";
            return -1;
        }
        if (++depth > LBST_DEPTH_MAX) {
            *why = "is nested deeper than 128 folders";
            return -1;
        }
        c += cl + (e ? 1 : 0);
    }
    return 0;
}
