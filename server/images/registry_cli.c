/* `llmbox image pull|push` and the pull on first use (registry_cli.h). */
#include "images/registry_cli.h"

#include "common/image_ref.h"
#include "common/util.h"
#include "images/import.h"
#include "images/pull_image.h"
#include "images/push_image.h"
#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOB_MAX (16LL << 30)   /* one layer: as images-core's image_layer_max_mib default */
#define TOTAL_MAX (64LL << 30)  /* one image */


int lb_registry_cli_handles(int argc, char **argv)
{
    return argc >= 2 && (!strcmp(argv[1], "pull") || !strcmp(argv[1], "push"));
}

int lb_image_is_registry_ref(const char *s)
{
    lb_image_ref r;
    return lb_image_ref_parse(s, LB_IMAGE_REF_LOCAL, &r, NULL, 0) == LB_OK && !lb_image_ref_is_local(&r);
}

/* Whether the store has a record for the reference (images-core's
 * refs/<file name>.json). */
static int stored(const lb_config *cfg, const char *fname)
{
    char path[LB_CFG_PATH + 400];
    snprintf(path, sizeof path, "%s/oci/refs/%s.json", cfg->image_store, fname);
    return access(path, F_OK) == 0;
}

/* Pulls into the spool <image_store>/oci/spool/<fname>/ (kept for a resume
 * when the pull stops), hands the layout to the store's import, then
 * removes the spool. */
static int pull_register(const lb_config *cfg, const char *ref, int quiet, char *canon, size_t canonsz, char *msg,
                         size_t msgsz)
{
    lb_image_ref r;
    int rc = lb_image_ref_parse(ref, 0, &r, msg, msgsz);
    if (rc)
        return rc;
    char fname[LB_IMAGE_REF_MAX + 1], spool[LB_CFG_PATH + 400];
    if ((rc = lb_image_ref_file_name(&r, fname, sizeof fname)))
        return rc;
    snprintf(spool, sizeof spool, "%s/oci/spool/%s", cfg->image_store, fname);
    lb_pull_opts o = {.ref = ref, .layout_dir = spool, .insecure = cfg->insecure_registries,
                      .auth_file = cfg->registry_auth_file, .blob_max = BLOB_MAX, .total_max = TOTAL_MAX,
                      .quiet = quiet};
    if ((rc = lb_pull_image(&o, canon, canonsz, NULL, 0, msg, msgsz)))
        return rc;
    /* the spool is not under tmp/: copied, not moved, then removed */
    if ((rc = lb_image_import_layout(cfg, spool, canon, r.tag, 0, NULL, 0, msg, msgsz)))
        return rc;
    LB_IGNORE(lb_rmtree(spool)); /* a spool left behind is reused or replaced by the next pull */
    return LB_OK;
}

/* The pull as root: under the spool's lock, so that two that want the
 * same reference at once pull once (the second waits and finds it). */
