/* libFuzzer target: an official benchmark folder's config.yaml
 * (lb_bench_config_parse, libyaml under caps) and the prompt rendering
 * (lb_bench_render_system / lb_bench_render_instance) of what it parsed.
 * Promises checked: a parsed config has a dataset and a non-empty system
 * prompt, three directories that pass lb_sandbox_dir_problem, values
 * within LB_BENCH_VALUE_MAX; a refused one has a sentence and nothing
 * left allocated (ASan); a rendering that succeeds gives a string. */
#include "common/task_opts.h"
#include "eval/bench_config.h"
#include "eval/bench_render.h"
#include "fuzz_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lb_bench_config c;
    char err[600] = "";
    if (lb_bench_config_parse((const char *)data, size, &c, err, sizeof err) != LB_OK) {
        if (!err[0])
            __builtin_trap();
        return 0;
    }
    if (!c.dataset || !c.dataset[0] || !c.system_prompt || !c.system_prompt[0])
        __builtin_trap();
    if (lb_sandbox_dir_problem(c.input_dir) || lb_sandbox_dir_problem(c.output_dir) ||
        lb_sandbox_dir_problem(c.working_dir))
        __builtin_trap();
    if (strlen(c.system_prompt) > LB_BENCH_VALUE_MAX)
        __builtin_trap();
    char *out = NULL;
    if (lb_bench_render_system(c.system_prompt, c.working_dir, c.input_dir, c.output_dir, &out, err, sizeof err) ==
        LB_OK) {
        if (!out)
            __builtin_trap();
        free(out);
    }
    out = NULL;
    if (lb_bench_render_instance(c.instance_prompt, c.working_dir, c.input_dir, c.output_dir, "P {x} }{", &out, err,
                                 sizeof err) == LB_OK) {
        if (!out)
            __builtin_trap();
        free(out);
    }
    lb_bench_config_free(&c);
    return 0;
}
