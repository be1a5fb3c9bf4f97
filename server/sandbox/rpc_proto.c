/* Request validation and wire names. Everything a client sends is checked
 * here, once, before any handler sees it. */
#include "sandbox/rpc.h"

#include "common/image_ref.h"
#include "common/path.h"
#include "common/status.h"
#include "common/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const lbsd_op_names[] = {
    [LBSD_OP_NONE] = "none",     [LBSD_OP_CREATE] = "create", [LBSD_OP_EXEC] = "exec",
    [LBSD_OP_WRITE] = "write",   [LBSD_OP_READ] = "read",     [LBSD_OP_LIST] = "list",
    [LBSD_OP_STAT] = "stat",     [LBSD_OP_DESTROY] = "destroy", [LBSD_OP_PING] = "ping",
    [LBSD_OP_INTERRUPT] = "interrupt", [LBSD_OP_RENEW] = "renew", [LBSD_OP_ADOPT] = "adopt",
    /* a sandbox's state (follow-ups) */
    [LBSD_OP_FREEZE] = "freeze", [LBSD_OP_THAW] = "thaw", [LBSD_OP_SAVE] = "save",
    [LBSD_OP_STATE_DELETE] = "state_delete", [LBSD_OP_STATE_LIST] = "state_list",
    /* processes of sandboxd's own (E2B's protocol) */
    [LBSD_OP_PROC_START] = "proc_start", [LBSD_OP_PROC_ATTACH] = "proc_attach",
    [LBSD_OP_PROC_INPUT] = "proc_input", [LBSD_OP_PROC_SIGNAL] = "proc_signal",
    [LBSD_OP_PROC_LIST] = "proc_list", [LBSD_OP_PORT_CONNECT] = "port_connect",
    [LBSD_OP_METRICS] = "metrics",
    [LBSD_OP_IMAGE_JOB_START] = "image_job_start", [LBSD_OP_IMAGE_JOB_POLL] = "image_job_poll",
    /* E2B's volumes (sandboxd/sandbox_volume.h) */
    [LBSD_OP_VOLUME] = "volume", [LBSD_OP_VOLUME_MOUNT] = "volume_mount",
    [LBSD_OP_FS_CHANGE] = "fs_change",
};

const char *lbsd_op_name(lbsd_op op)
{
    if ((unsigned)op >= sizeof lbsd_op_names / sizeof lbsd_op_names[0])
        return "none";
    return lbsd_op_names[op];
}

/* [a-z0-9_-]{1,max}: the names of images and of saved states */
static int lbsd_name_valid(const char *s, size_t max)
{
    if (!s)
        return 0;
    size_t i = 0;
    for (; s[i]; i++) {
        char c = s[i];
        if (i >= max)
            return 0;
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    return i > 0;
}

int lbsd_image_name_valid(const char *s)
{
    return lbsd_name_valid(s, LBSD_IMAGE_MAX);
}

int lbsd_image_spec_valid(const char *s)
{
    if (lbsd_image_name_valid(s))
        return 1;
    lb_image_ref r;
    char why[160];
    return s && lb_image_ref_parse(s, LB_IMAGE_REF_LOCAL, &r, why, sizeof why) == LB_OK;
}

int lbsd_state_name_valid(const char *s)
{
    return lbsd_name_valid(s, LBSD_STATE_NAME_MAX);
}

int lbsd_sandbox_path(const char *abs, char *out, size_t outsz)
{
    if (!abs || abs[0] != '/' || outsz < LB_PATH_MAX + 1)
        return LB_E_INVAL;
    const char *p = abs;
    while (*p == '/')
        p++;
    if (!*p) {
        out[0] = '\0';
        return LB_OK;
    }
    return lb_path_clean_rel(p, strlen(p), out, outsz);
}

static void lbsd_msg(char *msg, size_t msgsz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void lbsd_msg(char *msg, size_t msgsz, const char *fmt, ...)
{
    if (!msg || !msgsz)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msgsz, fmt, ap);
    va_end(ap);
}

/* Optional string member; *out NULL if absent. LB_E_INVAL if not a string,
 * over max bytes or holding a NUL (cJSON keeps the length we compare). */
static int lbsd_get_str(const cJSON *o, const char *key, size_t max, const char **out,
                        char *msg, size_t msgsz)
{
    *out = NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    if (!cJSON_IsString(v) || !v->valuestring) {
        lbsd_msg(msg, msgsz, "\"%s\" must be a string", key);
        return LB_E_INVAL;
    }
    if (strlen(v->valuestring) > max) {
        lbsd_msg(msg, msgsz, "\"%s\" is longer than %zu bytes", key, max);
        return LB_E_INVAL;
    }
    *out = v->valuestring;
    return LB_OK;
}

/* Optional integer member in [lo, hi]; *out = def if absent. */
static int lbsd_get_int(const cJSON *o, const char *key, double lo, double hi, double def,
                        double *out, char *msg, size_t msgsz)
{
    *out = def;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble)) {
        lbsd_msg(msg, msgsz, "\"%s\" must be an integer", key);
        return LB_E_INVAL;
    }
    if (v->valuedouble < lo || v->valuedouble > hi) {
        lbsd_msg(msg, msgsz, "\"%s\" must be between %.0f and %.0f", key, lo, hi);
        return LB_E_INVAL;
    }
    *out = v->valuedouble;
    return LB_OK;
}

