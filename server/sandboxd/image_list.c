/*
 * `llmbox image list`: the built images with their state, size on disk and
 * age, and the recipes that have not been built yet. Read-only: it never
 * touches an image, so it is safe while sandboxes run.
 */
#include "sandboxd/image_list.h"

#include "sandbox/rpc.h"

#include "common/config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define IL_MAX_IMAGES 256
#define IL_MAX_DEPTH 64

/* Bytes used by the tree under dirfd (allocated blocks, each inode once
 * per directory walk — hard links inside one image are rare and small). */
static unsigned long long il_du(int dirfd, int depth)
{
    if (depth > IL_MAX_DEPTH)
        return 0;
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return 0;
    }
    unsigned long long total = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        total += (unsigned long long)st.st_blocks * 512ull;
        if (S_ISDIR(st.st_mode)) {
            int fd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0)
                total += il_du(fd, depth + 1);
        }
    }
    closedir(d);
    return total;
}

static void il_human(unsigned long long b, char *out, size_t outsz)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(out, outsz, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static int il_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of the subdirectories of dir that are valid image names. */
static size_t il_names(const char *dir, char **names, size_t max)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < max) {
        if (!lbsd_image_name_valid(de->d_name) || !strcmp(de->d_name, "oci")) /* oci: layered images */
            continue;
        int dup = 0;
        for (size_t i = 0; i < n && !dup; i++)
            dup = !strcmp(names[i], de->d_name);
        if (!dup && (names[n] = strdup(de->d_name)))
            n++;
    }
    closedir(d);
    return n;
}

int lbsd_image_list(const lb_config *cfg)
{
    char *names[IL_MAX_IMAGES];
    size_t n = il_names(cfg->image_store, names, IL_MAX_IMAGES);
    /* recipes not built yet are listed too, so a user sees what can be built */
    char *recipes[IL_MAX_IMAGES];
    size_t nr = il_names(cfg->images_dir, recipes, IL_MAX_IMAGES);
    for (size_t i = 0; i < nr; i++) {
        int have = 0;
        for (size_t j = 0; j < n && !have; j++)
            have = !strcmp(names[j], recipes[i]);
        if (!have && n < IL_MAX_IMAGES)
            names[n++] = recipes[i];
        else
            free(recipes[i]);
    }
    qsort(names, n, sizeof names[0], il_cmp);
    printf("%-20s %-10s %10s  %-19s  %s\n", "IMAGE", "STATE", "SIZE", "BUILT", "ROOT");
    for (size_t i = 0; i < n; i++) {
        char p[LB_CFG_PATH + 96], size[32] = "-", built[32] = "-";
        const char *state = "not built";
        snprintf(p, sizeof p, "%s/%s/.complete", cfg->image_store, names[i]);
        struct stat st;
        if (stat(p, &st) == 0) {
            state = "ready";
            struct tm tm;
            time_t t = st.st_mtime;
            if (localtime_r(&t, &tm))
                strftime(built, sizeof built, "%Y-%m-%d %H:%M:%S", &tm);
        } else {
            snprintf(p, sizeof p, "%s/%s/rootfs.tmp", cfg->image_store, names[i]);
            if (access(p, F_OK) == 0)
                state = "building"; /* or a failed build left for inspection */
        }
        snprintf(p, sizeof p, "%s/%s/rootfs", cfg->image_store, names[i]);
        int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
            il_human(il_du(fd, 0), size, sizeof size);
        printf("%-20s %-10s %10s  %-19s  %s\n", names[i], state, size, built,
               fd >= 0 ? p : "-");
        free(names[i]);
    }
    if (!n)
        printf("(no images: recipes live in %s; build one with: llmbox image build)\n",
               cfg->images_dir);
    return 0;
}
