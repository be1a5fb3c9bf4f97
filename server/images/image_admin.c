/* ls, rm and gc of the layered image store (image_admin.h). */
#include "images/image_admin.h"

#include "common/image_ref.h"
#include "common/util.h"
#include "images/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define ADM_LAYERS_MAX 100000  /* layers gc weighs in one run: far more than any store holds */
#define ADM_HOLDERS_MAX 4096    /* sandbox ids counted per image: sandbox_max is far below */
#define ADM_RETIRED_GRACE_S 60 /* a record retired this recently may be being mounted */

int lb_image_record_in_use(int dirfd, const char *file)
{
    int fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd); /* drops our lock, if we got it */
    return busy;
}

#define ADM_LOCKS_LINES_MAX 200000 /* /proc/locks lines read: a host with more is not waited on */

/* The sandbox id a process's cgroup path ends in ("" when none does). */
static void pid_sandbox_id(long pid, char id[33])
{
    id[0] = 0;
    char p[64], line[1024];
    snprintf(p, sizeof p, "/proc/%ld/cgroup", pid);
    FILE *f = fopen(p, "re");
    if (!f)
        return;
    while (!id[0] && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        const char *last = strrchr(line, '/');
        if (!last || strlen(last + 1) != 32)
            continue;
        int hex = 1;
        for (const char *q = last + 1; *q && hex; q++)
            hex = (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f');
        if (hex)
            memcpy(id, last + 1, 33);
    }
    fclose(f);
}

size_t lb_image_record_holders(int dirfd, const char *file, char (*ids)[33], size_t max)
{
    struct stat st;
    if (max == 0 || fstatat(dirfd, file, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    FILE *f = fopen("/proc/locks", "re");
    if (!f)
        return 0;
    size_t n = 0;
    char line[256];
    for (int k = 0; k < ADM_LOCKS_LINES_MAX && n < max && fgets(line, sizeof line, f); k++) {
        /* "N: FLOCK  ADVISORY  READ  PID MAJ:MIN:INODE 0 EOF"; "N: -> ..." are waiters */
        char kind[16];
        long pid;
        unsigned maj, min;
        unsigned long long ino;
        if (strstr(line, "->") || sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", kind, &pid, &maj, &min, &ino) != 5 ||
            strcmp(kind, "FLOCK") || pid <= 0 || ino != (unsigned long long)st.st_ino || maj != major(st.st_dev) ||
            min != minor(st.st_dev))
            continue;
        char id[33];
        pid_sandbox_id(pid, id);
        int seen = !id[0];
        for (size_t i = 0; i < n && !seen; i++)
            seen = !strcmp(ids[i], id);
        if (!seen)
            memcpy(ids[n++], id, 33);
    }
    fclose(f);
    return n;
}

static cJSON *read_json_at(int dirfd, const char *file)
{
    int fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > LB_IMAGE_RECORD_MAX) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    int ok = buf && lb_read_full(fd, buf, (size_t)st.st_size) == LB_OK;
    close(fd);
    cJSON *j = ok ? cJSON_ParseWithLength(buf, (size_t)st.st_size) : NULL;
    free(buf);
    if (j && !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        j = NULL;
    }
    return j;
}

/* True when s is 64 lowercase hex digits (a layer's name). */
static int hex64(const char *s)
{
    size_t i = 0;
    for (; s && s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return i == 64;
}

/* Is name in cfg's pool_images (comma-separated, each normalized)? */
static int in_pool(const lb_config *cfg, const char *canon)
{
    char list[sizeof cfg->pool_images];
    snprintf(list, sizeof list, "%s", cfg->pool_images[0] ? cfg->pool_images : cfg->default_image);
    char *save = NULL;
    for (char *w = strtok_r(list, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
        char c[LB_IMAGE_REF_MAX + 8], f[LB_IMAGE_REF_MAX + 8], e[128];
        if (lb_image_record_name(w, c, sizeof c, f, sizeof f, e, sizeof e) == LB_OK && !strcmp(c, canon))
            return 1;
    }
    return 0;
}

static int is_default(const lb_config *cfg, const char *canon)
{
    char c[LB_IMAGE_REF_MAX + 8], f[LB_IMAGE_REF_MAX + 8], e[128];
    return lb_image_record_name(cfg->default_image, c, sizeof c, f, sizeof f, e, sizeof e) == LB_OK &&
           !strcmp(c, canon);
}

typedef struct lcount {
    char hex[65];
    int users;
} lcount;

cJSON *lb_image_list_json(const lb_config *cfg, uint64_t *total_bytes, int with_ids)
{
    cJSON *out = cJSON_CreateArray();
    if (!out)
        return NULL;
    if (total_bytes)
        *total_bytes = 0;
    DIR *d = opendir(cfg->image_store);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (lb_image_is_debootstrap(cfg, de->d_name)) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", de->d_name);
            cJSON_AddStringToObject(o, "kind", "debootstrap");
            cJSON_AddBoolToObject(o, "default", !strcmp(de->d_name, cfg->default_image));
            cJSON_AddItemToArray(out, o);
        }
    }
    if (d)
        closedir(d);
    char p[LB_CFG_PATH + 16];
    snprintf(p, sizeof p, "%s/oci/refs", cfg->image_store);
    int rfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    d = rfd >= 0 ? fdopendir(rfd) : NULL;
    if (!d) {
        if (rfd >= 0)
            close(rfd);
        return out;
    }
    /* two passes: count each layer's users, then describe each image */
    cJSON *recs = cJSON_CreateArray();
    lcount *lc = NULL;
    size_t nlc = 0, cap = 0;
    char (*ids)[33] = calloc(ADM_HOLDERS_MAX, sizeof *ids); /* NULL: counted as none */
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || strstr(de->d_name, ".tmp."))
            continue;
        cJSON *j = read_json_at(dirfd(d), de->d_name);
        if (!j)
            continue;
        cJSON_AddBoolToObject(j, "in_use", lb_image_record_in_use(dirfd(d), de->d_name));
        size_t nh = ids ? lb_image_record_holders(dirfd(d), de->d_name, ids, ADM_HOLDERS_MAX) : 0;
        cJSON_AddNumberToObject(j, "sandboxes", (double)nh);
        cJSON *ja = with_ids ? cJSON_AddArrayToObject(j, "sandbox_ids") : NULL;
        for (size_t i = 0; ja && i < nh; i++)
            cJSON_AddItemToArray(ja, cJSON_CreateString(ids[i]));
        cJSON_AddItemToArray(recs, j);
        const cJSON *ls = cJSON_GetObjectItemCaseSensitive(j, "layers"),
                    *lb = cJSON_GetObjectItemCaseSensitive(j, "layer_bytes"), *x;
        int i = 0;
        cJSON_ArrayForEach(x, ls) {
            if (!cJSON_IsString(x) || !hex64(x->valuestring))
                continue;
            size_t k = 0;
            while (k < nlc && strcmp(lc[k].hex, x->valuestring) != 0)
                k++;
            if (k == nlc) {
                if (nlc == cap) {
                    size_t nc = cap ? cap * 2 : 64;
                    lcount *n = realloc(lc, nc * sizeof *lc);
                    if (!n)
                        break;
                    lc = n;
                    cap = nc;
                }
                memcpy(lc[nlc].hex, x->valuestring, 65);
                lc[nlc].users = 0;
                nlc++;
                const cJSON *b = cJSON_GetArrayItem(lb, i);
                if (total_bytes && cJSON_IsNumber(b))
                    *total_bytes += (uint64_t)b->valuedouble;
            }
            lc[k].users++;
            i++;
        }
    }
    closedir(d);
    const cJSON *j;
    cJSON_ArrayForEach(j, recs) {
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(j, "reference");
        if (!cJSON_IsString(ref))
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", ref->valuestring);
        cJSON_AddStringToObject(o, "kind", "layered");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "manifest");
        cJSON_AddStringToObject(o, "manifest", cJSON_IsString(m) ? m->valuestring : "");
        const cJSON *ls = cJSON_GetObjectItemCaseSensitive(j, "layers"),
                    *lb = cJSON_GetObjectItemCaseSensitive(j, "layer_bytes"), *x;
        double bytes = 0, shared = 0;
        int i = 0;
        cJSON_ArrayForEach(x, ls) {
            const cJSON *b = cJSON_GetArrayItem(lb, i++);
            double v = cJSON_IsNumber(b) ? b->valuedouble : 0;
            bytes += v;
            for (size_t k = 0; k < nlc && cJSON_IsString(x); k++)
                if (!strcmp(lc[k].hex, x->valuestring) && lc[k].users > 1)
                    shared += v;
        }
        cJSON_AddNumberToObject(o, "layers", cJSON_GetArraySize(ls));
        cJSON_AddNumberToObject(o, "bytes", bytes);
        cJSON_AddNumberToObject(o, "shared_bytes", shared);
        cJSON_AddBoolToObject(o, "in_use", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "in_use")));
        cJSON_AddItemToObject(o, "sandboxes", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(j, "sandboxes"), 1));
        if (with_ids)
            cJSON_AddItemToObject(o, "sandbox_ids",
                                  cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(j, "sandbox_ids"), 1));
        cJSON_AddBoolToObject(o, "pool", in_pool(cfg, ref->valuestring));
        cJSON_AddBoolToObject(o, "default", is_default(cfg, ref->valuestring));
        static const char *const keep[] = {"env", "workdir", "user", "cmd", "entrypoint", "created"};
        for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, keep[k]);
            if (v)
                cJSON_AddItemToObject(o, keep[k], cJSON_Duplicate(v, 1));
        }
        cJSON_AddItemToArray(out, o);
    }
    cJSON_Delete(recs);
    free(lc);
    free(ids);
    return out;
}

