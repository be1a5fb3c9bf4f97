/* What an eval's run gives the model (eval_prompt.c): the llm-mode
 * prompt, and the names of a row's documents as files. */
#ifndef LB_WEB_EVAL_PROMPT_H
#define LB_WEB_EVAL_PROMPT_H

#include <stddef.h>

#include "eval/dataset.h"

/* Most bytes an llm-mode prompt may have: the documents of the official
 * long-context rows (~0.5 MB) fit; the store takes 16 MiB. */
#define LB_EVAL_PROMPT_MAX (8u << 20)

/* The llm-mode prompt of row, as the paper's LLM mode has it: the problem
 * statement, then for a long-context row (one with documents, or of
 * domain long_context) each document inline under a line
 * "=== FILE: name ===" (the row's documents, named as
 * lb_eval_document_name says; else its input files that are UTF-8 text).
 * Malloc'd; NULL when out of memory or over LB_EVAL_PROMPT_MAX. */
char *lb_eval_llm_prompt(const lb_eval_row *row);

/* The file name of document k (from 0) of a row: "document_<k+1>.txt",
 * the same in the llm prompt and in a sandbox's input folder. */
void lb_eval_document_name(size_t k, char *out, size_t outsz);

#endif
