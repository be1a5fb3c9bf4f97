/* Importing an image into the layered store (import.h). The order is what
 * makes a kill harmless: blobs are verified in tmp/ and renamed into
 * blobs/ (a blob there is always whole and right), each layer is extracted
 * into tmp/ and renamed into layers/ with its .complete inside, and the
 * image's record is renamed into refs/ last. Anything before that rename
 * is unreferenced, and gc or the next writer removes it. */
#include "images/import.h"

#include "common/image_ref.h"
#include "common/util.h"
#include "images/image_ids.h"
#include "images/oci_json.h"
#include "images/store.h"
#include "images/unpack_run.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define IMP_COPY_BLOCK (1u << 20)
#define IMP_OPAQUE_MAX (16u << 20) /* the opaque folders' list of one layer */
#define IMP_NEST_MAX 2             /* index.json -> an image index -> a manifest */

typedef struct imp {
    const lb_config *cfg;
    lb_image_store st;
    int src_fd;                 /* the layout folder or the extracted archive */
    int move;                   /* blobs may be renamed out of src */
    int ndocker;                /* docker-archive: which file is which digest */
    char ddigest[LB_OCI_LAYERS_MAX + 1][LB_OCI_DIGEST_LEN + 1];
    char dpath[LB_OCI_LAYERS_MAX + 1][LB_OCI_NAME_MAX + 1];
    char *msg;
    size_t msgsz;
} imp;

static int fail(imp *m, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(imp *m, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->msg, m->msgsz, fmt, ap);
    va_end(ap);
    return rc;
}

static int open_beneath(int dirfd, const char *path, int flags, int mode)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
        .mode = (uint64_t)((flags & O_CREAT) ? mode : 0),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    long fd;
    do
        fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    while (fd < 0 && errno == EAGAIN);
    return (int)fd;
}

/* Where the source keeps the blob of digest. */
static void src_path(const imp *m, const char *digest, char *out, size_t outsz)
{
    for (int i = 0; i < m->ndocker; i++) {
        if (!strcmp(m->ddigest[i], digest)) {
            snprintf(out, outsz, "%s", m->dpath[i]);
            return;
        }
    }
    snprintf(out, outsz, "blobs/sha256/%s", digest + 7);
}

typedef struct hasher {
    EVP_MD_CTX *ctx;
} hasher;

static int hash_begin(hasher *h)
{
    h->ctx = EVP_MD_CTX_new();
    return h->ctx && EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) == 1 ? 0 : -1;
}

