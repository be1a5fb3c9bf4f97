/* What a run does with exact tokens: whether it asks for them, why a
 * provider cannot give them, and the compact file at its end. The
 * contract is tokens.h. */
#include "agent/tokens.h"

#include "agent/loop.h"
#include "agent/model_http.h"
#include "agent/run_state.h"
#include "common/config.h" /* checksrc: allow unused-include (m->cfg->capture_tokens needs lb_model_cfg whole) */
#include "common/status.h"
#include "common/task_opts.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

void lb_tokens_capture_set(lb_model *m, const lb_task_opts *o, lb_task_usage *u)
{
    int on = o && o->capture_tokens >= 0 ? o->capture_tokens : m->cfg && m->cfg->capture_tokens;
    m->capture_tokens = on;
    u->tokens_capture = on;
}

const char *lb_tokens_why_none(const lb_model *m)
{
    if (m->provider == LB_PROVIDER_ANTHROPIC)
        return "The anthropic provider's API returns no token ids.";
    if (m->provider == LB_PROVIDER_REPLAY)
        return "A replayed run has no token ids: its replies were not sampled.";
    return "The model server's answer had no token fields.";
}

int lb_tokens_write_beside(const char *trajectory_path, const cJSON *turns)
{
    const char *slash = strrchr(trajectory_path, '/');
    char path[4096];
    int n = slash ? snprintf(path, sizeof path, "%.*s/tokens.jsonl", (int)(slash - trajectory_path), trajectory_path)
                  : snprintf(path, sizeof path, "tokens.jsonl");
    if (n < 0 || (size_t)n >= sizeof path)
        return LB_E_TOOBIG;
    return lb_tokens_write_jsonl(turns, path);
}
