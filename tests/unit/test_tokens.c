/* Exact tokens (agent/tokens.h): reading vLLM's and SGLang's token fields
 * from a chat completion, the verdicts (ok, missing, mismatch with the
 * reason), the caps, the arrays as JSON text (doubles that read back as
 * the same doubles), tokens.jsonl, and the request that asks for them. */
#include "testlib.h"

#include "agent/model_openai.h"
#include "agent/tokens.h"
#include "common/config.h"
#include "common/status.h"
#include "common/util.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static lb_turn_tokens *tk;

/* Parses body's token fields into tk (freed by the next call). */
static int parse(const char *body)
{
    lb_tokens_free(tk);
    tk = NULL;
    cJSON *root = cJSON_Parse(body);
    if (!root)
        return LB_E_PROTO;
    int rc = lb_tokens_parse(root, &tk);
    cJSON_Delete(root);
    return rc;
}

static int error_has(const char *what)
{
    int ok = tk && strstr(tk->error, what) != NULL;
    if (!ok)
        printf("    error was: %s\n", tk ? tk->error : "(none)");
    return ok;
}

#define LP "{\"content\":[{\"token\":\"a\",\"logprob\":-0.30000000000000004,\"top_logprobs\":[]}," \
           "{\"token\":\"b\",\"logprob\":-9999.0}]}"