int lb_image_rm(const lb_config *cfg, const char *name, char *msg, size_t msgsz)
{
    char canon[LB_IMAGE_REF_MAX + 8], file[LB_IMAGE_REF_MAX + 8];
    int rc = lb_image_record_name(name, canon, sizeof canon, file, sizeof file, msg, msgsz);
    if (rc != LB_OK)
        return rc;
    if (in_pool(cfg, canon)) {
        snprintf(msg, msgsz, "image \"%s\" is in pool_images: take it out of the pool first", canon);
        return LB_E_BUSY;
    }
    lb_image_store st;
    if ((rc = lb_image_store_open(cfg, &st, msg, msgsz)) != LB_OK)
        return rc;
    struct stat sb;
    if (fstatat(st.refs_fd, file, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
        snprintf(msg, msgsz, "there is no image \"%s\" (llmbox image ls lists them)", canon);
        rc = LB_E_NOTFOUND;
    } else if (lb_image_record_in_use(st.refs_fd, file)) {
        snprintf(msg, msgsz, "image \"%s\" is used by a sandbox: destroy the sandboxes that run it first", canon);
        rc = LB_E_BUSY;
    } else if (unlinkat(st.refs_fd, file, 0) != 0 || fsync(st.refs_fd) != 0) {
        snprintf(msg, msgsz, "cannot remove the record of \"%s\": %s", canon, strerror(errno));
        rc = LB_E_IO;
    }
    lb_image_store_close(&st);
    return rc;
}

typedef struct keep_set {
    char (*hex)[65];
    size_t n, cap;
} keep_set;

static int keep_add(keep_set *k, const char *hex)
{
    if (!hex64(hex))
        return 0;
    for (size_t i = 0; i < k->n; i++)
        if (!strcmp(k->hex[i], hex))
            return 0;
    if (k->n == k->cap) {
        size_t nc = k->cap ? k->cap * 2 : 256;
        if (nc > ADM_LAYERS_MAX)
            return -1;
        void *n = realloc(k->hex, nc * sizeof *k->hex);
        if (!n)
            return -1;
        k->hex = n;
        k->cap = nc;
    }
    memcpy(k->hex[k->n++], hex, 65);
    return 0;
}

static int keep_has(const keep_set *k, const char *hex)
{
    for (size_t i = 0; i < k->n; i++)
        if (!strcmp(k->hex[i], hex))
            return 1;
    return 0;
}

/* What record j keeps: its layers, config and manifest blobs. */
static int keep_record(keep_set *k, const cJSON *j)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "layers")) {
        if (cJSON_IsString(x) && keep_add(k, x->valuestring) != 0)
            return -1;
    }
    static const char *const keys[] = {"manifest", "config"};
    for (int i = 0; i < 2; i++) {
        x = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
        if (cJSON_IsString(x) && !strncmp(x->valuestring, "sha256:", 7) && keep_add(k, x->valuestring + 7) != 0)
            return -1;
    }
    return 0;
}

