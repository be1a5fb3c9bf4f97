/* The request bodies of the HTTP sandbox API, validated, and the shell line
 * one API exec becomes. Pure functions (no I/O), so they are unit tested
 * on their own (tests/unit/test_sandbox_api.c).
 *
 * Everything here comes from an outside client: every field is type
 * checked, every string and list capped, every path cleaned (absolute in
 * the sandbox, no "..", no NUL or control characters), every value that
 * reaches the shell single-quoted.
 */
#ifndef LB_SANDBOX_SPEC_H
#define LB_SANDBOX_SPEC_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/image_ref.h"
#include "common/node_id.h"
#include "common/path.h"
#include "common/status.h"

/* one file, up and down: what one sandboxd frame carries, minus room for the
 * request around it (the RPC's read cap) */
#define LB_SBX_FILE_MAX ((64u << 20) - 1024)
#define LB_SBX_FILES_MAX 1000          /* files in a spec */
#define LB_SBX_ENV_MAX 256             /* variables in one env object */
#define LB_SBX_ENV_NAME_MAX 128
#define LB_SBX_ENV_VALUE_MAX (32u << 10)
#define LB_SBX_METADATA_MAX 4096       /* bytes of metadata as compact JSON */
#define LB_SBX_COMMAND_MAX (256u << 10)/* one exec command; the shell line adds env, cwd and quoting */
#define LB_SBX_LINE_MAX (1u << 20)     /* the whole shell line (sandboxd's command cap) */
#define LB_SBX_SPATH_MAX (LB_PATH_MAX + 2)  /* "/" + cleaned path + NUL */

typedef struct lb_sbx_file {
    char path[LB_SBX_SPATH_MAX];   /* absolute, cleaned */
    const char *data;              /* into the request JSON, or `owned` */
    size_t len;
    char *owned;                   /* decoded base64 (freed by lb_sbx_spec_free) */
    int mode;                      /* 0..0777, or -1 for the default (0644) */
} lb_sbx_file;

typedef struct lb_sbx_spec {
    char image[LB_IMAGE_REF_MAX + 1]; /* a debootstrap name or an image reference */
    int ttl_s;
    char workdir[LB_SBX_SPATH_MAX];/* absolute; "/testbed" by default */
    int workdir_given;
    double cpu;                    /* cores; 0 = not set */
    int cpu_milli, memory_mib, disk_mib, pids;  /* 0 = sandboxd's default */
    char network[8];               /* "" (default), "none" or "nat" */
    char *network_policy;          /* owned: {"allow","deny"} as canonical JSON text (common/netpolicy.h), or NULL */
    char *net_values;              /* owned, or NULL: its transform secrets' values for sandboxd (lbsb_spec's
                                      net_values); never echoed or stored, wiped when freed */
    cJSON *env;                    /* owned object of strings; never NULL after a successful parse */
    cJSON *metadata;               /* owned object or NULL */
    lb_sbx_file *files;            /* owned */
    size_t nfiles;
    char snapshot[LB_NODE_ID_MAX + 1]; /* follow-ups: "" or the snapshot it starts from ([node.]32 hex) */
    char owner[64];                /* not of the body: the user whose API token asks ("" the shared token) */
    int owner_max;                 /* that user's sandboxes at once (0: no own limit) */
} lb_sbx_spec;

/* Parses a create body. Defaults and limits come from cfg (ttl, memory,
 * pids, image) and, for a network policy, from user's too (the user whose
 * token asks; NULL for the shared token). On failure returns LB_E_INVAL (answer 400) or LB_E_TOOBIG
 * (413) with a sentence in msg. The spec points into body: keep body alive
 * as long as sp. Always call lb_sbx_spec_free. */
LB_MUST_CHECK int lb_sbx_spec_parse(const cJSON *body, const lb_config *cfg, const lb_user_cfg *user, lb_sbx_spec *sp,
                                    char *msg, size_t msgsz);
void lb_sbx_spec_free(lb_sbx_spec *sp);
/* The spec as shown back to clients: everything but file contents (and
 * metadata, which the status object carries itself). NULL on OOM. */
cJSON *lb_sbx_spec_echo(const lb_sbx_spec *sp);

