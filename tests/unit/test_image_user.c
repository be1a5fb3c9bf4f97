/* A named user's ids from the sandbox's /etc/passwd and /etc/group
 * (sandboxd/image_user.h): what E2B's `user` runs as. The files are the
 * sandbox's to write, so malformed lines, ids past the sandbox's map,
 * homes that are not paths and too many groups are checked, and the host
 * reader refuses symlinks, special files and files over the cap. */
#include "testlib.h"

#include "common/status.h"
#include "sandboxd/image_user.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static const char PW[] = "root:x:0:0:root:/root:/bin/bash\n"
                         "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
                         "user:x:1000:1000::/home/user:/bin/bash\n"
                         "big:x:70000:70000::/home/big:/bin/sh\n"
                         "nohome:x:1001:1001::relative:/bin/sh\n"
                         "short:x:1002\n";
static const char GR[] = "root:x:0:\n"
                         "sudo:x:27:user\n"
                         "users:x:100:other,user,third\n"
                         "user:x:1000:\n"
                         "nomatch:x:300:username,use\n"
                         "huge:x:99999:user\n";

static lbsd_user_ids U;

TEST(user_with_groups)
{
    CHECK(lbsd_user_parse(PW, strlen(PW), GR, strlen(GR), "user", &U) == 0);
    CHECK(U.uid == 1000 && U.gid == 1000);
    CHECK(!strcmp(U.home, "/home/user") && !strcmp(U.name, "user"));
    /* the primary group first, then those that list it; a near name or a
     * gid past the map is not one */
    CHECK(U.ngroups == 3 && U.groups[0] == 1000 && U.groups[1] == 27 && U.groups[2] == 100);
}

TEST(absent_and_malformed)
{
    CHECK(lbsd_user_parse(PW, strlen(PW), GR, strlen(GR), "nobody", &U) == -1);
    CHECK(lbsd_user_parse(PW, strlen(PW), GR, strlen(GR), "big", &U) == -1);   /* uid past the map */
    CHECK(lbsd_user_parse(PW, strlen(PW), GR, strlen(GR), "short", &U) == -1); /* too few fields */
    CHECK(lbsd_user_parse(PW, strlen(PW), GR, strlen(GR), "us", &U) == -1);    /* a prefix is no name */
    CHECK(lbsd_user_parse(PW, strlen(PW), GR, strlen(GR), "a;b", &U) == -1);
    CHECK(lbsd_user_parse(PW, strlen(PW), GR, strlen(GR), "", &U) == -1);
    CHECK(lbsd_user_parse(PW, strlen(PW), GR, strlen(GR), "-x", &U) == -1);
    CHECK(lbsd_user_parse(NULL, 0, NULL, 0, "user", &U) == -1);
    /* a home that is no absolute path becomes / */
    CHECK(lbsd_user_parse(PW, strlen(PW), GR, strlen(GR), "nohome", &U) == 0 && !strcmp(U.home, "/"));
    /* root without a line of its own */
    CHECK(lbsd_user_parse(NULL, 0, NULL, 0, "root", &U) == 0 && U.uid == 0 && !strcmp(U.home, "/root"));
    /* the input is bytes, not a string: the name past the end is not read */
    CHECK(lbsd_user_parse(PW, 10, GR, strlen(GR), "user", &U) == -1);
}

TEST(groups_capped)
{
    char gr[LBSD_USER_GROUPS_MAX * 3 * 24];
    size_t n = 0;
    for (int i = 0; i < LBSD_USER_GROUPS_MAX * 3; i++)
        n += (size_t)snprintf(gr + n, sizeof gr - n, "g%d:x:%d:user\n", i, 2000 + i);
    CHECK(lbsd_user_parse(PW, strlen(PW), gr, n, "user", &U) == 0);
    CHECK(U.ngroups == LBSD_USER_GROUPS_MAX && U.groups[0] == 1000);
}

/* A fake sandbox root on a tmpfs (the reader takes only the sandbox's own
 * filesystems): etc/passwd and etc/group as given. */
static int make_root(char *dir, const char *pw, const char *gr)
{
    strcpy(dir, "/tmp/lbtest-iu-XXXXXX");
    if (!mkdtemp(dir) || mount("tmpfs", dir, "tmpfs", 0, "size=2m") != 0)
        return -1;
    char p[256];
    snprintf(p, sizeof p, "%s/etc", dir);
    mkdir(p, 0755);
    const char *files[2][2] = {{"passwd", pw}, {"group", gr}};
    for (int i = 0; i < 2; i++) {
        if (!files[i][1])
            continue;
        snprintf(p, sizeof p, "%s/etc/%s", dir, files[i][0]);
        FILE *f = fopen(p, "w");
        if (!f)
            return -1;
        fputs(files[i][1], f);
        fclose(f);
    }
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void drop_root(const char *dir, int fd)
{
    close(fd);
    umount2(dir, MNT_DETACH);
    rmdir(dir);
}

TEST(host_reader)
{
    if (geteuid() != 0) {
        printf("  (skipped: mounting a tmpfs needs root)\n");
        return;
    }
    char dir[64], msg[256], p[300];
    int fd = make_root(dir, PW, GR);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK(lbsd_user_lookup(fd, "user", &U, msg, sizeof msg) == LB_OK && U.uid == 1000 && U.ngroups == 3);
    CHECK(lbsd_user_lookup(fd, "nobody", &U, msg, sizeof msg) == LB_E_NOTFOUND && strstr(msg, "nobody"));
    CHECK(lbsd_user_lookup(fd, "bad name", &U, msg, sizeof msg) == LB_E_INVAL);
    /* a symlinked /etc/passwd is not followed */
    snprintf(p, sizeof p, "%s/etc/passwd", dir);
    unlink(p);
    CHECK(symlink("/etc/passwd", p) == 0);
    CHECK(lbsd_user_lookup(fd, "user", &U, msg, sizeof msg) == LB_E_INVAL && strstr(msg, "symlinks"));
    /* root needs no file at all */
    CHECK(lbsd_user_lookup(fd, "root", &U, msg, sizeof msg) == LB_OK && U.uid == 0 && U.gid == 0);
    /* a fifo is not opened (it would block) */
    unlink(p);
    CHECK(mkfifo(p, 0644) == 0);
    CHECK(lbsd_user_lookup(fd, "user", &U, msg, sizeof msg) == LB_E_INVAL);
    /* over the cap */
    unlink(p);
    int big = open(p, O_WRONLY | O_CREAT, 0644);
    CHECK(big >= 0 && ftruncate(big, LBSD_USER_DB_MAX + 1) == 0);
    close(big);
    CHECK(lbsd_user_lookup(fd, "user", &U, msg, sizeof msg) == LB_E_INVAL && strstr(msg, "over"));
    /* a symlinked /etc */
    snprintf(p, sizeof p, "rm -rf %s/etc && ln -s /etc %s/etc", dir, dir);
    CHECK(system(p) == 0);
    CHECK(lbsd_user_lookup(fd, "daemon", &U, msg, sizeof msg) == LB_E_NOTFOUND); /* the host's has one */
    drop_root(dir, fd);
}

int main(void)
{
    RUN(user_with_groups);
    RUN(absent_and_malformed);
    RUN(groups_capped);
    RUN(host_reader);
    return testlib_done();
}
