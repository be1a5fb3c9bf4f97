/* Unit tests for a later round's conversation in the agent
 * (server/agent/followup.h): the history read back from trajectory.json,
 * made to fit the budget with a visible note, and the round's opening
 * message. */
#include "testlib.h"

#include "agent/followup.h"
#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/llmbox-test-followup-XXXXXX";

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

/* A conversation: system, user, then n (assistant call, tool output of
 * out_len bytes) pairs, the output made of `fill` with a 3-byte
 * character at the cut points' neighbourhood to catch a cut inside it. */
static cJSON *conversation(int n, size_t out_len)
{
    cJSON *m = cJSON_CreateArray();
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "role", "system");
    cJSON_AddStringToObject(s, "content", "sys");
    cJSON_AddItemToArray(m, s);
    cJSON *u = cJSON_CreateObject();
    cJSON_AddStringToObject(u, "role", "user");
    cJSON_AddStringToObject(u, "content", "task");
    cJSON_AddItemToArray(m, u);
    char *out = malloc(out_len + 1);
    for (size_t i = 0; i < out_len; i++)
        out[i] = (char)('a' + i % 26);
    /* "€" (3 bytes) across the head's cut at 1024 */
    memcpy(out + 1023, "\xe2\x82\xac", 3);
    out[out_len] = '\0';
    for (int i = 0; i < n; i++) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "role", "assistant");
        cJSON_AddStringToObject(a, "content", "run it");
        cJSON_AddItemToArray(m, a);
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "role", "tool");
        cJSON_AddStringToObject(t, "tool_call_id", "c");
        cJSON_AddStringToObject(t, "content", out);
        cJSON_AddItemToArray(m, t);
    }
    free(out);
    return m;
}

static const char *content_of(const cJSON *m, int i)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(m, i), "content"));
}

TEST(fit_cuts_oldest_tool_outputs_with_a_note)
{
    cJSON *m = conversation(4, 20000);
    /* budget 20000 tokens: ~40000 bytes allowed, ~80000 there */
    int cut = lb_followup_fit(m, 20000);
    CHECK(cut >= 2 && cut < 4);
    const char *first = content_of(m, 3), *last = content_of(m, 9);
    CHECK(first && strlen(first) < 3000);
    CHECK(first && strstr(first, "bytes of this output were cut by llmbox"));
    /* the newest output is whole */
    CHECK(last && strlen(last) == 20000 && !strstr(last, "cut by llmbox"));
    /* the cut never splits a character: the 3 bytes of the euro sign are
     * either all kept or all gone */
    const char *e = first ? strstr(first, "\xe2\x82\xac") : NULL;
    CHECK(e == NULL || (size_t)(e - first) == 1023 || strstr(first, "\n[...") > e);
    CHECK(first && (unsigned char)first[1023] != 0x82);
    char *all = cJSON_PrintUnformatted(m);
    CHECK(all && strlen(all) < 45000);
    free(all);
    cJSON_Delete(m);
}

TEST(fit_leaves_a_small_conversation_alone)
{
    cJSON *m = conversation(3, 500);
    char *before = cJSON_PrintUnformatted(m);
    CHECK(lb_followup_fit(m, 0) == 0); /* no budget: 512 KiB */
    char *after = cJSON_PrintUnformatted(m);
    CHECK_STR(before, after);
    free(before);
    free(after);
    cJSON_Delete(m);
}

TEST(fit_cuts_only_tool_messages)
{
    cJSON *m = conversation(1, 100);
    cJSON *big = cJSON_CreateObject();
    char *text = malloc(200001);
    memset(text, 'x', 200000);
    text[200000] = '\0';
    cJSON_AddStringToObject(big, "role", "user");
    cJSON_AddStringToObject(big, "content", text);
    cJSON_AddItemToArray(m, big);
    CHECK(lb_followup_fit(m, 1000) == 0); /* the person's message is never cut */
    CHECK(strlen(content_of(m, 4)) == 200000);
    free(text);
    cJSON_Delete(m);
}

TEST(history_load_reads_messages_and_refuses_damage)
{
    cJSON *msgs = NULL;
    char err[300];
    const char *p = write_file("ok.json", "{\"version\":1,\"messages\":[{\"role\":\"system\",\"content\":\"s\"},"
                                          "{\"role\":\"user\",\"content\":\"u\"}],\"turns\":[]}");
    CHECK(lb_followup_history_load(p, &msgs, err, sizeof err) == LB_OK);
    CHECK(cJSON_GetArraySize(msgs) == 2);
    cJSON_Delete(msgs);
    p = write_file("bad.json", "{\"messages\":[{\"content\":\"no role\"},{\"role\":\"user\"}]}");
    CHECK(lb_followup_history_load(p, &msgs, err, sizeof err) == LB_E_PROTO && msgs == NULL);
    CHECK(strstr(err, "damaged") != NULL);
    p = write_file("trunc.json", "{\"messages\":[{\"role\":\"sys");
    CHECK(lb_followup_history_load(p, &msgs, err, sizeof err) == LB_E_PROTO);
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.json", dir);
    CHECK(lb_followup_history_load(missing, &msgs, err, sizeof err) == LB_E_NOTFOUND);
}

TEST(opening_says_what_survived)
{
    cJSON *in = cJSON_Parse("[{\"path\":\"colors.csv\",\"size\":3}]");
    char *k = lb_followup_opening(2, "make it blue", in, LB_FOLLOWUP_KEPT, 0, 30, "finish");
    char *r = lb_followup_opening(3, "again", NULL, LB_FOLLOWUP_RESTORED, 2, 30, "submit");
    char *f = lb_followup_opening(4, "fresh", NULL, LB_FOLLOWUP_FRESH, 0, 30, "finish");
    CHECK(k && strstr(k, "round 2") && strstr(k, "make it blue") && strstr(k, "colors.csv"));
    CHECK(k && strstr(k, "same one as in the previous round") && !strstr(k, "shortened"));
    CHECK(r && strstr(r, "did not survive") && strstr(r, "2 earlier tool outputs were shortened"));
    CHECK(r && strstr(r, "call submit"));
    CHECK(f && strstr(f, "fresh sandbox") && strstr(f, "are gone"));
    char name[80];
    lb_followup_state_name("0123456789abcdef0123456789abcdef", 12, name, sizeof name);
    CHECK_STR(name, "t0123456789abcdef0123456789abcdef-r12");
    free(k);
    free(r);
    free(f);
    cJSON_Delete(in);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(fit_cuts_oldest_tool_outputs_with_a_note);
    RUN(fit_leaves_a_small_conversation_alone);
    RUN(fit_cuts_only_tool_messages);
    RUN(history_load_reads_messages_and_refuses_damage);
    RUN(opening_says_what_survived);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return testlib_done();
}
