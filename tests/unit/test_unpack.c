/* Unit tests for the archive unpacker (server/web/unpack.h). Every archive
 * is crafted here with libarchive's writer: the hostile ones hold what a
 * careful archiver would never write (absolute paths, "..", links, devices,
 * duplicates, bombs). */
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "web/unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

typedef struct spec {
    const char *name;
    char type;          /* 'f' file, 'd' folder, 'l' symlink, 'h' hard link, 'c' char device, 'p' fifo */
    const char *data;   /* file contents, or link target */
    size_t zeros;       /* 'f' with data NULL: this many zero bytes */
} spec;

static char tmpdir[256];
static int counter;

static void setup(void)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/llmbox-unpack-test-XXXXXX");
        if (!mkdtemp(tmpdir))
            abort();
    }
}

/* Writes the entries as an archive of kind to a new file; returns its path. */
static const char *make_archive(lb_archive_kind kind, const spec *s, size_t n, const char *opts)
{
    static char path[512];
    setup();
    snprintf(path, sizeof path, "%s/a%d.%s", tmpdir, ++counter,
             kind == LB_ARCHIVE_ZIP ? "zip" : kind == LB_ARCHIVE_TAR_GZ ? "tar.gz" : "tar");
    struct archive *a = archive_write_new();
    if (kind == LB_ARCHIVE_ZIP) {
        archive_write_set_format_zip(a);
        archive_write_set_format_option(a, "zip", "hdrcharset", "UTF-8");
    } else {
        archive_write_set_format_gnutar(a);
        if (kind == LB_ARCHIVE_TAR_GZ)
            archive_write_add_filter_gzip(a);
    }
    if (opts && archive_write_set_options(a, opts) != ARCHIVE_OK) {
        archive_write_free(a);
        return NULL;
    }
    if (opts && strstr(opts, "encryption") && archive_write_set_passphrase(a, "secret") != ARCHIVE_OK) {
        archive_write_free(a);
        return NULL;
    }
    if (archive_write_open_filename(a, path) != ARCHIVE_OK)
        abort();
    static char zeros[65536];
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        if (kind == LB_ARCHIVE_ZIP)
            archive_entry_set_pathname_utf8(e, s[i].name);
        else
            archive_entry_copy_pathname(e, s[i].name);
        archive_entry_set_perm(e, 0644);
        size_t size = 0;
        switch (s[i].type) {
        case 'f':
            archive_entry_set_filetype(e, AE_IFREG);
            size = s[i].data ? strlen(s[i].data) : s[i].zeros;
            archive_entry_set_size(e, (la_int64_t)size);
            break;
        case 'd':
            archive_entry_set_filetype(e, AE_IFDIR);
            archive_entry_set_perm(e, 0755);
            break;
        case 'l':
            archive_entry_set_filetype(e, AE_IFLNK);
            archive_entry_set_symlink(e, s[i].data);
            break;
        case 'h':
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_hardlink(e, s[i].data);
            archive_entry_set_size(e, 0);
            break;
        case 'c':
            archive_entry_set_filetype(e, AE_IFCHR);
            archive_entry_set_rdev(e, makedev(1, 3));
            break;
        case 'p':
            archive_entry_set_filetype(e, AE_IFIFO);
            break;
        }
        if (archive_write_header(a, e) < ARCHIVE_WARN) {
            fprintf(stderr, "writer refused %s: %s\n", s[i].name, archive_error_string(a));
            archive_entry_free(e);
            archive_write_free(a);
            return NULL;
        }
        if (s[i].type == 'f') {
            if (s[i].data) {
                archive_write_data(a, s[i].data, size);
            } else {
                for (size_t left = size; left;) {
                    size_t k = left < sizeof zeros ? left : sizeof zeros;
                    archive_write_data(a, zeros, k);
                    left -= k;
                }
            }
        }
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    return path;
}

