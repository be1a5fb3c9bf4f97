/* A saved state into an OCI layer tar (build_layer.h). */
#include "images/build_layer.h"

#include "common/util.h"
#include "common/path.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct sink {
    int fd;
    EVP_MD_CTX *sha;
    long long size;
    int failed;
} sink;

static la_ssize_t sink_write(struct archive *a, void *ud, const void *buf, size_t n)
{
    (void)a;
    sink *s = ud;
    const char *p = buf;
    for (size_t off = 0; off < n;) {
        ssize_t w = write(s->fd, p + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            s->failed = 1;
            return -1;
        }
        off += (size_t)w;
    }
    EVP_DigestUpdate(s->sha, buf, n);
    s->size += (long long)n;
    return (la_ssize_t)n;
}

/* What sandboxd itself puts in every sandbox's writable layer, not the
 * step's work: the shell's state file, and the opaque marks of the folders
 * it makes fresh at create (they would hide the image's own /run and
 * /testbed under the new layer). */
static int sandbox_own(const char *rel)
{
    static const char *const own[] = {"run/.llmbox-shell", "run/.wh..wh..opq", "testbed/.wh..wh..opq",
                                      "testbed/input/.wh..wh..opq", "testbed/output/.wh..wh..opq"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcmp(rel, own[i]))
            return 1;
    return 0;
}

/* One entry of the state: refused unless it is a clean path under layer/
 * and a folder, a file or a symlink. *rel gets the path in the layer. */
static int entry_ok(struct archive_entry *e, char *rel, size_t relsz, char *msg, size_t msgsz)
{
    const char *p = archive_entry_pathname(e);
    if (!p || strncmp(p, "layer/", 6)) {
        lb_say(msg, msgsz, "The saved state has an entry outside layer/: %.200s.", p ? p : "(no name)");
        return LB_E_INVAL;
    }
    p += 6;
    size_t n = strlen(p);
    while (n && p[n - 1] == '/')
        n--;
    if (!n) {
        rel[0] = '\0';
        return LB_OK; /* layer/ itself */
    }
    if (lb_path_clean_rel(p, n, rel, relsz) != LB_OK) {
        lb_say(msg, msgsz, "The saved state's entry layer/%.200s is not a clean path.", p);
        return LB_E_INVAL;
    }
    if (archive_entry_hardlink(e)) {
        lb_say(msg, msgsz, "The saved state's entry layer/%.200s is a hard link.", rel);
        return LB_E_INVAL;
    }
    mode_t t = archive_entry_filetype(e);
    if (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK) {
        lb_say(msg, msgsz, "The saved state's entry layer/%.200s is not a folder, a file or a symlink.", rel);
        return LB_E_INVAL;
    }
    return LB_OK;
}

