/* libFuzzer target: a model endpoint's response body (hostile input), parsed
 * as an OpenAI chat completion or an Anthropic Messages reply, including
 * tool calls written as text (<function=...>, <tool_call>). The first byte
 * picks the parser. Promise checked: every string kept is valid UTF-8, every
 * call has a name and arguments, and no more calls than the cap. */
#include "agent/toolcall_parse.h"
#include "common/status.h"
#include "fuzz_util.h"

#include <stdlib.h>

static void check(const char *s)
{
    if (s)
        fz_assert_utf8(s, strlen(s));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int anthropic = data[0] & 1;
    char *body = malloc(size);
    if (!body)
        return 0;
    memcpy(body, data + 1, size - 1);
    lb_model_reply r;
    memset(&r, 0, sizeof r);
    char err[512];
    int rc = anthropic ? lb_parse_anthropic_response(body, size - 1, &r, err, sizeof err)
                       : lb_parse_chat_response(body, size - 1, &r, err, sizeof err);
    if (rc == LB_OK) {
        check(r.content);
        check(r.reasoning);
        check(r.finish_reason);
        if (r.n_calls > LB_MODEL_MAX_CALLS)
            __builtin_trap();
        for (size_t i = 0; i < r.n_calls; i++) {
            if (!r.calls[i].name || !r.calls[i].arguments)
                __builtin_trap();
            check(r.calls[i].name);
            check(r.calls[i].arguments);
            check(r.calls[i].id);
        }
    }
    lb_model_reply_free(&r);
    char line[400];
    lb_model_error_text(body, size - 1, line, sizeof line);
    fz_assert_utf8(line, strlen(line));
    free(body);
    return 0;
}