/* A fresh destination folder; its path goes to dest. */
static int new_dest(char *dest, size_t sz)
{
    setup();
    snprintf(dest, sz, "%s/d%d", tmpdir, ++counter);
    mkdir(dest, 0755);
    return open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static const lb_unpack_limits lim = {.max_entries = 100, .max_bytes = 64u << 20, .max_ratio = 100,
                                     .ratio_slack = 1u << 20};

typedef struct seen {
    int n;
    char paths[16][256];
    uint64_t sizes[16];
} seen;

static int on_file(void *arg, const char *rel, uint64_t size)
{
    seen *s = arg;
    if (s->n < 16) {
        snprintf(s->paths[s->n], sizeof s->paths[0], "%s", rel);
        s->sizes[s->n] = size;
    }
    s->n++;
    return 0;
}

static char errbuf[600];

static int unpack(const char *archive, lb_archive_kind kind, int dfd, const char *prefix, const lb_unpack_limits *l,
                  seen *s)
{
    lb_unpack_totals tot = {0};
    errbuf[0] = '\0';
    int rc = lb_unpack(archive, kind, "upload", dfd, prefix, l ? l : &lim, &tot, on_file, s, errbuf, sizeof errbuf);
    if (rc != LB_OK)
        CHECK(errbuf[0] != '\0'); /* every refusal says why */
    return rc;
}

static char *slurp(const char *dir, const char *rel)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    char *data = NULL;
    size_t len;
    if (lb_read_file(p, 1 << 20, &data, &len) != LB_OK)
        return NULL;
    return data;
}

static int exists(const char *dir, const char *rel)
{
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    return lstat(p, &st) == 0;
}

TEST(kind_from_name)
{
    CHECK(lb_archive_kind_of("a.zip") == LB_ARCHIVE_ZIP);
    CHECK(lb_archive_kind_of("dir/A.ZIP") == LB_ARCHIVE_ZIP);
    CHECK(lb_archive_kind_of("x.tar.gz") == LB_ARCHIVE_TAR_GZ);
    CHECK(lb_archive_kind_of("x.tgz") == LB_ARCHIVE_TAR_GZ);
    CHECK(lb_archive_kind_of("x.tar") == LB_ARCHIVE_TAR);
    CHECK(lb_archive_kind_of("x.gz") == LB_ARCHIVE_NONE);
    CHECK(lb_archive_kind_of(".zip") == LB_ARCHIVE_NONE);
    CHECK(lb_archive_kind_of("notes.txt") == LB_ARCHIVE_NONE);
}

TEST(zip_files_and_folders)
{
    spec s[] = {{"a.txt", 'f', "alpha\n", 0}, {"sub/", 'd', NULL, 0}, {"sub/deep/b.csv", 'f', "x,y\n1,2\n", 0},
                {"__MACOSX/._a.txt", 'f', "junk", 0}, {"r\xc3\xa9sum\xc3\xa9.md", 'f', "utf8", 0}};
    const char *z = make_archive(LB_ARCHIVE_ZIP, s, 5, NULL);
    char dest[512];
    int dfd = new_dest(dest, sizeof dest);
    seen got = {0};
    int rc = unpack(z, LB_ARCHIVE_ZIP, dfd, "", NULL, &got);
    if (rc != LB_OK)
        printf("  message: %s\n", errbuf);
    CHECK(rc == LB_OK);
    char *a = slurp(dest, "a.txt"), *b = slurp(dest, "sub/deep/b.csv"), *r = slurp(dest, "r\xc3\xa9sum\xc3\xa9.md");
    CHECK_STR(a, "alpha\n");
    CHECK_STR(b, "x,y\n1,2\n");
    CHECK_STR(r, "utf8");
    CHECK(!exists(dest, "__MACOSX"));
    CHECK(got.n == 3);
    CHECK_STR(got.paths[1], "sub/deep/b.csv");
    CHECK(got.sizes[1] == 8);
    free(a);
    free(b);
    free(r);
    close(dfd);
}

TEST(tar_gz_with_dot_root_into_prefix)
{
    spec s[] = {{"./", 'd', NULL, 0}, {"./x/", 'd', NULL, 0}, {"./x/y.txt", 'f', "why", 0}};
    const char *t = make_archive(LB_ARCHIVE_TAR_GZ, s, 3, NULL);
    char dest[512];
    int dfd = new_dest(dest, sizeof dest);
    seen got = {0};
    CHECK(unpack(t, LB_ARCHIVE_TAR_GZ, dfd, "data/2024", NULL, &got) == LB_OK);
    char *y = slurp(dest, "data/2024/x/y.txt");
    CHECK_STR(y, "why");
    CHECK(got.n == 1);
    CHECK_STR(got.paths[0], "data/2024/x/y.txt");
    free(y);
    close(dfd);
}

