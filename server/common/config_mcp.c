/* MCP servers whose tools llmbox's agent may offer (the contract is
 * config.h and config_priv.h; the client is server/mcpclient/).
 *
 *     [mcp "files"]                  ; or [mcp.files]
 *     command = python3 /opt/mcp/files_server.py   ; stdio, inside the task's sandbox
 *     timeout_s = 30                 ; one request; default 60
 *
 *     [mcp "search"]
 *     url = http://127.0.0.1:3001/mcp                ; Streamable HTTP, from the host
 *     header = Authorization: Bearer ...             ; header2..header4 for more
 *
 *     [model "qwen"]
 *     mcp = files, search            ; the servers its tasks are offered
 *
 * Only the servers named here exist: a task, a model, a rollout or an
 * evaluation picks among them by name. A header is a secret: a mistake in
 * one is reported without its value. */
#include "config_priv.h"
#include "status.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lb_cfg_mcp_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (!n || n >= LB_CFG_MCP_NAME || name[n - 1] == '_' || strstr(name, "__"))
        return 0;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

const lb_mcp_cfg *lb_cfg_mcp(const lb_config *cfg, const char *name)
{
    for (int i = 0; name && i < cfg->n_mcp; i++)
        if (!strcmp(cfg->mcp[i].name, name))
            return &cfg->mcp[i];
    return NULL;
}

void lb_cfg_mcp_names(const lb_config *cfg, char *out, size_t outsz)
{
    size_t at = 0;
    if (!outsz)
        return;
    out[0] = '\0';
    for (int i = 0; i < cfg->n_mcp && at < outsz; i++) {
        int w = snprintf(out + at, outsz - at, "%s%s", i ? ", " : "", cfg->mcp[i].name);
        if (w < 0)
            break;
        at += (size_t)w;
    }
    if (!cfg->n_mcp)
        snprintf(out, outsz, "none");
}