/* "sha256:<hex>" of what was hashed into out (LB_OCI_DIGEST_LEN + 1). */
static int hash_end(hasher *h, char *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    int ok = EVP_DigestFinal_ex(h->ctx, md, &n) == 1 && n == 32;
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
    if (!ok)
        return -1;
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* Hashes fd from its start, copying to out_fd when not -1. */
static int hash_fd(imp *m, int fd, int out_fd, char *digest, const char *what)
{
    hasher h;
    char *buf = malloc(IMP_COPY_BLOCK);
    int rc = LB_OK;
    if (!buf || hash_begin(&h) != 0) {
        free(buf);
        return fail(m, LB_E_NOMEM, "out of memory");
    }
    off_t off = 0;
    for (;;) {
        ssize_t n = pread(fd, buf, IMP_COPY_BLOCK, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = fail(m, LB_E_IO, "cannot read %s: %s", what, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        if (EVP_DigestUpdate(h.ctx, buf, (size_t)n) != 1 ||
            (out_fd >= 0 && lb_write_all(out_fd, buf, (size_t)n) != LB_OK)) {
            rc = fail(m, LB_E_IO, "cannot copy %s: %s", what, strerror(errno));
            break;
        }
        off += n;
    }
    free(buf);
    if (hash_end(&h, digest) != 0 && rc == LB_OK)
        rc = fail(m, LB_E_INTERNAL, "cannot hash %s", what);
    return rc;
}

/* A regular file of the source, opened beneath it; size checked against
 * want (-1: any up to max). */
static int src_open(imp *m, const char *digest, int64_t want, int64_t max, struct stat *st)
{
    char rel[LB_OCI_NAME_MAX + 32];
    src_path(m, digest, rel, sizeof rel);
    int fd = open_beneath(m->src_fd, rel, O_RDONLY, 0);
    if (fd < 0) {
        fail(m, errno == ENOENT ? LB_E_NOTFOUND : LB_E_INVAL, "the image has no blob %s (%s: %s)", digest, rel,
             errno == ELOOP ? "a symlink" : strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        fail(m, LB_E_INVAL, "the blob %s is not a regular file", digest);
        return -1;
    }
    if ((want >= 0 && st->st_size != want) || (max >= 0 && st->st_size > max)) {
        close(fd);
        fail(m, want >= 0 ? LB_E_INVAL : LB_E_TOOBIG, "the blob %s has %lld bytes, not the %lld its "
             "descriptor says", digest, (long long)st->st_size, (long long)(want >= 0 ? want : max));
        return -1;
    }
    return fd;
}

/* A small blob (index, manifest, config) read whole and checked. */
static int read_blob(imp *m, const char *digest, int64_t want, char **out, size_t *len)
{
    struct stat st;
    int fd = src_open(m, digest, want, LB_OCI_JSON_MAX, &st);
    if (fd < 0)
        return LB_E_INVAL;
    char *buf = malloc((size_t)st.st_size + 1);
    int rc = buf ? lb_read_full(fd, buf, (size_t)st.st_size) : LB_E_NOMEM;
    close(fd);
    if (rc != LB_OK) {
        free(buf);
        return fail(m, rc, "cannot read the blob %s", digest);
    }
    buf[st.st_size] = '\0';
    char got[LB_OCI_DIGEST_LEN + 1];
    hasher h;
    if (hash_begin(&h) != 0 || EVP_DigestUpdate(h.ctx, buf, (size_t)st.st_size) != 1 || hash_end(&h, got) != 0 ||
        strcmp(got, digest) != 0) {
        if (h.ctx)
            EVP_MD_CTX_free(h.ctx);
        free(buf);
        return fail(m, LB_E_INVAL, "the blob %s does not match its digest (it hashes to %s)", digest, got);
    }
    *out = buf;
    *len = (size_t)st.st_size;
    return LB_OK;
}

static int blob_present(imp *m, const char *digest)
{
    struct stat st;
    return fstatat(m->st.blobs_fd, digest + 7, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* The blob into blobs/sha256/: bytes we hold (data), or the source's
 * file, copied or moved, verified either way before the rename. */
static int store_blob(imp *m, const char *digest, int64_t want, const char *data, size_t len)
{
    if (blob_present(m, digest))
        return LB_OK;
    char tmpname[96], rnd[17], got[LB_OCI_DIGEST_LEN + 1];
    if (lb_random_hex(rnd, sizeof rnd, 8) != LB_OK)
        return fail(m, LB_E_IO, "no randomness");
    snprintf(tmpname, sizeof tmpname, "blob-%d-%s", (int)getpid(), rnd);
    int rc = LB_OK, src = -1;
    struct stat st;
    if (!data && (src = src_open(m, digest, want, -1, &st)) < 0)
        return LB_E_INVAL;
    if (!data && m->move) {
        /* ours already (the unpacker wrote it, and has ended): hash it in
         * place, take it over, rename it in */
        rc = hash_fd(m, src, -1, got, digest);
        if (rc == LB_OK && strcmp(got, digest) != 0)
            rc = fail(m, LB_E_INVAL, "the blob %s does not match its digest (it hashes to %s)", digest, got);
        if (rc == LB_OK && (fchown(src, 0, 0) != 0 || fchmod(src, 0444) != 0 || fsync(src) != 0))
            rc = fail(m, LB_E_IO, "cannot take over the blob %s: %s", digest, strerror(errno));
        char rel[LB_OCI_NAME_MAX + 32];
        src_path(m, digest, rel, sizeof rel);
        const char *slash = strrchr(rel, '/');
        int pfd = -1;
        if (rc == LB_OK && slash) {
            rel[slash - rel] = '\0';
            pfd = open_beneath(m->src_fd, rel, O_RDONLY | O_DIRECTORY, 0);
        }
        if (rc == LB_OK && renameat(slash ? pfd : m->src_fd, slash ? slash + 1 : rel, m->st.blobs_fd, digest + 7) != 0)
            rc = fail(m, LB_E_IO, "cannot move the blob %s into the store: %s", digest, strerror(errno));
        if (pfd >= 0)
            close(pfd);
        close(src);
        return rc;
    }
    int out = openat(m->st.tmp_fd, tmpname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    if (out < 0) {
        if (src >= 0)
            close(src);
        return fail(m, LB_E_IO, "cannot write in the image store: %s", strerror(errno));
    }
    if (data) {
        hasher h;
        if (lb_write_all(out, data, len) != LB_OK)
            rc = fail(m, LB_E_IO, "cannot write the blob %s: %s", digest, strerror(errno));
        else if (hash_begin(&h) != 0 || EVP_DigestUpdate(h.ctx, data, len) != 1 || hash_end(&h, got) != 0)
            rc = fail(m, LB_E_INTERNAL, "cannot hash the blob %s", digest);
    } else {
        rc = hash_fd(m, src, out, got, digest);
    }
    if (rc == LB_OK && strcmp(got, digest) != 0)
        rc = fail(m, LB_E_INVAL, "the blob %s does not match its digest (it hashes to %s)", digest, got);
    if (rc == LB_OK && fsync(out) != 0)
        rc = fail(m, LB_E_IO, "cannot write the blob %s: %s", digest, strerror(errno));
    close(out);
    if (src >= 0)
        close(src);
    if (rc == LB_OK && renameat(m->st.tmp_fd, tmpname, m->st.blobs_fd, digest + 7) != 0)
        rc = fail(m, LB_E_IO, "cannot store the blob %s: %s", digest, strerror(errno));
    if (rc != LB_OK)
        LB_IGNORE(unlinkat(m->st.tmp_fd, tmpname, 0)); /* the next writer's cleanup removes it */
    return rc;
}

/* Marks the opaque folders the unpacker listed: trusted.overlay.opaque
 * on an fd opened beneath the layer's root through no symlink (host root
 * sets it: the namespace's root may not write trusted.* xattrs). */
static int mark_opaque(imp *m, int root_fd, int list_fd, const char *digest)
{
    struct stat st;
    if (fstat(list_fd, &st) != 0 || st.st_size > IMP_OPAQUE_MAX)
        return fail(m, LB_E_TOOBIG, "layer %s: too many opaque folders", digest);
    if (st.st_size == 0)
        return LB_OK;
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf)
        return fail(m, LB_E_NOMEM, "out of memory");
    int rc = LB_OK;
    if (pread(list_fd, buf, (size_t)st.st_size, 0) != st.st_size)
        rc = fail(m, LB_E_IO, "cannot read the opaque folders' list: %s", strerror(errno));
    buf[st.st_size] = '\0';
    for (char *p = buf; rc == LB_OK && p < buf + st.st_size; p += strlen(p) + 1) {
        int fd = *p ? open_beneath(root_fd, p, O_RDONLY | O_DIRECTORY, 0) : dup(root_fd);
        if (fd < 0 || fsetxattr(fd, "trusted.overlay.opaque", "y", 1, 0) != 0)
            rc = fail(m, LB_E_INVAL, "layer %s: cannot mark the folder \"%.300s\" opaque: %s", digest, p,
                      strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    free(buf);
    return rc;
}

/* The layer of digest (in blobs/) extracted into layers/<hex>/ unless it
 * is there already. */
static int extract_layer(imp *m, const char *digest)
{
    const char *hex = digest + 7;
    char p[128], label[96], rnd[17], stage[96];
    struct stat st;
    snprintf(p, sizeof p, "%s/.complete", hex);
    if (fstatat(m->st.layers_fd, p, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return LB_OK;
    if (fstatat(m->st.layers_fd, hex, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        /* a layer folder without .complete is never made by us (the rename
         * carries .complete in): someone's damage, removed */
        char q[LB_CFG_PATH + 200];
        snprintf(q, sizeof q, "%s/layers/sha256/%s", m->st.oci, hex);
        if (lb_rmtree(q) != LB_OK)
            return fail(m, LB_E_IO, "cannot remove the incomplete layer %s", q);
    }
    if (lb_random_hex(rnd, sizeof rnd, 8) != LB_OK)
        return fail(m, LB_E_IO, "no randomness");
    snprintf(stage, sizeof stage, "layer-%d-%s", (int)getpid(), rnd);
    snprintf(label, sizeof label, "layer %s", digest);
    int sfd = -1, rfd = -1, bfd = -1, lfd = -1, rc = LB_OK;
    if (mkdirat(m->st.tmp_fd, stage, 0700) != 0 ||
        (sfd = openat(m->st.tmp_fd, stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        mkdirat(sfd, "root", 0755) != 0 ||
        (rfd = openat(sfd, "root", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        fchown(rfd, m->cfg->sandbox_uid_base, m->cfg->sandbox_uid_base) != 0 || fchmod(rfd, 0755) != 0 ||
        (bfd = openat(m->st.blobs_fd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        (lfd = openat(m->st.tmp_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)) < 0) {
        rc = fail(m, LB_E_IO, "cannot stage the layer %s: %s", digest, strerror(errno));
        goto out;
    }
    char exe[LB_CFG_PATH + 32];
    const char *slash = strrchr(m->cfg->self_exe, '/');
    snprintf(exe, sizeof exe, "%.*s/llmbox-unpack", slash ? (int)(slash - m->cfg->self_exe) : 1,
             slash ? m->cfg->self_exe : ".");
    lb_unpack_job j = {
        .exe = exe, .mode = "layer", .base = m->cfg->sandbox_uid_base,
        .max_bytes = (uint64_t)m->cfg->image_layer_max_mib << 20,
        .max_entries = (uint64_t)m->cfg->image_layer_max_entries,
        .label = label, .in_fd = bfd, .dest_fd = rfd, .opaque_fd = lfd,
    };
    if ((rc = lb_unpack_run(&j, m->msg, m->msgsz)) != LB_OK)
        goto out;
    if ((rc = mark_opaque(m, rfd, lfd, digest)) != LB_OK)
        goto out;
    /* .complete holds the layer's disk use, for ls and the web (which
     * cannot walk the layers: they are root's, mode 0700) */
    char used[32];
    int ul = snprintf(used, sizeof used, "%llu\n", (unsigned long long)lb_image_tree_bytes(rfd));
    int cfd = openat(sfd, ".complete", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (cfd < 0 || lb_write_all(cfd, used, (size_t)ul) != LB_OK || fsync(cfd) != 0 || close(cfd) != 0 ||
        fsync(sfd) != 0) {
        rc = fail(m, LB_E_IO, "cannot complete the layer %s: %s", digest, strerror(errno));
        goto out;
    }
    /* the layer's folder belongs to the images' root id too (store.h) */
    if (fchown(sfd, m->cfg->sandbox_uid_base, m->cfg->sandbox_uid_base) != 0 ||
        renameat(m->st.tmp_fd, stage, m->st.layers_fd, hex) != 0 || fsync(m->st.layers_fd) != 0)
        rc = fail(m, LB_E_IO, "cannot store the layer %s: %s", digest, strerror(errno));
out:
    if (sfd >= 0)
        close(sfd);
    if (rfd >= 0)
        close(rfd);
    if (bfd >= 0)
        close(bfd);
    if (lfd >= 0)
        close(lfd);
    if (rc != LB_OK) {
        char q[LB_CFG_PATH + 200];
        snprintf(q, sizeof q, "%s/tmp/%s", m->st.oci, stage);
        LB_IGNORE(lb_rmtree(q)); /* the next writer's cleanup removes it */
    }
    return rc;
}

/* What layers/<hex>/.complete says the layer takes on disk (0 unknown). */
static uint64_t layer_bytes(imp *m, const char *hex)
{
    char p[128], buf[32];
    snprintf(p, sizeof p, "%s/.complete", hex);
    int fd = openat(m->st.layers_fd, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    return end == buf ? 0 : (uint64_t)v;
}

static cJSON *strv_json(char **v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

/* The config's User ("name|uid[:group|gid]") as ids, looked up in the
 * image's own /etc/passwd and /etc/group (images/image_ids.h). */
static int resolve_user(imp *m, const lb_oci_manifest *man, const char *user, long *uid, long *gid)
{
    const char *hexes[LB_OCI_LAYERS_MAX];
    int n = 0;
    for (int i = 0; i < man->nlayers && n < LB_OCI_LAYERS_MAX; i++)
        hexes[n++] = man->layers[i].digest + 7;
    char why[400];
    if (lb_image_ids_resolve(m->st.layers_fd, hexes, n, user, uid, gid, why, sizeof why) != LB_OK)
        return fail(m, LB_E_INVAL, "the image's User \"%s\": %s", user, why);
    return LB_OK;
}

/* The record, last: refs/<file>, replacing the old one, which moves to
 * retired/ for gc to weigh (a sandbox may still run it). */
static int write_record(imp *m, const char *canon, const char *file, const char *mdigest, const lb_oci_manifest *man,
                        const lb_oci_config *cf, long uid, long gid)
{
    cJSON *r = cJSON_CreateObject(), *layers = cJSON_CreateArray();
    int64_t size = 0;
    cJSON *lbytes = cJSON_CreateArray();
    for (int i = 0; layers && i < man->nlayers; i++) {
        cJSON_AddItemToArray(layers, cJSON_CreateString(man->layers[i].digest + 7));
        cJSON_AddItemToArray(lbytes, cJSON_CreateNumber((double)layer_bytes(m, man->layers[i].digest + 7)));
        size += man->layers[i].size;
    }
    cJSON_AddItemToObject(r, "layer_bytes", lbytes);
    char *text = NULL;
    int rc = LB_OK;
    if (!r || !layers || !cJSON_AddStringToObject(r, "reference", canon) ||
        !cJSON_AddStringToObject(r, "manifest", mdigest) ||
        !cJSON_AddStringToObject(r, "config", man->config.digest) || !cJSON_AddItemToObject(r, "layers", layers) ||
        !cJSON_AddItemToObject(r, "env", strv_json(cf->env, cf->nenv)) ||
        !cJSON_AddStringToObject(r, "workdir", cf->workdir ? cf->workdir : "") ||
        !cJSON_AddStringToObject(r, "user", cf->user) ||
        !cJSON_AddItemToObject(r, "cmd", strv_json(cf->cmd, cf->ncmd)) ||
        !cJSON_AddItemToObject(r, "entrypoint", strv_json(cf->entrypoint, cf->nentry)) ||
        !cJSON_AddNumberToObject(r, "size", (double)size) ||
        !cJSON_AddNumberToObject(r, "created", (double)time(NULL)) ||
        !cJSON_AddNumberToObject(r, "uid", (double)uid) || !cJSON_AddNumberToObject(r, "gid", (double)gid) ||
        !(text = cJSON_PrintUnformatted(r))) {
        if (!layers || !cJSON_GetObjectItem(r, "layers"))
            cJSON_Delete(layers);
        cJSON_Delete(r);
        return fail(m, LB_E_NOMEM, "out of memory");
    }
    cJSON_Delete(r);
    struct stat st;
    if (fstatat(m->st.refs_fd, file, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        char old[LB_IMAGE_REF_MAX + 64], rnd[17];
        if (lb_random_hex(rnd, sizeof rnd, 8) != LB_OK)
            rnd[0] = '\0';
        snprintf(old, sizeof old, "%.*s.%s.json", (int)(strlen(file) - 5), file, rnd);
        if (linkat(m->st.refs_fd, file, m->st.retired_fd, old, 0) != 0 && errno != EEXIST)
            rc = fail(m, LB_E_IO, "cannot keep the replaced record of %s: %s", canon, strerror(errno));
    }
    char p[LB_CFG_PATH + 300];
    snprintf(p, sizeof p, "%s/refs/%s", m->st.oci, file);
    if (rc == LB_OK && lb_write_file_atomic(p, text, strlen(text), 0644) != LB_OK)
        rc = fail(m, LB_E_IO, "cannot write the record of %s: %s", canon, strerror(errno));
    free(text);
    return rc;
}

/* The whole import once the source is open: index -> manifest -> config ->
 * blobs -> layers -> record. manifest_json, when not NULL, is the manifest
 * itself (a docker-archive's, made here) and index.json is not read. */
static int import_src(imp *m, const char *name, const char *want_tag, const char *manifest_json, char *canon,
                      size_t canonsz)
{
    char cname[LB_IMAGE_REF_MAX + 8], file[LB_IMAGE_REF_MAX + 8], mdigest[LB_OCI_DIGEST_LEN + 1];
    char *doc = NULL;
    size_t len = 0;
    lb_oci_manifest *man = calloc(1, sizeof *man);
    lb_oci_index *idx = calloc(1, sizeof *idx);
    lb_oci_config cf;
    memset(&cf, 0, sizeof cf);
    int rc = LB_OK;
    if (!man || !idx) {
        rc = fail(m, LB_E_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = lb_image_record_name(name, cname, sizeof cname, file, sizeof file, m->msg, m->msgsz)) != LB_OK)
        goto out;
    if (manifest_json) {
        len = strlen(manifest_json);
        hasher h;
        if (hash_begin(&h) != 0 || EVP_DigestUpdate(h.ctx, manifest_json, len) != 1 || hash_end(&h, mdigest) != 0) {
            rc = fail(m, LB_E_INTERNAL, "cannot hash the manifest");
            goto out;
        }
        if (!(doc = strdup(manifest_json))) {
            rc = fail(m, LB_E_NOMEM, "out of memory");
            goto out;
        }
    } else {
        int fd = open_beneath(m->src_fd, "index.json", O_RDONLY, 0);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > LB_OCI_JSON_MAX) {
            rc = fail(m, LB_E_INVAL, "not an OCI image layout: no readable index.json of at most %u bytes",
                      LB_OCI_JSON_MAX);
            if (fd >= 0)
                close(fd);
            goto out;
        }
        doc = malloc((size_t)st.st_size + 1);
        rc = doc ? lb_read_full(fd, doc, (size_t)st.st_size) : LB_E_NOMEM;
        close(fd);
        if (rc != LB_OK) {
            rc = fail(m, rc, "cannot read index.json");
            goto out;
        }
        doc[st.st_size] = '\0';
        len = (size_t)st.st_size;
        const char *want = want_tag;
        for (int depth = 0;; depth++) {
            if ((rc = lb_oci_parse_index(doc, len, idx, m->msg, m->msgsz)) != LB_OK)
                goto out;
            int i = lb_oci_index_pick(idx, want, m->msg, m->msgsz);
            if (i < 0) {
                rc = LB_E_NOTFOUND;
                goto out;
            }
            lb_oci_desc d = idx->m[i];
            free(doc);
            doc = NULL;
            if ((rc = read_blob(m, d.digest, d.size, &doc, &len)) != LB_OK)
                goto out;
            if (d.kind == LB_OCI_KIND_MANIFEST) {
                snprintf(mdigest, sizeof mdigest, "%s", d.digest);
                break;
            }
            if (depth + 1 >= IMP_NEST_MAX) {
                rc = fail(m, LB_E_INVAL, "the image index nests image indexes deeper than %d", IMP_NEST_MAX);
                goto out;
            }
            want = NULL; /* inside a multi-arch list: the platform decides */
        }
    }
    if ((rc = lb_oci_parse_manifest(doc, len, man, m->msg, m->msgsz)) != LB_OK)
        goto out;
    char *cdoc = NULL;
    size_t clen = 0;
    if ((rc = read_blob(m, man->config.digest, man->config.size, &cdoc, &clen)) != LB_OK)
        goto out;
    rc = lb_oci_parse_config(cdoc, clen, &cf, m->msg, m->msgsz);
    if (rc == LB_OK && cf.ndiff != man->nlayers)
        rc = fail(m, LB_E_INVAL, "the image config lists %d layers, the manifest %d", cf.ndiff, man->nlayers);
    if (rc == LB_OK && cf.arch[0] && strcmp(cf.arch, "amd64") != 0)
        rc = fail(m, LB_E_INVAL, "the image is for %s, not amd64", cf.arch);
    if (rc == LB_OK)
        rc = store_blob(m, man->config.digest, man->config.size, cdoc, clen);
    free(cdoc);
    if (rc != LB_OK)
        goto out;
    if ((rc = store_blob(m, mdigest, -1, doc, len)) != LB_OK)
        goto out;
    for (int i = 0; i < man->nlayers; i++) {
        if ((rc = store_blob(m, man->layers[i].digest, man->layers[i].size, NULL, 0)) != LB_OK ||
            (rc = extract_layer(m, man->layers[i].digest)) != LB_OK)
            goto out;
    }
    long uid, gid;
    if ((rc = resolve_user(m, man, cf.user, &uid, &gid)) != LB_OK ||
        (rc = write_record(m, cname, file, mdigest, man, &cf, uid, gid)) != LB_OK)
        goto out;
    if (canon)
        snprintf(canon, canonsz, "%s", cname);
out:
    lb_oci_config_free(&cf);
    free(doc);
    free(man);
    free(idx);
    return rc;
}

int lb_image_import_layout(const lb_config *cfg, const char *layout_dir, const char *name, const char *want_tag,
                           unsigned flags, char *canon, size_t canonsz, char *msg, size_t msgsz)
{
    imp *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(msg, msgsz, "out of memory");
        return LB_E_NOMEM;
    }
    m->cfg = cfg;
    m->msg = msg;
    m->msgsz = msgsz;
    m->move = (flags & LB_IMPORT_MOVE) != 0;
    int rc = lb_image_store_open(cfg, &m->st, msg, msgsz);
    if (rc != LB_OK) {
        free(m);
        return rc;
    }
    m->src_fd = open(layout_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (m->src_fd < 0)
        rc = fail(m, LB_E_NOTFOUND, "cannot open the image layout %s: %s", layout_dir, strerror(errno));
    else
        rc = import_src(m, name, want_tag, NULL, canon, canonsz);
    if (m->src_fd >= 0)
        close(m->src_fd);
    lb_image_store_close(&m->st);
    free(m);
    return rc;
}

/* A docker-archive's name of a file, through at most one relative symlink
 * (docker and skopeo link <id>/layer.tar to the blob): the link is read
 * beneath the archive and joined lexically, and the result must be a clean
 * path inside the archive. */
static int docker_resolve(imp *m, const char *name, char *out, size_t outsz)
{
    const char *slash = strrchr(name, '/');
    char dir[LB_OCI_NAME_MAX + 1] = "", target[LB_OCI_NAME_MAX + 1], joined[2 * LB_OCI_NAME_MAX + 2];
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - name), name);
    int pfd = dir[0] ? open_beneath(m->src_fd, dir, O_RDONLY | O_DIRECTORY, 0) : dup(m->src_fd);
    if (pfd < 0)
        return -1;
    struct stat st;
    const char *base = slash ? slash + 1 : name;
    int rc = -1;
    if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0)
        goto out;
    if (!S_ISLNK(st.st_mode)) {
        rc = (size_t)snprintf(out, outsz, "%s", name) < outsz ? 0 : -1;
        goto out;
    }
    ssize_t n = readlinkat(pfd, base, target, sizeof target - 1);
    if (n <= 0 || target[0] == '/')
        goto out;
    target[n] = '\0';
    snprintf(joined, sizeof joined, "%s%s%s", dir, dir[0] ? "/" : "", target);
    /* lexical: "a/../b" -> "b"; a ".." above the archive is refused */
    char norm[2 * LB_OCI_NAME_MAX + 2] = "";
    size_t nl = 0;
    for (char *save = NULL, *c = strtok_r(joined, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, "."))
            continue;
        if (!strcmp(c, "..")) {
            if (!nl)
                goto out;
            char *prev = strrchr(norm, '/');
            nl = prev ? (size_t)(prev - norm) : 0;
            norm[nl] = '\0';
            continue;
        }
        int w = snprintf(norm + nl, sizeof norm - nl, "%s%s", nl ? "/" : "", c);
        if (w < 0 || (size_t)w >= sizeof norm - nl)
            goto out;
        nl += (size_t)w;
    }
    if (nl && nl < outsz) {
        memcpy(out, norm, nl + 1);
        rc = 0;
    }
out:
    close(pfd);
    return rc;
}

/* docker-archive: manifest.json names the config and layer files; each is
 * hashed to its digest, and a Docker v2 manifest is made for import_src. */
static int import_docker(imp *m, const char *name, char *canon, size_t canonsz)
{
    lb_docker_manifest *dm = calloc(1, sizeof *dm);
    char *doc = NULL, *mtext = NULL;
    size_t len = 0;
    int rc = LB_OK;
    cJSON *man = NULL;
    if (!dm) {
        rc = fail(m, LB_E_NOMEM, "out of memory");
        goto out;
    }
    int fd = open_beneath(m->src_fd, "manifest.json", O_RDONLY, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > LB_OCI_JSON_MAX) {
        if (fd >= 0)
            close(fd);
        rc = fail(m, LB_E_INVAL, "the archive is neither an oci-archive (index.json) nor a docker-archive "
                                 "(manifest.json)");
        goto out;
    }
    doc = malloc((size_t)st.st_size + 1);
    rc = doc ? lb_read_full(fd, doc, (size_t)st.st_size) : LB_E_NOMEM;
    close(fd);
    if (rc != LB_OK) {
        rc = fail(m, rc, "cannot read manifest.json");
        goto out;
    }
    len = (size_t)st.st_size;
    if ((rc = lb_docker_parse_manifest(doc, len, dm, m->msg, m->msgsz)) != LB_OK)
        goto out;
    if (!name || !*name) {
        if (!dm->repo_tag[0]) {
            rc = fail(m, LB_E_INVAL, "the archive names no image (no RepoTags): give a NAME");
            goto out;
        }
        name = dm->repo_tag;
    }
    man = cJSON_CreateObject();
    cJSON *layers = cJSON_AddArrayToObject(man, "layers");
    cJSON_AddNumberToObject(man, "schemaVersion", 2);
    cJSON_AddStringToObject(man, "mediaType", "application/vnd.docker.distribution.manifest.v2+json");
    for (int i = 0; i <= dm->nlayers; i++) {
        char f[LB_OCI_NAME_MAX + 1];
        if (docker_resolve(m, i == 0 ? dm->config : dm->layers[i - 1], f, sizeof f) != 0) {
            rc = fail(m, LB_E_INVAL, "manifest.json names %s, a symlink that leads nowhere inside the archive",
                      i == 0 ? dm->config : dm->layers[i - 1]);
            goto out;
        }
        int bfd = open_beneath(m->src_fd, f, O_RDONLY, 0);
        if (bfd < 0 || fstat(bfd, &st) != 0 || !S_ISREG(st.st_mode)) {
            if (bfd >= 0)
                close(bfd);
            rc = fail(m, LB_E_INVAL, "the archive has no file %s, which manifest.json names", f);
            goto out;
        }
        rc = hash_fd(m, bfd, -1, m->ddigest[i], f);
        close(bfd);
        if (rc != LB_OK)
            goto out;
        snprintf(m->dpath[i], sizeof m->dpath[i], "%s", f);
        m->ndocker = i + 1;
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "mediaType", i == 0 ? "application/vnd.docker.container.image.v1+json"
                                                        : "application/vnd.docker.image.rootfs.diff.tar");
        cJSON_AddNumberToObject(d, "size", (double)st.st_size);
        cJSON_AddStringToObject(d, "digest", m->ddigest[i]);
        if (i == 0)
            cJSON_AddItemToObject(man, "config", d);
        else
            cJSON_AddItemToArray(layers, d);
    }
    if (!(mtext = cJSON_PrintUnformatted(man))) {
        rc = fail(m, LB_E_NOMEM, "out of memory");
        goto out;
    }
    rc = import_src(m, name, NULL, mtext, canon, canonsz);
out:
    cJSON_Delete(man);
    free(mtext);
    free(doc);
    free(dm);
    return rc;
}

/* The OCI index's own name for its image: the ref.name annotation of its
 * one manifest, when that is a whole reference (skopeo writes just a tag
 * when asked for one: then NULL). */
static int layout_name(imp *m, char *out, size_t outsz)
{
    char *doc = NULL;
    size_t len = 0;
    int fd = open_beneath(m->src_fd, "index.json", O_RDONLY, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size > LB_OCI_JSON_MAX || !(doc = malloc((size_t)st.st_size + 1)) ||
        lb_read_full(fd, doc, (size_t)st.st_size) != LB_OK) {
        if (fd >= 0)
            close(fd);
        free(doc);
        return -1;
    }
    close(fd);
    len = (size_t)st.st_size;
    lb_oci_index *idx = calloc(1, sizeof *idx);
    char e[128];
    int ok = idx && lb_oci_parse_index(doc, len, idx, e, sizeof e) == LB_OK && idx->n == 1 && idx->m[0].ref_name[0] &&
             strchr(idx->m[0].ref_name, '/');
    if (ok)
        snprintf(out, outsz, "%s", idx->m[0].ref_name);
    free(idx);
    free(doc);
    return ok ? 0 : -1;
}

int lb_image_import_path(const lb_config *cfg, const char *path, const char *name, char *canon, size_t canonsz,
                         char *msg, size_t msgsz)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(msg, msgsz, "cannot open %s: %s", path, strerror(errno));
        return LB_E_NOTFOUND;
    }
    imp *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(msg, msgsz, "out of memory");
        return LB_E_NOMEM;
    }
    m->cfg = cfg;
    m->msg = msg;
    m->msgsz = msgsz;
    m->src_fd = -1;
    if (S_ISDIR(st.st_mode)) {
        /* an OCI layout folder: what pull and build hand over too, through
         * the same function (its name, when not given, from its index) */
        char own_dir[LB_OCI_NAME_MAX + 1];
        m->src_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int named = (name && *name) || (m->src_fd >= 0 && layout_name(m, own_dir, sizeof own_dir) == 0);
        if (m->src_fd >= 0)
            close(m->src_fd);
        free(m);
        if (!named) {
            snprintf(msg, msgsz, "the layout names no whole image reference: give a NAME");
            return LB_E_INVAL;
        }
        return lb_image_import_layout(cfg, path, name && *name ? name : own_dir, NULL, 0, canon, canonsz, msg,
                                      msgsz);
    }
    int rc = lb_image_store_open(cfg, &m->st, msg, msgsz);
    if (rc != LB_OK) {
        free(m);
        return rc;
    }
    char stage[96] = "", own[LB_OCI_NAME_MAX + 1];
    int in = -1, sfd = -1;
    /* the outer tar is hostile too: the unpacker extracts it (files and
     * folders only) into our staging folder, from which blobs move */
    char rnd[17];
    if (lb_random_hex(rnd, sizeof rnd, 8) != LB_OK) {
        rc = fail(m, LB_E_IO, "no randomness");
        goto out;
    }
    snprintf(stage, sizeof stage, "archive-%d-%s", (int)getpid(), rnd);
    if ((in = open(path, O_RDONLY | O_CLOEXEC)) < 0 || mkdirat(m->st.tmp_fd, stage, 0700) != 0 ||
        (sfd = openat(m->st.tmp_fd, stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        mkdirat(sfd, "root", 0755) != 0 ||
        (m->src_fd = openat(sfd, "root", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        fchown(m->src_fd, cfg->sandbox_uid_base, cfg->sandbox_uid_base) != 0) {
        rc = fail(m, LB_E_IO, "cannot stage %s: %s", path, strerror(errno));
        goto out;
    }
    char exe[LB_CFG_PATH + 32], label[LB_CFG_PATH + 16];
    const char *slash = strrchr(cfg->self_exe, '/');
    snprintf(exe, sizeof exe, "%.*s/llmbox-unpack", slash ? (int)(slash - cfg->self_exe) : 1,
             slash ? cfg->self_exe : ".");
    snprintf(label, sizeof label, "archive %.180s", path);
    lb_unpack_job j = {
        .exe = exe, .mode = "archive", .base = cfg->sandbox_uid_base,
        /* the archive holds every layer, compressed or not */
        .max_bytes = (uint64_t)cfg->image_layer_max_mib << 21,
        .max_entries = 100000, .label = label, .in_fd = in, .dest_fd = m->src_fd, .opaque_fd = -1,
    };
    if ((rc = lb_unpack_run(&j, msg, msgsz)) != LB_OK)
        goto out;
    m->move = 1;
    struct stat ist;
    if (fstatat(m->src_fd, "index.json", &ist, AT_SYMLINK_NOFOLLOW) == 0) {
        if ((!name || !*name) && layout_name(m, own, sizeof own) == 0)
            name = own;
        if (!name || !*name)
            rc = fail(m, LB_E_INVAL, "the archive names no whole image reference: give a NAME");
        else
            rc = import_src(m, name, NULL, NULL, canon, canonsz);
    } else {
        rc = import_docker(m, name, canon, canonsz);
    }
out:
    if (in >= 0)
        close(in);
    if (m->src_fd >= 0)
        close(m->src_fd);
    if (sfd >= 0)
        close(sfd);
    if (stage[0]) {
        char q[LB_CFG_PATH + 200];
        snprintf(q, sizeof q, "%s/tmp/%s", m->st.oci, stage);
        LB_IGNORE(lb_rmtree(q)); /* the next writer's cleanup removes it */
    }
    lb_image_store_close(&m->st);
    free(m);
    return rc;
}
