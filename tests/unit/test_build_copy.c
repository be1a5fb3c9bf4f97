/* Unit tests for the builder's own layers (server/images/build_copy.c):
 * COPY of a file, of a folder's contents and of a pattern, the folders
 * above the destination added only where no lower layer has them, a
 * symlink kept as a link, --chown/--chmod, a content digest that ignores
 * times; sources outside the context (.., a symlink out), a pattern that
 * matches nothing and a FIFO refused with nothing left behind; WORKDIR's
 * layer and its absence when the folder exists. */
#include "testlib.h"

#include "common/status.h"
#include "images/build_copy.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static char dir[] = "/tmp/llmbox-copy-XXXXXX";
static char ctx[128], lower[128], outside[128], layer[160];

static void put(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", ctx, rel);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* "path:mode:uid[:data]" lines of the layer */
static void read_layer(char *out, size_t outsz)
{
    out[0] = '\0';
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    if (archive_read_open_filename(a, layer, 10240) != ARCHIVE_OK) {
        archive_read_free(a);
        return;
    }
    struct archive_entry *e;
    size_t off = 0;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK && off < outsz) {
        char data[64] = "";
        la_ssize_t k = archive_read_data(a, data, sizeof data - 1);
        if (k > 0)
            data[k] = '\0';
        if (archive_entry_filetype(e) == AE_IFLNK)
            snprintf(data, sizeof data, "->%s", archive_entry_symlink(e));
        off += (size_t)snprintf(out + off, outsz - off, "%s:%o:%ld%s%s\n", archive_entry_pathname(e),
                                (unsigned)archive_entry_perm(e), (long)archive_entry_uid(e), data[0] ? ":" : "",
                                data);
    }
    archive_read_free(a);
}

static int copy(const char *const *srcs, int n, const char *dest, long uid, int mode, lb_build_tar *t, char *msg)
{
    const char *roots[1] = {lower};
    return lb_build_copy_layer(ctx, srcs, n, dest, uid, uid, mode, roots, 1, 1 << 20, layer, t, msg, 256);
}

TEST(copy_files_folders_and_patterns)
{
    char got[2048], msg[256] = "";
    lb_build_tar t;
    const char *one[] = {"a.txt"};
    CHECK(copy(one, 1, "/opt/app/b.txt", 0, -1, &t, msg) == LB_OK);
    read_layer(got, sizeof got);
    /* /opt is in the lower layer: only opt/app is added */
    CHECK_STR(got, "opt/app/:755:0\nopt/app/b.txt:644:0:A\n");
    CHECK(t.entries == 2 && !strncmp(t.digest, "sha256:", 7) && strlen(t.digest) == 71);
    const char *folder[] = {"sub"};
    CHECK(copy(folder, 1, "/opt/", 1000, 0600, &t, msg) == LB_OK);
    read_layer(got, sizeof got);
    CHECK_STR(got, "opt/deep/:600:1000\nopt/deep/c.txt:600:1000:C\nopt/link:777:1000:->deep/c.txt\n");
    const char *pat[] = {"*.txt"};
    CHECK(copy(pat, 1, "/", 0, -1, &t, msg) == LB_OK);
    read_layer(got, sizeof got);
    CHECK(strstr(got, "a.txt:644:0:A\n") && strstr(got, "z.txt:644:0:Z\n"));
}

TEST(the_content_digest_ignores_times)
{
    char msg[256] = "";
    lb_build_tar t1, t2, t3;
    const char *one[] = {"a.txt"};
    CHECK(copy(one, 1, "/x", 0, -1, &t1, msg) == LB_OK);
    char p[256];
    snprintf(p, sizeof p, "%s/a.txt", ctx);
    struct timeval tv[2] = {{1, 0}, {1, 0}};
    CHECK(utimes(p, tv) == 0);
    CHECK(copy(one, 1, "/x", 0, -1, &t2, msg) == LB_OK);
    CHECK_STR(t1.content, t2.content);
    CHECK(strcmp(t1.digest, t2.digest) != 0); /* the tar keeps the time */
    put("a.txt", "B");
    CHECK(copy(one, 1, "/x", 0, -1, &t3, msg) == LB_OK);
    CHECK(strcmp(t1.content, t3.content) != 0);
    put("a.txt", "A");
}

static int refused(const char *src, const char *words)
{
    char msg[256] = "", tmp[200];
    lb_build_tar t;
    const char *s[] = {src};
    int rc = copy(s, 1, "/x", 0, -1, &t, msg);
    snprintf(tmp, sizeof tmp, "%s.tmp", layer);
    int ok = rc != LB_OK && strstr(msg, words) && access(layer, F_OK) != 0 && access(tmp, F_OK) != 0;
    if (!ok)
        printf("  %s: rc %d msg \"%s\"\n", src, rc, msg);
    return ok;
}

TEST(sources_outside_the_context_and_odd_files_refused)
{
    unlink(layer);
    CHECK(refused("../outside/secret", "outside the build context"));
    CHECK(refused("/../outside/secret", "outside the build context"));
    CHECK(refused("escape", "outside the build context"));
    CHECK(refused("sub/../../outside/secret", "outside the build context"));
    CHECK(refused("missing", "not in the build context"));
    CHECK(refused("*.nothing", "no file of the build context matches"));
    CHECK(refused("fifo", "not a file, a folder or a symlink"));
}

TEST(workdir_layer_only_for_missing_folders)
{
    char got[512], msg[256] = "";
    lb_build_tar t;
    const char *roots[1] = {lower};
    CHECK(lb_build_dirs_layer("/opt/app/x", roots, 1, layer, &t, msg, sizeof msg) == LB_OK);
    read_layer(got, sizeof got);
    CHECK_STR(got, "opt/app/:755:0\nopt/app/x/:755:0\n");
    lb_build_tar t2;
    CHECK(lb_build_dirs_layer("/opt/app/x", roots, 1, layer, &t2, msg, sizeof msg) == LB_OK);
    CHECK_STR(t.digest, t2.digest); /* time 0: the same layer again */
    unlink(layer);
    CHECK(lb_build_dirs_layer("/opt", roots, 1, layer, &t, msg, sizeof msg) == LB_OK);
    CHECK(t.entries == 0 && access(layer, F_OK) != 0);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    snprintf(ctx, sizeof ctx, "%s/ctx", dir);
    snprintf(lower, sizeof lower, "%s/lower", dir);
    snprintf(outside, sizeof outside, "%s/outside", dir);
    snprintf(layer, sizeof layer, "%s/layer.tar", dir);
    char p[256];
    mkdir(ctx, 0755);
    mkdir(lower, 0755);
    mkdir(outside, 0755);
    snprintf(p, sizeof p, "%s/opt", lower);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/sub", ctx);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/sub/deep", ctx);
    mkdir(p, 0755);
    put("a.txt", "A");
    put("z.txt", "Z");
    put("sub/deep/c.txt", "C");
    snprintf(p, sizeof p, "%s/sub/link", ctx);
    if (symlink("deep/c.txt", p))
        return 1;
    snprintf(p, sizeof p, "%s/secret", outside);
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
    char q[256];
    snprintf(q, sizeof q, "%s/escape", ctx);
    if (symlink(p, q))
        return 1;
    snprintf(p, sizeof p, "%s/fifo", ctx);
    mkfifo(p, 0644);
    RUN(copy_files_folders_and_patterns);
    RUN(the_content_digest_ignores_times);
    RUN(sources_outside_the_context_and_odd_files_refused);
    RUN(workdir_layer_only_for_missing_folders);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd))
        printf("could not remove %s\n", dir);
    return testlib_failed_total ? 1 : 0;
}