static int lbsd_get_bool(const cJSON *o, const char *key, int *out, char *msg, size_t msgsz)
{
    *out = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return LB_OK;
    if (!cJSON_IsBool(v)) {
        lbsd_msg(msg, msgsz, "\"%s\" must be a boolean", key);
        return LB_E_INVAL;
    }
    *out = cJSON_IsTrue(v);
    return LB_OK;
}

static int lbsd_need_id(const cJSON *o, lbsd_req *req, char *msg, size_t msgsz)
{
    int rc = lbsd_get_str(o, "id", LB_ID_HEX_LEN, &req->id, msg, msgsz);
    if (rc)
        return rc;
    if (!req->id || !lb_id_valid(req->id)) {
        lbsd_msg(msg, msgsz, "\"id\" must be a sandbox id (32 hex characters)");
        return LB_E_INVAL;
    }
    return LB_OK;
}

static int lbsd_need_path(const cJSON *o, lbsd_req *req, char *msg, size_t msgsz)
{
    const char *p;
    int rc = lbsd_get_str(o, "path", LB_PATH_MAX + 1, &p, msg, msgsz);
    if (rc)
        return rc;
    if (!p) {
        lbsd_msg(msg, msgsz, "\"path\" is required");
        return LB_E_INVAL;
    }
    if (lbsd_sandbox_path(p, req->path, sizeof req->path) != LB_OK) {
        lbsd_msg(msg, msgsz, "\"path\" must be an absolute path without \"..\", "
                             "control characters or invalid UTF-8");
        return LB_E_INVAL;
    }
    return LB_OK;
}

static const struct {
    const char *name;
    lbsd_op op;
} lbsd_ops[] = {
    {"create", LBSD_OP_CREATE}, {"exec", LBSD_OP_EXEC}, {"write", LBSD_OP_WRITE},
    {"read", LBSD_OP_READ},     {"list", LBSD_OP_LIST}, {"stat", LBSD_OP_STAT},
    {"destroy", LBSD_OP_DESTROY}, {"ping", LBSD_OP_PING}, {"interrupt", LBSD_OP_INTERRUPT},
    {"renew", LBSD_OP_RENEW},   {"adopt", LBSD_OP_ADOPT},
    /* a sandbox's state (follow-ups) */
    {"freeze", LBSD_OP_FREEZE}, {"thaw", LBSD_OP_THAW}, {"save", LBSD_OP_SAVE},
    {"state_delete", LBSD_OP_STATE_DELETE}, {"state_list", LBSD_OP_STATE_LIST},
    /* processes of sandboxd's own (E2B's protocol) */
    {"proc_start", LBSD_OP_PROC_START}, {"proc_attach", LBSD_OP_PROC_ATTACH},
    {"proc_input", LBSD_OP_PROC_INPUT}, {"proc_signal", LBSD_OP_PROC_SIGNAL},
    {"proc_list", LBSD_OP_PROC_LIST}, {"port_connect", LBSD_OP_PORT_CONNECT},
    {"metrics", LBSD_OP_METRICS},
    /* image work (sandboxd/image_jobs.h) */
    {"image_job_start", LBSD_OP_IMAGE_JOB_START}, {"image_job_poll", LBSD_OP_IMAGE_JOB_POLL},
    /* E2B's volumes (sandboxd/sandbox_volume.h) */
    {"volume", LBSD_OP_VOLUME}, {"volume_mount", LBSD_OP_VOLUME_MOUNT},
    {"fs_change", LBSD_OP_FS_CHANGE},
};