TEST(vllm_shape_is_read_exactly)
{
    CHECK(parse("{\"prompt_token_ids\":[1,2,151642],\"choices\":[{\"message\":{},\"token_ids\":[7,8],"
                "\"logprobs\":" LP ",\"finish_reason\":\"stop\"}],"
                "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_OK && tk->error[0] == '\0');
    CHECK_STR(tk->shape, "vllm");
    CHECK(tk->n_prompt == 3 && tk->prompt[0] == 1 && tk->prompt[2] == 151642);
    CHECK(tk->n_gen == 2 && tk->gen[0] == 7 && tk->gen[1] == 8);
    CHECK(tk->n_logprobs == 2 && tk->logprobs[0] == -0.30000000000000004 && tk->logprobs[1] == -9999.0);
}

TEST(sglang_shapes_are_read)
{
    CHECK(parse("{\"choices\":[{\"prompt_token_ids\":[4,5],\"token_ids\":[7,8],\"logprobs\":"
                "{\"content\":[{\"token\":\"a\",\"token_id\":7,\"logprob\":-1},{\"token_id\":8,\"logprob\":-2}]}}]}")
          == LB_OK);
    CHECK(tk->status == LB_TOKENS_OK);
    CHECK_STR(tk->shape, "sglang");
    CHECK(tk->n_prompt == 2 && tk->prompt[1] == 5 && tk->n_gen == 2);
    /* the extension: output_ids per choice, or flat */
    CHECK(parse("{\"sglext\":{\"input_ids\":[4],\"output_ids\":[[9,10]]},\"choices\":[{\"logprobs\":"
                "{\"content\":[{\"logprob\":-1},{\"logprob\":-2}]}}]}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_OK && tk->n_gen == 2 && tk->gen[1] == 10);
    CHECK_STR(tk->shape, "sglext");
    CHECK(parse("{\"sglext\":{\"input_ids\":[4],\"output_ids\":[9]},\"choices\":[{\"logprobs\":"
                "{\"content\":[{\"logprob\":-1}]}}]}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_OK && tk->n_gen == 1 && tk->gen[0] == 9);
}

TEST(ids_of_logprobs_entries_count_and_must_agree)
{
    /* vLLM's return_tokens_as_token_ids alone: ids, but no prompt ids */
    CHECK(parse("{\"choices\":[{\"logprobs\":{\"content\":[{\"token\":\"token_id:42\",\"logprob\":-1},"
                "{\"token\":\"token_id:0\",\"logprob\":-2}]}}]}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_MISSING && error_has("no prompt token ids"));
    CHECK(tk->n_gen == 2 && tk->gen[0] == 42 && tk->gen[1] == 0); /* what came is kept, exact */
    CHECK(tk->prompt == NULL);
    CHECK_STR(tk->shape, "logprobs");
    /* two records of the ids that disagree: refused */
    CHECK(parse("{\"prompt_token_ids\":[1],\"choices\":[{\"token_ids\":[42,43],\"logprobs\":{\"content\":"
                "[{\"token\":\"token_id:42\",\"logprob\":-1},{\"token\":\"token_id:44\",\"logprob\":-2}]}}]}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_MISMATCH);
    CHECK(error_has("choices[0].token_ids[1] is 43 but its logprobs entry names 44"));
    CHECK(tk->gen == NULL && tk->prompt == NULL && tk->logprobs == NULL);
    CHECK(parse("{\"choices\":[{\"logprobs\":{\"content\":[{\"token\":\"token_id:9x\",\"logprob\":-1}]}}]}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_MISMATCH && error_has("content[0] names a token id that is not one"));
    CHECK(parse("{\"choices\":[{\"logprobs\":{\"content\":[{\"token\":\"token_id:99999999999\",\"logprob\":-1}]}}]}")
          == LB_OK);
    CHECK(tk->status == LB_TOKENS_MISMATCH);
}

TEST(no_ids_is_missing_never_filled_in)
{
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}],"
                "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_MISSING && error_has("no generated token ids"));
    CHECK(tk->gen == NULL && tk->prompt == NULL && tk->logprobs == NULL);
    /* ids without log-probabilities: missing too, the ids kept */
    CHECK(parse("{\"prompt_token_ids\":[1],\"choices\":[{\"token_ids\":[5]}]}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_MISSING && error_has("no log-probabilities") && tk->n_gen == 1);
    /* nothing generated at all is a complete answer */
    CHECK(parse("{\"prompt_token_ids\":[1],\"choices\":[{\"token_ids\":[]}]}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_OK && tk->n_gen == 0 && tk->n_logprobs == 0 && tk->logprobs);
}

TEST(lengths_that_disagree_are_refused_with_the_reason)
{
    CHECK(parse("{\"prompt_token_ids\":[1],\"choices\":[{\"token_ids\":[5,6,7],\"logprobs\":" LP "}]}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_MISMATCH);
    CHECK_STR(tk->error, "The model server returned 3 generated token ids but 2 log-probabilities.");
    CHECK(tk->gen == NULL && tk->logprobs == NULL && tk->prompt == NULL);
    CHECK(parse("{\"prompt_token_ids\":[1],\"choices\":[{\"token_ids\":[5,6],\"logprobs\":" LP "}],"
                "\"usage\":{\"completion_tokens\":3}}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_MISMATCH && error_has("2 generated token ids but counted 3 completion tokens"));
    CHECK(parse("{\"prompt_token_ids\":[1],\"choices\":[{\"token_ids\":[5,6],\"logprobs\":" LP "}],"
                "\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2}}") == LB_OK);
    CHECK(tk->status == LB_TOKENS_MISMATCH && error_has("1 prompt token ids but counted 2 prompt tokens"));
}

TEST(values_that_are_not_ids_or_logprobs_are_refused)
{
    static const struct {
        const char *body, *why;
    } bad[] = {
        {"{\"prompt_token_ids\":[1,-2],\"choices\":[{\"token_ids\":[]}]}", "prompt_token_ids[1] is not a token id"},
        {"{\"prompt_token_ids\":[1.5],\"choices\":[{\"token_ids\":[]}]}", "prompt_token_ids[0] is not a token id"},
        {"{\"prompt_token_ids\":[2147483648],\"choices\":[{\"token_ids\":[]}]}", "is not a token id"},
        {"{\"prompt_token_ids\":[\"1\"],\"choices\":[{\"token_ids\":[]}]}", "is not a token id"},
        {"{\"prompt_token_ids\":{},\"choices\":[{\"token_ids\":[]}]}", "prompt_token_ids is not an array"},
        {"{\"choices\":[{\"prompt_token_ids\":[1],\"token_ids\":[true]}]}", "choices[0].token_ids[0] is not"},
        {"{\"sglext\":{\"output_ids\":[[1,null]]},\"choices\":[{}]}", "sglext.output_ids[1] is not"},
        {"{\"prompt_token_ids\":[1],\"choices\":[{\"token_ids\":[1],\"logprobs\":{\"content\":[{\"logprob\":1e999}]}}]}",
         "content[0].logprob is not a finite number"},
        {"{\"prompt_token_ids\":[1],\"choices\":[{\"token_ids\":[1],\"logprobs\":{\"content\":[{\"logprob\":\"-1\"}]}}]}",
         "content[0].logprob is not a finite number"},
        {"{\"prompt_token_ids\":[1],\"choices\":[{\"token_ids\":[1],\"logprobs\":{\"content\":{}}}]}",
         "logprobs.content is not an array"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(parse(bad[i].body) == LB_OK);
        CHECK(tk->status == LB_TOKENS_MISMATCH && error_has(bad[i].why));
        CHECK(tk->gen == NULL && tk->prompt == NULL && tk->logprobs == NULL);
    }
}

TEST(arrays_over_the_cap_are_refused)
{
    size_t n = LB_TOKENS_MAX_IDS + 1;
    char *body = malloc(n * 2 + 128);
    CHECK(body != NULL);
    size_t o = (size_t)sprintf(body, "{\"prompt_token_ids\":[");
    for (size_t i = 0; i < n; i++) {
        body[o++] = i ? ',' : ' ';
        body[o++] = '1';
    }
    sprintf(body + o, "],\"choices\":[{\"token_ids\":[]}]}");
    CHECK(parse(body) == LB_OK);
    CHECK(tk->status == LB_TOKENS_MISMATCH && error_has("prompt_token_ids has more than 1048576 ids"));
    /* at the cap exactly: fine */
    body[o - 2] = ' ';
    body[o - 1] = ' ';
    CHECK(parse(body) == LB_OK);
    CHECK(tk->status == LB_TOKENS_OK && tk->n_prompt == LB_TOKENS_MAX_IDS);
    free(body);
}

/* Each double printed by lb_tokens_doubles_json reads back (strtod) as
 * the same bits. */
TEST(doubles_round_trip_bit_for_bit)
{
    double v[] = {-0.30000000000000004, -9999.0, -0.0, 0.0, -1.0, -5e-324, -2.2250738585072014e-308, -DBL_MAX,
                  -1.2345678901234567e-05, -0.046333333333333344, -1e22, -123456789012345678.0, -1.0 / 3.0};
    size_t n = sizeof v / sizeof v[0];
    char *s = lb_tokens_doubles_json(v, n);
    CHECK(s != NULL && s[0] == '[');
    char *p = s + 1;
    for (size_t i = 0; i < n; i++) {
        char *end = NULL;
        double back = strtod(p, &end);
        CHECK(end != p);
        CHECK(memcmp(&back, &v[i], sizeof back) == 0);
        /* a reader that types numbers keeps every one a float */
        CHECK(memchr(p, '.', (size_t)(end - p)) || memchr(p, 'e', (size_t)(end - p)));
        p = end + 1;
    }
    CHECK(strstr(s, "-0.0,0.0,-1.0,") != NULL); /* the sign of zero survives */
    free(s);
    /* and through cJSON, as a trainer's JSON reader would */
    for (int k = 0; k < 2000; k++) {
        double x = -((double)k * 1.1 + 0.1) / 3.0;
        for (int e = 0; e < k % 40; e++)
            x /= 7.0; /* down to ~1e-34, through every digit pattern */
        char *t = lb_tokens_doubles_json(&x, 1);
        cJSON *j = cJSON_Parse(t);
        CHECK(cJSON_IsArray(j) && memcmp(&cJSON_GetArrayItem(j, 0)->valuedouble, &x, sizeof x) == 0);
        cJSON_Delete(j);
        free(t);
    }
    int32_t ids[] = {0, 5, 2147483647};
    char *ij = lb_tokens_ids_json(ids, 3);
    CHECK_STR(ij, "[0,5,2147483647]");
    free(ij);
    ij = lb_tokens_ids_json(NULL, 0);
    CHECK_STR(ij, "[]");
    free(ij);
}

TEST(turn_fields_and_tokens_jsonl)
{
    CHECK(parse("{\"prompt_token_ids\":[1,2],\"choices\":[{\"token_ids\":[7,8],\"logprobs\":" LP "}]}") == LB_OK);
    cJSON *turns = cJSON_CreateArray();
    cJSON *t1 = cJSON_CreateObject();
    cJSON_AddNumberToObject(t1, "turn", 1);
    cJSON_AddStringToObject(t1, "finish_reason", "tool_calls");
    cJSON_AddItemToArray(turns, t1);
    int n = 0, ok = 0;
    CHECK(lb_tokens_record(tk, "unused", t1, &n, &ok) == LB_OK && n == 1 && ok == 1);
    cJSON *t2 = cJSON_CreateObject();
    cJSON_AddNumberToObject(t2, "turn", 2);
    cJSON_AddItemToArray(turns, t2);
    CHECK(lb_tokens_record(NULL, "The anthropic provider's API returns no token ids.", t2, &n, &ok) == LB_OK);
    CHECK(n == 2 && ok == 1);
    cJSON *t3 = cJSON_CreateObject(); /* a turn of a run without capture: no line */
    cJSON_AddNumberToObject(t3, "turn", 3);
    cJSON_AddItemToArray(turns, t3);
    char *txt = cJSON_PrintUnformatted(t1);
    CHECK(strstr(txt, "\"prompt_token_ids\":[1,2],\"generation_token_ids\":[7,8],"
                      "\"generation_log_probs\":[-0.30000000000000004,-9999.0],\"tokens_status\":\"ok\"") != NULL);
    CHECK(strstr(txt, "tokens_error") == NULL);
    free(txt);

    char dir[] = "/tmp/lb-tokens-test.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char traj[128], path[128];
    snprintf(traj, sizeof traj, "%s/trajectory.json", dir);
    snprintf(path, sizeof path, "%s/tokens.jsonl", dir);
    CHECK(lb_tokens_write_beside(traj, turns) == LB_OK);
    char *data = NULL;
    size_t len = 0;
    CHECK(lb_read_file(path, 1 << 20, &data, &len) == LB_OK);
    CHECK_STR(data, "{\"turn\":1,\"prompt_token_ids\":[1,2],\"generation_token_ids\":[7,8],"
                    "\"generation_log_probs\":[-0.30000000000000004,-9999.0],\"finish_reason\":\"tool_calls\","
                    "\"tokens_status\":\"ok\"}\n"
                    "{\"turn\":2,\"prompt_token_ids\":null,\"generation_token_ids\":null,"
                    "\"generation_log_probs\":null,\"finish_reason\":null,\"tokens_status\":\"missing\","
                    "\"tokens_error\":\"The anthropic provider's API returns no token ids.\"}\n");
    free(data);
    unlink(path);
    rmdir(dir);
    cJSON_Delete(turns);
}

TEST(the_request_asks_only_when_capturing)
{
    lb_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.model, sizeof m.model, "x");
    cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":\"hi\"}]");
    char *b = lb_openai_request_body(&m, msgs, NULL);
    CHECK(b && !strstr(b, "return_token_ids") && !strstr(b, "logprobs"));
    free(b);
    m.capture_tokens = 1;
    b = lb_openai_request_body(&m, msgs, NULL);
    CHECK(b && strstr(b, "\"return_token_ids\":true,\"logprobs\":true,\"top_logprobs\":0"));
    free(b);
    /* the operator's extra_body may still change them */
    m.extra_body = cJSON_Parse("{\"top_logprobs\":5,\"return_tokens_as_token_ids\":true}");
    b = lb_openai_request_body(&m, msgs, NULL);
    CHECK(b && strstr(b, "\"top_logprobs\":5") && strstr(b, "\"return_tokens_as_token_ids\":true") &&
          !strstr(b, "\"top_logprobs\":0"));
    free(b);
    cJSON_Delete(m.extra_body);
    cJSON_Delete(msgs);
}

/* A follow-up on an OpenAI-compatible model after an Anthropic one: the
 * tool message's "images" (Anthropic's image blocks) is not sent, the
 * conversation itself keeps it, the rest goes as it was. */
TEST(an_openai_request_leaves_out_anthropic_images)
{
    lb_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.model, sizeof m.model, "x");
    cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"tool\",\"tool_call_id\":\"c1\","
                              "\"content\":\"see /tmp/a.png\",\"images\":[{\"path\":\"/tmp/a.png\","
                              "\"media_type\":\"image/png\"}]}]");
    char *b = lb_openai_request_body(&m, msgs, NULL);
    CHECK(b && !strstr(b, "images") && !strstr(b, "media_type") && strstr(b, "\"tool_call_id\":\"c1\"") &&
          strstr(b, "see /tmp/a.png"));
    free(b);
    CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, 1), "images") != NULL);
    m.tool_mode = LB_TOOL_MODE_TEXT;
    b = lb_openai_request_body(&m, msgs, NULL);
    CHECK(b && !strstr(b, "media_type"));
    free(b);
    cJSON_Delete(msgs);
}

TEST(the_reply_parser_reads_tokens_only_when_asked)
{
    const char *body = "{\"prompt_token_ids\":[1],\"choices\":[{\"message\":{\"content\":\"hi\"},"
                       "\"token_ids\":[7,8],\"logprobs\":" LP "}]}";
    lb_model_reply r;
    char err[300];
    CHECK(lb_parse_chat_response(body, strlen(body), &r, err, sizeof err) == LB_OK && r.tokens == NULL);
    lb_model_reply_free(&r);
    CHECK(lb_parse_chat_response_tokens(body, strlen(body), &r, 1, err, sizeof err) == LB_OK);
    CHECK(r.tokens && r.tokens->status == LB_TOKENS_OK && r.tokens->n_gen == 2);
    CHECK_STR(r.content, "hi");
    lb_model_reply_free(&r);
    /* a refused token record never fails the turn itself */
    const char *bad = "{\"choices\":[{\"message\":{\"content\":\"hi\"},\"token_ids\":\"x\"}]}";
    CHECK(lb_parse_chat_response_tokens(bad, strlen(bad), &r, 1, err, sizeof err) == LB_OK);
    CHECK(r.tokens && r.tokens->status == LB_TOKENS_MISMATCH);
    lb_model_reply_free(&r);
}

int main(void)
{
    RUN(vllm_shape_is_read_exactly);
    RUN(sglang_shapes_are_read);
    RUN(ids_of_logprobs_entries_count_and_must_agree);
    RUN(no_ids_is_missing_never_filled_in);
    RUN(lengths_that_disagree_are_refused_with_the_reason);
    RUN(values_that_are_not_ids_or_logprobs_are_refused);
    RUN(arrays_over_the_cap_are_refused);
    RUN(doubles_round_trip_bit_for_bit);
    RUN(turn_fields_and_tokens_jsonl);
    RUN(the_request_asks_only_when_capturing);
    RUN(an_openai_request_leaves_out_anthropic_images);
    RUN(the_reply_parser_reads_tokens_only_when_asked);
    lb_tokens_free(tk);
    return testlib_done();
}
