/* The layered image store's folders, lock and records (store.h). */
#include "images/store.h"

#include "common/image_ref.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *msg, size_t msgsz, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msgsz, fmt, ap);
    va_end(ap);
    return rc;
}

/* dir under parent, made with mode where missing, opened O_NOFOLLOW. */
static int open_dir(int parent, const char *name, mode_t mode)
{
    if (mkdirat(parent, name, mode) != 0 && errno != EEXIST)
        return -1;
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && fchmod(fd, mode) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* True when a staging name "<what>-<pid>-<anything>" names a live
 * process (a pull or build filling it): left alone. */
static int staging_live(const char *name)
{
    const char *d = strchr(name, '-');
    if (!d)
        return 0;
    char *end;
    errno = 0;
    long pid = strtol(d + 1, &end, 10);
    if (errno || end == d + 1 || *end != '-' || pid <= 1 || pid > 4194304)
        return 0;
    return pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* Removes what a killed writer left: what is in tmp/ but not a live
 * process's staging, and refs/'s
 * and retired/'s "<name>.tmp.<random>" files of lb_write_file_atomic. */
static void clean_leftovers(lb_image_store *st)
{
    char p[LB_CFG_PATH + 300];
    snprintf(p, sizeof p, "%s/tmp", st->oci);
    DIR *d = opendir(p);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || staging_live(de->d_name))
            continue;
        char q[LB_CFG_PATH + 300];
        snprintf(q, sizeof q, "%s/tmp/%s", st->oci, de->d_name);
        LB_IGNORE(lb_rmtree(q)); /* the next writer tries again */
    }
    if (d)
        closedir(d);
    static const char *const dirs[] = {"refs", "retired"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", st->oci, dirs[i]);
        d = opendir(p);
        while (d && (de = readdir(d))) {
            if (strstr(de->d_name, ".tmp."))
                LB_IGNORE(unlinkat(dirfd(d), de->d_name, 0)); /* the next writer tries again */
        }
        if (d)
            closedir(d);
    }
}

