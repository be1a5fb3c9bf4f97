/* Unit tests for the web's own limits: the admission of event streams
 * (server/web/sse_admit.h) and the JSON budget of request bodies
 * (server/web/req_body.h). The HTTP side is tests/security/test_web_limits.py. */
#include "testlib.h"

#include "common/status.h"
#include "web/req_body.h"
#include "web/sse_admit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(reserve_is_at_most_a_quarter)
{
    CHECK(lb_sse_reserve_for(32, 8) == 8);
    CHECK(lb_sse_reserve_for(32, 20) == 8);
    CHECK(lb_sse_reserve_for(8, 8) == 2);
    CHECK(lb_sse_reserve_for(1, 8) == 0);
    CHECK(lb_sse_reserve_for(400, 8) == 8);
    CHECK(lb_sse_reserve_for(32, 0) == 0);
}

TEST(per_client_and_total)
{
    CHECK(lb_sse_admit_init(5, 2) == LB_OK);
    int a1, a2, a3, b1, b2, c1, d1;
    CHECK(lb_sse_admit_take("a:127.0.0.1", &a1) == LB_OK);
    CHECK(lb_sse_admit_take("a:127.0.0.1", &a2) == LB_OK);
    CHECK(lb_sse_admit_take("a:127.0.0.1", &a3) == LB_E_TOOBIG && a3 == -1);
    CHECK(lb_sse_admit_count("a:127.0.0.1") == 2);
    CHECK(lb_sse_admit_take("u:alice", &b1) == LB_OK);
    CHECK(lb_sse_admit_take("u:alice", &b2) == LB_OK);
    CHECK(lb_sse_admit_take("u:bob", &c1) == LB_OK);
    /* five open: the total is reached whoever asks */
    CHECK(lb_sse_admit_take("u:carol", &d1) == LB_E_BUSY);
    CHECK(lb_sse_admit_count(NULL) == 5);
    lb_sse_admit_release(a1);
    lb_sse_admit_release(a1); /* twice: no effect */
    CHECK(lb_sse_admit_count(NULL) == 4);
    CHECK(lb_sse_admit_take("u:carol", &d1) == LB_OK);
    lb_sse_admit_release(a2);
    CHECK(lb_sse_admit_take("a:127.0.0.1", &a1) == LB_OK);
    lb_sse_admit_release(-1); /* an invalid place: ignored */
    lb_sse_admit_release(999);
    CHECK(lb_sse_admit_count(NULL) == 5);
}

TEST(long_keys_share_not_bypass)
{
    CHECK(lb_sse_admit_init(10, 1) == LB_OK);
    char k1[200], k2[200];
    memset(k1, 'x', sizeof k1 - 1);
    k1[sizeof k1 - 1] = '\0';
    memcpy(k2, k1, sizeof k2);
    k2[150] = 'y'; /* differs only after the stored length */
    int s1, s2;
    CHECK(lb_sse_admit_take(k1, &s1) == LB_OK);
    CHECK(lb_sse_admit_take(k1, &s2) == LB_E_TOOBIG);
    CHECK(lb_sse_admit_take(k2, &s2) == LB_E_TOOBIG);
}

TEST(no_streams_at_all)
{
    CHECK(lb_sse_admit_init(0, 8) == LB_OK);
    int s;
    CHECK(lb_sse_admit_take("a:x", &s) == LB_E_BUSY);
}

static size_t count_nodes(const cJSON *j)
{
    size_t n = 1;
    for (const cJSON *c = j->child; c; c = c->next)
        n += count_nodes(c);
    return n;
}

TEST(prescan_counts_values_not_keys)
{
    lb_json_scan sc;
    const char *t = "{\"a\": [1, 2.5e3, true, null, \"s\\\"x\"], \"b\": {\"c\": {}}, \"d\": \"e\"}";
    CHECK(lb_json_prescan(t, strlen(t), 100, 10, &sc) == LB_OK);
    cJSON *j = cJSON_Parse(t);
    CHECK(j && sc.values == count_nodes(j));
    CHECK(sc.depth == 3);
    cJSON_Delete(j);
    /* exactly at the budget passes, one more does not */
    CHECK(lb_json_prescan(t, strlen(t), sc.values, 3, &sc) == LB_OK);
    CHECK(lb_json_prescan(t, strlen(t), sc.values - 1, 3, &sc) == LB_E_TOOBIG);
    CHECK(lb_json_prescan(t, strlen(t), 100, 2, &sc) == LB_E_TOOBIG);
    /* a string that never ends, escapes at the very end */
    CHECK(lb_json_prescan("[\"abc\\", 6, 100, 10, &sc) == LB_OK && sc.values == 2);
    CHECK(lb_json_prescan("", 0, 0, 0, &sc) == LB_OK && sc.values == 0);
}

TEST(budget_refuses_a_bomb_with_a_sentence)
{
    size_t n = 300000;
    char *t = malloc(3 * n + 16);
    size_t o = (size_t)sprintf(t, "[");
    for (size_t i = 0; i < n; i++)
        o += (size_t)sprintf(t + o, i ? ",0" : "0");
    t[o++] = ']';
    char msg[400];
    int rc;
    cJSON *j = lb_json_parse_checked(t, o, "exec request", LB_JSON_MAX_VALUES, LB_JSON_MAX_DEPTH, &rc, msg, sizeof msg);
    CHECK(!j && rc == LB_E_INVAL);
    CHECK(strstr(msg, "exec request") && strstr(msg, "100000") && strstr(msg, "budget"));
    free(t);
    char deep[300];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    j = lb_json_parse_checked(deep, 200, "spec", LB_JSON_MAX_VALUES, LB_JSON_MAX_DEPTH, &rc, msg, sizeof msg);
    CHECK(!j && strstr(msg, "64 deep"));
}

TEST(checked_parse_keeps_the_old_rules)
{
    char msg[400];
    int rc;
    cJSON *j = lb_json_parse_checked("{\"a\":1} ", 8, "spec", 100, 8, &rc, msg, sizeof msg);
    CHECK(j && cJSON_IsObject(j));
    cJSON_Delete(j);
    CHECK(!lb_json_parse_checked("{\"a\":1} x", 9, "spec", 100, 8, &rc, msg, sizeof msg) && strstr(msg, "not valid JSON"));
    CHECK(!lb_json_parse_checked("\"\\u0000\"", 8, "spec", 100, 8, &rc, msg, sizeof msg) && strstr(msg, "NUL"));
    CHECK(!lb_json_parse_checked("\"\xff\"", 3, "spec", 100, 8, &rc, msg, sizeof msg) && strstr(msg, "UTF-8"));
    CHECK(!lb_json_parse_checked("", 0, "spec", 100, 8, &rc, msg, sizeof msg) && strstr(msg, "needs a JSON body"));
}

int main(void)
{
    RUN(reserve_is_at_most_a_quarter);
    RUN(per_client_and_total);
    RUN(long_keys_share_not_bypass);
    RUN(no_streams_at_all);
    RUN(prescan_counts_values_not_keys);
    RUN(budget_refuses_a_bomb_with_a_sentence);
    RUN(checked_parse_keeps_the_old_rules);
    return testlib_done();
}