static int ensure_root(const lb_config *cfg, const char *ref, const char *fname, int quiet, char *why,
                       size_t whysz)
{
    char dir[LB_CFG_PATH + 64], lock[LB_CFG_PATH + 400];
    int fd = -1, rc = LB_OK;
    snprintf(dir, sizeof dir, "%s/oci/spool", cfg->image_store);
    snprintf(lock, sizeof lock, "%s/%s.lock", dir, fname);
    if (lb_mkdirs(dir, 0700) != LB_OK ||
        (fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0 || flock(fd, LOCK_EX)) {
        snprintf(why, whysz, "cannot lock %s: %s.", lock, strerror(errno));
        rc = LB_E_IO;
    } else if (!stored(cfg, fname)) {
        /* the one that held the lock before us did not register it: our turn */
        char canon[LB_IMAGE_REF_MAX + 1];
        rc = pull_register(cfg, ref, quiet, canon, sizeof canon, why, whysz);
    }
    if (fd >= 0)
        close(fd); /* releases the lock */
    return rc;
}

#define PULL_POLL_MIN_MS 100
#define PULL_POLL_MAX_MS 1000

/* The pull for a caller that is not root: sandboxd (root) runs `llmbox
 * image pull --if-missing REF` as its child; the same reference asked
 * twice is one job. Waits at most image_pull_wait_s for its end. *own:
 * whether why is already the whole sentence (the job's). */
static int ensure_via_sandboxd(const lb_config *cfg, const char *ref, char *why, size_t whysz, int *own)
{
    lbsb_conn *c = NULL;
    char err[1024] = "", job[33];
    int rc = lbsb_connect(cfg->sandboxd_socket, NULL, &c, err, sizeof err);
    lbsb_image_job_spec spec = {.kind = "pull", .ref = ref};
    if (rc == LB_OK)
        rc = lbsb_image_job_start(c, &spec, job, err, sizeof err);
    if (rc != LB_OK) {
        snprintf(why, whysz, "sandboxd cannot pull it for this service: %s.", err);
        lbsb_close(c);
        return rc;
    }
    int64_t end = lb_mono_ms() + (int64_t)cfg->image_pull_wait_s * 1000;
    int wait_ms = PULL_POLL_MIN_MS;
    for (;;) {
        lbsb_image_job_status st;
        if ((rc = lbsb_image_job_poll(c, job, 0, 0, &st, err, sizeof err)) != LB_OK) {
            snprintf(why, whysz, "its pull (sandboxd's image job %s) cannot be followed: %s.", job, err);
            break;
        }
        lbsb_image_job_status_free(&st);
        if (!strcmp(st.state, "succeeded"))
            break;
        if (!strcmp(st.state, "failed")) {
            rc = LB_E_UNAVAILABLE;
            *own = !strncmp(st.error, "This node does not have the image", 33);
            snprintf(why, whysz, "%s", st.error[0] ? st.error : "the pull failed.");
            break;
        }
        if (lb_mono_ms() >= end) {
            rc = LB_E_TIMEOUT;
            snprintf(why, whysz, "its pull (sandboxd's image job %s) did not end within image_pull_wait_s (%d s); "
                                 "it goes on, and a later create finds the image once it is done.",
                     job, cfg->image_pull_wait_s);
            break;
        }
        usleep((useconds_t)wait_ms * 1000);
        wait_ms = wait_ms * 2 > PULL_POLL_MAX_MS ? PULL_POLL_MAX_MS : wait_ms * 2;
    }
    lbsb_close(c);
    return rc;
}

static int ensure(const lb_config *cfg, const char *ref, int quiet, char *msg, size_t msgsz)
{
    lb_image_ref r;
    int rc = lb_image_ref_parse(ref, 0, &r, msg, msgsz);
    if (rc)
        return rc;
    char fname[LB_IMAGE_REF_MAX + 1], why[2048] = "";
    if ((rc = lb_image_ref_file_name(&r, fname, sizeof fname)))
        return rc;
    if (stored(cfg, fname))
        return LB_OK;
    int own = 0;
    if (geteuid() != 0)
        rc = ensure_via_sandboxd(cfg, ref, why, sizeof why, &own); /* the store is root's */
    else
        rc = ensure_root(cfg, ref, fname, quiet, why, sizeof why);
    if (rc && own)
        snprintf(msg, msgsz, "%s", why);
    else if (rc)
        lb_say(msg, msgsz, "This node does not have the image %s and cannot pull it: %s", ref, why);
    return rc;
}

int lb_pull_ensure(const lb_config *cfg, const char *ref, char *msg, size_t msgsz)
{
    return ensure(cfg, ref, 1, msg, msgsz);
}

static int usage(void)
{
    fprintf(stderr, "usage: llmbox image pull REF [--oci DIR | --if-missing] [--quiet]\n"
                    "       llmbox image push (NAME | --oci DIR) REF [--chunk-mib N] [--quiet]\n");
    return 2;
}

static int cmd_pull(int argc, char **argv, const lb_config *cfg)
{
    const char *ref = NULL, *oci = NULL;
    int quiet = 0, if_missing = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--oci") && i + 1 < argc)
            oci = argv[++i];
        else if (!strcmp(argv[i], "--if-missing"))
            if_missing = 1;
        else if (!strcmp(argv[i], "--quiet"))
            quiet = 1;
        else if (!ref && argv[i][0] != '-')
            ref = argv[i];
        else
            return usage();
    }
    if (!ref || (if_missing && oci))
        return usage();
    char canon[LB_IMAGE_REF_MAX + 1], digest[72] = "", msg[2048];
    int rc;
    if (if_missing) {
        /* with progress unless --quiet: sandboxd's image job keeps it as its log */
        if (ensure(cfg, ref, quiet, msg, sizeof msg) != LB_OK) {
            fprintf(stderr, "llmbox: image pull: %s\n", msg);
            return 1;
        }
        return 0;
    }
    if (oci) {
        lb_pull_opts o = {.ref = ref, .layout_dir = oci, .insecure = cfg->insecure_registries,
                          .auth_file = cfg->registry_auth_file, .blob_max = BLOB_MAX, .total_max = TOTAL_MAX,
                          .quiet = quiet};
        rc = lb_pull_image(&o, canon, sizeof canon, digest, sizeof digest, msg, sizeof msg);
    } else {
        rc = pull_register(cfg, ref, quiet, canon, sizeof canon, msg, sizeof msg);
    }
    if (rc) {
        fprintf(stderr, "llmbox: image pull: %s\n", msg);
        return 1;
    }
    printf("%s%s%s\n", canon, digest[0] ? " " : "", digest);
    return 0;
}