/* Every record of dirfd into k; with retire, a record no sandbox holds
 * (and older than the grace) is removed instead of kept. */
static int keep_dir(keep_set *k, int dfd, int retire)
{
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || strstr(de->d_name, ".tmp."))
            continue;
        struct stat st;
        if (retire && fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            st.st_ctime + ADM_RETIRED_GRACE_S < time(NULL) && !lb_image_record_in_use(dfd, de->d_name)) {
            LB_IGNORE(unlinkat(dfd, de->d_name, 0)); /* kept another round when it cannot go */
            continue;
        }
        cJSON *j = read_json_at(dfd, de->d_name);
        if (!j) {
            if (!retire)
                rc = -2; /* an unreadable live record: gc cannot tell what it needs */
            continue;
        }
        rc = keep_record(k, j);
        cJSON_Delete(j);
    }
    closedir(d);
    return rc;
}

/* Removes every entry of dfd (layers/ or blobs/sha256/) that k lacks:
 * renamed into tmp/ (atomic), then deleted. */
static void sweep(lb_image_store *st, int dfd, const keep_set *k, int is_layers, uint64_t *freed, int *count)
{
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!hex64(de->d_name) || keep_has(k, de->d_name))
            continue;
        char gone[96], rnd[17];
        if (lb_random_hex(rnd, sizeof rnd, 8) != LB_OK)
            continue;
        snprintf(gone, sizeof gone, "gc-%d-%s", (int)getpid(), rnd);
        uint64_t bytes = 0;
        int e = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (is_layers ? O_DIRECTORY : 0));
        if (e >= 0) {
            struct stat sb;
            bytes = is_layers ? lb_image_tree_bytes(e) : (fstat(e, &sb) == 0 ? (uint64_t)sb.st_blocks * 512u : 0);
            close(e);
        }
        if (renameat(dfd, de->d_name, st->tmp_fd, gone) != 0)
            continue;
        char q[LB_CFG_PATH + 200];
        snprintf(q, sizeof q, "%s/tmp/%s", st->oci, gone);
        if (is_layers)
            LB_IGNORE(lb_rmtree(q)); /* the next writer's cleanup removes what is left */
        else
            LB_IGNORE(unlink(q)); /* as above */
        *freed += bytes;
        if (is_layers)
            (*count)++;
    }
    closedir(d);
}

int lb_image_gc(const lb_config *cfg, uint64_t *freed, int *layers_removed, char *msg, size_t msgsz)
{
    *freed = 0;
    *layers_removed = 0;
    lb_image_store st;
    int rc = lb_image_store_open(cfg, &st, msg, msgsz);
    if (rc != LB_OK)
        return rc;
    keep_set k = {0};
    int kr = keep_dir(&k, st.refs_fd, 0);
    if (!kr)
        kr = keep_dir(&k, st.retired_fd, 1);
    if (kr) {
        snprintf(msg, msgsz, kr == -2 ? "an image record in %s/refs cannot be read: gc removes nothing until it "
                                        "is fixed or removed"
                                      : "out of memory while weighing the store (%s)", st.oci);
        rc = kr == -2 ? LB_E_INVAL : LB_E_NOMEM;
    } else {
        sweep(&st, st.layers_fd, &k, 1, freed, layers_removed);
        sweep(&st, st.blobs_fd, &k, 0, freed, layers_removed);
    }
    free(k.hex);
    lb_image_store_close(&st);
    return rc;
}
