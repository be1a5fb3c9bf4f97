/* Access: token hashing and constant-time comparison (common/token.h),
 * users and listen in llmbox.conf (config_user.c), and the store's
 * sessions and task owners (schema v4). */
#include "store_where.h"
#include "testlib.h"
#include "conf_file.h"

#include "common/config.h"
#include "common/status.h"
#include "common/token.h"
#include "common/util.h"
#include "store/store.h"
#include "web/task_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[] = "/tmp/llmbox-test-access-XXXXXX";

/* sha256("alice-token") and sha256("bob-token"), as `llmbox user hash` prints them */
static char ha[65], hb[65], hc[65];

/* ---- token.c ---- */

TEST(sha256_and_hmac_known_vectors)
{
    char h[LB_SHA256_HEX];
    CHECK(lb_sha256_hex("abc", 3, h) == LB_OK);
    CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(lb_sha256_hex("", 0, h) == LB_OK);
    CHECK_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    /* RFC 4231, test case 2 */
    CHECK(lb_hmac_sha256_hex("Jefe", 4, "what do ya want for nothing?", 28, h) == LB_OK);
    CHECK_STR(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(new_tokens_are_random_and_prefixed)
{
    char a[LB_TOKEN_LEN + 1], b[LB_TOKEN_LEN + 1];
    CHECK(lb_token_new(a, sizeof a) == LB_OK && lb_token_new(b, sizeof b) == LB_OK);
    CHECK(strlen(a) == LB_TOKEN_LEN && !strncmp(a, "lbx_", 4));
    CHECK(lb_sha256_hex_valid(a + 4)); /* 64 lowercase hex: 256 bits */
    CHECK(strcmp(a, b) != 0);
    char small[LB_TOKEN_LEN];
    CHECK(lb_token_new(small, sizeof small) == LB_E_INVAL);
}

TEST(constant_time_compare_and_hash_shape)
{
    CHECK(lb_ct_equal("abcdef", "abcdef", 6));
    CHECK(!lb_ct_equal("abcdef", "abcdeg", 6));
    CHECK(!lb_ct_equal("Xbcdef", "abcdef", 6));
    CHECK(lb_ct_equal("a", "b", 0));
    CHECK(lb_sha256_hex_valid(ha));
    CHECK(!lb_sha256_hex_valid("ABCDEF"));
    char up[65];
    snprintf(up, sizeof up, "%s", ha);
    up[0] = 'A';
    CHECK(!lb_sha256_hex_valid(up)); /* lowercase only: one spelling per hash */
    up[0] = 'a';
    up[63] = '\0';
    CHECK(!lb_sha256_hex_valid(up));
}

/* ---- users in llmbox.conf ---- */

TEST(no_users_by_default)
{
    unsetenv("LLMBOX_LISTEN");
    setenv("LLMBOX_CONF", "/dev/null", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
    const lb_config *c = lb_cfg();
    CHECK(c->n_users == 0 && !strcmp(c->listen, "127.0.0.1:8080"));
    CHECK(c->user_max_tasks == 4 && c->user_tasks_per_minute == 10 && c->user_max_upload_bytes == 0);
    CHECK(c->session_ttl_s == 604800 && !strcmp(c->cookie_secure, "auto"));
    CHECK(lb_cfg_user_by_token(c, "alice-token", 11) == NULL);
}

TEST(users_parse_with_defaults_and_overrides)
{
    char text[2000];
    snprintf(text, sizeof text,
             "max_upload_mb = 50\n"
             "user_max_tasks = 3\n"
             "user_max_upload_mb = 20\n"
             "[model \"m\"]\n"
             "base_url = http://127.0.0.1:1/v1\n"
             "[user \"alice\"]\n"
             "token_sha256 = %s,\n"
             "    %s\n"
             "tasks_per_minute = 0\n"
             "[user.bob]\n"
             "token_sha256 = %s\n"
             "max_tasks = 1\n"
             "max_upload_mb = 500\n"
             "network_max_mb = 5\n",
             ha, hc, hb);
    CHECK(load(text) == LB_OK);
    const lb_config *c = lb_cfg();
    CHECK(c->n_users == 2 && c->n_models == 1);
    const lb_user_cfg *a = lb_cfg_user(c, "alice"), *b = lb_cfg_user(c, "bob");
    CHECK(a && a->n_tokens == 2 && !strcmp(a->token_sha256[0], ha) && !strcmp(a->token_sha256[1], hc));
    CHECK(a && a->max_tasks == 3 && a->tasks_per_minute == 0 && a->max_upload_bytes == 20ull << 20);
    /* a user's own upload limit never goes above the service's */
    CHECK(b && b->max_tasks == 1 && b->tasks_per_minute == 10 && b->max_upload_bytes == 50ull << 20);
    CHECK(lb_cfg_user_by_token(c, "alice-token", 11) == a);
    CHECK(lb_cfg_user_by_token(c, "carol-token", 11) == a); /* her second token */
    CHECK(lb_cfg_user_by_token(c, "bob-token", 9) == b);
    CHECK(lb_cfg_user_by_token(c, "bob-token ", 10) == NULL);
    CHECK(lb_cfg_user_by_token(c, ha, 64) == NULL); /* the hash is not the token */
    CHECK(lb_cfg_user_by_token(c, "", 0) == NULL);
    CHECK(lb_cfg_user_has_token(a, hc) && !lb_cfg_user_has_token(a, hb) && !lb_cfg_user_has_token(NULL, ha));
    CHECK(lb_cfg_user(c, "carol") == NULL && lb_cfg_user(c, "") == NULL);
    /* the byte allowance of a user's sandboxes; none: the service's */
    CHECK(b && b->network_max_bytes == 5ull << 20 && a && a->network_max_bytes == 0);
    snprintf(text, sizeof text, "network_max_mb = 64\n[user \"a\"]\ntoken_sha256 = %s\nnetwork_max_mb = 0\n", ha);
    CHECK(load(text) == LB_E_INVAL && error_has("network_max_mb"));
    snprintf(text, sizeof text, "network_max_mb = 64\n[user \"a\"]\ntoken_sha256 = %s\n", ha);
    CHECK(load(text) == LB_OK && lb_cfg()->network_max_bytes == 64ull << 20);
}

TEST(user_mistakes_name_their_line)
{
    char text[600];
    snprintf(text, sizeof text, "[user \"a\"]\ntoken_sha256 = %s\nmax_tasks = -1\n", ha);
    CHECK(load(text) == LB_E_INVAL && error_has(":3: max_tasks: must be a whole number"));
    CHECK(load("[user \"a\"]\ntoken = lbx_0123\n") == LB_E_INVAL && error_has(":2: token: tokens are never kept"));
    CHECK(!strstr(lb_config_error(), "lbx_0123"));
    CHECK(load("[user \"a\"]\ntoken_sha256 = lbx_secret\n") == LB_E_INVAL && error_has("not the token itself"));
    CHECK(!strstr(lb_config_error(), "lbx_secret"));
    snprintf(text, sizeof text, "[user \"a\"]\ntoken_sha256 = %.63sG\n", ha);
    CHECK(load(text) == LB_E_INVAL && error_has("64 lowercase hex"));
    CHECK(load("[user \"a\"]\nmax_tasks = 1\n") == LB_E_INVAL && error_has(":2: [user \"a\"] has no token_sha256"));
    snprintf(text, sizeof text, "[user \"a\"]\ntoken_sha256 = %s\n[user \"b\"]\ntoken_sha256 = %s\n", ha, ha);
    CHECK(load(text) == LB_E_INVAL && error_has("a token names one user"));
    snprintf(text, sizeof text, "[user \"a/b\"]\ntoken_sha256 = %s\n", ha);
    CHECK(load(text) == LB_E_INVAL && error_has("a user name is"));
    snprintf(text, sizeof text, "token_sha256 = %s\n", ha);
    CHECK(load(text) == LB_E_INVAL && error_has(":1: 'token_sha256' is a user setting"));
    snprintf(text, sizeof text, "[user \"a\"]\ntoken_sha256 = %s\nprovider = openai\n", ha);
    CHECK(load(text) == LB_E_INVAL && error_has(":3: unknown key 'provider' in [user \"a\"]"));
    snprintf(text, sizeof text, "[user \"a\"]\ntoken_sha256 = %s, %s, %s, %s, %s\n", ha, hb, hc, ha, hb);
    CHECK(load(text) != LB_OK); /* at most four, and the line is too long anyway */
    CHECK(load("[users]\nx = 1\n") == LB_E_INVAL && error_has("sections are [model \"NAME\"], [user \"NAME\"], [secret \"NAME\"] and [mcp \"NAME\"]"));
    CHECK(load("cookie_secure = yes\n") == LB_E_INVAL && error_has("must be auto"));
    CHECK(load("session_ttl_s = 5\n") == LB_E_INVAL && error_has("session_ttl_s"));
}

/* ---- listen ---- */

TEST(listen_beyond_loopback_needs_users)
{
    char text[600];
    CHECK(load("listen = 127.0.0.1:9000\n") == LB_OK && !strcmp(lb_cfg()->listen, "127.0.0.1:9000"));
    CHECK(load("listen = [::1]:9000\n") == LB_OK);
    CHECK(load("listen = 0.0.0.0:8080\n") == LB_E_INVAL && error_has("listen = 0.0.0.0:8080: without users"));
    CHECK(load("listen = [::]:8080\n") == LB_E_INVAL);
    CHECK(load("listen = 10.1.2.3:80\n") == LB_E_INVAL);
    setenv("LLMBOX_LISTEN", "0.0.0.0:8081", 1);
    CHECK(load("") == LB_E_INVAL && error_has("0.0.0.0:8081"));
    snprintf(text, sizeof text, "[user \"ops\"]\ntoken_sha256 = %s\n", ha);
    CHECK(load(text) == LB_OK && !strcmp(lb_cfg()->listen, "0.0.0.0:8081"));
    unsetenv("LLMBOX_LISTEN");
    const char *bad[] = {"8080", "localhost:8080", "0.0.0.0", "0.0.0.0:0", "0.0.0.0:70000", "::1:80", "[::1]80",
                         "1.2.3:80", NULL};
    for (int i = 0; bad[i]; i++) {
        snprintf(text, sizeof text, "listen = %s\n", bad[i]);
        CHECK(load(text) == LB_E_INVAL && error_has("ADDRESS:PORT"));
    }
}

TEST(loopback_addresses)
{
    const char *yes[] = {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "127.0.0.1:8080", "[::1]:80", NULL};
    const char *no[] = {"0.0.0.0", "10.0.0.1", "::", "::ffff:10.0.0.1", "128.0.0.1", "0.0.0.0:8080", "[::]:8080",
                        "", "localhost", "127.0.0.1x", NULL};
    for (int i = 0; yes[i]; i++)
        CHECK(lb_cfg_addr_is_loopback(yes[i]));
    for (int i = 0; no[i]; i++) {
        if (lb_cfg_addr_is_loopback(no[i]))
            printf("    %s counted as loopback\n", no[i]);
        CHECK(!lb_cfg_addr_is_loopback(no[i]));
    }
}

/* ---- the store: owners and sessions ---- */

static lb_store *open_db(const char *name)
{
    char path[4096];
    /* on PostgreSQL under tests/integration/test_store_pg.py (store_where.h) */
    if (tw_pg())
        tw_fresh(name, path, sizeof path);
    else
        snprintf(path, sizeof path, "%s/%s.db", dir, name);
    lb_store *s = NULL;
    return lb_store_open(path, &s) == LB_OK ? s : NULL;
}

static int add_task(lb_store *s, const char *owner, int max_active, char id[33])
{
    CHECK(lb_random_hex(id, 33, 16) == LB_OK);
    lb_task_new t = {.id = id, .prompt = "p", .model = "m", .max_turns = 1, .owner = owner,
                     .owner_max_active = max_active};
    return lb_store_task_insert(s, &t);
}

TEST(task_owners_lists_and_active_limit)
{
    lb_store *s = open_db("owners");
    CHECK(s != NULL);
    char a1[33], a2[33], b1[33], n1[33], x[33];
    CHECK(add_task(s, "alice", 2, a1) == LB_OK);
    CHECK(add_task(s, "alice", 2, a2) == LB_OK);
    CHECK(add_task(s, "alice", 2, x) == LB_E_BUSY); /* two queued already */
    CHECK(add_task(s, "bob", 1, b1) == LB_OK);
    CHECK(add_task(s, NULL, 1, n1) == LB_OK);
    CHECK(add_task(s, NULL, 1, x) == LB_OK); /* no owner: no per-owner limit */
    char owner[64];
    CHECK(lb_store_task_owner(s, a1, owner, sizeof owner) == LB_OK && !strcmp(owner, "alice"));
    CHECK(lb_store_task_owner(s, n1, owner, sizeof owner) == LB_OK && !strcmp(owner, ""));
    CHECK(lb_store_task_owner(s, "0123456789abcdef0123456789abcdef", owner, sizeof owner) == LB_E_NOTFOUND);
    int n = -1;
    CHECK(lb_store_tasks_active_of(s, "alice", &n) == LB_OK && n == 2);
    CHECK(lb_store_task_finish(s, a1, "succeeded", NULL, NULL) == LB_OK);
    CHECK(lb_store_tasks_active_of(s, "alice", &n) == LB_OK && n == 1);
    CHECK(add_task(s, "alice", 2, x) == LB_OK); /* a place was freed */
    cJSON *arr = NULL;
    CHECK(lb_store_task_page_of(s, "alice", 50, 0, NULL, &arr) == LB_OK && cJSON_GetArraySize(arr) == 3);
    cJSON_Delete(arr);
    CHECK(lb_store_task_page_of(s, "bob", 50, 0, NULL, &arr) == LB_OK && cJSON_GetArraySize(arr) == 1);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "id")), b1);
    cJSON_Delete(arr);
    CHECK(lb_store_task_page_of(s, "carol", 50, 0, NULL, &arr) == LB_OK && cJSON_GetArraySize(arr) == 0);
    cJSON_Delete(arr);
    CHECK(lb_store_task_page_of(s, NULL, 50, 0, NULL, &arr) == LB_OK && cJSON_GetArraySize(arr) == 6);
    cJSON_Delete(arr);
    lb_store_close(s);
}

