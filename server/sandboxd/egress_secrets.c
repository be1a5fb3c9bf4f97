/* The gateway's secrets, bandwidth and CA, on sandboxd's side; the
 * contract is egress_secrets.h. The values are read here, as root, only
 * when a sandbox names the secret (the web never holds them), and handed
 * to that sandbox's gateway through a pipe it inherits: never a file. Files written into a sandbox go through its
 * root fd with no symlink followed, each a temporary file renamed over
 * the old one. */
#include "sandboxd/egress_secrets.h"

#include "sandboxd/objects.h"

#include "common/netpolicy.h"
#include "common/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EGSEC_VALUE_MAX 4096         /* a secret's value */
#define EGSEC_CA_MAX 16384           /* the gateway's CA certificate (PEM) */
#define EGSEC_BUNDLE_MAX (8 << 20)   /* the image's system bundle */
#define EGSEC_CA_WAIT_MS 5000

static const lb_config *g_cfg;
static char g_bw[24], g_maxb[24];

const char *const lbsd_egsec_env[] = {
    "SSL_CERT_FILE=/etc/llmbox/ca-bundle.crt", "REQUESTS_CA_BUNDLE=/etc/llmbox/ca-bundle.crt",
    "CURL_CA_BUNDLE=/etc/llmbox/ca-bundle.crt", "NODE_EXTRA_CA_CERTS=/etc/llmbox/ca.crt", NULL,
};

void lbsd_egsec_configure(const lb_config *cfg)
{
    g_cfg = cfg;
    snprintf(g_bw, sizeof g_bw, "%d", cfg->network_bandwidth_max);
    snprintf(g_maxb, sizeof g_maxb, "%llu", (unsigned long long)cfg->network_max_bytes);
}

int lbsd_egsec_args(char **argv, int at, int secrets)
{
    static char fdword[8];
    if (secrets) {
        snprintf(fdword, sizeof fdword, "%d", LBSD_EGSEC_FD);
        argv[at++] = "--secrets-fd";
        argv[at++] = fdword;
    }
    if (!g_cfg)
        return at;
    if (g_cfg->network_bandwidth_max > 0) {
        argv[at++] = "--bandwidth-max";
        argv[at++] = g_bw;
    }
    if (g_cfg->network_max_bytes) {
        argv[at++] = "--max-bytes";
        argv[at++] = g_maxb;
    }
    if (g_cfg->network_upstream_ca[0]) {
        argv[at++] = "--upstream-ca";
        argv[at++] = (char *)g_cfg->network_upstream_ca;
    }
    return at;
}

/* The value of secret s into out (NUL-terminated). */
static int read_value(const lb_secret_cfg *s, char *out, size_t outsz, char *msg, size_t msgsz)
{
    size_t n = 0;
    if (s->value_env[0]) {
        const char *v = getenv(s->value_env);
        if (!v || !*v) {
            snprintf(msg, msgsz, "secret \"%s\": the variable %s (value_env) is not set for sandboxd", s->name,
                     s->value_env);
            return LB_E_INVAL;
        }
        n = strlen(v);
        if (n >= outsz) {
            snprintf(msg, msgsz, "secret \"%s\": its value is longer than %zu bytes", s->name, outsz - 1);
            return LB_E_TOOBIG;
        }
        memcpy(out, v, n + 1);
    } else {
        int fd = open(s->value_file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        ssize_t r = -1;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
            r = read(fd, out, outsz);
        if (fd >= 0)
            close(fd);
        if (r < 0 || (size_t)r >= outsz) {
            snprintf(msg, msgsz, "secret \"%s\": cannot read %s (value_file: a file of at most %zu bytes)", s->name,
                     s->value_file, outsz - 1);
            return LB_E_IO;
        }
        n = (size_t)r;
        out[n] = '\0';
        if (n && out[n - 1] == '\n')
            out[--n] = '\0';
        if (n && out[n - 1] == '\r')
            out[--n] = '\0';
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f) {
            snprintf(msg, msgsz, "secret \"%s\": its value holds a control character (a header cannot carry it)",
                     s->name);
            return LB_E_INVAL;
        }
    if (!n) {
        snprintf(msg, msgsz, "secret \"%s\": its value is empty", s->name);
        return LB_E_INVAL;
    }
    return LB_OK;
}

/* The entry of values (JSON text [{name, hosts, header, value}]) named
 * name, as a copy for the pipe's list, or NULL. */
static cJSON *transform_entry(const cJSON *vals, const char *name)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, vals) {
        const char *nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
        if (nm && !strcmp(nm, name))
            return cJSON_Duplicate(it, 1);
    }
    return NULL;
}

