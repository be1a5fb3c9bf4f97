/* The official runner's prompt rendering, byte for byte (llmbox eval
 * --benchmark). runner.py first replaces the three directory placeholders
 * with str.replace (so {problem_statement} and the brace escapes survive),
 * then the agent calls Python's str.format on the result: the system
 * prompt with command_docs="" and demo="", the instance prompt with
 * problem_statement; "{{" and "}}" become braces. A replacement field
 * str.format would reject (a name it is not given, a lone brace) is an
 * error here too, naming it, instead of a prompt the official code never
 * sends. Conversions (!r), format specs (:>8), attribute and index fields
 * are refused: no official template uses them. */
#ifndef LB_EVAL_BENCH_RENDER_H
#define LB_EVAL_BENCH_RENDER_H

#include <stddef.h>

#include "common/status.h"

#define LB_BENCH_PROMPT_MAX (64u << 20) /* a rendered prompt (a long-context problem fits) */

typedef struct lb_bench_var {
    const char *name;
    const char *value;
} lb_bench_var;

/* str.replace of "{working_dir}", then "{input_dir}", then "{output_dir}",
 * as runner.py does, into a new string (*out, the caller frees). */
LB_MUST_CHECK int lb_bench_replace_dirs(const char *tmpl, const char *working_dir, const char *input_dir,
                                        const char *output_dir, char **out, char *err, size_t errsz);

/* Python's tmpl.format(**vars) for bare {name} fields into *out (the caller
 * frees). LB_E_INVAL with the sentence Python's error would give and the
 * byte offset; LB_E_TOOBIG over LB_BENCH_PROMPT_MAX. */
LB_MUST_CHECK int lb_bench_format(const char *tmpl, const lb_bench_var *vars, size_t nvars, char **out, char *err,
                                  size_t errsz);

/* The two prompts of a sandbox run as the official agent sends them: the
 * system message (dirs replaced, formatted with command_docs and demo
 * empty) and the first user message (dirs replaced, formatted with the
 * problem statement; an empty or absent template: the problem statement
 * itself). Either out pointer may be NULL. */
LB_MUST_CHECK int lb_bench_render_system(const char *tmpl, const char *working_dir, const char *input_dir,
                                         const char *output_dir, char **out, char *err, size_t errsz);
LB_MUST_CHECK int lb_bench_render_instance(const char *tmpl, const char *working_dir, const char *input_dir,
                                           const char *output_dir, const char *problem, char **out, char *err,
                                           size_t errsz);

#endif
