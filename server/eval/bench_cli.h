/* llmbox eval --benchmark DIR: an official benchmark folder (config.yaml,
 * reward.py, vanilla_llm_prompt.py, a data file) made into a folder
 * dataset that the service runs as any other evaluation, with the
 * folder's own prompts, directories, tool names, LLM-mode prompts and
 * scorer. Each row.json carries the prompts rendered the official way
 * (task_prompt, llm_prompt), the task options the agent needs
 * (task_options: system_prompt sent verbatim, input_dir, output_dir,
 * official tool names, no fallback to finish's answer) and the row as the
 * official runner would see it (official_row); the dataset's scorer.py
 * calls the folder's compute_score. The folder's Python is checked in a
 * fresh sandbox first, so a module the image lacks stops the run before
 * any model is called. */
#ifndef LB_EVAL_BENCH_CLI_H
#define LB_EVAL_BENCH_CLI_H

#include <stddef.h>

#include "common/status.h"
#include "eval/bench_py.h"

#define LB_BENCH_DATA_MAX (512u << 20) /* the data file */
#define LB_BENCH_ROWS_MAX 100000

typedef struct cJSON cJSON;

typedef struct lb_bench_opts {
    const char *dir;      /* the benchmark folder */
    const char *data;     /* --data FILE: the rows of a published dataset; NULL */
    const char *mode;     /* sandbox | llm | both */
    const char *work;     /* a folder of the caller's where the dataset is written */
    int print_prompts;    /* 1: only print the rendered prompts (JSON lines), no dataset */
    int runner_dirs;      /* 1: the runner's default directories whatever config.yaml says, as
                           * runner.py does (its prompt config holds only the two prompts) */
    double temperature;   /* the sampling temperature of every request (the runner's 1.0) */
    lb_bench_box box;     /* where the folder's Python runs */
} lb_bench_opts;

typedef struct lb_bench_prep {
    char dataset[4096];   /* the folder dataset written (under work) */
    char name[201];       /* a name for the evaluation: the folder and its hashes */
    cJSON *identity;      /* {"folder", "path", "dataset", "config", "split", "files": {name: sha256}} */
} lb_bench_prep;

/* Reads and checks the folder, runs its Python check in a sandbox, and
 * writes the folder dataset (or, with print_prompts, prints the prompts to
 * stdout). A clear sentence in err on failure; nothing is uploaded here. */
LB_MUST_CHECK int lb_bench_prepare(const lb_bench_opts *o, lb_bench_prep *p, char *err, size_t errsz);
void lb_bench_prep_free(lb_bench_prep *p);

#endif