int lbsd_egsec_pipe(const char *policy, const char *values, int *fd, char *msg, size_t msgsz)
{
    *fd = -1;
    lb_netpolicy *p = malloc(sizeof *p);
    char err[300];
    if (!p)
        return LB_E_NOMEM;
    if (lb_netpolicy_parse(policy, p, err, sizeof err) != LB_OK || !p->nsecrets) {
        free(p); /* a policy that does not parse is the gateway's to refuse, with its sentence */
        return LB_OK;
    }
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "secrets");
    cJSON *vals = values ? cJSON_Parse(values) : NULL;
    char *value = malloc(EGSEC_VALUE_MAX + 1);
    int rc = root && arr && value ? LB_OK : LB_E_NOMEM;
    for (int i = 0; rc == LB_OK && i < p->nsecrets; i++) {
        if (!strncmp(p->secrets[i], LB_NETPOL_TRANSFORM_PREFIX, strlen(LB_NETPOL_TRANSFORM_PREFIX))) {
            /* the gateway checks the entry as it does any secret's */
            cJSON *t = transform_entry(vals, p->secrets[i]);
            if (t)
                cJSON_AddItemToArray(arr, t);
            continue;
        }
        const lb_secret_cfg *s = NULL;
        for (int k = 0; g_cfg && k < g_cfg->n_secrets && !s; k++)
            if (!strcmp(g_cfg->secrets[k].name, p->secrets[i]))
                s = &g_cfg->secrets[k];
        if (!s) {
            snprintf(msg, msgsz, "network secret \"%s\" is not defined on this host ([secret \"%s\"] in llmbox.conf)",
                     p->secrets[i], p->secrets[i]);
            rc = LB_E_INVAL;
            break;
        }
        if ((rc = read_value(s, value, EGSEC_VALUE_MAX + 1, msg, msgsz)) != LB_OK)
            break;
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "name", s->name) || !cJSON_AddStringToObject(o, "hosts", s->hosts) ||
            !cJSON_AddStringToObject(o, "header", s->header) || !cJSON_AddStringToObject(o, "value", value)) {
            cJSON_Delete(o);
            rc = LB_E_NOMEM;
            break;
        }
        cJSON_AddItemToArray(arr, o);
    }
    if (value) {
        memset(value, 0, EGSEC_VALUE_MAX + 1);
        free(value);
    }
    free(p);
    int nent = arr ? cJSON_GetArraySize(arr) : 0;
    char *text = rc == LB_OK && nent ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root); /* cJSON frees the copies of the values: the text is wiped below */
    cJSON_Delete(vals);
    if (rc == LB_OK && !nent)
        return LB_OK; /* only transforms the create gave no values for: no pipe */
    if (rc == LB_OK && !text)
        rc = LB_E_NOMEM;
    if (rc != LB_OK) {
        if (rc == LB_E_NOMEM)
            snprintf(msg, msgsz, "out of memory");
        return rc;
    }
    /* the whole text fits the pipe (16 values of 4 KiB at most): written
     * now, before the gateway runs, it never blocks */
    int pp[2] = {-1, -1};
    size_t len = strlen(text);
    int ok = pipe2(pp, O_CLOEXEC) == 0 && fcntl(pp[1], F_SETPIPE_SZ, 1 << 20) >= (int)len &&
             lb_write_all(pp[1], text, len) == LB_OK;
    memset(text, 0, len);
    free(text);
    if (pp[1] >= 0)
        close(pp[1]);
    if (!ok) {
        snprintf(msg, msgsz, "cannot hand the secrets to the network gateway: %s", strerror(errno));
        if (pp[0] >= 0)
            close(pp[0]);
        return LB_E_IO;
    }
    *fd = pp[0];
    return LB_OK;
}

/* dirfd/name := a then b, owned by uid/gid, mode 0644, by rename. */
static int put_file(int dirfd, const char *name, const char *a, size_t an, const char *b, size_t bn, uid_t uid,
                    gid_t gid)
{
    char tmp[96];
    snprintf(tmp, sizeof tmp, ".%s.llmbox-%d", name, (int)getpid());
    unlinkat(dirfd, tmp, 0);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return LB_E_IO;
    int ok = lb_write_all(fd, a, an) == LB_OK && (!bn || lb_write_all(fd, b, bn) == LB_OK) &&
             fchown(fd, uid, gid) == 0 && fchmod(fd, 0644) == 0;
    close(fd);
    if (!ok || renameat(dirfd, tmp, dirfd, name) != 0) {
        unlinkat(dirfd, tmp, 0);
        return LB_E_IO;
    }
    return LB_OK;
}

