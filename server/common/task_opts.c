/* A task's run options; the contract is task_opts.h. */
#include "common/task_opts.h"

#include "common/status.h"
#include "common/util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SB_INPUT_LLMBOX "/testbed/input"
#define SB_INPUT_OFFICIAL "/testbed/documents"
#define SB_ANSWER_LLMBOX "/testbed/output/answer.txt"
#define SB_ANSWER_OFFICIAL "/testbed/answer.txt"

void lb_task_opts_default(lb_task_opts *o)
{
    o->mode = LB_RUN_SANDBOX;
    o->layout = LB_LAYOUT_LLMBOX;
    o->answer_file = 0;
    o->tool_names = LB_TOOL_NAMES_DEFAULT;
    o->max_tokens = 0;
    o->capture_tokens = -1;
    o->temperature = o->top_p = NAN;
    o->top_k = -1;
    o->system_prompt[0] = '\0';
    o->n_tools = 0;
    o->model_url[0] = o->model_id[0] = '\0';
    o->input_dir[0] = o->output_dir[0] = '\0';
    o->verbatim_prompts = 0;
    o->finish_answer = 1;
    o->n_mcp = 0;
}

/* mcp: names of MCP servers, as a comma-separated text; whether they are
 * configured is the agent's to say (it has the configuration) */
static int mcp_names(lb_task_opts *o, const char *v, char *err, size_t errsz)
{
    o->n_mcp = 0;
    for (const char *p = v;;) {
        p += strspn(p, ", ");
        if (!*p)
            break;
        size_t n = strcspn(p, ", ");
        if (n >= LB_TASK_OPTS_MCP_NAME || strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") < n ||
            o->n_mcp == LB_TASK_OPTS_MCP_MAX) {
            snprintf(err, errsz, "task option mcp must name 1 to %d MCP servers, each 1 to %d of A-Z, a-z, 0-9, - "
                     "and _.", LB_TASK_OPTS_MCP_MAX, LB_TASK_OPTS_MCP_NAME - 1);
            o->n_mcp = 0;
            return LB_E_INVAL;
        }
        memcpy(o->mcp[o->n_mcp], p, n);
        o->mcp[o->n_mcp++][n] = '\0';
        p += n;
    }
    if (!o->n_mcp) {
        snprintf(err, errsz, "task option mcp must name 1 to %d MCP servers.", LB_TASK_OPTS_MCP_MAX);
        return LB_E_INVAL;
    }
    return LB_OK;
}

int lb_task_opts_url_ok(const char *url)
{
    size_t skip = !strncmp(url, "http://", 7) ? 7 : !strncmp(url, "https://", 8) ? 8 : 0;
    size_t n = strlen(url), host = strcspn(url + skip, "/?#");
    if (!skip || n >= LB_TASK_OPTS_URL_MAX || !host || memchr(url + skip, '@', host))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (url[i] <= 0x20 || url[i] >= 0x7f)
            return 0;
    return 1;
}

/* One word of a closed list: its index, or -1. */
static int pick(const char *v, const char *const *words, int n)
{
    for (int i = 0; v && i < n; i++)
        if (!strcmp(v, words[i]))
            return i;
    return -1;
}

static const char *const modes[] = {"sandbox", "llm"};
static const char *const layouts[] = {"llmbox", "official"};
static const char *const names[] = {"llmbox", "official"};

/* A value shown in a message: at most 40 bytes of it, printable ASCII. */
static void shown(const char *v, char *out, size_t outsz)
{
    size_t k = 0;
    for (size_t i = 0; v && v[i] && k + 1 < outsz && i < 40; i++)
        out[k++] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
    out[k] = '\0';
}