typedef struct lb_sbx_exec_req {
    const char *command;           /* into the body */
    int timeout_ms;
    int has_stdin;
    const char *stdin_data;        /* into the body */
    size_t stdin_len;
    const cJSON *env;              /* into the body; NULL if none */
    char cwd[LB_SBX_SPATH_MAX];    /* absolute: the request's cwd (relative ones resolve
                                      against workdir), or workdir */
} lb_sbx_exec_req;

/* Parses an exec body: {command, timeout_s?, stdin?, env?, cwd?}. timeout_s
 * defaults to cfg->cmd_timeout_s and may be at most cfg->sandbox_api_exec_max_s.
 * Same failure convention as lb_sbx_spec_parse. */
LB_MUST_CHECK int lb_sbx_exec_parse(const cJSON *body, const lb_config *cfg, const char *workdir, lb_sbx_exec_req *er,
                                    char *msg, size_t msgsz);

/* The shell line for one exec in the persistent shell. A subshell, so cwd
 * and env apply to this command only and nothing it does (cd, export, set)
 * leaks into the next one:
 *   ( [rm -f -- 'STDIN';] cd -- 'CWD' && export 'K=V' ... && eval 'COMMAND' ) < 'STDIN'
 * base_env (the spec's) is exported first, then er->env, so the request
 * wins. stdin_path NULL: < /dev/null. The stdin file is removed as soon as
 * the subshell has it open, so nothing is left even if the command is
 * killed. LB_E_TOOBIG when the line would be over LB_SBX_LINE_MAX. */
LB_MUST_CHECK int lb_sbx_exec_line(const lb_sbx_exec_req *er, const cJSON *base_env, const char *stdin_path, lb_buf *out);
/* lb_sbx_exec_line chooses between two lines with the same effect: the
 * subshell above (always, with stdin), and for one plain command (words of
 * letters, digits and _./:,+=%- only; no builtin that can change the
 * shell; not naming __llmbox*) a short call of a shell function,
 *   [NAME='value' ...] __llmbox_exec 'CWD' WORDS
 * (lb_sbx_exec_helper) that runs it in the persistent shell without a fork
 * and puts the cwd back by itself; the function runs the subshell form
 * when the command's name is a shell function or aliases are on. The
 * caller sends the definition first when the shell may lack it, and again
 * when lb_sbx_exec_fast_missing says the shell lacked it (nothing ran
 * then). lb_sbx_exec_line_sub is the subshell line alone. */
LB_MUST_CHECK int lb_sbx_exec_line_sub(const lb_sbx_exec_req *er, const cJSON *base_env, const char *stdin_path,
                                       lb_buf *out);
/* The definition of __llmbox_exec, one line of shell: the web sends it
 * (followed by "; " and the exec's line) once per sandbox. */
const char *lb_sbx_exec_helper(void);
/* True when a fast-form exec's result is bash's "command not found" for
 * __llmbox_exec itself (exit 127, no stdout, that one line on stderr): the
 * shell had no helper and the command did not run. */
int lb_sbx_exec_fast_missing(int exit_code, const char *out, size_t out_len, const char *err, size_t err_len);

/* Cleans a sandbox path of n bytes (which may hold NULs: refused). An
 * absolute path stands alone; a relative one is taken from base (absolute
 * and clean; NULL: refused). out gets "/" + the cleaned path; "/" itself
 * only when allow_root. LB_E_INVAL for "..", control characters,
 * backslashes, invalid UTF-8, components over 255 bytes, over 1024 bytes. */
LB_MUST_CHECK int lb_sbx_path(const char *in, size_t n, const char *base, int allow_root, char *out, size_t outsz);

/* Appends s single-quoted for the shell ('it'\''s'). */
LB_MUST_CHECK int lb_sh_quote(lb_buf *b, const char *s);

/* True for [A-Za-z_][A-Za-z0-9_]{0,127}. */
int lb_sbx_env_name_ok(const char *s);

/* Decodes standard base64 (padding optional, CR/LF/space ignored).
 * *out is malloc'd (caller frees); LB_E_INVAL on any other character,
 * LB_E_TOOBIG over max decoded bytes. */
LB_MUST_CHECK int lb_base64_decode(const char *in, size_t n, size_t max, char **out, size_t *outlen);

#endif
