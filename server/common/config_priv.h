/* Internals of the configuration, shared by config.c (global keys,
 * loading, lookups), config_file.c (reading llmbox.conf with libinih) and
 * config_model.c (named models). Nothing outside server/common/config*.c
 * includes this. */
#ifndef LB_CONFIG_PRIV_H
#define LB_CONFIG_PRIV_H

#include "config.h"

#include <stddef.h>
#include "status.h"

#define LB_CFG_MAX_ENTRIES 2000
#define LB_CFG_SECTION_MAX 96
#define LB_CFG_KEY_MAX 64

/* One "key = value" of the file, with the line it is on ("" section:
 * a global key). */
typedef struct lb_entry {
    char section[LB_CFG_SECTION_MAX];
    char name[LB_CFG_KEY_MAX];
    char *value;
    int line;
} lb_entry;

/* A file read into entries (config_file.c). */
typedef struct lb_conf {
    const char *path;
    const char *p, *end;        /* the reader's position in the file text */
    int lineno;                 /* of the line last handed to inih */
    int indented;               /* it started with a blank */
    lb_entry *e;
    size_t n, cap;
    char err[1200];             /* "path:line: what", when parsing failed */
} lb_conf;

/* Reads path (capped at LB_CFG_FILE_MAX) into cf's entries; on failure an
 * lb_status and a sentence in cf->err. Free with lb_conf_free either way. */
LB_MUST_CHECK int lb_conf_parse(lb_conf *cf, const char *path);
void lb_conf_free(lb_conf *cf);
/* [model "qwen"] or [model.qwen] -> "qwen"; 0 when not a model section. */
int lb_conf_model_section(const char *section, char *name, size_t namesz);
/* [user "alice"] or [user.alice] -> "alice"; 0 when not a user section. */
int lb_conf_user_section(const char *section, char *name, size_t namesz);
int lb_conf_secret_section(const char *section, char *name, size_t namesz);

/* [mcp "name"] or [mcp.name] -> "name"; 0 when not an MCP server section. */
int lb_conf_mcp_section(const char *section, char *name, size_t namesz);

/* Helpers (config.c). */
int lb_cfgi_printable(const char *v);
/* dst = v when absolute, else base/v; LB_E_TOOBIG when it does not fit. */
LB_MUST_CHECK int lb_cfgi_join_path(char *dst, size_t dstsz, const char *base, const char *v);
int lb_cfgi_model_name_ok(const char *s);
/* The first non-empty of the variables a and b, or NULL. */
const char *lb_cfgi_env(const char *a, const char *b);
/* Keeps the sentence for lb_config_error() and returns rc. */
LB_MUST_CHECK int lb_cfgi_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Resolves the sandbox caps against this host (config_host.c): an auto
 * sandbox_max_memory_mib becomes half the RAM, sandbox_max_pids at most
 * half of kernel.pid_max, and the default limits at most the caps. */
void lb_cfgi_resolve_host(lb_config *c);

/* Models (config_model.c). */
int lb_cfgi_is_model_key(const char *name);
lb_model_cfg *lb_cfgi_find_model(lb_config *c, const char *name);
/* The file's [model] sections, then the LLMBOX_LLM_* variables on the
 * model "default", then the checks that need a whole model. Skips [user]
 * sections. */
LB_MUST_CHECK int lb_cfgi_apply_models(lb_config *c, const lb_conf *cf);

/* MCP servers (config_mcp.c): the file's [mcp] sections, then each
 * model's mcp list checked against them. Skips other sections. */
LB_MUST_CHECK int lb_cfgi_apply_mcp(lb_config *c, const lb_conf *cf);

/* Users and listen (config_user.c). */
int lb_cfgi_is_user_key(const char *name);
/* The file's [user] sections, with the user_* defaults filled in. */
LB_MUST_CHECK int lb_cfgi_apply_users(lb_config *c, const lb_conf *cf);
/* [secret "NAME"] sections (config_secret.c) */
LB_MUST_CHECK int lb_cfgi_apply_secrets(lb_config *c, const lb_conf *cf);
/* "ADDR:PORT" with ADDR an IPv4 or [IPv6] literal: LB_OK, or LB_E_INVAL
 * with a phrase in why. */
LB_MUST_CHECK int lb_cfgi_listen_check(const char *v, char *why, size_t whysz);
/* allowed_hosts: v (names with an optional :port, separated by commas or
 * spaces) checked and written lowercase, comma-separated, into out. */
LB_MUST_CHECK int lb_cfgi_allowed_hosts_norm(const char *v, char *out, size_t outsz, char *why, size_t whysz);
/* E2B's protocol: e2b_domain, lowercased into out; "" stays "" */
LB_MUST_CHECK int lb_cfgi_e2b_domain_norm(const char *v, char *out, size_t outsz, char *why, size_t whysz);
/* The checks that need both: listen beyond loopback needs users. */
LB_MUST_CHECK int lb_cfgi_check_access(const lb_config *c);

#endif