/* A saved state's name from member key into req->state (required when need). */
static int lbsd_get_state(const cJSON *o, const char *key, int need, lbsd_req *req, char *msg, size_t msgsz)
{
    int rc = lbsd_get_str(o, key, LBSD_STATE_NAME_MAX, &req->state, msg, msgsz);
    if (rc)
        return rc;
    if (!req->state && !need)
        return LB_OK;
    if (!req->state || !lbsd_state_name_valid(req->state)) {
        lbsd_msg(msg, msgsz, "\"%s\" must be a saved state's name ([a-z0-9_-]{1,64})", key);
        return LB_E_INVAL;
    }
    return LB_OK;
}

int lbsd_req_parse(const char *frame, size_t len, lbsd_req *req, char *msg, size_t msgsz)
{
    memset(req, 0, sizeof *req);
    if (msg && msgsz)
        msg[0] = '\0';
    if (!frame || len == 0) {
        lbsd_msg(msg, msgsz, "empty request");
        return LB_E_INVAL;
    }
    if (memchr(frame, '\0', len)) {
        lbsd_msg(msg, msgsz, "request holds a NUL byte");
        return LB_E_INVAL;
    }
    req->json = cJSON_ParseWithLength(frame, len);
    if (!req->json) {
        lbsd_msg(msg, msgsz, "request is not valid JSON");
        return LB_E_INVAL;
    }
    const cJSON *o = req->json;
    if (!cJSON_IsObject(o)) {
        lbsd_msg(msg, msgsz, "request must be a JSON object");
        return LB_E_INVAL;
    }
    const char *opname;
    int rc = lbsd_get_str(o, "op", 16, &opname, msg, msgsz);
    if (rc)
        return rc;
    if (!opname) {
        lbsd_msg(msg, msgsz, "\"op\" is required");
        return LB_E_INVAL;
    }
    for (size_t i = 0; i < sizeof lbsd_ops / sizeof lbsd_ops[0]; i++)
        if (!strcmp(opname, lbsd_ops[i].name))
            req->op = lbsd_ops[i].op;
    if (req->op == LBSD_OP_NONE) {
        lbsd_msg(msg, msgsz, "unknown op");
        return LB_E_INVAL;
    }
    if ((rc = lbsd_get_bool(o, "data", &req->has_data, msg, msgsz)))
        return rc;
    if (req->has_data && req->op != LBSD_OP_WRITE && req->op != LBSD_OP_PROC_INPUT && req->op != LBSD_OP_VOLUME) {
        lbsd_msg(msg, msgsz, "only write, proc_input and volume carry a data frame");
        return LB_E_INVAL;
    }

    double d;
    const char *s;
    switch (req->op) {
    case LBSD_OP_CREATE:
        if ((rc = lbsd_get_str(o, "image", LBSD_IMAGE_REF_MAX, &s, msg, msgsz)))
            return rc;
        snprintf(req->image, sizeof req->image, "%s", s ? s : "");
        if (s && !lbsd_image_spec_valid(s)) {
            lbsd_msg(msg, msgsz, "\"image\" must be an image name ([a-z0-9_-]{1,32}) or an image reference "
                                 "([host[:port]/]repo[:tag][@sha256:...])");
            return LB_E_INVAL;
        }
        if ((rc = lbsd_get_int(o, "memory_mib", 0, 1 << 20, 0, &d, msg, msgsz)))
            return rc;
        req->memory_mib = (int)d;
        if (req->memory_mib && req->memory_mib < 32) {
            lbsd_msg(msg, msgsz, "\"memory_mib\" must be at least 32");
            return LB_E_INVAL;
        }
        if ((rc = lbsd_get_int(o, "pids", 0, 1 << 22, 0, &d, msg, msgsz)))
            return rc;
        req->pids = (int)d;
        if (req->pids && req->pids < 8) {
            lbsd_msg(msg, msgsz, "\"pids\" must be at least 8");
            return LB_E_INVAL;
        }
        if ((rc = lbsd_get_str(o, "input_dir", LBSD_INPUT_DIR_MAX, &req->input_dir, msg, msgsz)))
            return rc;
        if (req->input_dir && req->input_dir[0] != '/') {
            lbsd_msg(msg, msgsz, "\"input_dir\" must be an absolute path");
            return LB_E_INVAL;
        }
        if ((rc = lbsd_get_int(o, "cpu_milli", 0, 1024 * 1000, 0, &d, msg, msgsz)))
            return rc;
        req->cpu_milli = (int)d;
        if (req->cpu_milli && req->cpu_milli < 10) {
            lbsd_msg(msg, msgsz, "\"cpu_milli\" must be at least 10 (a hundredth of a core)");
            return LB_E_INVAL;
        }
        if ((rc = lbsd_get_int(o, "disk_mib", 0, 1 << 22, 0, &d, msg, msgsz)))
            return rc;
        req->disk_mib = (int)d;
        if (req->disk_mib && req->disk_mib < 16) {
            lbsd_msg(msg, msgsz, "\"disk_mib\" must be at least 16");
            return LB_E_INVAL;
        }
        if ((rc = lbsd_get_int(o, "ttl_s", 0, LBSD_TTL_MAX_S, 0, &d, msg, msgsz)))
            return rc;
        req->ttl_s = (int)d;
        if ((rc = lbsd_get_int(o, "lease_s", 0, LBSD_LEASE_MAX_S, 0, &d, msg, msgsz)))
            return rc;
        req->lease_s = (int)d;
        if ((rc = lbsd_get_str(o, "network", 16, &s, msg, msgsz)))
            return rc;
        req->network = LBSD_NET_DEFAULT;
        if (s && (req->network = lbsd_network_parse(s)) < 0) {
            lbsd_msg(msg, msgsz, "\"network\" must be \"none\", \"nat\" or \"egress\"");
            return LB_E_INVAL;
        }
        if ((rc = lbsd_get_str(o, "policy", 8192, &s, msg, msgsz)))
            return rc;
        req->net_policy = s;
        if ((rc = lbsd_get_str(o, "net_values", 96 * 1024, &s, msg, msgsz)))
            return rc;
        req->net_values = s;
        if (req->network == LBSD_NET_EGRESS && !req->net_policy) {
            lbsd_msg(msg, msgsz, "network \"egress\" needs its \"policy\"");
            return LB_E_INVAL;
        }
        if ((rc = lbsd_get_state(o, "restore", 0, req, msg, msgsz)))
            return rc;
        break;
    case LBSD_OP_EXEC:
        if ((rc = lbsd_need_id(o, req, msg, msgsz)))
            return rc;
        if ((rc = lbsd_get_str(o, "command", LBSD_CMD_MAX, &req->command, msg, msgsz)))
            return rc;
        if (!req->command) {
            lbsd_msg(msg, msgsz, "\"command\" is required");
            return LB_E_INVAL;
        }
        req->command_len = strlen(req->command);
        if ((rc = lbsd_get_int(o, "timeout_ms", 0, LBSD_TIMEOUT_MAX_MS, 0, &d, msg, msgsz)))
            return rc;
        req->timeout_ms = (int)d;
        if ((rc = lbsd_get_int(o, "soft_timeout_ms", 0, LBSD_TIMEOUT_MAX_MS, 0, &d, msg, msgsz)))
            return rc;
        req->soft_timeout_ms = (int)d;
        break;
    case LBSD_OP_WRITE:
        if ((rc = lbsd_need_id(o, req, msg, msgsz)) || (rc = lbsd_need_path(o, req, msg, msgsz)))
            return rc;
        if (!req->path[0]) {
            lbsd_msg(msg, msgsz, "cannot write to \"/\"");
            return LB_E_INVAL;
        }
        if ((rc = lbsd_get_bool(o, "excl", &req->excl, msg, msgsz)))
            return rc;
        if ((rc = lbsd_get_int(o, "mode", 0, 07777, 0644, &d, msg, msgsz)))
            return rc;
        /* no setuid/setgid/sticky bits through the API */
        req->mode = (int)d & 0777;
        if (!req->has_data) {
            lbsd_msg(msg, msgsz, "write needs \"data\": true and a data frame");
            return LB_E_INVAL;
        }
        break;
    case LBSD_OP_READ:
        if ((rc = lbsd_need_id(o, req, msg, msgsz)) || (rc = lbsd_need_path(o, req, msg, msgsz)))
            return rc;
        if ((rc = lbsd_get_int(o, "max", 0, LBSD_READ_MAX, 1 << 20, &d, msg, msgsz)))
            return rc;
        req->max = (size_t)d;
        /* a range of a file of any size (2^53: exact in a JSON number) */
        if ((rc = lbsd_get_int(o, "offset", 0, 9007199254740992.0, -1, &d, msg, msgsz)))
            return rc;
        req->offset = (int64_t)d;
        break;
    case LBSD_OP_LIST:
        if ((rc = lbsd_need_id(o, req, msg, msgsz)) || (rc = lbsd_need_path(o, req, msg, msgsz)))
            return rc;
        if ((rc = lbsd_get_int(o, "max_depth", 1, LBSD_LIST_MAX_DEPTH, 1, &d, msg, msgsz)))
            return rc;
        req->max_depth = (int)d;
        if ((rc = lbsd_get_int(o, "max_entries", 1, LBSD_LIST_MAX_ENTRIES, 10000, &d, msg, msgsz)))
            return rc;
        req->max_entries = (size_t)d;
        break;
    case LBSD_OP_STAT:
    case LBSD_OP_FS_CHANGE: /* action and dest: sandboxd/sandbox_fs.c */
        if ((rc = lbsd_need_id(o, req, msg, msgsz)) || (rc = lbsd_need_path(o, req, msg, msgsz)))
            return rc;
        break;
    case LBSD_OP_DESTROY:
    case LBSD_OP_INTERRUPT:
        if ((rc = lbsd_need_id(o, req, msg, msgsz)))
            return rc;
        break;
    case LBSD_OP_RENEW:
    case LBSD_OP_ADOPT:
        if ((rc = lbsd_need_id(o, req, msg, msgsz)))
            return rc;
        if (req->op == LBSD_OP_ADOPT) {
            if ((rc = lbsd_get_str(o, "key", LB_ID_HEX_LEN, &req->key, msg, msgsz)))
                return rc;
            if (!req->key || !lb_id_valid(req->key)) {
                lbsd_msg(msg, msgsz, "\"key\" must be the lease_key of the sandbox's create (32 hex characters)");
                return LB_E_INVAL;
            }
        }
        if ((rc = lbsd_get_int(o, "lease_s", 0, LBSD_LEASE_MAX_S, 0, &d, msg, msgsz)))
            return rc;
        req->lease_s = (int)d;
        break;
    /* a sandbox's state (follow-ups) */
    case LBSD_OP_FREEZE:
    case LBSD_OP_THAW:
        if ((rc = lbsd_need_id(o, req, msg, msgsz)))
            return rc;
        /* E2B's pause without memory: the sandbox boots again (boot_id.h) */
        if (req->op == LBSD_OP_FREEZE && (rc = lbsd_get_bool(o, "reboot", &req->reboot, msg, msgsz)))
            return rc;
        break;
    case LBSD_OP_SAVE:
        if ((rc = lbsd_need_id(o, req, msg, msgsz)) || (rc = lbsd_get_state(o, "state", 1, req, msg, msgsz)))
            return rc;
        if ((rc = lbsd_get_int(o, "max_mib", 0, LBSD_STATE_MAX_MIB, 0, &d, msg, msgsz)))
            return rc;
        req->max_mib = (int)d;
        break;
    case LBSD_OP_STATE_DELETE:
        if ((rc = lbsd_get_state(o, "state", 1, req, msg, msgsz)))
            return rc;
        break;
    /* processes of sandboxd's own (E2B's protocol): the id here, the rest where
     * the op is served (sandboxd/sandbox_proc.c), each field capped there */
    case LBSD_OP_PROC_START:
    case LBSD_OP_PROC_ATTACH:
    case LBSD_OP_PROC_INPUT:
    case LBSD_OP_PROC_SIGNAL:
    case LBSD_OP_PROC_LIST:
    case LBSD_OP_PORT_CONNECT:
    case LBSD_OP_METRICS:
    case LBSD_OP_VOLUME_MOUNT:
        if ((rc = lbsd_need_id(o, req, msg, msgsz)))
            return rc;
        break;
    /* image work: its fields are checked in sandboxd/image_jobs.c */
    case LBSD_OP_IMAGE_JOB_START:
    case LBSD_OP_IMAGE_JOB_POLL:
    case LBSD_OP_VOLUME: /* its fields: sandboxd/sandbox_volume.c */
    case LBSD_OP_STATE_LIST:
    case LBSD_OP_PING:
    case LBSD_OP_NONE:
        break;
    }
    return LB_OK;
}

