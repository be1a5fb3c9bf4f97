/* The gateway's files as the web reads and writes them; the contract is
 * netrecord.h. The record is JSON lines the gateway appends whole; a line
 * that does not parse (the last one, while it is written) is skipped. A
 * task's copy outlives the gateway's folder (removed when its sandbox
 * ends): one JSON document in the task's folder. */
#include "common/netrecord.h"

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* sbx_id: 32 lowercase hex, so it never walks out of netgw/ */
static int id_ok(const char *id)
{
    return id && strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
}

/* Up to max bytes of path into a NUL-ended heap buffer (*len bytes);
 * NULL when it cannot be opened. */
static char *slurp(const char *path, size_t max, size_t *len, int *truncated)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    char *b = malloc(max + 1);
    size_t n = 0;
    while (b && n < max) {
        ssize_t r = read(fd, b + n, max - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    char extra;
    *truncated = n == max && read(fd, &extra, 1) == 1;
    close(fd);
    if (b) {
        b[n] = '\0';
        *len = n;
    }
    return b;
}

int lb_netrecord_read(const char *var_dir, const char *sbx_id, cJSON **out, char *err, size_t errsz)
{
    *out = NULL;
    if (!id_ok(sbx_id)) {
        snprintf(err, errsz, "This sandbox has no network gateway (its network is not a policy of rules).");
        return LB_E_NOTFOUND;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/netgw/%s/policy", var_dir, sbx_id);
    size_t plen = 0, rlen = 0;
    int ptrunc = 0, rtrunc = 0;
    char *policy = slurp(path, 16384, &plen, &ptrunc);
    if (!policy) {
        snprintf(err, errsz, "This sandbox has no network gateway (its network is not a policy of rules).");
        return LB_E_NOTFOUND;
    }
    snprintf(path, sizeof path, "%s/netgw/%s/record.jsonl", var_dir, sbx_id);
    char *rec = slurp(path, LB_NETRECORD_READ_MAX, &rlen, &rtrunc);
    cJSON *o = cJSON_CreateObject(), *conns = cJSON_CreateArray();
    int rc = LB_E_NOMEM;
    if (!o || !conns || !cJSON_AddItemToObject(o, "connections", conns)) {
        cJSON_Delete(conns);
        goto out;
    }
    cJSON *pv = cJSON_Parse(policy);
    cJSON_AddItemToObject(o, "network", pv ? pv : cJSON_CreateString(policy));
    for (char *line = rec; line && *line;) {
        char *nl = strchr(line, '\n');
        if (!nl) {
            rtrunc = rtrunc || *line; /* a line being written */
            break;
        }
        *nl = '\0';
        cJSON *e = cJSON_Parse(line);
        if (e && !cJSON_AddItemToArray(conns, e))
            cJSON_Delete(e);
        line = nl + 1;
    }
    cJSON_AddBoolToObject(o, "truncated", rtrunc);
    *out = o;
    o = NULL;
    rc = LB_OK;
out:
    if (rc != LB_OK)
        snprintf(err, errsz, "Out of memory.");
    cJSON_Delete(o);
    free(policy);
    free(rec);
    return rc;
}

int lb_netrecord_set_policy(const char *var_dir, const char *sbx_id, const char *text, char *err, size_t errsz)
{
    if (!id_ok(sbx_id)) {
        snprintf(err, errsz, "This sandbox has no network gateway (its network is not a policy of rules).");
        return LB_E_NOTFOUND;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/netgw/%s/pid", var_dir, sbx_id);
    size_t len = 0;
    int trunc = 0;
    char *pidtext = slurp(path, 32, &len, &trunc);
    long long pid = 0;
    if (pidtext) {
        pidtext[strcspn(pidtext, "\n")] = '\0';
        if (lb_parse_ll(pidtext, 2, 1 << 22, &pid) != LB_OK)
            pid = 0;
    }
    free(pidtext);
    if (!pid) {
        snprintf(err, errsz, "This sandbox has no network gateway (its network is not a policy of rules).");
        return LB_E_NOTFOUND;
    }
    /* the pid must still be a gateway: a reused pid is not signalled */
    char cmd[64], comm[256] = "";
    snprintf(cmd, sizeof cmd, "/proc/%lld/cmdline", pid);
    int cfd = open(cmd, O_RDONLY | O_CLOEXEC);
    ssize_t cn = cfd >= 0 ? read(cfd, comm, sizeof comm - 1) : -1;
    if (cfd >= 0)
        close(cfd);
    if (cn <= 0 || !memmem(comm, (size_t)cn, "\0netgw\0", 7)) {
        snprintf(err, errsz, "This sandbox's network gateway is not running.");
        return LB_E_NOTFOUND;
    }
    snprintf(path, sizeof path, "%s/netgw/%s/policy", var_dir, sbx_id);
    if (lb_write_file_atomic(path, text, strlen(text), 0644) != LB_OK) {
        snprintf(err, errsz, "Cannot write the sandbox's network policy: %s.", strerror(errno));
        return LB_E_IO;
    }
    struct stat pst, ast;
    if (stat(path, &pst) != 0 || kill((pid_t)pid, SIGHUP) != 0) {
        snprintf(err, errsz, "Cannot tell the sandbox's network gateway: %s.", strerror(errno));
        return LB_E_IO;
    }
    /* the answer waits until the gateway applies it, so that the next
     * command in the sandbox meets the new rules */
    snprintf(path, sizeof path, "%s/netgw/%s/applied", var_dir, sbx_id);
    int64_t end = lb_mono_ms() + 2000;
    while (lb_mono_ms() < end) {
        if (stat(path, &ast) == 0 && (ast.st_mtim.tv_sec > pst.st_mtim.tv_sec ||
                                      (ast.st_mtim.tv_sec == pst.st_mtim.tv_sec &&
                                       ast.st_mtim.tv_nsec >= pst.st_mtim.tv_nsec)))
            return LB_OK;
        usleep(5000);
    }
    snprintf(err, errsz, "The sandbox's network gateway did not take the new policy within 2 s (see its netgw.log).");
    return LB_E_IO;
}

void lb_netrecord_note_task(const lb_config *cfg, const char *task_id, const char *sbx_id)
{
    char dir[LB_CFG_PATH], path[LB_CFG_PATH + 64];
    if (!task_id || !id_ok(sbx_id) || strspn(task_id, "0123456789abcdef") != strlen(task_id) ||
        strlen(task_id) > 40)
        return;
    lb_cfg_logdir(cfg, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/agent-%s.netgw", dir, task_id);
    if (lb_write_file_atomic(path, sbx_id, strlen(sbx_id), 0640) != LB_OK)
        lb_warn("cannot write %s: the task's network record will not be found through the task", path);
}

int lb_netrecord_task_sandbox(const lb_config *cfg, const char *task_id, char *out, size_t outsz)
{
    char dir[LB_CFG_PATH], path[LB_CFG_PATH + 64];
    if (!task_id || strspn(task_id, "0123456789abcdef") != strlen(task_id) || strlen(task_id) > 40 || outsz < 33)
        return 0;
    lb_cfg_logdir(cfg, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/agent-%s.netgw", dir, task_id);
    size_t len = 0;
    int trunc = 0;
    char *b = slurp(path, 32, &len, &trunc);
    int ok = b && len == 32 && id_ok(b);
    if (ok)
        snprintf(out, outsz, "%s", b);
    free(b);
    return ok;
}

/* <artifacts_dir>/<task>/network.json, for an id that cannot walk out of it */
static int task_copy_path(const lb_config *cfg, const char *task_id, char *out, size_t outsz)
{
    if (!task_id || !*task_id || strspn(task_id, "0123456789abcdef") != strlen(task_id) || strlen(task_id) > 40)
        return 0;
    snprintf(out, outsz, "%s/%s/network.json", cfg->artifacts_dir, task_id);
    return 1;
}

void lb_netrecord_keep_task(const lb_config *cfg, const char *task_id, const char *sbx_id)
{
    char path[LB_CFG_PATH + 96], err[300];
    if (!task_copy_path(cfg, task_id, path, sizeof path) || !id_ok(sbx_id))
        return;
    cJSON *o = NULL;
    if (lb_netrecord_read(cfg->var_dir, sbx_id, &o, err, sizeof err) != LB_OK) {
        lb_warn("task %s: its network record is not kept: %s", task_id, err);
        return;
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text || lb_write_file_atomic(path, text, strlen(text), 0640) != LB_OK)
        lb_warn("task %s: cannot write %s: its network record is lost when its sandbox ends", task_id, path);
    cJSON_free(text);
}

int lb_netrecord_task_read(const lb_config *cfg, const char *task_id, cJSON **out, char *err, size_t errsz)
{
    *out = NULL;
    char sid[33], path[LB_CFG_PATH + 96];
    if (lb_netrecord_task_sandbox(cfg, task_id, sid, sizeof sid)) {
        int rc = lb_netrecord_read(cfg->var_dir, sid, out, err, errsz);
        if (rc != LB_E_NOTFOUND)
            return rc; /* live: the sandbox runs or is kept */
    }
    if (!task_copy_path(cfg, task_id, path, sizeof path)) {
        snprintf(err, errsz, "There is no task with that id.");
        return LB_E_NOTFOUND;
    }
    /* the copy holds at most LB_NETRECORD_READ_MAX of lines, with the
     * JSON's own text around them */
    size_t len = 0;
    int trunc = 0;
    char *b = slurp(path, LB_NETRECORD_READ_MAX + (1u << 20), &len, &trunc);
    if (!b) {
        snprintf(err, errsz, "This task's sandbox has no network record: its network is not a policy of rules, or "
                             "its sandbox has not started.");
        return LB_E_NOTFOUND;
    }
    cJSON *o = trunc ? NULL : cJSON_ParseWithLength(b, len);
    free(b);
    if (!cJSON_IsObject(o) || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "connections"))) {
        cJSON_Delete(o);
        snprintf(err, errsz, "This task's network record (%s) cannot be read.", path);
        return LB_E_IO;
    }
    *out = o;
    return LB_OK;
}