static void session(lb_session *se, const char *sid, const char *user, int64_t created, int64_t ttl)
{
    memset(se, 0, sizeof *se);
    CHECK(lb_sha256_hex(sid, strlen(sid), se->id_sha256) == LB_OK);
    snprintf(se->user, sizeof se->user, "%s", user);
    snprintf(se->token_sha256, sizeof se->token_sha256, "%s", ha);
    se->created_ms = created;
    se->expires_ms = created + ttl;
}

TEST(sessions_expire_trim_and_delete)
{
    lb_store *s = open_db("sessions");
    CHECK(s != NULL);
    int64_t now = lb_now_ms();
    lb_session se, got;
    session(&se, "one", "alice", now, 60000);
    CHECK(lb_store_session_add(s, &se, 3) == LB_OK);
    CHECK(lb_store_session_get(s, se.id_sha256, now, &got) == LB_OK);
    CHECK(!strcmp(got.user, "alice") && !strcmp(got.token_sha256, ha) && got.expires_ms == now + 60000);
    CHECK(lb_store_session_get(s, se.id_sha256, now + 60000, &got) == LB_E_NOTFOUND); /* expired */
    char other[65];
    CHECK(lb_sha256_hex("two", 3, other) == LB_OK);
    CHECK(lb_store_session_get(s, other, now, &got) == LB_E_NOTFOUND);
    CHECK(lb_store_session_get(s, "not-a-hash", now, &got) == LB_E_INVAL);
    /* a user keeps the newest three */
    char ids[5][8];
    for (int i = 0; i < 5; i++) {
        snprintf(ids[i], sizeof ids[i], "s%d", i);
        session(&se, ids[i], "bob", now + 1 + i, 60000);
        CHECK(lb_store_session_add(s, &se, 3) == LB_OK);
    }
    int alive = 0;
    for (int i = 0; i < 5; i++) {
        session(&se, ids[i], "bob", 0, 0);
        alive += lb_store_session_get(s, se.id_sha256, now, &got) == LB_OK;
        if (i >= 2)
            CHECK(lb_store_session_get(s, se.id_sha256, now, &got) == LB_OK);
    }
    CHECK(alive == 3);
    session(&se, "one", "alice", 0, 0);
    CHECK(lb_store_session_get(s, se.id_sha256, now, &got) == LB_OK); /* alice's is not bob's */
    CHECK(lb_store_session_delete(s, se.id_sha256) == LB_OK);
    CHECK(lb_store_session_get(s, se.id_sha256, now, &got) == LB_E_NOTFOUND);
    /* an expired session is dropped at the next login */
    session(&se, "old", "carol", now - 120000, 60000);
    CHECK(lb_store_session_add(s, &se, 0) == LB_OK);
    session(&se, "new", "carol", now, 60000);
    CHECK(lb_store_session_add(s, &se, 0) == LB_OK);
    session(&se, "old", "carol", 0, 0);
    CHECK(lb_store_session_get(s, se.id_sha256, 0, &got) == LB_E_NOTFOUND);
    lb_store_close(s);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(conf, sizeof conf, "%s/llmbox.conf", dir);
    unsetenv("LLMBOX_LISTEN");
    unsetenv("LLMBOX_LLM_URL");
    unsetenv("OPENAI_BASE_URL");
    CHECK(lb_sha256_hex("alice-token", 11, ha) == LB_OK);
    CHECK(lb_sha256_hex("bob-token", 9, hb) == LB_OK);
    CHECK(lb_sha256_hex("carol-token", 11, hc) == LB_OK);
    RUN(sha256_and_hmac_known_vectors);
    RUN(new_tokens_are_random_and_prefixed);
    RUN(constant_time_compare_and_hash_shape);
    RUN(no_users_by_default);
    RUN(users_parse_with_defaults_and_overrides);
    RUN(user_mistakes_name_their_line);
    RUN(listen_beyond_loopback_needs_users);
    RUN(loopback_addresses);
    RUN(task_owners_lists_and_active_limit);
    RUN(sessions_expire_trim_and_delete);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return testlib_done();
}
