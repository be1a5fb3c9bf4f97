/* API sandboxes across a restart of the web: records, adoption, renewal
 * (the contract is sandbox_leases.h). */
#include "sbxapi/sandbox_leases.h"

#include "common/log.h"
#include "common/node_id.h"
#include "common/util.h"
#include "llmbox/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LB_LEASE_RECORD_MAX (4u << 20) /* a record: the spec echo, metadata and env, all capped far below */

static const lb_config *lb_ls_cfg;
static char lb_ls_dir[LB_CFG_PATH + 16]; /* "" until lb_sbx_leases_start: records are then not kept */

static int lb_record_path(const char *id, char *out, size_t outsz)
{
    if (!lb_ls_dir[0] || !lb_node_id_valid(id))
        return 0;
    return (size_t)snprintf(out, outsz, "%s/%s.json", lb_ls_dir, id) < outsz;
}

void lb_sbx_lease_drop(const char *id)
{
    char p[LB_CFG_PATH + 64];
    if (lb_record_path(id, p, sizeof p) && unlink(p) != 0 && errno != ENOENT)
        lb_warn("web: sandbox API: cannot remove the record %s: %s", p, strerror(errno));
}

static int lb_add_dup(cJSON *o, const char *key, const cJSON *v)
{
    if (!v)
        return 1;
    cJSON *d = cJSON_Duplicate(v, 1);
    if (!d || !cJSON_AddItemToObject(o, key, d)) {
        cJSON_Delete(d);
        return 0;
    }
    return 1;
}

/* ---- spare files ----
 *
 * Creating a file in the record folder (an inode and a directory entry on
 * the host's disk) was most of a record's write: p50 0.28 ms, p90 0.63 ms
 * on this machine's shared ext4, against 0.07 ms to write into a file that
 * exists and rename it (bench/RESULTS.md), about a third of an API create.
 * So a thread keeps LB_SPARES empty files made ahead, ".spare-<16 hex>"
 * (no ".json": never adopted, removed at start-up); a record is written
 * into one and renamed over "<id>.json", so it is still written aside and
 * renamed, never seen half-written. With none left (a burst of creates),
 * or if one fails, the record is written as before (lb_write_file_replace). */
#define LB_SPARES 8
#define LB_SPARE_PREFIX ".spare-"

static pthread_mutex_t lb_sp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lb_sp_cv = PTHREAD_COND_INITIALIZER;
static char lb_sp[LB_SPARES][LB_CFG_PATH + 48]; /* under lb_sp_mu */
static int lb_sp_n;