int lb_build_layer_from_state(const char *state_path, const char *out_path, long long max_bytes,
                              lb_build_layer *out, char *msg, size_t msgsz)
{
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", out_path) >= sizeof tmp) {
        lb_say(msg, msgsz, "The layer's path is too long.");
        return LB_E_TOOBIG;
    }
    struct archive *in = archive_read_new(), *wr = archive_write_new();
    sink s = {.fd = -1, .sha = EVP_MD_CTX_new()};
    int rc = LB_OK;
    long entries = 0;
    long long bytes = 0;
    char *buf = malloc(65536);
    if (!in || !wr || !s.sha || !buf || !EVP_DigestInit_ex(s.sha, EVP_sha256(), NULL)) {
        rc = LB_E_NOMEM;
        goto out;
    }
    archive_read_support_format_tar(in);
    archive_read_support_filter_zstd(in);
    archive_read_support_filter_gzip(in);
    if (archive_read_open_filename(in, state_path, 65536) != ARCHIVE_OK) {
        lb_say(msg, msgsz, "Cannot read the saved state %s: %s.", state_path, archive_error_string(in));
        rc = LB_E_IO;
        goto out;
    }
    s.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (s.fd < 0) {
        lb_say(msg, msgsz, "Cannot write %s: %s.", tmp, strerror(errno));
        rc = LB_E_IO;
        goto out;
    }
    /* the ustar/pax form tools read; no compression: the layer's digest is its diff_id */
    if (archive_write_set_format_pax_restricted(wr) != ARCHIVE_OK || archive_write_set_bytes_in_last_block(wr, 1) ||
        archive_write_open2(wr, &s, NULL, sink_write, NULL, NULL) != ARCHIVE_OK) {
        lb_say(msg, msgsz, "Cannot start the layer: %s.", archive_error_string(wr));
        rc = LB_E_IO;
        goto out;
    }
    struct archive_entry *e;
    for (;;) {
        int r = archive_read_next_header(in, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK) {
            lb_say(msg, msgsz, "The saved state is damaged: %s.", archive_error_string(in));
            rc = LB_E_INVAL;
            goto out;
        }
        const char *name = archive_entry_pathname(e);
        if (name && !strncmp(name, "meta/", 5))
            continue; /* the state's own record (its image), not the layer's */
        char rel[LB_PATH_MAX + 1];
        if ((rc = entry_ok(e, rel, sizeof rel, msg, msgsz)))
            goto out;
        if (!rel[0] || sandbox_own(rel))
            continue;
        if (++entries > LB_BUILD_LAYER_ENTRIES_MAX) {
            lb_say(msg, msgsz, "The saved state has more than %d entries.", LB_BUILD_LAYER_ENTRIES_MAX);
            rc = LB_E_TOOBIG;
            goto out;
        }
        long long sz = archive_entry_filetype(e) == AE_IFREG ? archive_entry_size(e) : 0;
        if (sz < 0 || sz > max_bytes - bytes) {
            lb_say(msg, msgsz, "The saved state's files are more than %lld bytes together (at layer/%.200s).", max_bytes,
                rel);
            rc = LB_E_TOOBIG;
            goto out;
        }
        bytes += sz;
        archive_entry_set_pathname(e, rel);
        /* setuid and setgid do not carry into an image (a restore drops them too) */
        archive_entry_set_perm(e, archive_entry_perm(e) & 01777);
        if (archive_write_header(wr, e) != ARCHIVE_OK) {
            lb_say(msg, msgsz, "Cannot write the layer's entry %.200s: %s.", rel, archive_error_string(wr));
            rc = LB_E_IO;
            goto out;
        }
        for (long long left = sz; left > 0;) {
            la_ssize_t k = archive_read_data(in, buf, 65536);
            if (k <= 0 || k > left) {
                lb_say(msg, msgsz, "The saved state's file layer/%.200s is cut short or longer than its header says.",
                    rel);
                rc = LB_E_INVAL;
                goto out;
            }
            if (archive_write_data(wr, buf, (size_t)k) != k) {
                lb_say(msg, msgsz, "Cannot write the layer's file %.200s: %s.", rel, archive_error_string(wr));
                rc = LB_E_IO;
                goto out;
            }
            left -= k;
        }
    }
    if (archive_write_close(wr) != ARCHIVE_OK || s.failed || fsync(s.fd)) {
        lb_say(msg, msgsz, "Cannot finish the layer %s: %s.", tmp, strerror(errno));
        rc = LB_E_IO;
        goto out;
    }
    unsigned char md[32];
    unsigned int ml = 0;
    EVP_DigestFinal_ex(s.sha, md, &ml);
    memcpy(out->digest, "sha256:", 7);
    for (int i = 0; i < 32; i++)
        snprintf(out->digest + 7 + 2 * i, 3, "%02x", md[i]);
    out->size = s.size;
    out->entries = entries;
    if (close(s.fd) || rename(tmp, out_path)) {
        s.fd = -1;
        lb_say(msg, msgsz, "Cannot store the layer %s: %s.", out_path, strerror(errno));
        rc = LB_E_IO;
        goto out;
    }
    s.fd = -1;
out:
    if (in)
        archive_read_free(in);
    if (wr)
        archive_write_free(wr); /* before the file is closed: a failed one may still flush */
    if (s.fd >= 0)
        close(s.fd);
    if (rc)
        unlink(tmp);
    EVP_MD_CTX_free(s.sha);
    free(buf);
    return rc;
}