void lbsd_req_free(lbsd_req *req)
{
    if (req->json)
        cJSON_Delete(req->json);
    req->json = NULL;
}

static const struct {
    const char *code;
    int status;
} lbsd_codes[] = {
    {"invalid", LB_E_INVAL},    {"notfound", LB_E_NOTFOUND}, {"exists", LB_E_EXISTS},
    {"toobig", LB_E_TOOBIG},    {"sandbox", LB_E_SANDBOX},   {"busy", LB_E_BUSY},
    {"internal", LB_E_INTERNAL}, {"isdir", LB_E_ISDIR},
    {"nospace", LB_E_NOSPACE}, /* a volume owner's room (sandboxd/sandbox_volume.h) */
    {"denied", LB_E_DENIED},    /* a named user's file call it may not make (E2B's `user`) */
};

const char *lbsd_status_code(int status)
{
    for (size_t i = 0; i < sizeof lbsd_codes / sizeof lbsd_codes[0]; i++)
        if (lbsd_codes[i].status == status)
            return lbsd_codes[i].code;
    if (status == LB_E_PROTO || status == LB_E_DENIED)
        return "invalid";
    if (status == LB_E_UNAVAILABLE) /* too many sandboxes: try again later */
        return "busy";
    if (status == LB_E_IO || status == LB_E_TIMEOUT)
        return "sandbox";
    return "internal";
}