/* Makes one spare file; 0 on success. */
static int lb_spare_make(char *out, size_t outsz)
{
    char rnd[17];
    if (lb_random_hex(rnd, sizeof rnd, 8) != LB_OK ||
        (size_t)snprintf(out, outsz, "%s/" LB_SPARE_PREFIX "%s", lb_ls_dir, rnd) >= outsz)
        return -1;
    int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static void *lb_spare_maker(void *arg)
{
    (void)arg;
    int warned = 0;
    for (;;) {
        pthread_mutex_lock(&lb_sp_mu);
        while (lb_sp_n >= LB_SPARES)
            pthread_cond_wait(&lb_sp_cv, &lb_sp_mu);
        pthread_mutex_unlock(&lb_sp_mu);
        char p[sizeof lb_sp[0]];
        if (lb_spare_make(p, sizeof p) != 0) {
            if (!warned++)
                lb_warn("web: sandbox API: cannot make a spare record file in %s (%s): records are created one by "
                        "one", lb_ls_dir, strerror(errno));
            sleep(1); /* a full or broken disk: no busy loop; creates write their records as before */
            continue;
        }
        warned = 0;
        pthread_mutex_lock(&lb_sp_mu);
        memcpy(lb_sp[lb_sp_n++], p, sizeof p);
        pthread_mutex_unlock(&lb_sp_mu);
    }
    return NULL;
}

/* Writes the record through a spare file; LB_OK, or an error after which
 * the caller writes it as before (the spare is gone either way). */
static int lb_spare_write(const char *path, const char *txt, size_t len)
{
    char sp[sizeof lb_sp[0]];
    pthread_mutex_lock(&lb_sp_mu);
    int have = lb_sp_n > 0;
    if (have)
        memcpy(sp, lb_sp[--lb_sp_n], sizeof sp);
    pthread_cond_signal(&lb_sp_cv);
    pthread_mutex_unlock(&lb_sp_mu);
    if (!have)
        return LB_E_NOTFOUND;
    int fd = open(sp, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return LB_E_IO; /* removed under us (another web's start-up on this folder): nothing to clean */
    int rc = lb_write_all(fd, txt, len);
    if (close(fd) != 0 && rc == LB_OK)
        rc = LB_E_IO;
    if (rc == LB_OK && rename(sp, path) != 0)
        rc = LB_E_IO;
    if (rc != LB_OK)
        unlink(sp);
    return rc;
}

void lb_sbx_lease_save(lb_sbx *s)
{
    char p[LB_CFG_PATH + 64];
    if (!lb_record_path(s->id, p, sizeof p))
        return;
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "id", s->id) && cJSON_AddStringToObject(o, "sandboxd_id", s->sbx_id) &&
             cJSON_AddStringToObject(o, "lease_key", s->lease_key) &&
             cJSON_AddNumberToObject(o, "created_ms", (double)s->created_ms) &&
             cJSON_AddNumberToObject(o, "expires_ms", (double)s->expires_ms) &&
             cJSON_AddNumberToObject(o, "ttl_s", s->ttl_s) && cJSON_AddStringToObject(o, "workdir", s->workdir) &&
             cJSON_AddStringToObject(o, "owner", s->owner) &&
             lb_add_dup(o, "spec", s->spec) && lb_add_dup(o, "metadata", s->metadata) && lb_add_dup(o, "env", s->env);
    cJSON *e2b = ok ? lb_sbx_e2b_flags(s) : NULL;
    if (e2b && !cJSON_AddItemToObject(o, "e2b", e2b)) {
        cJSON_Delete(e2b);
        ok = 0;
    }
    char *txt = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    /* No fsync (it was 0.6 ms of a 1.6 ms create here, more when the disk
     * is busy): the record serves a restart of this web on a running host,
     * where the page cache holds it whole (written aside, then renamed).
     * A crash of the host ends sandboxd and every sandbox with it, so a
     * record lost or left empty by that crash has nothing to adopt; an
     * unreadable one is removed at start-up (lb_adopt_record). */
    if (!txt || (lb_spare_write(p, txt, strlen(txt)) != LB_OK && lb_write_file_replace(p, txt, strlen(txt), 0600) != LB_OK))
        lb_warn("web: sandbox API: cannot write the record of %s (%s): it will not survive a restart of the web",
                s->id, txt ? strerror(errno) : "out of memory");
    free(txt);
}

/* A copy of o[key] (an object), or NULL. */
static cJSON *lb_obj_dup(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsObject(v) ? cJSON_Duplicate(v, 1) : NULL;
}

/* Adopts the sandbox of one record into the registry; the record goes when
 * there is nothing (left) to adopt. */
static void lb_adopt_record(const char *path)
{
    char *txt = NULL, err[300] = "";
    size_t len = 0;
    cJSON *o = NULL;
    lb_sbx *s = NULL;
    int keep = 0;
    if (lb_read_file(path, LB_LEASE_RECORD_MAX, &txt, &len) != LB_OK || !(o = cJSON_ParseWithLength(txt, len))) {
        lb_warn("web: sandbox API: the record %s cannot be read; removed", path);
        goto out;
    }
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "id"));
    const char *sid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "sandboxd_id"));
    const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "lease_key"));
    const char *workdir = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "workdir"));
    const cJSON *cr = cJSON_GetObjectItemCaseSensitive(o, "created_ms");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(o, "expires_ms");
    const cJSON *ttl = cJSON_GetObjectItemCaseSensitive(o, "ttl_s");
    if (!lb_node_id_valid(id) || !lb_id_valid(sid) || !lb_id_valid(key) || !cJSON_IsNumber(cr) || !cJSON_IsNumber(ex) || !cJSON_IsNumber(ttl)) {
        lb_warn("web: sandbox API: the record %s is not one of ours; removed", path);
        goto out;
    }
    cJSON *spec = lb_obj_dup(o, "spec"), *meta = lb_obj_dup(o, "metadata"), *env = lb_obj_dup(o, "env");
    int rc = lb_sbx_reserve_as(id, (int64_t)cr->valuedouble, (int64_t)ex->valuedouble, (int)ttl->valuedouble, spec,
                               meta, env, workdir, &s);
    if (rc != LB_OK) {
        cJSON_Delete(spec);
        cJSON_Delete(meta);
        cJSON_Delete(env);
        lb_warn("web: sandbox API: cannot take sandbox %s back (%s)", id, lb_strerror(rc));
        keep = rc == LB_E_EXISTS;
        goto out;
    }
    /* the user whose token made it (cut to a name's length; "" the shared token's) */
    lb_sbx_set_owner(s, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "owner")));
    /* E2B's autoPause, autoResume, allowPublicTraffic, maskRequestHost */
    lb_sbx_e2b_flags_restore(s, cJSON_GetObjectItemCaseSensitive(o, "e2b"));
    pthread_mutex_lock(&s->op_mu);
    rc = lbsb_connect(lb_ls_cfg->sandboxd_socket, &s->cancel, &s->conn, err, sizeof err);
    if (rc == LB_OK)
        rc = lbsb_adopt(s->conn, sid, key, lb_ls_cfg->sandbox_api_lease_s, err, sizeof err);
    if (rc == LB_OK) {
        memcpy(s->sbx_id, sid, 33);
        memcpy(s->lease_key, key, 33);
    }
    pthread_mutex_unlock(&s->op_mu);
    if (rc != LB_OK) {
        lb_warn("web: sandbox API: sandbox %s (sandboxd %s) could not be adopted: %s", id, sid, err);
        LB_IGNORE(lb_sbx_remove(id, LB_SBX_GONE_FAILED)); /* it leaves the table; gone already is the same */
        goto out;
    }
    lb_sbx_set_running(s);
    keep = 1;
    if (s->expires_ms <= lb_now_ms()) {
        /* its TTL passed while no web held it: the reaper destroys it at its next tick */
        lb_info("web: sandbox API: adopted %s past its TTL; it goes now", id);
    } else {
        lb_info("web: sandbox API: adopted %s (sandboxd %s) from the web before", id, sid);
    }