/* A stored image as an OCI layout to push from: the store's record
 * (refs/<file name>.json) names the manifest; a staging folder in
 * oci/tmp/ gets an index.json of it and a link to the store's blobs. */
static int stored_layout(const lb_config *cfg, const char *name, char *dir, size_t dirsz, char *msg, size_t msgsz)
{
    lb_image_ref r;
    int rc = lb_image_ref_parse(name, LB_IMAGE_REF_LOCAL, &r, msg, msgsz);
    if (rc)
        return rc;
    char fname[LB_IMAGE_REF_MAX + 1], path[LB_CFG_PATH + 400], *data = NULL;
    size_t len = 0;
    if ((rc = lb_image_ref_file_name(&r, fname, sizeof fname)))
        return rc;
    snprintf(path, sizeof path, "%s/oci/refs/%s.json", cfg->image_store, fname);
    if ((rc = lb_read_file(path, 1 << 20, &data, &len))) {
        lb_say(msg, msgsz, "There is no stored image %s%s.", name,
            rc == LB_E_NOTFOUND ? "" : " that can be read");
        return rc;
    }
    cJSON *rec = cJSON_ParseWithLength(data, len);
    free(data);
    const cJSON *m = rec ? cJSON_GetObjectItemCaseSensitive(rec, "manifest") : NULL;
    char digest[80];
    if (!cJSON_IsString(m) || strlen(m->valuestring) != 71 || strncmp(m->valuestring, "sha256:", 7) ||
        strspn(m->valuestring + 7, "0123456789abcdef") != 64) {
        cJSON_Delete(rec);
        lb_say(msg, msgsz, "The record of the stored image %s names no manifest.", name);
        return LB_E_INVAL;
    }
    snprintf(digest, sizeof digest, "%s", m->valuestring);
    cJSON_Delete(rec);
    /* the manifest's own mediaType (a Docker schema 2 or an OCI one) */
    snprintf(path, sizeof path, "%s/oci/blobs/sha256/%s", cfg->image_store, digest + 7);
    if ((rc = lb_read_file(path, 4 << 20, &data, &len))) {
        lb_say(msg, msgsz, "The stored image %s has no manifest blob %s.", name, digest);
        return rc;
    }
    cJSON *man = cJSON_ParseWithLength(data, len);
    free(data);
    const cJSON *mt = man ? cJSON_GetObjectItemCaseSensitive(man, "mediaType") : NULL;
    char type[128];
    snprintf(type, sizeof type, "%s", cJSON_IsString(mt) ? mt->valuestring : "application/vnd.oci.image.manifest.v1+json");
    cJSON_Delete(man);
    char rnd[17];
    if ((rc = lb_random_hex(rnd, sizeof rnd, 8)))
        return rc;
    snprintf(dir, dirsz, "%s/oci/tmp/push-%d-%s", cfg->image_store, (int)getpid(), rnd);
    char blobs[LB_CFG_PATH + 64], link_at[LB_CFG_PATH + 200], index[600];
    snprintf(blobs, sizeof blobs, "%s/oci/blobs", cfg->image_store);
    snprintf(link_at, sizeof link_at, "%s/blobs", dir);
    int k = snprintf(index, sizeof index,
                     "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%zu}]}",
                     type, digest, len);
    snprintf(path, sizeof path, "%s/index.json", dir);
    if (k < 0 || (size_t)k >= sizeof index || lb_mkdirs(dir, 0700) != LB_OK || symlink(blobs, link_at) ||
        lb_write_file_atomic(path, index, (size_t)k, 0600) != LB_OK) {
        lb_say(msg, msgsz, "Cannot stage the stored image %s in %s: %s.", name, dir, strerror(errno));
        LB_IGNORE(lb_rmtree(dir)); /* the next writer of the store removes what is left */
        return LB_E_IO;
    }
    return LB_OK;
}

