/* config.yaml of an official benchmark folder (bench_config.h), read with
 * libyaml's event parser: events are checked one by one, so nothing the
 * file could expand (aliases) is ever built. */
#include "eval/bench_config.h"

#include "common/task_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* The keys of the official folders' config.yaml and where each goes. */
static char **field(lb_bench_config *c, const char *key)
{
    struct {
        const char *name;
        char **slot;
    } keys[] = {
        {"dataset", &c->dataset},
        {"config", &c->config},
        {"split", &c->split},
        {"data_files", &c->data_files},
        {"system_prompt", &c->system_prompt},
        {"instance_prompt", &c->instance_prompt},
        {"input_dir", &c->input_dir},
        {"output_dir", &c->output_dir},
        {"working_dir", &c->working_dir},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(keys[i].name, key))
            return keys[i].slot;
    return NULL;
}

void lb_bench_config_free(lb_bench_config *c)
{
    if (!c)
        return;
    free(c->dataset);
    free(c->config);
    free(c->split);
    free(c->data_files);
    free(c->system_prompt);
    free(c->instance_prompt);
    free(c->input_dir);
    free(c->output_dir);
    free(c->working_dir);
    memset(c, 0, sizeof *c);
}

/* A key as printable ASCII for an error (a hostile key stays one line). */
static void show(const char *s, char *out, size_t outsz)
{
    size_t k = 0;
    for (; s && *s && k + 1 < outsz && k < 64; s++)
        out[k++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    out[k] = '\0';
}

/* Why an event cannot be in config.yaml, or NULL. */
static const char *refused(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        return "uses a YAML alias (*name); anchors and aliases are refused, so the file cannot expand";
    case YAML_SCALAR_EVENT:
        if (ev->data.scalar.anchor)
            return "uses a YAML anchor (&name); anchors and aliases are refused, so the file cannot expand";
        if (ev->data.scalar.tag)
            return "uses a YAML tag (!tag); the official configs hold plain strings";
        return NULL;
    case YAML_MAPPING_START_EVENT:
        if (ev->data.mapping_start.anchor)
            return "uses a YAML anchor (&name); anchors and aliases are refused, so the file cannot expand";
        if (ev->data.mapping_start.tag)
            return "uses a YAML tag (!tag); the official configs hold plain strings";
        return NULL;
    case YAML_SEQUENCE_START_EVENT:
        if (ev->data.sequence_start.anchor)
            return "uses a YAML anchor (&name); anchors and aliases are refused, so the file cannot expand";
        return NULL;
    default:
        return NULL;
    }
}

