/* gzip in and out of envd's /files route (e2b_gzip.h). */
#include "e2b/e2b_gzip.h"

#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int lb_e2b_gunzip(const char *in, size_t len, lb_buf *out)
{
    struct archive *a = archive_read_new();
    if (!a)
        return LB_E_NOMEM;
    int rc = LB_OK;
    struct archive_entry *ent;
    /* only gzip: a body that is something else (bzip2, xz, no filter at
     * all) is not what Content-Encoding said */
    if (archive_read_support_filter_gzip(a) != ARCHIVE_OK || archive_read_support_format_raw(a) != ARCHIVE_OK ||
        archive_read_support_format_empty(a) != ARCHIVE_OK || /* gzip of nothing */
        archive_read_open_memory(a, in, len) != ARCHIVE_OK || archive_filter_code(a, 0) != ARCHIVE_FILTER_GZIP) {
        rc = LB_E_INVAL;
        goto out;
    }
    int h = archive_read_next_header(a, &ent);
    if (h == ARCHIVE_EOF) /* gzip of nothing: an empty file */
        goto out;
    if (h != ARCHIVE_OK) {
        rc = LB_E_INVAL;
        goto out;
    }
    char chunk[65536];
    for (;;) {
        la_ssize_t n = archive_read_data(a, chunk, sizeof chunk);
        if (n == 0)
            break;
        if (n < 0) {
            rc = LB_E_INVAL;
            break;
        }
        if ((rc = lb_buf_append(out, chunk, (size_t)n)) != LB_OK)
            break;
    }
out:
    archive_read_free(a);
    return rc;
}

typedef struct {
    lb_buf *out;
    int rc;
} lb_gz_sink;

static la_ssize_t lb_gz_write(struct archive *a, void *arg, const void *p, size_t n)
{
    lb_gz_sink *k = arg;
    if (lb_buf_append(k->out, p, n) != LB_OK) {
        k->rc = LB_E_TOOBIG;
        archive_set_error(a, ENOSPC, "gzip output over its cap");
        return -1;
    }
    return (la_ssize_t)n;
}

int lb_e2b_gzip(const char *in, size_t len, lb_buf *out)
{
    struct archive *a = archive_write_new();
    if (!a)
        return LB_E_NOMEM;
    lb_gz_sink k = {out, LB_OK};
    struct archive_entry *e = archive_entry_new();
    int ok = e && archive_write_add_filter_gzip(a) == ARCHIVE_OK && archive_write_set_format_raw(a) == ARCHIVE_OK &&
             archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK &&
             archive_write_open2(a, &k, NULL, lb_gz_write, NULL, NULL) == ARCHIVE_OK;
    if (ok) {
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, (la_int64_t)len);
        ok = archive_write_header(a, e) == ARCHIVE_OK;
    }
    size_t done = 0;
    while (ok && done < len) {
        la_ssize_t n = archive_write_data(a, in + done, len - done);
        ok = n > 0;
        done += ok ? (size_t)n : 0;
    }
    ok = archive_write_close(a) == ARCHIVE_OK && ok;
    archive_entry_free(e);
    archive_write_free(a);
    return ok ? LB_OK : k.rc ? k.rc : LB_E_NOMEM;
}

int lb_e2b_accepts_gzip(const char *accept)
{
    if (!accept)
        return 0;
    const char *p = accept;
    while (*p) {
        size_t n = strcspn(p, ",");
        /* one entry: a name, then ";q=..." parameters */
        const char *e = p;
        while (e < p + n && isspace((unsigned char)*e))
            e++;
        size_t name = strcspn(e, ";, \t");
        if ((name == 4 && !strncasecmp(e, "gzip", 4)) || (name == 1 && *e == '*')) {
            const char *q = e + name;
            int zero = 0;
            while (q < p + n) {
                q += strspn(q, "; \t");
                if (q < p + n && (q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
                    double v = strtod(q + 2, NULL);
                    zero = v <= 0;
                }
                q += strcspn(q, ";,");
            }
            if (!zero)
                return 1;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}