int lb_task_opts_set(lb_task_opts *o, const char *name, const char *value, char *err, size_t errsz)
{
    char v[48];
    shown(value, v, sizeof v);
    int k;
    if (!strcmp(name, "mode")) {
        if ((k = pick(value, modes, 2)) < 0)
            goto bad_word;
        o->mode = k;
    } else if (!strcmp(name, "layout")) {
        if ((k = pick(value, layouts, 2)) < 0)
            goto bad_word;
        o->layout = k;
    } else if (!strcmp(name, "tool_names")) {
        if ((k = pick(value, names, 2)) < 0)
            goto bad_word;
        o->tool_names = k;
    } else if (!strcmp(name, "answer_file") || !strcmp(name, "capture_tokens") ||
               !strcmp(name, "verbatim_prompts") || !strcmp(name, "finish_answer")) {
        static const char *const yes_no[] = {"0", "1", "false", "true"};
        if ((k = pick(value, yes_no, 4)) < 0) {
            snprintf(err, errsz, "task option %s must be true, false, \"1\" or \"0\", not \"%s\".", name, v);
            return LB_E_INVAL;
        }
        *(!strcmp(name, "answer_file")        ? &o->answer_file
          : !strcmp(name, "capture_tokens")   ? &o->capture_tokens
          : !strcmp(name, "verbatim_prompts") ? &o->verbatim_prompts
                                              : &o->finish_answer) = k & 1;
    } else if (!strcmp(name, "input_dir") || !strcmp(name, "output_dir") || !strcmp(name, "working_dir")) {
        const char *why = value ? lb_sandbox_dir_problem(value) : "is missing";
        if (!why && !strcmp(name, "input_dir") && !strncmp(value, SB_INPUT_LLMBOX "/", strlen(SB_INPUT_LLMBOX) + 1))
            why = "is inside /testbed/input, where the inputs arrive";
        if (!why && !strcmp(name, "working_dir") && strcmp(value, "/testbed"))
            why = "is not /testbed (llmbox's tools run in /testbed)";
        if (why) {
            snprintf(err, errsz, "task option %s: \"%s\" %s.", name, v, why);
            return LB_E_INVAL;
        }
        if (!strcmp(name, "input_dir"))
            snprintf(o->input_dir, sizeof o->input_dir, "%s", value);
        else if (!strcmp(name, "output_dir"))
            snprintf(o->output_dir, sizeof o->output_dir, "%s", value);
    } else if (!strcmp(name, "temperature") || !strcmp(name, "top_p")) {
        int t = !strcmp(name, "temperature");
        char *end = NULL;
        double d = value && *value ? strtod(value, &end) : NAN;
        if (!end || *end || !isfinite(d) || (t ? d < 0 || d > 2 : d <= 0 || d > 1)) {
            snprintf(err, errsz, "task option %s must be a number %s, not \"%s\".", name,
                     t ? "from 0 to 2" : "above 0 and at most 1", v);
            return LB_E_INVAL;
        }
        *(t ? &o->temperature : &o->top_p) = d;
    } else if (!strcmp(name, "top_k")) {
        long long n;
        if (!value || lb_parse_ll(value, 0, 1000000, &n) != LB_OK) {
            snprintf(err, errsz, "task option top_k must be a whole number from 0 to 1000000, not \"%s\".", v);
            return LB_E_INVAL;
        }
        o->top_k = (int)n;
    } else if (!strcmp(name, "max_tokens")) {
        long long n;
        if (!value || lb_parse_ll(value, 1, LB_TASK_OPTS_MAX_TOKENS, &n) != LB_OK) {
            snprintf(err, errsz, "task option max_tokens must be a whole number from 1 to %d, not \"%s\".",
                     LB_TASK_OPTS_MAX_TOKENS, v);
            return LB_E_INVAL;
        }
        o->max_tokens = (int)n;
    } else if (!strcmp(name, "mcp")) {
        return mcp_names(o, v, err, errsz);
    } else {
        char nm[48];
        shown(name, nm, sizeof nm);
        snprintf(err, errsz,
                 "unknown task option \"%s\" (the options are mode, layout, answer_file, tool_names, max_tokens, "
                 "temperature, top_p, top_k, capture_tokens, system_prompt, tools, model_url, model_id, input_dir, "
                 "output_dir, working_dir, verbatim_prompts, finish_answer and mcp).",
                 nm);
        return LB_E_INVAL;
    }
    return LB_OK;
bad_word:
    snprintf(err, errsz, "task option %s must be %s, not \"%s\".", name,
             !strcmp(name, "mode") ? "\"sandbox\" or \"llm\"" : "\"llmbox\" or \"official\"", v);
    return LB_E_INVAL;
}

/* One member as the text lb_task_opts_set takes. */
static int member_text(const cJSON *it, char *out, size_t outsz, char *err, size_t errsz)
{
    if (cJSON_IsString(it)) {
        if (strlen(it->valuestring) >= outsz) {
            snprintf(err, errsz, "task option %s: the value is too long.", it->string);
            return LB_E_INVAL;
        }
        snprintf(out, outsz, "%s", it->valuestring);
    } else if (cJSON_IsBool(it)) {
        snprintf(out, outsz, "%s", cJSON_IsTrue(it) ? "true" : "false");
    } else if (cJSON_IsNumber(it) && isfinite(it->valuedouble) && it->valuedouble == floor(it->valuedouble) &&
               fabs(it->valuedouble) < 1e15) {
        snprintf(out, outsz, "%lld", (long long)it->valuedouble);
    } else if (cJSON_IsNumber(it) && isfinite(it->valuedouble) &&
               (!strcmp(it->string, "temperature") || !strcmp(it->string, "top_p"))) {
        snprintf(out, outsz, "%.17g", it->valuedouble); /* read back as the same double */
    } else {
        snprintf(err, errsz, "task option %s must be a string%s.", it->string,
                 !strcmp(it->string, "max_tokens") ? " or a whole number"
                 : !strcmp(it->string, "answer_file") || !strcmp(it->string, "capture_tokens") ? " or a boolean"
                                                                                                : "");
        return LB_E_INVAL;
    }
    return LB_OK;
}

