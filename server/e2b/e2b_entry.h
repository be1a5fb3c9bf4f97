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
/* The EntryInfo of absolute path; NULL when out of memory. */
cJSON *lb_e2b_entry(const char *path, const lbsb_entry *e);

#endif
