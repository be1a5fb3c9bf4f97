/* Evaluation datasets: the official llm-in-sandbox benchmark format and a
 * folder form, loaded whole and checked before any model is called.
 *
 * Accepted shapes (docs/EVAL.md, "Datasets"):
 *  - a .jsonl file: one row object per non-blank line;
 *  - a .json file: an array of row objects (or one object per line when it
 *    does not start with '[');
 *  - a folder: one sub-folder per row holding row.json (one row object)
 *    and optionally files/ with the row's input files, binary or text.
 * A row: {id, domain, problem_statement, ground_truth, input_files?,
 * qa_type?, documents?, scorer?, image?, ...}; every other field is kept in
 * row_json and handed to scorers. A dataset is hostile input: every size
 * is capped (lb_eval_limits) and every error names file, line and field. */
#ifndef LB_EVAL_DATASET_H
#define LB_EVAL_DATASET_H
#include <stddef.h>
#include "common/status.h"

/* One input file of a row: name is a clean relative path
 * (lb_path_clean_rel), data holds len bytes (plus a NUL not counted). */
typedef struct lb_eval_file {
    char *name;
    unsigned char *data;
    size_t len;
} lb_eval_file;

typedef struct lb_eval_row {
    char *id;                /* unique in the dataset; numbers are turned into their text */
    char *domain;            /* as given (1-64 bytes of printable UTF-8) */
    char *problem;           /* problem_statement (or `problem`) */
    char *qa_type;           /* NULL when the row has none */
    char *image;             /* the row's own sandbox image (a debootstrap name or an image reference, checked
                              * for its form only: the caller checks it exists); NULL: the evaluation's */
    char *scorer;            /* the row's `scorer`, else the domain's default (lb_eval_default_scorer) */
    char *ground_truth_json; /* the ground_truth value as compact JSON */
    lb_eval_file *files;
    size_t nfiles;
    char **documents;        /* long-context documents, in order */
    size_t ndocuments;
    char *row_json;          /* the whole row as given, compact JSON (input_files of a folder row not included) */
    int has_script;          /* the row has its own `scorer_script` (a non-empty string) */
    char *error;             /* non-NULL: the row cannot run, and why (the others still can) */
} lb_eval_row;

typedef struct lb_eval_dataset {
    lb_eval_row *rows;
    size_t n;
    char *script;            /* a folder dataset's top-level scorer.py (the `script` scorer's program), or NULL */
} lb_eval_dataset;

/* Caps on a dataset; all in bytes except the counts. */
typedef struct lb_eval_limits {
    size_t max_rows;          /* rows in the dataset */
    size_t max_row_bytes;     /* one row's JSON text (a line of JSONL, an array element, a row.json) */
    size_t max_file_bytes;    /* one input file (over it: that row gets an error) */
    size_t max_files_per_row; /* input files of one row (over it: that row gets an error) */
    size_t max_total_bytes;   /* the whole dataset: all rows' text and files together */
} lb_eval_limits;

/* The defaults (enough for the official sets: AA-LCR rows are ~100k
 * tokens of documents, about 0.5 MB): 100,000 rows, 32 MiB a row, 16 MiB
 * a file, 256 files a row, 1 GiB in all. */
void lb_eval_limits_default(lb_eval_limits *lim);

/* Loads path (a .jsonl/.json file or a folder) into *out. lim may be NULL
 * (the defaults). On a whole-dataset problem (syntax, a missing or
 * mistyped field, a duplicate id, a cap of the dataset) returns a status
 * with err = "FILE:LINE: field `x`: reason" and *out empty; problems of a
 * single row (a file over the caps, too many files, an unknown scorer, the
 * script scorer without a program: neither the row's `scorer_script` nor a
 * folder's scorer.py) set that row's error and the rest load. The caller frees *out with
 * lb_eval_dataset_free. */
LB_MUST_CHECK int lb_eval_dataset_load(const char *path, const lb_eval_limits *lim, lb_eval_dataset *out,
                                       char *err, size_t errsz);

/* The same for a dataset file's text already in memory (len bytes, a
 * JSON array or JSONL; an upload, or the fuzz driver's input); name
 * labels the error messages as the file's path would. */
LB_MUST_CHECK int lb_eval_dataset_parse(const char *text, size_t len, const char *name, const lb_eval_limits *lim,
                                        lb_eval_dataset *out, char *err, size_t errsz);

/* Parses one row object from text (n bytes, need not be NUL-terminated)
 * as lb_eval_dataset_load does for each row; file and line only label the
 * error messages. On success *row is filled (its error may be set for a
 * row-level problem); the caller frees it with lb_eval_row_free. Exposed
 * for the fuzz driver and the unit tests. */
LB_MUST_CHECK int lb_eval_row_parse(const char *text, size_t n, const lb_eval_limits *lim, const char *file,
                                    long line, lb_eval_row *row, char *err, size_t errsz);

/* Frees what a row owns (not the struct itself); row may be NULL. */
void lb_eval_row_free(lb_eval_row *row);

/* Frees the rows and empties d; d may be NULL. */
void lb_eval_dataset_free(lb_eval_dataset *d);

/* The scorer for a domain without one in the row: math → boxed,
 * chem/biomed → choice, physics/long_context → judge, instruct_follow and
 * anything else → exact. Never NULL; a static string. */
const char *lb_eval_default_scorer(const char *domain);

/* True when name is a built-in scorer (exact, numeric, choice, boxed,
 * script, judge). */
int lb_eval_scorer_known(const char *name);

#endif