/* system_prompt and tools: values that are not one word, read apart from
 * lb_task_opts_set's text form (rollout groups set them, jobs/rollout_runner.c). */
static int text_option(const cJSON *it, lb_task_opts *o, char *err, size_t errsz)
{
    if (!strcmp(it->string, "model_url")) {
        if (!cJSON_IsString(it) || !lb_task_opts_url_ok(it->valuestring)) {
            snprintf(err, errsz, "task option model_url must be an http:// or https:// URL without a user or password, "
                                 "shorter than %d bytes.", LB_TASK_OPTS_URL_MAX);
            return LB_E_INVAL;
        }
        snprintf(o->model_url, sizeof o->model_url, "%s", it->valuestring);
        return LB_OK;
    }
    if (!strcmp(it->string, "model_id")) {
        size_t n = cJSON_IsString(it) ? strlen(it->valuestring) : 0;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)it->valuestring[i] < 0x20 || it->valuestring[i] == 0x7f)
                n = 0;
        if (!n || n >= LB_TASK_OPTS_MODEL_ID_MAX) {
            snprintf(err, errsz, "task option model_id must be a string of 1 to %d bytes without control characters.",
                     LB_TASK_OPTS_MODEL_ID_MAX - 1);
            return LB_E_INVAL;
        }
        snprintf(o->model_id, sizeof o->model_id, "%s", it->valuestring);
        return LB_OK;
    }
    if (!strcmp(it->string, "mcp")) {
        /* a list of names, or one string of them */
        char text[LB_TASK_OPTS_MCP_MAX * (LB_TASK_OPTS_MCP_NAME + 1)] = "";
        size_t at = 0;
        const cJSON *t;
        if (cJSON_IsString(it) && strlen(it->valuestring) < sizeof text)
            snprintf(text, sizeof text, "%s", it->valuestring);
        else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) <= LB_TASK_OPTS_MCP_MAX)
            cJSON_ArrayForEach(t, it)
            {
                const char *v = cJSON_GetStringValue(t);
                if (!v || !*v || strchr(v, ',') || strlen(v) >= LB_TASK_OPTS_MCP_NAME) {
                    text[0] = ',';
                    text[1] = '\0';
                    break;
                }
                at += (size_t)snprintf(text + at, sizeof text - at, "%s,", v);
            }
        else
            snprintf(text, sizeof text, ",");
        return mcp_names(o, text, err, errsz);
    }
    if (!strcmp(it->string, "system_prompt")) {
        if (!cJSON_IsString(it) || !it->valuestring[0] || strlen(it->valuestring) > LB_TASK_OPTS_SYSTEM_MAX) {
            snprintf(err, errsz, "task option system_prompt must be a string of 1 to %d bytes.",
                     LB_TASK_OPTS_SYSTEM_MAX);
            return LB_E_INVAL;
        }
        snprintf(o->system_prompt, sizeof o->system_prompt, "%s", it->valuestring);
        return LB_OK;
    }
    int n = cJSON_IsArray(it) ? cJSON_GetArraySize(it) : 0;
    if (n < 1 || n > LB_TASK_OPTS_TOOLS_MAX) {
        snprintf(err, errsz, "task option tools must be a list of 1 to %d tool names.", LB_TASK_OPTS_TOOLS_MAX);
        return LB_E_INVAL;
    }
    const cJSON *t;
    o->n_tools = 0;
    cJSON_ArrayForEach(t, it)
    {
        const char *v = cJSON_GetStringValue(t);
        size_t len = v ? strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") : 0;
        if (!v || !len || v[len] || len >= LB_TASK_OPTS_TOOL_NAME) {
            snprintf(err, errsz, "task option tools: each name is 1 to %d of a-z, 0-9 and _.",
                     LB_TASK_OPTS_TOOL_NAME - 1);
            return LB_E_INVAL;
        }
        snprintf(o->tools[o->n_tools++], LB_TASK_OPTS_TOOL_NAME, "%s", v);
    }
    return LB_OK;
}

