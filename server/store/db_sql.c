/* The store's SQL text between the dialects, and its location in
 * messages; the contracts are db_priv.h (lb_db_sql_to_pg) and db.h. */
#include "store/db_priv.h"

#include "common/status.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lb_db_sql_to_pg(const char *sql, char **out, int *nparams, uint64_t *used)
{
    *out = NULL;
    *nparams = 0;
    *used = 0;
    size_t n = strlen(sql);
    if (n > LB_DB_SQL_MAX)
        return LB_E_TOOBIG;
    /* "?" becomes at most "$64": 3 bytes for each byte */
    char *o = malloc(n * 3 + 1);
    if (!o)
        return LB_E_NOMEM;
    size_t k = 0;
    int next = 0, max = 0;
    char quote = 0;
    for (size_t i = 0; i < n; i++) {
        char c = sql[i];
        if (quote) {
            if (c == quote)
                quote = 0; /* '' reads as a close and an open: still right */
            o[k++] = c;
            continue;
        }
        if (c == '\'' || c == '"') {
            quote = c;
            o[k++] = c;
            continue;
        }
        if (c != '?') {
            o[k++] = c;
            continue;
        }
        int num;
        if (isdigit((unsigned char)sql[i + 1])) {
            num = 0;
            while (isdigit((unsigned char)sql[i + 1]) && num <= LB_DB_PARAMS_MAX)
                num = num * 10 + (sql[++i] - '0');
            if (num == 0) {
                free(o);
                return LB_E_INVAL;
            }
        } else {
            num = ++next;
        }
        if (num > LB_DB_PARAMS_MAX) {
            free(o);
            return LB_E_TOOBIG;
        }
        next = num > next ? num : next;
        max = num > max ? num : max;
        *used |= (uint64_t)1 << (num - 1);
        k += (size_t)snprintf(o + k, 4, "$%d", num);
    }
    o[k] = '\0';
    *out = o;
    *nparams = max;
    return LB_OK;
}

int lb_db_where_is_url(const char *where)
{
    return where && (!strncmp(where, "postgresql://", 13) || !strncmp(where, "postgres://", 11));
}

void lb_db_where_redact(const char *where, char *out, size_t outsz)
{
    if (!outsz)
        return;
    out[0] = '\0';
    if (!where)
        return;
    size_t k = 0;
    const char *p = where;
    /* scheme://user:PASSWORD@host: the password ends at the last '@'
     * before the path (a password may hold '@' percent-encoded only) */
    const char *auth = lb_db_where_is_url(where) ? strstr(where, "://") : NULL;
    const char *at = NULL, *colon = NULL;
    if (auth) {
        auth += 3;
        size_t authlen = strcspn(auth, "/?");
        for (size_t i = 0; i < authlen; i++) {
            if (auth[i] == '@')
                at = auth + i;
            if (auth[i] == ':' && !colon)
                colon = auth + i;
        }
        if (colon && at && colon > at)
            colon = NULL;
    }
    while (*p && k + 1 < outsz) {
        if (colon && at && p == colon + 1) {
            k += (size_t)snprintf(out + k, outsz - k, "***");
            p = at;
            continue;
        }
        if ((p == where || p[-1] == '?' || p[-1] == '&' || p[-1] == ' ') && !strncmp(p, "password=", 9)) {
            k += (size_t)snprintf(out + k, outsz - k, "password=***");
            p += 9;
            p += strcspn(p, "& ");
            continue;
        }
        out[k++] = *p++;
    }
    if (k >= outsz)
        k = outsz - 1;
    out[k] = '\0';
}