TEST(plain_tar)
{
    spec s[] = {{"one.txt", 'f', "1", 0}};
    const char *t = make_archive(LB_ARCHIVE_TAR, s, 1, NULL);
    char dest[512];
    int dfd = new_dest(dest, sizeof dest);
    seen got = {0};
    CHECK(unpack(t, LB_ARCHIVE_TAR, dfd, "", NULL, &got) == LB_OK);
    CHECK(exists(dest, "one.txt"));
    close(dfd);
}

/* The archive is refused and nothing lands outside dest. */
static void refused(lb_archive_kind kind, const spec *s, size_t n, int want, const char *needle)
{
    const char *z = make_archive(kind, s, n, NULL);
    CHECK(z != NULL);
    if (!z)
        return;
    char dest[512];
    int dfd = new_dest(dest, sizeof dest);
    seen got = {0};
    int rc = unpack(z, kind, dfd, "in", NULL, &got);
    CHECK(rc == want);
    if (needle && !strstr(errbuf, needle)) {
        printf("  message: %s\n", errbuf);
        CHECK(strstr(errbuf, needle) != NULL);
    }
    close(dfd);
}

TEST(traversal_refused)
{
    spec s1[] = {{"ok.txt", 'f', "fine", 0}, {"../evil.txt", 'f', "evil", 0}};
    refused(LB_ARCHIVE_ZIP, s1, 2, LB_E_INVAL, "climbs out");
    spec s2[] = {{"a/../../evil.txt", 'f', "evil", 0}};
    refused(LB_ARCHIVE_TAR_GZ, s2, 1, LB_E_INVAL, "climbs out");
    char p[600];
    snprintf(p, sizeof p, "%s/evil.txt", tmpdir);
    CHECK(!exists(tmpdir, "evil.txt"));
}

TEST(absolute_path_refused)
{
    char target[512];
    setup();
    snprintf(target, sizeof target, "%s/absolute-evil.txt", tmpdir);
    spec s[] = {{target, 'f', "evil", 0}};
    refused(LB_ARCHIVE_TAR, s, 1, LB_E_INVAL, "absolute path");
    refused(LB_ARCHIVE_ZIP, s, 1, LB_E_INVAL, "absolute path");
    CHECK(!exists(tmpdir, "absolute-evil.txt"));
}

TEST(backslash_and_bad_utf8_refused)
{
    /* libarchive's zip reader turns DOS separators into '/': then ".." */
    spec s1[] = {{"..\\..\\evil.txt", 'f', "evil", 0}};
    refused(LB_ARCHIVE_ZIP, s1, 1, LB_E_INVAL, "climbs out");
    spec s1b[] = {{"a\\b.txt", 'f', "x", 0}};
    refused(LB_ARCHIVE_TAR, s1b, 1, LB_E_INVAL, "backslash");
    spec s2[] = {{"bad\xff.txt", 'f', "x", 0}};
    refused(LB_ARCHIVE_TAR, s2, 1, LB_E_INVAL, NULL);
    spec s3[] = {{"ctl\x01.txt", 'f', "x", 0}};
    refused(LB_ARCHIVE_TAR, s3, 1, LB_E_INVAL, NULL);
}

TEST(links_refused)
{
    spec s1[] = {{"passwd", 'l', "/etc/passwd", 0}};
    refused(LB_ARCHIVE_TAR_GZ, s1, 1, LB_E_INVAL, "symbolic link");
    spec s2[] = {{"up", 'l', "..", 0}, {"up/evil.txt", 'f', "evil", 0}};
    refused(LB_ARCHIVE_ZIP, s2, 2, LB_E_INVAL, "symbolic link");
    spec s3[] = {{"a.txt", 'f', "a", 0}, {"b.txt", 'h', "a.txt", 0}};
    refused(LB_ARCHIVE_TAR, s3, 2, LB_E_INVAL, "hard link");
    spec s4[] = {{"shadow", 'h', "/etc/shadow", 0}};
    refused(LB_ARCHIVE_TAR, s4, 1, LB_E_INVAL, "hard link");
}

TEST(devices_refused)
{
    spec s1[] = {{"null", 'c', NULL, 0}};
    refused(LB_ARCHIVE_TAR, s1, 1, LB_E_INVAL, "device");
    spec s2[] = {{"fifo", 'p', NULL, 0}};
    refused(LB_ARCHIVE_TAR_GZ, s2, 1, LB_E_INVAL, "device");
}