static int cmd_push(int argc, char **argv, const lb_config *cfg)
{
    const char *name = NULL, *ref = NULL, *oci = NULL;
    long long chunk = 0;
    int quiet = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--oci") && i + 1 < argc) {
            oci = argv[++i];
        } else if (!strcmp(argv[i], "--chunk-mib") && i + 1 < argc) {
            if (lb_parse_ll(argv[++i], 1, 4096, &chunk) != LB_OK)
                return usage();
            chunk <<= 20;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else if (argv[i][0] == '-') {
            return usage();
        } else if (!oci && !name) {
            name = argv[i];
        } else if (!ref) {
            ref = argv[i];
        } else {
            return usage();
        }
    }
    if (!ref || (!oci && !name))
        return usage();
    char tmp[LB_CFG_PATH + 128] = "", msg[2048];
    if (!oci) {
        if (stored_layout(cfg, name, tmp, sizeof tmp, msg, sizeof msg) != LB_OK) {
            fprintf(stderr, "llmbox: image push: %s\n", msg);
            return 1;
        }
        oci = tmp;
    }
    char digest[72];
    lb_push_opts o = {.layout_dir = oci, .ref = ref, .insecure = cfg->insecure_registries,
                      .auth_file = cfg->registry_auth_file, .chunk_bytes = chunk, .quiet = quiet};
    int rc = lb_push_image(&o, digest, sizeof digest, msg, sizeof msg);
    if (tmp[0]) {
        char link_at[sizeof tmp + 8];
        snprintf(link_at, sizeof link_at, "%s/blobs", tmp);
        unlink(link_at); /* the link first: nothing may walk into the store's blobs */
        LB_IGNORE(lb_rmtree(tmp)); /* staging: the next writer of the store removes what is left */
    }
    if (rc != LB_OK) {
        fprintf(stderr, "llmbox: image push: %s\n", msg);
        return 1;
    }
    printf("%s %s\n", ref, digest);
    return 0;
}

int lb_registry_cli_main(int argc, char **argv, const lb_config *cfg)
{
    if (argc >= 2 && !strcmp(argv[1], "pull"))
        return cmd_pull(argc, argv, cfg);
    if (argc >= 2 && !strcmp(argv[1], "push"))
        return cmd_push(argc, argv, cfg);
    return usage();
}