int lbsd_code_status(const char *code)
{
    if (!code)
        return LB_E_PROTO;
    for (size_t i = 0; i < sizeof lbsd_codes / sizeof lbsd_codes[0]; i++)
        if (!strcmp(lbsd_codes[i].code, code))
            return lbsd_codes[i].status;
    return LB_E_PROTO;
}

static const char *const lbsd_networks[] = {"default", "none", "nat", "egress"};

const char *lbsd_network_name(int net)
{
    if (net < 0 || net > LBSD_NET_EGRESS)
        return "default";
    return lbsd_networks[net];
}

int lbsd_network_parse(const char *s)
{
    if (!s)
        return -1;
    for (int i = 1; i <= LBSD_NET_EGRESS; i++) /* "default" is not something a client asks for */
        if (!strcmp(lbsd_networks[i], s))
            return i;
    return -1;
}

/* indexed by llmbox_exec_state (include/llmbox/tool.h) */
static const char *const lbsd_states[] = {"exited", "timeout", "oom", "interrupted", "error",
                                          "running"};
#define LBSD_NSTATES ((int)(sizeof lbsd_states / sizeof lbsd_states[0]))

const char *lbsd_state_name(int state)
{
    if (state < 0 || state >= LBSD_NSTATES)
        return "error";
    return lbsd_states[state];
}

int lbsd_state_parse(const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < LBSD_NSTATES; i++)
        if (!strcmp(lbsd_states[i], s))
            return i;
    return -1;
}
