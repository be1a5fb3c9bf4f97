/* libFuzzer target for the archive unpacker (server/web/unpack.c).
 * Build and run:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE \
 *     -Iserver -Iinclude tests/fuzz/fuzz_unpack.c server/web/unpack.c \
 *     server/common/path.c server/common/util.c server/common/status.c server/common/log.c \
 *     -larchive -o /tmp/fuzz_unpack && /tmp/fuzz_unpack -max_total_time=60
 * The first input byte picks the format (zip, tar.gz, tar); the rest is the
 * archive. Each input unpacks into a fresh folder inside a scratch folder,
 * and afterwards nothing may exist in the scratch folder but that folder
 * (nothing written outside), and no symlink, device or FIFO may exist
 * anywhere under it. */
#include "common/status.h"
#include "common/util.h"
#include "web/unpack.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[64];

/* libFuzzer ends a timed run with exit(): leave no scratch folder in /tmp */
static void remove_scratch(void)
{
    if (scratch[0])
        LB_IGNORE(lb_rmtree(scratch)); /* at exit: a leftover is only disk in /tmp */
}

/* Traps on anything under dir that is not a plain file or folder. */
static void check_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(p, &st) != 0)
            continue;
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
            __builtin_trap();
        if (S_ISDIR(st.st_mode) && depth < 64)
            check_tree(p, depth + 1);
    }
    closedir(d);
}

static int on_file(void *arg, const char *rel, uint64_t size)
{
    (void)arg;
    (void)size;
    if (rel[0] == '/' || strstr(rel, "..") == rel || strstr(rel, "/../"))
        __builtin_trap();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!scratch[0]) {
        snprintf(scratch, sizeof scratch, "/tmp/fuzz-unpack-XXXXXX");
        if (!mkdtemp(scratch))
            abort();
        atexit(remove_scratch);
    }
    static const lb_archive_kind kinds[] = {LB_ARCHIVE_ZIP, LB_ARCHIVE_TAR_GZ, LB_ARCHIVE_TAR};
    lb_archive_kind kind = kinds[data[0] % 3];
    char in[128], out[128];
    snprintf(in, sizeof in, "%s/archive", scratch);
    snprintf(out, sizeof out, "%s/dest", scratch);
    LB_IGNORE(lb_rmtree(out)); /* the mkdir below fails if it is still there */
    if (lb_write_file_atomic(in, data + 1, size - 1, 0600) != LB_OK || mkdir(out, 0700) != 0)
        abort();
    int root = open(out, O_RDONLY | O_DIRECTORY);
    lb_unpack_limits lim = {.max_entries = 200, .max_bytes = 8u << 20, .max_ratio = 100, .ratio_slack = 1u << 20};
    lb_unpack_totals tot = {0};
    char err[600];
    /* refused or not, what is on disk is checked next */
    LB_IGNORE(lb_unpack(in, kind, "fuzz", root, "in", &lim, &tot, on_file, NULL, err, sizeof err));
    close(root);
    check_tree(out, 0);
    /* nothing besides the archive and dest in the scratch folder */
    DIR *d = opendir(scratch);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "archive") &&
            strcmp(de->d_name, "dest"))
            __builtin_trap();
    closedir(d);
    return 0;
}
