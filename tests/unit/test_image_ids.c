/* Unit tests for an image's user and group as ids (server/images/image_ids.c),
 * the function the import (an image's User) and the Dockerfile builder
 * (COPY --chown by name) share: names from the topmost layer's /etc/passwd
 * and /etc/group, a whiteout hiding them, a symlinked file or folder not
 * followed, a file over the cap refused, numbers kept. */
#include "testlib.h"

#include "common/status.h"
#include "common/util.h"
#include "images/image_ids.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char T[] = "/tmp/llmbox-test-image-ids-XXXXXX";
static int layers_fd = -1;

static void put(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", T, rel);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void dir(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", T, rel);
    mkdir(p, 0755);
}

static int resolve(const char *const *hexes, int n, const char *spec, long *uid, long *gid, char *msg)
{
    return lb_image_ids_resolve(layers_fd, hexes, n, spec, uid, gid, msg, 300);
}

TEST(names_from_the_topmost_layer_that_has_the_file)
{
    static const char *const two[] = {"aa", "bb"};
    long u, g;
    char msg[300];
    CHECK(resolve(two, 2, "app", &u, &g, msg) == LB_OK && u == 1000 && g == 1001); /* passwd's group */
    CHECK(resolve(two, 2, "app:staff", &u, &g, msg) == LB_OK && u == 1000 && g == 50);
    CHECK(resolve(two, 2, "1000:staff", &u, &g, msg) == LB_OK && u == 1000 && g == 50);
    CHECK(resolve(two, 2, "0", &u, &g, msg) == LB_OK && u == 0 && g == 0);
    CHECK(resolve(two, 2, "", &u, &g, msg) == LB_OK && u == -1 && g == -1);
    /* bb's passwd (top) wins over aa's: "old" is only in aa's */
    CHECK(resolve(two, 2, "old", &u, &g, msg) == LB_E_INVAL && strstr(msg, "the user \"old\" is not in"));
    static const char *const one[] = {"aa"};
    CHECK(resolve(one, 1, "old", &u, &g, msg) == LB_OK && u == 7);
    CHECK(resolve(two, 2, "app:nogroup", &u, &g, msg) == LB_E_INVAL && strstr(msg, "the group \"nogroup\""));
    CHECK(resolve(two, 2, "70000", &u, &g, msg) == LB_E_INVAL);
}

TEST(a_symlink_a_whiteout_and_a_big_file_are_not_read)
{
    long u, g;
    char msg[300];
    /* cc's /etc/passwd is a symlink to a file that has "app": not followed */
    static const char *const link[] = {"aa", "bb", "cc"};
    CHECK(resolve(link, 3, "app", &u, &g, msg) == LB_E_INVAL && u == -1);
    /* dd's /etc is a symlink to bb's etc: not followed either */
    static const char *const dlink[] = {"aa", "bb", "dd"};
    CHECK(resolve(dlink, 3, "app", &u, &g, msg) == LB_E_INVAL);
    /* ee's whiteout of /etc/passwd: the image has none */
    static const char *const wh[] = {"aa", "bb", "ee"};
    CHECK(resolve(wh, 3, "app", &u, &g, msg) == LB_E_INVAL);
    /* ff's passwd is over the cap */
    static const char *const big[] = {"aa", "bb", "ff"};
    CHECK(resolve(big, 3, "app", &u, &g, msg) == LB_E_INVAL);
    static const char *const missing[] = {"zz"};
    CHECK(resolve(missing, 1, "app", &u, &g, msg) == LB_E_INVAL);
}

int main(void)
{
    if (!mkdtemp(T))
        return 1;
    const char *dirs[] = {"aa", "aa/root", "aa/root/etc", "bb", "bb/root", "bb/root/etc", "cc", "cc/root",
                          "cc/root/etc", "dd", "dd/root", "ee", "ee/root", "ee/root/etc", "ff", "ff/root",
                          "ff/root/etc"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        dir(dirs[i]);
    put("aa/root/etc/passwd", "root:x:0:0::/root:/bin/sh\nold:x:7:7::/:/bin/sh\n");
    put("bb/root/etc/passwd", "root:x:0:0::/root:/bin/sh\napp:x:1000:1001::/home/app:/bin/sh\n");
    put("bb/root/etc/group", "root:x:0:\napp:x:1001:\nstaff:x:50:\n");
    put("cc/root/etc/real", "app:x:1000:1001::/:/bin/sh\n");
    char p[512], q[512];
    snprintf(p, sizeof p, "%s/cc/root/etc/passwd", T);
    int ok = symlink("real", p) == 0;
    snprintf(p, sizeof p, "%s/dd/root/etc", T);
    snprintf(q, sizeof q, "%s/bb/root/etc", T);
    ok = ok && symlink(q, p) == 0;
    snprintf(p, sizeof p, "%s/ee/root/etc/passwd", T);
    ok = ok && mknod(p, S_IFCHR | 0600, makedev(0, 0)) == 0; /* root: the suites run as root */
    snprintf(p, sizeof p, "%s/ff/root/etc/passwd", T);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ok = ok && fd >= 0 && ftruncate(fd, (off_t)LB_IMAGE_IDS_FILE_MAX + 1) == 0;
    if (fd >= 0)
        close(fd);
    layers_fd = open(T, O_RDONLY | O_DIRECTORY);
    if (!ok || layers_fd < 0) {
        printf("SKIP image_ids: cannot make the layers (needs root for the whiteout)\n");
        return 0;
    }
    RUN(names_from_the_topmost_layer_that_has_the_file);
    RUN(a_symlink_a_whiteout_and_a_big_file_are_not_read);
    close(layers_fd);
    if (lb_rmtree(T) != LB_OK)
        printf("note: %s is left\n", T);
    return testlib_done();
}