int lb_image_store_open(const lb_config *cfg, lb_image_store *st, char *msg, size_t msgsz)
{
    memset(st, 0, sizeof *st);
    st->lock_fd = st->oci_fd = st->blobs_fd = st->layers_fd = st->refs_fd = st->retired_fd = st->tmp_fd = -1;
    if ((size_t)snprintf(st->oci, sizeof st->oci, "%s/oci", cfg->image_store) >= sizeof st->oci)
        return fail(msg, msgsz, LB_E_TOOBIG, "the image store's path is too long");
    if (lb_mkdirs(cfg->image_store, 0755) != LB_OK)
        return fail(msg, msgsz, LB_E_IO, "cannot make %s: %s", cfg->image_store, strerror(errno));
    int store = open(cfg->image_store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (store < 0)
        return fail(msg, msgsz, LB_E_IO, "cannot open %s: %s", cfg->image_store, strerror(errno));
    st->oci_fd = open_dir(store, "oci", 0711);
    close(store);
    int blobs = st->oci_fd >= 0 ? open_dir(st->oci_fd, "blobs", 0700) : -1;
    if (blobs >= 0) {
        st->blobs_fd = open_dir(blobs, "sha256", 0700);
        close(blobs);
    }
    /* layers/ (host root's, 0700) keeps everything below it from the host's
     * users and from the unpacker; layers/sha256/ belongs to the images'
     * root id, so that the sandboxes' idmapped mount of it shows it (and
     * each layer's folder) as their own root's and init may walk it */
    int barrier = st->oci_fd >= 0 ? open_dir(st->oci_fd, "layers", 0700) : -1;
    if (barrier >= 0) {
        st->layers_fd = open_dir(barrier, "sha256", 0700);
        if (st->layers_fd >= 0 && fchown(st->layers_fd, cfg->sandbox_uid_base, cfg->sandbox_uid_base) != 0) {
            close(st->layers_fd);
            st->layers_fd = -1;
        }
        close(barrier);
    }
    if (st->oci_fd < 0 || st->blobs_fd < 0 || st->layers_fd < 0 ||
        (st->refs_fd = open_dir(st->oci_fd, "refs", 0755)) < 0 ||
        (st->retired_fd = open_dir(st->oci_fd, "retired", 0700)) < 0 ||
        (st->tmp_fd = open_dir(st->oci_fd, "tmp", 0700)) < 0) {
        int e = errno;
        lb_image_store_close(st);
        return fail(msg, msgsz, LB_E_IO, "cannot make the image store's folders in %s/oci: %s",
                    cfg->image_store, strerror(e));
    }
    st->lock_fd = openat(st->oci_fd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (st->lock_fd < 0 || flock(st->lock_fd, LOCK_EX) != 0) {
        int e = errno;
        lb_image_store_close(st);
        return fail(msg, msgsz, LB_E_IO, "cannot lock the image store: %s", strerror(e));
    }
    clean_leftovers(st);
    return LB_OK;
}

void lb_image_store_close(lb_image_store *st)
{
    int *fds[] = {&st->blobs_fd, &st->layers_fd, &st->refs_fd, &st->retired_fd, &st->tmp_fd, &st->oci_fd,
                  &st->lock_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

int lb_image_record_name(const char *name, char *canon, size_t canonsz, char *file, size_t filesz, char *msg,
                         size_t msgsz)
{
    lb_image_ref r;
    char fn[LB_IMAGE_REF_MAX + 1];
    int rc = lb_image_ref_parse(name, LB_IMAGE_REF_LOCAL, &r, msg, msgsz);
    if (rc != LB_OK)
        return rc;
    if (lb_image_ref_format(&r, canon, canonsz) != LB_OK || lb_image_ref_file_name(&r, fn, sizeof fn) != LB_OK ||
        (size_t)snprintf(file, filesz, "%s.json", fn) >= filesz)
        return fail(msg, msgsz, LB_E_TOOBIG, "the image name is too long");
    return LB_OK;
}

int lb_image_record_read(const lb_config *cfg, const char *name, cJSON **out, char *msg, size_t msgsz)
{
    char canon[LB_IMAGE_REF_MAX + 8], file[LB_IMAGE_REF_MAX + 8], p[LB_CFG_PATH + 300];
    int rc = lb_image_record_name(name, canon, sizeof canon, file, sizeof file, msg, msgsz);
    if (rc != LB_OK)
        return rc;
    snprintf(p, sizeof p, "%s/oci/refs/%s", cfg->image_store, file);
    char *data = NULL;
    size_t len = 0;
    rc = lb_read_file(p, LB_IMAGE_RECORD_MAX, &data, &len);
    if (rc != LB_OK) {
        int e = errno;
        return rc == LB_E_NOTFOUND
                   ? fail(msg, msgsz, LB_E_NOTFOUND, "there is no image \"%s\" (llmbox image ls lists them)",
                          canon)
                   : fail(msg, msgsz, rc, "cannot read the record of image \"%s\": %s", canon, strerror(e));
    }
    *out = cJSON_ParseWithLength(data, len);
    free(data);
    if (!*out || !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return fail(msg, msgsz, LB_E_INVAL, "the record of image \"%s\" is damaged", canon);
    }
    return LB_OK;
}

int lb_image_is_debootstrap(const lb_config *cfg, const char *name)
{
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
            return 0;
    char p[LB_CFG_PATH + 300];
    if (!*name || strlen(name) > 32 ||
        (size_t)snprintf(p, sizeof p, "%s/%s/.complete", cfg->image_store, name) >= sizeof p)
        return 0;
    return access(p, F_OK) == 0;
}

static uint64_t tree_bytes(int dfd, dev_t dev, int depth)
{
    uint64_t sum = 0;
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_dev != dev)
            continue;
        uint64_t b = (uint64_t)st.st_blocks * 512u;
        sum += S_ISREG(st.st_mode) && st.st_nlink > 1 ? b / st.st_nlink : b;
        if (S_ISDIR(st.st_mode) && depth < 256) {
            int c = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (c >= 0) {
                sum += tree_bytes(c, dev, depth + 1);
                close(c);
            }
        }
    }
    closedir(d);
    return sum;
}

uint64_t lb_image_tree_bytes(int dirfd)
{
    struct stat st;
    if (fstat(dirfd, &st) != 0)
        return 0;
    return (uint64_t)st.st_blocks * 512u + tree_bytes(dirfd, st.st_dev, 0);
}
