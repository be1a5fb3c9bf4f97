/*
 * E2B's EntryInfo (envd's filesystem.proto) from sandboxd's stat and list
 * answers (lbsb_entry): the JSON the SDK's files.getInfo, files.list,
 * makeDir and rename return to user code.
 */
#ifndef LB_WEB_E2B_ENTRY_H
#define LB_WEB_E2B_ENTRY_H

#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Go's os.FileMode.String() of what envd would stat ("drwxr-xr-x",
 * "-rw-r--r--", "Lrwxrwxrwx", "dtrwxrwxrwx" for a sticky directory, "urwx..."
 * for setuid): kind is enum lbsb_kind, mode the 07777 bits. out >= 24. */
void lb_e2b_perm_string(int kind, uint32_t mode, char *out, size_t outsz);
/* RFC 3339 in UTC as protobuf's JSON writes a Timestamp ("...Z", with 9
 * digits of fraction when ns != 0). out >= 40. 0, or -1 if the year is not
 * 1..9999 (protobuf's range). */
int lb_e2b_rfc3339(int64_t s, uint32_t ns, char *out, size_t outsz);
/* The absolute path a symlink at absolute path link whose text is target
 * points to, cleaned of ".", ".." and doubled slashes (one level: a link
 * the target names, or one in its folders, is not followed). */
void lb_e2b_link_abs(const char *link, const char *target, char *out, size_t outsz);
/* The sandbox's /etc/passwd and /etc/group as read through sandboxd
 * (capped, never through a symlink): the owners' names. NULL/0 when not
 * read. */
typedef struct lb_e2b_iddb {
    const char *passwd, *group;
    size_t passwd_len, group_len;
} lb_e2b_iddb;

/* The name of id in db, the text of an /etc/passwd or /etc/group (hostile:
 * the sandbox writes it): the first line whose third field is id, if its
 * name is 1 to 32 of [A-Za-z0-9_.-] (not starting with '-', a '$' at the
 * end allowed) and fits out. 1 and the name in out, or 0. */
int lb_e2b_id_lookup(const char *db, size_t len, uint32_t id, char *out, size_t outsz);
/* 1 when name looks like a user's name: 1 to 32 of [A-Za-z0-9_.-], not
 * starting with '-', a '$' at the end allowed (what useradd allows). */
int lb_e2b_user_name_ok(const char *name);
/* The home of user name in db, the text of an /etc/passwd (hostile): the
 * first line whose first field is name and whose uid and gid fields are
 * decimal ids below 65536 (those a sandbox maps); its sixth field when it
 * is absolute, printable and fits out, else "/" (as login does). 1 and
 * the home in out (outsz >= 2), or 0 when there is no such user. */
int lb_e2b_user_home(const char *db, size_t len, const char *name, char *out, size_t outsz);
/* lb_e2b_entry with the owner's and group's names from db (NULL: numbers,
 * root for 0). */
cJSON *lb_e2b_entry_db(const char *path, const lbsb_entry *e, const lb_e2b_iddb *db);
/* The EntryInfo of absolute path; NULL when out of memory. */
cJSON *lb_e2b_entry(const char *path, const lbsb_entry *e);

#endif