TEST(duplicates_and_clashes_refused)
{
    spec s1[] = {{"a.txt", 'f', "first", 0}, {"a.txt", 'f', "second", 0}};
    refused(LB_ARCHIVE_TAR, s1, 2, LB_E_EXISTS, "twice");
    spec s2[] = {{"a", 'f', "file", 0}, {"a/b.txt", 'f', "under a file", 0}};
    refused(LB_ARCHIVE_TAR, s2, 2, LB_E_EXISTS, "already a file");
    spec s3[] = {{"a", 'f', "file", 0}, {"a/", 'd', NULL, 0}};
    refused(LB_ARCHIVE_TAR, s3, 2, LB_E_EXISTS, NULL);
}

TEST(existing_symlink_in_dest_not_followed)
{
    spec s[] = {{"link/evil.txt", 'f', "evil", 0}};
    const char *t = make_archive(LB_ARCHIVE_TAR, s, 1, NULL);
    char dest[512], outside[600], lnk[600];
    int dfd = new_dest(dest, sizeof dest);
    snprintf(outside, sizeof outside, "%s/outside-%d", tmpdir, ++counter);
    mkdir(outside, 0755);
    snprintf(lnk, sizeof lnk, "%s/link", dest);
    CHECK(symlink(outside, lnk) == 0);
    seen got = {0};
    CHECK(unpack(t, LB_ARCHIVE_TAR, dfd, "", NULL, &got) == LB_E_EXISTS);
    CHECK(!exists(outside, "evil.txt"));
    close(dfd);
}

TEST(entry_cap)
{
    spec s[30];
    char names[30][16];
    for (int i = 0; i < 30; i++) {
        snprintf(names[i], sizeof names[i], "f%02d.txt", i);
        s[i] = (spec){names[i], 'f', "x", 0};
    }
    const char *z = make_archive(LB_ARCHIVE_ZIP, s, 30, NULL);
    char dest[512];
    int dfd = new_dest(dest, sizeof dest);
    lb_unpack_limits l = lim;
    l.max_entries = 10;
    seen got = {0};
    CHECK(unpack(z, LB_ARCHIVE_ZIP, dfd, "", &l, &got) == LB_E_TOOBIG);
    CHECK(strstr(errbuf, "10 entries") != NULL);
    CHECK(got.n <= 10);
    close(dfd);
}

TEST(total_size_cap_counts_written_bytes)
{
    spec s[] = {{"big.bin", 'f', NULL, 3u << 20}};
    const char *t = make_archive(LB_ARCHIVE_TAR, s, 1, NULL); /* tar: ratio 1, only the size cap can stop it */
    char dest[512];
    int dfd = new_dest(dest, sizeof dest);
    lb_unpack_limits l = lim;
    l.max_bytes = 1u << 20;
    seen got = {0};
    CHECK(unpack(t, LB_ARCHIVE_TAR, dfd, "", &l, &got) == LB_E_TOOBIG);
    CHECK(strstr(errbuf, "1 MiB") != NULL);
    struct stat st;
    char p[600];
    snprintf(p, sizeof p, "%s/big.bin", dest);
    CHECK(stat(p, &st) == 0 && (uint64_t)st.st_size <= (1u << 20) + 65536);
    close(dfd);
}

TEST(zip_bomb_ratio_cap)
{
    /* 64 MiB of zeros deflate to about 64 KiB: a ratio near 1000 */
    spec s[] = {{"zeros.bin", 'f', NULL, 64u << 20}};
    const char *z = make_archive(LB_ARCHIVE_ZIP, s, 1, NULL);
    struct stat zs;
    CHECK(stat(z, &zs) == 0 && zs.st_size < (1 << 20));
    char dest[512];
    int dfd = new_dest(dest, sizeof dest);
    lb_unpack_limits l = lim;
    l.max_bytes = 1ull << 30;
    seen got = {0};
    CHECK(unpack(z, LB_ARCHIVE_ZIP, dfd, "", &l, &got) == LB_E_TOOBIG);
    CHECK(strstr(errbuf, "archive bomb") != NULL);
    struct stat st;
    char p[600];
    snprintf(p, sizeof p, "%s/zeros.bin", dest);
    CHECK(stat(p, &st) == 0 && (uint64_t)st.st_size < (16u << 20));
    /* the same bytes in a tar.gz: the gzip filter is capped the same way */
    const char *t = make_archive(LB_ARCHIVE_TAR_GZ, s, 1, NULL);
    int dfd2 = new_dest(dest, sizeof dest);
    CHECK(unpack(t, LB_ARCHIVE_TAR_GZ, dfd2, "", &l, &got) == LB_E_TOOBIG);
    CHECK(strstr(errbuf, "archive bomb") != NULL);
    close(dfd);
    close(dfd2);
}