int lb_bench_config_parse(const char *text, size_t len, lb_bench_config *c, char *err, size_t errsz)
{
    memset(c, 0, sizeof *c);
    if (len > LB_BENCH_CONFIG_MAX) {
        snprintf(err, errsz, "config.yaml is %zu bytes; at most %u are read", len, LB_BENCH_CONFIG_MAX);
        return LB_E_TOOBIG;
    }
    if (memchr(text, '\0', len)) {
        snprintf(err, errsz, "config.yaml holds a NUL byte: it is not a text file");
        return LB_E_INVAL;
    }
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        snprintf(err, errsz, "out of memory while reading config.yaml");
        return LB_E_NOMEM;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = LB_OK, depth = 0, docs = 0, nodes = 0, done = 0;
    char *key = NULL; /* the key whose value comes next */
    while (!done && rc == LB_OK) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            snprintf(err, errsz, "config.yaml:%zu: not valid YAML: %s", p.problem_mark.line + 1,
                     p.problem ? p.problem : "unknown problem");
            rc = LB_E_INVAL;
            break;
        }
        size_t line = ev.start_mark.line + 1;
        const char *why = refused(&ev);
        if (++nodes > LB_BENCH_CONFIG_NODES) {
            snprintf(err, errsz, "config.yaml:%zu: more than %d YAML nodes; the official configs hold a few keys",
                     line, LB_BENCH_CONFIG_NODES);
            rc = LB_E_TOOBIG;
        } else if (why) {
            snprintf(err, errsz, "config.yaml:%zu: %s", line, why);
            rc = LB_E_INVAL;
        } else if (ev.type == YAML_STREAM_END_EVENT) {
            done = 1;
        } else if (ev.type == YAML_DOCUMENT_START_EVENT) {
            if (++docs > 1) {
                snprintf(err, errsz, "config.yaml:%zu: a second YAML document (---); one is read", line);
                rc = LB_E_INVAL;
            }
        } else if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT) {
            if (depth == 0 && ev.type == YAML_MAPPING_START_EVENT) {
                depth = 1;
            } else {
                char k[80];
                show(key, k, sizeof k);
                if (depth == 0)
                    snprintf(err, errsz, "config.yaml:%zu: the file must be a mapping of keys to values", line);
                else
                    snprintf(err, errsz, "config.yaml:%zu: key `%s`: a nested %s; the value must be a string "
                             "(depth 1 at most)", line, key ? k : "?",
                             ev.type == YAML_MAPPING_START_EVENT ? "mapping" : "list");
                rc = LB_E_INVAL;
            }
        } else if (ev.type == YAML_MAPPING_END_EVENT) {
            depth = 0;
        } else if (ev.type == YAML_SCALAR_EVENT) {
            const char *v = (const char *)ev.data.scalar.value;
            size_t vlen = ev.data.scalar.length;
            if (depth == 0) {
                snprintf(err, errsz, "config.yaml:%zu: the file must be a mapping of keys to values", line);
                rc = LB_E_INVAL;
            } else if (!key) {
                char k[80];
                show(v, k, sizeof k);
                if (memchr(v, '\0', vlen) || !field(c, v)) {
                    snprintf(err, errsz, "config.yaml:%zu: unknown key `%s` (known: dataset, config, split, "
                             "data_files, system_prompt, instance_prompt, input_dir, output_dir, working_dir)",
                             line, k);
                    rc = LB_E_INVAL;
                } else if (*field(c, v)) {
                    snprintf(err, errsz, "config.yaml:%zu: key `%s` given twice", line, k);
                    rc = LB_E_INVAL;
                } else if (!(key = strdup(v))) {
                    rc = LB_E_NOMEM;
                }
            } else {
                char **slot = field(c, key);
                int plain_null = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                                 (vlen == 0 || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
                                  !strcmp(v, "NULL"));
                if (vlen > LB_BENCH_VALUE_MAX) {
                    snprintf(err, errsz, "config.yaml:%zu: key `%s`: %zu bytes; at most %u", line, key, vlen,
                             LB_BENCH_VALUE_MAX);
                    rc = LB_E_TOOBIG;
                } else if (memchr(v, '\0', vlen)) {
                    snprintf(err, errsz, "config.yaml:%zu: key `%s`: holds a NUL character", line, key);
                    rc = LB_E_INVAL;
                } else if (plain_null) {
                    /* null: as if absent (the runner's .get() then gives None or its default) */
                    if (!(*slot = strdup("")))
                        rc = LB_E_NOMEM;
                } else if (!(*slot = strndup(v, vlen))) {
                    rc = LB_E_NOMEM;
                }
                free(key);
                key = NULL;
            }
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    free(key);
    if (rc == LB_OK && (!c->dataset || !c->dataset[0])) {
        snprintf(err, errsz, "config.yaml: key `dataset` is missing (\"json\" with data_files, or a published "
                 "dataset's name)");
        rc = LB_E_INVAL;
    }
    if (rc == LB_OK && (!c->system_prompt || !c->system_prompt[0])) {
        snprintf(err, errsz, "config.yaml: key `system_prompt` is missing or empty (the official runner then uses "
                 "its own general.yaml, which is not part of the folder)");
        rc = LB_E_INVAL;
    }
    if (rc == LB_OK && !strcmp(c->dataset, "json") && (!c->data_files || !c->data_files[0])) {
        snprintf(err, errsz, "config.yaml: dataset \"json\" needs key `data_files` (the local data file)");
        rc = LB_E_INVAL;
    }
    struct {
        const char *name;
        char **slot;
        const char *def;
    } dirs[] = {{"working_dir", &c->working_dir, LB_BENCH_DEFAULT_WORKING_DIR},
                {"input_dir", &c->input_dir, LB_BENCH_DEFAULT_INPUT_DIR},
                {"output_dir", &c->output_dir, LB_BENCH_DEFAULT_OUTPUT_DIR}};
    for (size_t i = 0; rc == LB_OK && i < sizeof dirs / sizeof dirs[0]; i++) {
        if (*dirs[i].slot && !(*dirs[i].slot)[0]) {
            free(*dirs[i].slot);
            *dirs[i].slot = NULL;
        }
        if (!*dirs[i].slot && !(*dirs[i].slot = strdup(dirs[i].def))) {
            rc = LB_E_NOMEM;
            break;
        }
        const char *why = lb_sandbox_dir_problem(*dirs[i].slot);
        if (why) {
            char d[80];
            show(*dirs[i].slot, d, sizeof d);
            snprintf(err, errsz, "config.yaml: key `%s`: \"%s\" %s", dirs[i].name, d, why);
            rc = LB_E_INVAL;
        }
    }
    if (rc != LB_OK)
        lb_bench_config_free(c);
    return rc;
}