out:
    if (!keep && unlink(path) != 0 && errno != ENOENT)
        lb_warn("web: sandbox API: cannot remove the record %s: %s", path, strerror(errno));
    lb_sbx_put(s);
    cJSON_Delete(o);
    free(txt);
}

/* Renews every running sandbox's lease, over one connection of its own,
 * three times per lease: a web stuck or gone for a whole lease loses them. */
static void *lb_renewer(void *arg)
{
    (void)arg;
    int max = lb_ls_cfg->sandbox_api_max;
    char (*ids)[33] = calloc((size_t)max, sizeof *ids);
    lbsb_conn *c = NULL;
    if (!ids) {
        lb_error("web: sandbox API: no memory for the lease renewer; sandboxes die with their leases");
        return NULL;
    }
    int period_ms = lb_ls_cfg->sandbox_api_lease_s * 1000 / 3;
    for (;;) {
        struct timespec ts = {period_ms / 1000, (long)(period_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        int n = lb_sbx_running_ids(ids, max);
        char err[300] = "";
        if (n && !c && lbsb_connect(lb_ls_cfg->sandboxd_socket, NULL, &c, err, sizeof err) != LB_OK) {
            lb_warn("web: sandbox API: cannot renew the leases: %s", err);
            c = NULL;
            continue;
        }
        for (int i = 0; i < n; i++) {
            int rc = lbsb_renew(c, ids[i], 0, err, sizeof err);
            if (rc == LB_E_UNAVAILABLE || rc == LB_E_PROTO) { /* the connection broke: a new one next time */
                lb_warn("web: sandbox API: renewing leases: %s", err);
                lbsb_close(c);
                c = NULL;
                break;
            }
            if (rc != LB_OK) /* destroyed meanwhile, or gone: its next request says so */
                lb_debug("web: sandbox API: lease of sandboxd %s not renewed: %s", ids[i], err);
        }
    }
    return NULL;
}

int lb_sbx_leases_start(const lb_config *cfg)
{
    lb_ls_cfg = cfg;
    char d[LB_CFG_PATH + 16];
    if (!lb_cfg_beside_db(cfg, "sandboxes", NULL, d, sizeof d))
        return LB_E_TOOBIG;
    if (lb_mkdirs(d, 0700) != LB_OK) {
        lb_warn("web: sandbox API: cannot create %s (%s): sandboxes will not survive a restart of the web", d,
                strerror(errno));
        return LB_E_IO;
    }
    memcpy(lb_ls_dir, d, sizeof lb_ls_dir);
    DIR *dd = opendir(d);
    int n = 0;
    if (dd) {
        struct dirent *de;
        while ((de = readdir(dd))) {
            size_t len = strlen(de->d_name);
            char id[LB_NODE_ID_MAX + 1];
            if (!strncmp(de->d_name, LB_SPARE_PREFIX, strlen(LB_SPARE_PREFIX))) {
                char sp[LB_CFG_PATH + 64]; /* an empty spare of the web before */
                if ((size_t)snprintf(sp, sizeof sp, "%s/%s", d, de->d_name) < sizeof sp)
                    unlink(sp);
                continue;
            }
            /* several nodes: "[<node>.]<32 hex>.json" */
            if (len < 5 || len - 5 > LB_NODE_ID_MAX || strcmp(de->d_name + len - 5, ".json") != 0)
                continue;
            memcpy(id, de->d_name, len - 5);
            id[len - 5] = '\0';
            if (!lb_node_id_valid(id))
                continue;
            char p[LB_CFG_PATH + 64];
            snprintf(p, sizeof p, "%s/%s", d, de->d_name);
            lb_adopt_record(p);
            n++;
        }
        closedir(dd);
    }
    if (n)
        lb_info("web: sandbox API: %d sandbox record(s) of the web before; %d adopted", n, lb_sbx_count());
    int e = lb_thread_detached(lb_renewer, NULL);
    if (!e && lb_thread_detached(lb_spare_maker, NULL) != LB_OK) /* without it records are written one by one */
        lb_warn("web: sandbox API: cannot start the spare record files' thread; records are created one by one");
    return e ? LB_E_INTERNAL : LB_OK;
}
