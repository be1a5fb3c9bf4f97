/* Unit tests for a saved state made an OCI layer (server/images/
 * build_layer.c): the layer/ prefix and meta/ dropped, whiteouts kept,
 * sandboxd's own shell state and opaque marks of /run and /testbed dropped,
 * setuid dropped, the digest; a state with an entry outside layer/, a
 * path with "..", a device, a hard link or too many bytes refused with
 * nothing left behind. States are written here with libarchive as
 * llmbox-stateio writes them (zstd pax tar). */
#include "testlib.h"

#include "common/status.h"
#include "images/build_layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct ent {
    const char *path;
    mode_t type;
    int perm;
    const char *data;   /* file contents, or a symlink's target */
    const char *hardlink;
} ent;

static char dir[] = "/tmp/llmbox-layer-XXXXXX";

static int write_state(const char *path, const ent *es, int n)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_zstd(a);
    if (archive_write_open_filename(a, path) != ARCHIVE_OK)
        return -1;
    for (int i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, es[i].path);
        archive_entry_set_filetype(e, es[i].type);
        archive_entry_set_perm(e, es[i].perm);
        if (es[i].type == AE_IFLNK)
            archive_entry_set_symlink(e, es[i].data);
        if (es[i].hardlink)
            archive_entry_set_hardlink(e, es[i].hardlink);
        size_t len = es[i].type == AE_IFREG && es[i].data ? strlen(es[i].data) : 0;
        archive_entry_set_size(e, (la_int64_t)len);
        if (es[i].type == AE_IFCHR)
            archive_entry_set_rdev(e, 0);
        archive_write_header(a, e);
        if (len)
            archive_write_data(a, es[i].data, len);
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    return 0;
}

/* "path:mode[:data]" lines of the layer at path */
static void read_layer(const char *path, char *out, size_t outsz)
{
    out[0] = '\0';
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    if (archive_read_open_filename(a, path, 10240) != ARCHIVE_OK) {
        archive_read_free(a);
        return;
    }
    struct archive_entry *e;
    size_t off = 0;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        char data[64] = "";
        la_ssize_t k = archive_read_data(a, data, sizeof data - 1);
        if (k > 0)
            data[k] = '\0';
        if (archive_entry_filetype(e) == AE_IFLNK)
            snprintf(data, sizeof data, "->%s", archive_entry_symlink(e));
        off += (size_t)snprintf(out + off, outsz - off, "%s:%o%s%s\n", archive_entry_pathname(e),
                                (unsigned)archive_entry_perm(e), data[0] ? ":" : "", data);
    }
    archive_read_free(a);
}

TEST(a_state_becomes_a_layer)
{
    char state[64], layer[64], got[2048], msg[256] = "";
    snprintf(state, sizeof state, "%s/s.state", dir);
    snprintf(layer, sizeof layer, "%s/layer.tar", dir);
    ent es[] = {
        {"meta/image", AE_IFREG, 0644, "default", NULL},
        {"layer/", AE_IFDIR, 0755, NULL, NULL},
        {"layer/etc/", AE_IFDIR, 0755, NULL, NULL},
        {"layer/etc/hello", AE_IFREG, 0644, "hi", NULL},
        {"layer/etc/.wh.passwd", AE_IFREG, 0, NULL, NULL},
        {"layer/usr/", AE_IFDIR, 0755, NULL, NULL},
        {"layer/usr/.wh..wh..opq", AE_IFREG, 0, NULL, NULL},
        {"layer/bin/su", AE_IFREG, 04755, "x", NULL},
        {"layer/link", AE_IFLNK, 0777, "etc/hello", NULL},
        /* sandboxd's own: left out */
        {"layer/run/.llmbox-shell", AE_IFREG, 0644, "state", NULL},
        {"layer/run/.wh..wh..opq", AE_IFREG, 0, NULL, NULL},
        {"layer/testbed/.wh..wh..opq", AE_IFREG, 0, NULL, NULL},
        {"layer/testbed/input/.wh..wh..opq", AE_IFREG, 0, NULL, NULL},
    };
    CHECK(write_state(state, es, (int)(sizeof es / sizeof es[0])) == 0);
    lb_build_layer info;
    CHECK(lb_build_layer_from_state(state, layer, 1 << 20, &info, msg, sizeof msg) == LB_OK);
    if (msg[0])
        printf("  %s\n", msg);
    read_layer(layer, got, sizeof got);
    CHECK_STR(got, "etc/:755\netc/hello:644:hi\netc/.wh.passwd:0\nusr/:755\nusr/.wh..wh..opq:0\nbin/su:755:x\n"
                   "link:777:->etc/hello\n");
    CHECK(info.entries == 7);
    /* the digest is the file's sha256 */
    FILE *f = fopen(layer, "rb");
    unsigned char buf[65536], md[32];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    unsigned int ml = 0;
    EVP_Digest(buf, n, md, &ml, EVP_sha256(), NULL);
    char hex[72] = "sha256:";
    for (int i = 0; i < 32; i++)
        snprintf(hex + 7 + 2 * i, 3, "%02x", md[i]);
    CHECK_STR(info.digest, hex);
    CHECK(info.size == (long long)n);
    unlink(layer);
    unlink(state);
}

static int refused(const ent *es, int n, long long max, const char *words)
{
    char state[64], layer[64], tmp[80], msg[256] = "";
    snprintf(state, sizeof state, "%s/bad.state", dir);
    snprintf(layer, sizeof layer, "%s/bad.tar", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", layer);
    if (write_state(state, es, n))
        return 0;
    lb_build_layer info;
    int rc = lb_build_layer_from_state(state, layer, max, &info, msg, sizeof msg);
    int ok = rc != LB_OK && strstr(msg, words) && access(layer, F_OK) != 0 && access(tmp, F_OK) != 0;
    if (!ok)
        printf("  rc %d msg \"%s\"\n", rc, msg);
    unlink(state);
    return ok;
}

TEST(bad_states_are_refused_and_leave_nothing)
{
    ent outside[] = {{"layer/a", AE_IFREG, 0644, "a", NULL}, {"etc/passwd", AE_IFREG, 0644, "x", NULL}};
    CHECK(refused(outside, 2, 1 << 20, "outside layer/: etc/passwd"));
    ent dots[] = {{"layer/../../etc/passwd", AE_IFREG, 0644, "x", NULL}};
    CHECK(refused(dots, 1, 1 << 20, "is not a clean path"));
    ent dev[] = {{"layer/dev/null", AE_IFCHR, 0644, NULL, NULL}};
    CHECK(refused(dev, 1, 1 << 20, "not a folder, a file or a symlink"));
    ent hard[] = {{"layer/a", AE_IFREG, 0644, "a", NULL}, {"layer/b", AE_IFREG, 0644, NULL, "layer/a"}};
    CHECK(refused(hard, 2, 1 << 20, "is a hard link"));
    ent big[] = {{"layer/a", AE_IFREG, 0644, "0123456789", NULL}, {"layer/b", AE_IFREG, 0644, "0123456789", NULL}};
    CHECK(refused(big, 2, 15, "more than 15 bytes together (at layer/b)"));
    char msg[256] = "";
    lb_build_layer info;
    CHECK(lb_build_layer_from_state("/nonexistent/state", "/tmp/llmbox-never", 1, &info, msg, sizeof msg) ==
          LB_E_IO);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        printf("FAIL setup: mkdtemp\n");
        return 1;
    }
    RUN(a_state_becomes_a_layer);
    RUN(bad_states_are_refused_and_leave_nothing);
    rmdir(dir);
    return testlib_done();
}
