/* Secrets the network gateway adds to sandboxes' HTTPS requests (the
 * contract is config.h; docs/NETWORK.md):
 *
 *     [secret "github"]
 *     hosts = api.github.com, *.githubusercontent.com
 *     header = Authorization: Bearer {value}
 *     value_file = /etc/llmbox/github.token   ; or value_env = GITHUB_TOKEN
 *
 * The value is never written in llmbox.conf (as a model's api_key is not):
 * the web reads this file too and needs only the names; sandboxd reads the
 * value when a sandbox names the secret and hands it to that sandbox's
 * gateway alone. Which secrets sandboxes may name is network_egress_max's
 * business (secret:NAME words, per user in [user "NAME"]). */
#include "config_priv.h"
#include "netpolicy.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* hosts: names only (a.com, *.a.com), no port, no network, not "*" */
static int s_hosts(const char *v, char *why, size_t whysz)
{
    lb_netpolicy *p = malloc(sizeof *p);
    if (!p) {
        snprintf(why, whysz, "out of memory");
        return LB_E_NOMEM;
    }
    int rc = lb_netpolicy_list_parse(v, p, why, whysz);
    if (rc == LB_OK && (!p->nallow || p->nsecrets))
        rc = LB_E_INVAL, snprintf(why, whysz, "must list one or more names (api.example.com, *.example.com)");
    for (int i = 0; rc == LB_OK && i < p->nallow; i++)
        if ((p->allow[i].r.kind != LB_NETRULE_HOST && p->allow[i].r.kind != LB_NETRULE_SUFFIX) || p->allow[i].port)
            rc = LB_E_INVAL, snprintf(why, whysz, "\"%s\" is not a name (api.example.com, *.example.com; no port, "
                                                  "address or \"*\")", p->allow[i].text);
    free(p);
    return rc;
}

/* header: "Name: text" with {value} once; a token name, no control bytes */
static int s_header(const char *v, char *why, size_t whysz)
{
    size_t n = strcspn(v, ":");
    int ok = n > 0 && n < 64 && v[n] == ':';
    for (size_t i = 0; ok && i < n; i++)
        ok = (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') || (v[i] >= '0' && v[i] <= '9') ||
             v[i] == '-';
    for (const char *q = v; ok && *q; q++)
        ok = (unsigned char)*q >= 0x20 && *q != 0x7f;
    const char *at = strstr(v, "{value}");
    if (!ok || !at || strstr(at + 1, "{value}")) {
        snprintf(why, whysz, "must be \"Header-Name: text{value}text\" ({value} once, a name of letters, digits "
                             "and '-', no control characters)");
        return LB_E_INVAL;
    }
    return LB_OK;
}

static int s_copy(char *dst, size_t dstsz, const char *v, char *why, size_t whysz)
{
    if (strlen(v) >= dstsz) {
        snprintf(why, whysz, "is longer than %zu bytes", dstsz - 1);
        return LB_E_TOOBIG;
    }
    memcpy(dst, v, strlen(v) + 1);
    return LB_OK;
}

int lb_cfgi_apply_secrets(lb_config *c, const lb_conf *cf)
{
    char why[300], name[LB_CFG_SECTION_MAX];
    c->n_secrets = 0;
    for (size_t i = 0; cf && i < cf->n; i++) {
        const lb_entry *e = &cf->e[i];
        if (!e->section[0] || !lb_conf_secret_section(e->section, name, sizeof name))
            continue;
        if (!lb_netpolicy_secret_name_ok(name))
            return lb_cfgi_fail(LB_E_INVAL, "%s:%d: [%s]: a secret's name is 1 to %d letters, digits, '.', '_' or '-'",
                                cf->path, e->line, e->section, LB_NETPOL_SECRET_NAME - 1);
        if (!strncmp(name, LB_NETPOL_TRANSFORM_PREFIX, strlen(LB_NETPOL_TRANSFORM_PREFIX)))
            return lb_cfgi_fail(LB_E_INVAL, "%s:%d: [%s]: names that begin with \"%s\" are the service's own (an E2B "
                                "sandbox's header transforms); no sandbox would ever use this one: rename it",
                                cf->path, e->line, e->section, LB_NETPOL_TRANSFORM_PREFIX);
        lb_secret_cfg *s = NULL;
        for (int k = 0; k < c->n_secrets; k++)
            if (!strcmp(c->secrets[k].name, name))
                s = &c->secrets[k];
        if (!s) {
            if (c->n_secrets == LB_CFG_MAX_SECRETS)
                return lb_cfgi_fail(LB_E_TOOBIG, "%s:%d: more than %d secrets", cf->path, e->line,
                                    LB_CFG_MAX_SECRETS);
            s = &c->secrets[c->n_secrets++];
            memset(s, 0, sizeof *s);
            memcpy(s->name, name, strlen(name) + 1);
            s->line = e->line;
        }
        int rc;
        if (!strcmp(e->name, "value"))
            return lb_cfgi_fail(LB_E_INVAL,
                                "%s:%d: value: a secret's value is never kept in llmbox.conf (the web reads this "
                                "file too); put it in a file only root reads and name it with value_file, or in "
                                "sandboxd's environment and name the variable with value_env",
                                cf->path, e->line);
        else if (!strcmp(e->name, "hosts"))
            rc = s_hosts(e->value, why, sizeof why) != LB_OK ? LB_E_INVAL
                                                               : s_copy(s->hosts, sizeof s->hosts, e->value, why,
                                                                        sizeof why);
        else if (!strcmp(e->name, "header"))
            rc = s_header(e->value, why, sizeof why) != LB_OK ? LB_E_INVAL
                                                                : s_copy(s->header, sizeof s->header, e->value, why,
                                                                         sizeof why);
        else if (!strcmp(e->name, "value_file"))
            rc = e->value[0] == '/' ? s_copy(s->value_file, sizeof s->value_file, e->value, why, sizeof why)
                                    : (snprintf(why, sizeof why, "must be an absolute path"), LB_E_INVAL);
        else if (!strcmp(e->name, "value_env"))
            rc = s_copy(s->value_env, sizeof s->value_env, e->value, why, sizeof why);
        else
            return lb_cfgi_fail(LB_E_INVAL, "%s:%d: unknown key '%s' in [%s] (a secret has hosts, header, "
                                            "value_file or value_env)", cf->path, e->line, e->name, e->section);
        if (rc != LB_OK)
            return lb_cfgi_fail(rc, "%s:%d: %s: %s", cf->path, e->line, e->name, why);
    }
    for (int k = 0; k < c->n_secrets; k++) {
        const lb_secret_cfg *s = &c->secrets[k];
        if (!s->hosts[0] || !s->header[0] || !s->value_file[0] == !s->value_env[0])
            return lb_cfgi_fail(LB_E_INVAL, "%s:%d: [secret \"%s\"] needs hosts, header, and one of value_file or "
                                            "value_env", cf->path, s->line, s->name);
    }
    return LB_OK;
}
