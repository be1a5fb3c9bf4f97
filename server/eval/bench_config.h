/* An official benchmark folder's config.yaml (llmbox eval --benchmark):
 * the dataset it names, the system and instance prompt templates and the
 * three sandbox directories, read with libyaml under caps.
 *
 * The file is hostile input like any other: it is read whole up to
 * LB_BENCH_CONFIG_MAX bytes, must be one mapping of known keys to plain
 * strings (no nested lists or mappings: none of the official keys takes
 * one), and YAML anchors, aliases and tags are refused, so an alias
 * expansion (the "billion laughs") can never grow it. An unknown key is
 * named in the error rather than ignored, so a mistyped key never silently
 * runs with the runner's default. */
#ifndef LB_EVAL_BENCH_CONFIG_H
#define LB_EVAL_BENCH_CONFIG_H

#include <stddef.h>

#include "common/status.h"

#define LB_BENCH_CONFIG_MAX (256u << 10) /* config.yaml's bytes */
#define LB_BENCH_CONFIG_NODES 256        /* YAML events (keys, values, document marks) */
#define LB_BENCH_VALUE_MAX (64u << 10)   /* one value (a prompt) */

/* The official runner's defaults when a folder does not name a directory. */
#define LB_BENCH_DEFAULT_WORKING_DIR "/testbed"
#define LB_BENCH_DEFAULT_INPUT_DIR "/testbed/documents"
#define LB_BENCH_DEFAULT_OUTPUT_DIR "/testbed"

typedef struct lb_bench_config {
    char *dataset;         /* "json" (a local file) or a published dataset's name */
    char *config;          /* the published dataset's configuration (NULL: none) */
    char *split;           /* NULL: the runner's "test" */
    char *data_files;      /* dataset "json": the file, relative to the folder's parent */
    char *system_prompt;   /* required, non-empty */
    char *instance_prompt; /* NULL or "": the problem statement is the user message as is */
    char *input_dir, *output_dir, *working_dir; /* NULL: the runner's defaults above */
} lb_bench_config;

/* Parses text (len bytes; NUL inside is refused) into *c, which the caller
 * frees with lb_bench_config_free. LB_E_INVAL / LB_E_TOOBIG with a sentence
 * in err naming the line and the key; *c is then empty. Pure. */
LB_MUST_CHECK int lb_bench_config_parse(const char *text, size_t len, lb_bench_config *c, char *err, size_t errsz);
void lb_bench_config_free(lb_bench_config *c);

#endif