int lb_task_opts_parse(const char *json, lb_task_opts *o, char *err, size_t errsz)
{
    lb_task_opts_default(o);
    if (!json)
        return LB_OK;
    if (strlen(json) > LB_TASK_OPTS_MAX_JSON) {
        snprintf(err, errsz, "the task options are larger than %d bytes.", LB_TASK_OPTS_MAX_JSON);
        return LB_E_INVAL;
    }
    cJSON *root = cJSON_Parse(json);
    int rc = LB_OK;
    if (!cJSON_IsObject(root)) {
        snprintf(err, errsz, "the task options are not a JSON object.");
        rc = LB_E_INVAL;
        goto out;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, root)
    {
        char text[LB_TASK_OPTS_DIR_MAX + 8];
        static const char *const known[] = {"mode",           "layout",      "answer_file", "tool_names", "max_tokens",
                                            "capture_tokens", "temperature", "top_p",       "top_k",
                                            "input_dir",      "output_dir",  "working_dir", "verbatim_prompts",
                                            "finish_answer"};
        /* an unknown name is refused as such, whatever its value */
        if (it->string && (!strcmp(it->string, "system_prompt") || !strcmp(it->string, "tools") ||
                           !strcmp(it->string, "model_url") || !strcmp(it->string, "model_id") ||
                           !strcmp(it->string, "mcp")))
            rc = text_option(it, o, err, errsz);
        else if (pick(it->string, known, (int)(sizeof known / sizeof known[0])) < 0)
            rc = lb_task_opts_set(o, it->string ? it->string : "", "", err, errsz);
        /* one word fits in 64 bytes; only a directory takes more */
        else if ((rc = member_text(it, text,
                                   strstr(it->string, "_dir") ? sizeof text : (size_t)64, err, errsz)) == LB_OK)
            rc = lb_task_opts_set(o, it->string, text, err, errsz);
        if (rc != LB_OK)
            break;
    }
    if (rc != LB_OK)
        lb_task_opts_default(o);
out:
    cJSON_Delete(root);
    return rc;
}

const char *lb_layout_input_dir(int layout)
{
    return layout == LB_LAYOUT_OFFICIAL ? SB_INPUT_OFFICIAL : SB_INPUT_LLMBOX;
}

const char *lb_layout_answer_file(int layout)
{
    return layout == LB_LAYOUT_OFFICIAL ? SB_ANSWER_OFFICIAL : SB_ANSWER_LLMBOX;
}

const char *lb_run_mode_name(int mode)
{
    return mode == LB_RUN_LLM ? "llm" : "sandbox";
}

const char *lb_layout_name(int layout)
{
    return layout == LB_LAYOUT_OFFICIAL ? "official" : "llmbox";
}

const char *lb_tool_names_name(int n)
{
    return n == LB_TOOL_NAMES_OFFICIAL ? "official" : "llmbox";
}

const char *lb_task_opts_input_dir(const lb_task_opts *o)
{
    return o->input_dir[0] ? o->input_dir : lb_layout_input_dir(o->layout);
}

const char *lb_task_opts_answer_file(const lb_task_opts *o, char *buf, size_t bufsz)
{
    if (!o->output_dir[0])
        return lb_layout_answer_file(o->layout);
    snprintf(buf, bufsz, "%s/answer.txt", strcmp(o->output_dir, "/") ? o->output_dir : "");
    return buf;
}

const char *lb_sandbox_dir_problem(const char *dir)
{
    /* the folders a model may write in an image; the system's are refused */
    static const char *const allowed[] = {"/testbed", "/tmp", "/home", "/root", "/workspace", "/data", "/mnt",
                                          "/opt", "/srv"};
    size_t n = strlen(dir);
    if (n == 0 || dir[0] != '/')
        return "is not an absolute path";
    if (n > LB_TASK_OPTS_DIR_MAX)
        return "is too long (at most 200 bytes)";
    for (size_t i = 0; i < n; i++) {
        char ch = dir[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == '-' || ch == '/'))
            return "holds a character other than letters, digits, '.', '_', '-' and '/'";
    }
    if (n > 1 && dir[n - 1] == '/')
        return "ends with '/'";
    for (const char *s = dir; *s; s++) {
        if (*s != '/')
            continue;
        const char *e = strchr(s + 1, '/');
        size_t seg = e ? (size_t)(e - s - 1) : strlen(s + 1);
        if (seg == 0 && s[1])
            return "holds an empty segment (\"//\")";
        if ((seg == 1 && s[1] == '.') || (seg == 2 && s[1] == '.' && s[2] == '.'))
            return "holds a \".\" or \"..\" segment";
    }
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        size_t k = strlen(allowed[i]);
        if (!strncmp(dir, allowed[i], k) && (dir[k] == '\0' || dir[k] == '/'))
            return NULL;
    }
    return "is not under /testbed, /tmp, /home, /root, /workspace, /data, /mnt, /opt or /srv (the system's "
           "folders, /proc, /sys, /dev, /etc and the like, are refused)";
}

int lb_task_opts_only_mcp(const char *options_json)
{
    cJSON *o = options_json ? cJSON_Parse(options_json) : NULL;
    int only = cJSON_IsObject(o) && cJSON_GetArraySize(o) == 1 && cJSON_GetObjectItemCaseSensitive(o, "mcp");
    cJSON_Delete(o);
    return only;
}