TEST(small_text_archive_under_slack_ok)
{
    /* 512 KiB of one letter compresses a thousandfold, but stays under the
     * slack: small archives of text are not bombs */
    char *text = malloc(512 * 1024 + 1);
    memset(text, 'a', 512 * 1024);
    text[512 * 1024] = '\0';
    spec s[] = {{"a.txt", 'f', text, 0}};
    const char *z = make_archive(LB_ARCHIVE_ZIP, s, 1, NULL);
    char dest[512];
    int dfd = new_dest(dest, sizeof dest);
    seen got = {0};
    CHECK(unpack(z, LB_ARCHIVE_ZIP, dfd, "", NULL, &got) == LB_OK);
    CHECK(got.n == 1 && got.sizes[0] == 512 * 1024);
    free(text);
    close(dfd);
}

TEST(garbage_and_wrong_format_refused)
{
    char p[600], dest[512];
    setup();
    snprintf(p, sizeof p, "%s/garbage.zip", tmpdir);
    CHECK(lb_write_file_atomic(p, "this is not a zip file at all\n", 30, 0644) == LB_OK);
    int dfd = new_dest(dest, sizeof dest);
    seen got = {0};
    CHECK(unpack(p, LB_ARCHIVE_ZIP, dfd, "", NULL, &got) == LB_E_INVAL);
    CHECK(strstr(errbuf, "not a readable zip") != NULL);
    /* a tar named .zip is not guessed at */
    spec s[] = {{"a.txt", 'f', "a", 0}};
    const char *t = make_archive(LB_ARCHIVE_TAR, s, 1, NULL);
    CHECK(unpack(t, LB_ARCHIVE_ZIP, dfd, "", NULL, &got) == LB_E_INVAL);
    /* a truncated tar.gz */
    char *noise = malloc(200001);
    unsigned x = 12345;
    for (int i = 0; i < 200000; i++) {
        x = x * 1103515245u + 12345u;
        noise[i] = (char)('a' + (x >> 16) % 26);
    }
    noise[200000] = '\0';
    spec s2[] = {{"b.txt", 'f', noise, 0}};
    const char *tg = make_archive(LB_ARCHIVE_TAR_GZ, s2, 1, NULL);
    struct stat st;
    CHECK(stat(tg, &st) == 0 && st.st_size > 20000);
    CHECK(truncate(tg, st.st_size / 2) == 0);
    free(noise);
    int rc = unpack(tg, LB_ARCHIVE_TAR_GZ, dfd, "", NULL, &got);
    if (rc != LB_E_INVAL)
        printf("  rc %d message: %s\n", rc, errbuf);
    CHECK(rc == LB_E_INVAL);
    close(dfd);
}

TEST(encrypted_zip_refused)
{
    spec s[] = {{"secret.txt", 'f', "hidden", 0}};
    const char *z = make_archive(LB_ARCHIVE_ZIP, s, 1, "zip:encryption=zipcrypt");
    CHECK(z != NULL); /* Debian's libarchive writes zipcrypt */
    if (!z)
        return;
    char dest[512];
    int dfd = new_dest(dest, sizeof dest);
    seen got = {0};
    CHECK(unpack(z, LB_ARCHIVE_ZIP, dfd, "", NULL, &got) == LB_E_INVAL);
    CHECK(got.n == 0);
    close(dfd);
}

int main(void)
{
    RUN(kind_from_name);
    RUN(zip_files_and_folders);
    RUN(tar_gz_with_dot_root_into_prefix);
    RUN(plain_tar);
    RUN(traversal_refused);
    RUN(absolute_path_refused);
    RUN(backslash_and_bad_utf8_refused);
    RUN(links_refused);
    RUN(devices_refused);
    RUN(duplicates_and_clashes_refused);
    RUN(existing_symlink_in_dest_not_followed);
    RUN(entry_cap);
    RUN(total_size_cap_counts_written_bytes);
    RUN(zip_bomb_ratio_cap);
    RUN(small_text_archive_under_slack_ok);
    RUN(garbage_and_wrong_format_refused);
    RUN(encrypted_zip_refused);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return testlib_done();
}