int lb_cfg_mcp_list(const lb_config *cfg, const char *list, char (*names)[LB_CFG_MCP_NAME], int max, int *n,
                    char *err, size_t errsz)
{
    *n = 0;
    const char *p = list ? list : "";
    for (;;) {
        p += strspn(p, ", \t");
        if (!*p)
            break;
        size_t len = strcspn(p, ", \t");
        char name[LB_CFG_MCP_NAME];
        if (len >= sizeof name) {
            snprintf(err, errsz, "\"%.40s...\" is not the name of an MCP server: a name is at most %d characters.",
                     p, LB_CFG_MCP_NAME - 1);
            return LB_E_INVAL;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        p += len;
        if (!lb_cfg_mcp(cfg, name)) {
            char all[600];
            lb_cfg_mcp_names(cfg, all, sizeof all);
            /* echoed as printable ASCII only: the list may be a client's */
            for (char *q = name; *q; q++)
                if (*q < 0x20 || *q > 0x7e)
                    *q = '?';
            snprintf(err, errsz, "There is no MCP server called \"%s\"; the configured ones are: %s.", name, all);
            return LB_E_NOTFOUND;
        }
        int dup = 0;
        for (int i = 0; i < *n; i++)
            dup |= !strcmp(names[i], name);
        if (dup)
            continue;
        if (*n == max) {
            snprintf(err, errsz, "At most %d MCP servers may be offered to one task.", max);
            return LB_E_INVAL;
        }
        memcpy(names[(*n)++], name, len + 1);
    }
    return LB_OK;
}

static lb_mcp_cfg *find_mcp(lb_config *c, const char *name)
{
    for (int i = 0; i < c->n_mcp; i++)
        if (!strcmp(c->mcp[i].name, name))
            return &c->mcp[i];
    return NULL;
}

/* "Name: value" with a token name and a printable value: the only shape
 * curl sends as given (a CR or LF would start another header). */
static int header_ok(const char *v)
{
    size_t n = strcspn(v, ":");
    if (!n || !v[n] || strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != n)
        return 0;
    for (const char *q = v + n + 1; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            return 0;
    return 1;
}

static int set_key(lb_mcp_cfg *m, const lb_entry *e, char *why, size_t whysz)
{
    const char *v = e->value;
    if (!strcmp(e->name, "command")) {
        if (!*v || strlen(v) >= sizeof m->command || !lb_cfgi_printable(v)) {
            snprintf(why, whysz, "must be a command line of 1 to %zu printable characters", sizeof m->command - 1);
            return LB_E_INVAL;
        }
        snprintf(m->command, sizeof m->command, "%s", v);
        return LB_OK;
    }
    if (!strcmp(e->name, "url")) {
        if ((strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) || strlen(v) >= sizeof m->url ||
            !lb_cfgi_printable(v) || strchr(v, ' ')) {
            snprintf(why, whysz, "must be an http:// or https:// URL without blanks, shorter than %zu bytes",
                     sizeof m->url);
            return LB_E_INVAL;
        }
        snprintf(m->url, sizeof m->url, "%s", v);
        return LB_OK;
    }
    if (!strcmp(e->name, "timeout_s")) {
        long long x;
        if (lb_parse_ll(v, 1, 3600, &x) != LB_OK) {
            snprintf(why, whysz, "must be a whole number of seconds from 1 to 3600");
            return LB_E_INVAL;
        }
        m->timeout_s = (int)x;
        return LB_OK;
    }
    int k = !strcmp(e->name, "header") ? 0 : !strcmp(e->name, "header2") ? 1 : !strcmp(e->name, "header3") ? 2
          : !strcmp(e->name, "header4") ? 3 : -1;
    if (k < 0) {
        snprintf(why, whysz, "is not a key of an MCP server (command, url, header, header2..header4, timeout_s)");
        return LB_E_INVAL;
    }
    /* the value is a secret: the sentence never quotes it */
    if (!header_ok(v) || strlen(v) >= sizeof m->headers[k]) {
        snprintf(why, whysz, "must be \"Name: value\" of printable characters, shorter than %zu bytes",
                 sizeof m->headers[k]);
        return LB_E_INVAL;
    }
    snprintf(m->headers[k], sizeof m->headers[k], "%s", v);
    if (k + 1 > m->n_headers)
        m->n_headers = k + 1;
    return LB_OK;
}

int lb_cfgi_apply_mcp(lb_config *c, const lb_conf *cf)
{
    char why[300], name[LB_CFG_SECTION_MAX];
    c->n_mcp = 0;
    for (size_t i = 0; cf && i < cf->n; i++) {
        const lb_entry *e = &cf->e[i];
        if (!e->section[0] || !lb_conf_mcp_section(e->section, name, sizeof name))
            continue;
        if (!lb_cfg_mcp_name_ok(name))
            return lb_cfgi_fail(LB_E_INVAL,
                                "%s:%d: [%s]: an MCP server's name is 1 to %d letters, digits, '-' or '_', without "
                                "\"__\" and not ending in '_'",
                                cf->path, e->line, e->section, LB_CFG_MCP_NAME - 1);
        lb_mcp_cfg *m = find_mcp(c, name);
        if (!m) {
            if (c->n_mcp == LB_CFG_MAX_MCP)
                return lb_cfgi_fail(LB_E_TOOBIG, "%s:%d: more than %d MCP servers", cf->path, e->line,
                                    LB_CFG_MAX_MCP);
            m = &c->mcp[c->n_mcp++];
            memset(m, 0, sizeof *m);
            memcpy(m->name, name, strlen(name) + 1); /* name_ok: fits */
            m->timeout_s = 60;
            m->line = e->line;
        }
        if (set_key(m, e, why, sizeof why) != LB_OK)
            return lb_cfgi_fail(LB_E_INVAL, "%s:%d: %s in [%s] %s", cf->path, e->line, e->name, e->section, why);
    }
    for (int i = 0; i < c->n_mcp; i++) {
        const lb_mcp_cfg *m = &c->mcp[i];
        if (!m->command[0] == !m->url[0])
            return lb_cfgi_fail(LB_E_INVAL,
                                "%s:%d: [mcp \"%s\"] needs exactly one of command (a server run inside the task's "
                                "sandbox) and url (a Streamable HTTP server)",
                                cf->path, m->line, m->name);
        if (m->command[0] && m->n_headers)
            return lb_cfgi_fail(LB_E_INVAL,
                                "%s:%d: [mcp \"%s\"] has a header but no url: headers are sent to an HTTP server "
                                "only, never into the sandbox",
                                cf->path, m->line, m->name);
    }
    for (int i = 0; i < c->n_models; i++) {
        char names[LB_CFG_MAX_MCP][LB_CFG_MCP_NAME], err[700];
        int n;
        if (c->models[i].mcp[0] &&
            lb_cfg_mcp_list(c, c->models[i].mcp, names, LB_CFG_MAX_MCP, &n, err, sizeof err) != LB_OK)
            return lb_cfgi_fail(LB_E_INVAL, "%s: [model \"%s\"] mcp: %s", c->models[i].origin, c->models[i].name,
                                err);
    }
    return LB_OK;
}