/* The image's bundle (etc/ssl/certs/ca-certificates.crt, no symlink
 * followed) into *out, or "" when there is none; the certs dir's fd. */
static int read_bundle(int etc, char **out, size_t *outlen, int *certsfd)
{
    *out = NULL;
    *outlen = 0;
    *certsfd = -1;
    int ssl = openat(etc, "ssl", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int certs = ssl >= 0 ? openat(ssl, "certs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (ssl >= 0)
        close(ssl);
    int fd = certs >= 0 ? openat(certs, "ca-certificates.crt", O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= EGSEC_BUNDLE_MAX) {
        *out = malloc((size_t)st.st_size + 1);
        ssize_t n = *out ? read(fd, *out, (size_t)st.st_size) : -1;
        *outlen = n > 0 ? (size_t)n : 0;
    }
    if (fd >= 0)
        close(fd);
    *certsfd = certs;
    if (!*out)
        *out = calloc(1, 1);
    return *out ? LB_OK : LB_E_NOMEM;
}

int lbsd_egsec_install_ca(lbsd_sandbox *sb, const char *dir, uid_t uid, char *msg, size_t msgsz)
{
    char path[LB_CFG_PATH + 96], ca[EGSEC_CA_MAX];
    snprintf(path, sizeof path, "%s/ca.crt", dir);
    ssize_t calen = -1;
    for (int64_t end = lb_mono_ms() + EGSEC_CA_WAIT_MS; calen < 0 && lb_mono_ms() < end;) {
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid && st.st_size > 0 &&
            st.st_size < (off_t)sizeof ca)
            calen = read(fd, ca, sizeof ca);
        if (fd >= 0)
            close(fd);
        if (calen < 0) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (calen <= 0 || strncmp(ca, "-----BEGIN CERTIFICATE-----", 27)) {
        snprintf(msg, msgsz, "the network gateway made no CA certificate for the sandbox's secrets (see %s/netgw.log)",
                 dir);
        return LB_E_SANDBOX;
    }
    int etc = openat(sb->root_fd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat est;
    if (etc < 0 || fstat(etc, &est) != 0) {
        if (etc >= 0)
            close(etc);
        snprintf(msg, msgsz, "cannot open /etc in the sandbox: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    if (mkdirat(etc, "llmbox", 0755) != 0 && errno != EEXIST) {
        close(etc);
        snprintf(msg, msgsz, "cannot make /etc/llmbox in the sandbox: %s", strerror(errno));
        return LB_E_SANDBOX;
    }
    int llm = openat(etc, "llmbox", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char *bundle = NULL;
    size_t blen = 0;
    int certs = -1;
    int rc = llm >= 0 && fchown(llm, est.st_uid, est.st_gid) == 0 ? read_bundle(etc, &bundle, &blen, &certs)
                                                                 : LB_E_IO;
    /* the bundle ends in a newline before the CA is added to it */
    if (rc == LB_OK && blen && bundle[blen - 1] != '\n')
        bundle[blen++] = '\n';
    if (rc == LB_OK)
        rc = put_file(llm, "ca.crt", ca, (size_t)calen, NULL, 0, est.st_uid, est.st_gid);
    if (rc == LB_OK)
        rc = put_file(llm, "ca-bundle.crt", bundle, blen, ca, (size_t)calen, est.st_uid, est.st_gid);
    /* the system bundle too: programs that read it by default (curl,
     * OpenSSL, git, Python's ssl) trust the CA without any variable */
    if (rc == LB_OK && certs >= 0 && blen)
        rc = put_file(certs, "ca-certificates.crt", bundle, blen, ca, (size_t)calen, est.st_uid, est.st_gid);
    if (rc != LB_OK)
        snprintf(msg, msgsz, "cannot write the gateway's CA certificate into the sandbox's /etc: %s",
                 strerror(errno));
    free(bundle);
    if (certs >= 0)
        close(certs);
    if (llm >= 0)
        close(llm);
    close(etc);
    return rc == LB_OK ? LB_OK : LB_E_SANDBOX;
}

int lbsd_egsec_has_ca(const lbsd_sandbox *sb)
{
    int etc = openat(sb->root_fd, "etc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int llm = etc >= 0 ? openat(etc, "llmbox", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    struct stat st;
    int has = llm >= 0 && fstatat(llm, "ca-bundle.crt", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    if (llm >= 0)
        close(llm);
    if (etc >= 0)
        close(etc);
    return has;
}
