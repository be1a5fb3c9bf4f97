/* The sandbox API's request validation and exec line (server/sbxapi/sandbox_spec.c). */
#include "testlib.h"

#include "common/config.h"
#include "common/status.h"
#include "sbxapi/sandbox_spec.h"

#include <stdlib.h>
#include <string.h>

static lb_config cfg;

static void setup_cfg(void)
{
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.default_image, sizeof cfg.default_image, "default");
    cfg.sandbox_api_ttl_s = 3600;
    cfg.sandbox_api_ttl_max_s = 86400;
    cfg.sandbox_api_exec_max_s = 1800;
    cfg.cmd_timeout_s = 120;
    cfg.sandbox_memory_mib = 2048;
    cfg.sandbox_pids = 512;
}

static char *quoted(const char *s)
{
    static char out[256];
    lb_buf b;
    lb_buf_init(&b, 1024);
    out[0] = '\0';
    if (lb_sh_quote(&b, s) == LB_OK)
        snprintf(out, sizeof out, "%s", b.data);
    lb_buf_free(&b);
    return out;
}

TEST(sh_quote)
{
    CHECK_STR(quoted(""), "''");
    CHECK_STR(quoted("plain"), "'plain'");
    CHECK_STR(quoted("it's"), "'it'\\''s'");
    CHECK_STR(quoted("''"), "''\\'''\\'''");
    CHECK_STR(quoted("$(x) `y` \\ \"z\"\n"), "'$(x) `y` \\ \"z\"\n'");
}

static const char *spath(const char *in, const char *base, int allow_root)
{
    static char out[LB_SBX_SPATH_MAX];
    if (lb_sbx_path(in, strlen(in), base, allow_root, out, sizeof out) != LB_OK)
        return "ERR";
    return out;
}

TEST(sandbox_paths)
{
    CHECK_STR(spath("/testbed/a.txt", NULL, 0), "/testbed/a.txt");
    CHECK_STR(spath("//testbed//./a.txt/", NULL, 0), "/testbed/a.txt");
    CHECK_STR(spath("a/b", "/work", 0), "/work/a/b");
    CHECK_STR(spath("a", "/", 0), "/a");
    CHECK_STR(spath("/", NULL, 1), "/");
    CHECK_STR(spath("/./", NULL, 1), "/");
    CHECK_STR(spath("/", NULL, 0), "ERR");
    CHECK_STR(spath("a", NULL, 0), "ERR");          /* relative without a base */
    CHECK_STR(spath("/a/../b", NULL, 0), "ERR");
    CHECK_STR(spath("..", "/work", 0), "ERR");
    CHECK_STR(spath("/a/..", NULL, 1), "ERR");
    CHECK_STR(spath("/a\\b", NULL, 0), "ERR");
    CHECK_STR(spath("/a\nb", NULL, 0), "ERR");
    CHECK_STR(spath("/\xff", NULL, 0), "ERR");
    char nul[] = "/etc/passwd\0.txt";
    char out[LB_SBX_SPATH_MAX];
    CHECK(lb_sbx_path(nul, sizeof nul - 1, NULL, 0, out, sizeof out) == LB_E_INVAL);
    char longp[1200];
    memset(longp, 'a', sizeof longp);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    CHECK_STR(spath(longp, NULL, 0), "ERR");
}

TEST(env_names)
{
    CHECK(lb_sbx_env_name_ok("PATH"));
    CHECK(lb_sbx_env_name_ok("_x1"));
    CHECK(!lb_sbx_env_name_ok(""));
    CHECK(!lb_sbx_env_name_ok("1A"));
    CHECK(!lb_sbx_env_name_ok("A-B"));
    CHECK(!lb_sbx_env_name_ok("A B"));
    CHECK(!lb_sbx_env_name_ok("A=B"));
    CHECK(!lb_sbx_env_name_ok("A'"));
}

static int b64(const char *in, const char *want, size_t wantlen)
{
    char *out = NULL;
    size_t n = 0;
    int rc = lb_base64_decode(in, strlen(in), 1 << 20, &out, &n);
    int ok = rc == LB_OK && n == wantlen && !memcmp(out, want, n);
    free(out);
    return ok;
}

TEST(base64)
{
    CHECK(b64("", "", 0));
    CHECK(b64("aGk=", "hi", 2));
    CHECK(b64("aGk", "hi", 2));
    CHECK(b64("aGVs\nbG8=", "hello", 5));
    CHECK(b64("AP8=", "\x00\xff", 2));
    char *out;
    size_t n;
    CHECK(lb_base64_decode("a", 1, 100, &out, &n) == LB_E_INVAL);
    CHECK(lb_base64_decode("aGk=x", 5, 100, &out, &n) == LB_E_INVAL);
    CHECK(lb_base64_decode("a!==", 4, 100, &out, &n) == LB_E_INVAL);
    CHECK(lb_base64_decode("aGVsbG8=", 8, 3, &out, &n) == LB_E_TOOBIG);
    CHECK(lb_base64_decode("aGl=", 4, 100, &out, &n) == LB_E_INVAL); /* non-zero trailing bits */
}

static int parse_spec_as(const char *json, const lb_user_cfg *user, lb_sbx_spec *sp, char *msg, size_t msgsz)
{
    cJSON *j = cJSON_Parse(json);
    int rc = lb_sbx_spec_parse(j, &cfg, user, sp, msg, msgsz);
    /* the spec may point into j: these tests only look at copied fields */
    for (size_t i = 0; i < sp->nfiles; i++)
        if (!sp->files[i].owned)
            sp->files[i].data = NULL;
    cJSON_Delete(j);
    return rc;
}

static int parse_spec(const char *json, lb_sbx_spec *sp, char *msg, size_t msgsz)
{
    return parse_spec_as(json, NULL, sp, msg, msgsz);
}

/* A user's own network_egress_max and network_max_mb hold at create, as
 * they do for tasks and network updates: within the service's ceiling, a
 * user with a narrower one gets a 403 naming the rule or the setting. */
TEST(spec_network_within_the_users_ceiling)
{
    char saved[sizeof cfg.network_egress_max];
    uint64_t saved_bytes = cfg.network_max_bytes;
    snprintf(saved, sizeof saved, "%s", cfg.network_egress_max);
    snprintf(cfg.network_egress_max, sizeof cfg.network_egress_max, "*");
    cfg.network_max_bytes = 0;
    lb_user_cfg alice;
    memset(&alice, 0, sizeof alice);
    snprintf(alice.name, sizeof alice.name, "alice");
    snprintf(alice.network_egress_max, sizeof alice.network_egress_max, "pypi.org");
    alice.network_max_bytes = 1 << 20;
    lb_sbx_spec sp;
    char msg[512];
    const char *wide = "{\"network\":{\"allow\":[\"example.com\"]}}";
    CHECK(parse_spec_as(wide, NULL, &sp, msg, sizeof msg) == LB_OK); /* the shared token: the service's */
    lb_sbx_spec_free(&sp);
    CHECK(parse_spec_as(wide, &alice, &sp, msg, sizeof msg) == LB_E_DENIED && strstr(msg, "example.com"));
    lb_sbx_spec_free(&sp);
    CHECK(parse_spec_as("{\"network\":{\"allow\":[\"pypi.org\"]}}", &alice, &sp, msg, sizeof msg) == LB_OK);
    CHECK(sp.network_policy && strstr(sp.network_policy, "1048576")); /* her allowance travels to the gateway */
    lb_sbx_spec_free(&sp);
    CHECK(parse_spec_as("{\"network\":{\"allow\":[\"pypi.org\"],\"max_bytes\":2097152}}", &alice, &sp, msg,
                        sizeof msg) == LB_E_DENIED);
    lb_sbx_spec_free(&sp);
    snprintf(cfg.network_egress_max, sizeof cfg.network_egress_max, "%s", saved);
    cfg.network_max_bytes = saved_bytes;
}

TEST(spec_defaults_and_echo)
{
    setup_cfg();
    lb_sbx_spec sp;
    char msg[600];
    CHECK(parse_spec("{}", &sp, msg, sizeof msg) == LB_OK);
    CHECK_STR(sp.image, "default");
    CHECK(sp.ttl_s == 3600 && sp.memory_mib == 2048 && sp.pids == 512 && sp.cpu_milli == 0);
    CHECK_STR(sp.workdir, "/testbed");
    CHECK(!sp.workdir_given && sp.env && !sp.env->child && !sp.metadata && sp.nfiles == 0);
    cJSON *e = lb_sbx_spec_echo(&sp);
    char *t = cJSON_PrintUnformatted(e);
    CHECK_STR(t, "{\"image\":\"default\",\"ttl_s\":3600,\"workdir\":\"/testbed\",\"env\":{},\"files\":[],"
                 "\"resources\":{\"cpu\":null,\"memory_mib\":2048,\"disk_mib\":null,\"pids\":512},\"network\":\"none\"}");
    free(t);
    cJSON_Delete(e);
    lb_sbx_spec_free(&sp);
}

TEST(spec_full)
{
    setup_cfg();
    lb_sbx_spec sp;
    char msg[600] = "";
    int rc = parse_spec("{\"image\":\"py\",\"ttl_s\":60,\"workdir\":\"/w/./x/\",\"env\":{\"A\":\"1\"},"
                        "\"files\":[{\"path\":\"m.py\",\"content\":\"x\"},{\"path\":\"/b\",\"content_base64\":\"AP8=\","
                        "\"mode\":\"755\"},{\"path\":\"c\",\"content\":\"\",\"mode\":420}],"
                        "\"resources\":{\"cpu\":0.5,\"memory_mib\":256,\"disk_mib\":100,\"pids\":64},"
                        "\"network\":\"nat\",\"metadata\":{\"k\":[1,2]}}", &sp, msg, sizeof msg);
    CHECK(rc == LB_OK);
    CHECK_STR(sp.image, "py");
    CHECK(sp.ttl_s == 60 && sp.cpu_milli == 500 && sp.memory_mib == 256 && sp.disk_mib == 100 && sp.pids == 64);
    CHECK_STR(sp.workdir, "/w/x");
    CHECK(sp.workdir_given);
    CHECK_STR(sp.network, "nat");
    CHECK(sp.nfiles == 3);
    CHECK_STR(sp.files[0].path, "/w/x/m.py");
    CHECK_STR(sp.files[1].path, "/b");
    CHECK(sp.files[1].len == 2 && sp.files[1].mode == 0755 && !memcmp(sp.files[1].owned, "\x00\xff", 2));
    CHECK(sp.files[0].mode == -1 && sp.files[2].mode == 0644);
    CHECK(sp.metadata && cJSON_IsArray(cJSON_GetObjectItem(sp.metadata, "k")));
    lb_sbx_spec_free(&sp);
}

static int spec_rc(const char *json)
{
    lb_sbx_spec sp;
    char msg[600] = "";
    int rc = parse_spec(json, &sp, msg, sizeof msg);
    if (rc != LB_OK && !msg[0])
        rc = -1; /* every refusal says why */
    lb_sbx_spec_free(&sp);
    return rc;
}

TEST(spec_refusals)
{
    setup_cfg();
    CHECK(spec_rc("[]") == LB_E_INVAL);
    CHECK(spec_rc("{\"ttl\":5}") == LB_E_INVAL);
    CHECK(spec_rc("{\"ttl_s\":0}") == LB_E_INVAL);
    CHECK(spec_rc("{\"ttl_s\":86401}") == LB_E_INVAL);
    CHECK(spec_rc("{\"ttl_s\":1.5}") == LB_E_INVAL);
    CHECK(spec_rc("{\"ttl_s\":86400}") == LB_OK);
    CHECK(spec_rc("{\"image\":\"A\"}") == LB_E_INVAL);
    CHECK(spec_rc("{\"workdir\":\"rel\"}") == LB_E_INVAL);
    CHECK(spec_rc("{\"workdir\":\"/a/../b\"}") == LB_E_INVAL);
    CHECK(spec_rc("{\"env\":{\"A B\":\"x\"}}") == LB_E_INVAL);
    CHECK(spec_rc("{\"env\":{\"A\":null}}") == LB_E_INVAL);
    CHECK(spec_rc("{\"network\":\"host\"}") == LB_E_INVAL);
    CHECK(spec_rc("{\"resources\":{\"cpu\":0.001}}") == LB_E_INVAL);
    CHECK(spec_rc("{\"resources\":{\"cpu\":\"1\"}}") == LB_E_INVAL);
    CHECK(spec_rc("{\"resources\":{\"memory\":1}}") == LB_E_INVAL);
    CHECK(spec_rc("{\"metadata\":[1]}") == LB_E_INVAL);
    CHECK(spec_rc("{\"files\":{}}") == LB_E_INVAL);
    CHECK(spec_rc("{\"files\":[{\"path\":\"a\"}]}") == LB_E_INVAL);
    CHECK(spec_rc("{\"files\":[{\"path\":\"../a\",\"content\":\"\"}]}") == LB_E_INVAL);
    CHECK(spec_rc("{\"files\":[{\"path\":\"/\",\"content\":\"\"}]}") == LB_E_INVAL);
    CHECK(spec_rc("{\"files\":[{\"path\":\"a\",\"content\":\"\",\"mode\":\"4755\"}]}") == LB_E_INVAL);
    CHECK(spec_rc("{\"files\":[{\"path\":\"a\",\"content\":\"\",\"mode\":512}]}") == LB_E_INVAL);
    CHECK(spec_rc("{\"files\":[{\"path\":\"a\",\"content\":\"\",\"owner\":0}]}") == LB_E_INVAL);
    char big[6000];
    snprintf(big, sizeof big, "{\"metadata\":{\"k\":\"%05000d\"}}", 0);
    CHECK(spec_rc(big) == LB_E_TOOBIG);
}

/* The operator's caps on memory_mib and pids: refused with a message that
 * names the cap and its setting (the API answers 400 with it). */
TEST(spec_operator_caps)
{
    setup_cfg();
    cfg.sandbox_max_memory_mib = 4096;
    cfg.sandbox_max_pids = 1000;
    CHECK(spec_rc("{\"resources\":{\"memory_mib\":4096,\"pids\":1000}}") == LB_OK);
    char msg[512] = "";
    lb_sbx_spec sp;
    const char *big_mem = "{\"resources\":{\"memory_mib\":1048576}}";
    CHECK(parse_spec(big_mem, &sp, msg, sizeof msg) == LB_E_INVAL);
    lb_sbx_spec_free(&sp);
    CHECK(strstr(msg, "4096 MiB") && strstr(msg, "sandbox_max_memory_mib"));
    const char *big_pids = "{\"resources\":{\"pids\":4194304}}";
    CHECK(parse_spec(big_pids, &sp, msg, sizeof msg) == LB_E_INVAL);
    lb_sbx_spec_free(&sp);
    CHECK(strstr(msg, "1000") && strstr(msg, "sandbox_max_pids"));
}

TEST(exec_parse)
{
    setup_cfg();
    lb_sbx_exec_req er;
    char msg[600];
    cJSON *j = cJSON_Parse("{\"command\":\"ls\"}");
    CHECK(lb_sbx_exec_parse(j, &cfg, "/work", &er, msg, sizeof msg) == LB_OK);
    CHECK(er.timeout_ms == 120000 && !er.has_stdin && !er.env);
    CHECK_STR(er.cwd, "/work");
    cJSON_Delete(j);
    j = cJSON_Parse("{\"command\":\"ls\",\"timeout_s\":0.0015,\"cwd\":\"sub/dir\",\"stdin\":\"\",\"env\":{}}");
    CHECK(lb_sbx_exec_parse(j, &cfg, "/work", &er, msg, sizeof msg) == LB_OK);
    CHECK(er.timeout_ms == 2 && er.has_stdin && er.stdin_len == 0);
    CHECK_STR(er.cwd, "/work/sub/dir");
    cJSON_Delete(j);
    const char *bad[] = {"{}", "{\"command\":\"\"}", "{\"command\":1}", "{\"command\":\"x\",\"timeout_s\":1801}",
                         "{\"command\":\"x\",\"timeout_s\":-1}", "{\"command\":\"x\",\"stdin\":5}",
                         "{\"command\":\"x\",\"cwd\":\"../x\"}", "{\"command\":\"x\",\"env\":{\"$\":\"\"}}",
                         "{\"command\":\"x\",\"user\":\"root\"}", NULL};
    for (int i = 0; bad[i]; i++) {
        j = cJSON_Parse(bad[i]);
        msg[0] = '\0';
        CHECK(lb_sbx_exec_parse(j, &cfg, "/work", &er, msg, sizeof msg) != LB_OK && msg[0]);
        cJSON_Delete(j);
    }
}

TEST(exec_line)
{
    setup_cfg();
    lb_sbx_exec_req er;
    char msg[600];
    cJSON *j = cJSON_Parse("{\"command\":\"echo \\\"$A\\\" it's\",\"cwd\":\"/tmp/o'k\",\"env\":{\"B\":\"x'y\",\"A\":\"2\"}}");
    cJSON *base = cJSON_Parse("{\"A\":\"1\",\"C\":\"$(no)\"}");
    CHECK(lb_sbx_exec_parse(j, &cfg, "/testbed", &er, msg, sizeof msg) == LB_OK);
    lb_buf line;
    CHECK(lb_sbx_exec_line(&er, base, "/tmp/.in", &line) == LB_OK);
    CHECK_STR(line.data, "( rm -f -- '/tmp/.in'; cd -- '/tmp/o'\\''k' && export 'A=1' 'C=$(no)' 'B=x'\\''y' 'A=2' "
                         "&& eval 'echo \"$A\" it'\\''s' ) < '/tmp/.in'");
    lb_buf_free(&line);
    CHECK(lb_sbx_exec_line(&er, NULL, NULL, &line) == LB_OK);
    CHECK_STR(line.data, "( cd -- '/tmp/o'\\''k' && export 'B=x'\\''y' 'A=2' && eval 'echo \"$A\" it'\\''s' ) < /dev/null");
    lb_buf_free(&line);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"command\":\"true\"}");
    CHECK(lb_sbx_exec_parse(j, &cfg, "/", &er, msg, sizeof msg) == LB_OK);
    CHECK(lb_sbx_exec_line_sub(&er, NULL, NULL, &line) == LB_OK);
    CHECK_STR(line.data, "( cd -- '/' && eval 'true' ) < /dev/null");
    lb_buf_free(&line);
    /* one plain command: a call of the helper in the persistent shell, no
     * subshell; the subshell line when the shell lacks the helper */
    CHECK(lb_sbx_exec_line(&er, NULL, NULL, &line) == LB_OK);
    CHECK_STR(line.data, "__llmbox_exec '/' true");
    CHECK(strncmp(lb_sbx_exec_helper(), "__llmbox_exec() { ", 18) == 0);
    /* the shell without the helper: only bash's own answer counts */
    const char *nf = "bash: line 1: __llmbox_exec: command not found\n";
    CHECK(lb_sbx_exec_fast_missing(127, "", 0, nf, strlen(nf)));
    CHECK(!lb_sbx_exec_fast_missing(1, "", 0, nf, strlen(nf)));
    CHECK(!lb_sbx_exec_fast_missing(127, "x", 1, nf, strlen(nf)));
    CHECK(!lb_sbx_exec_fast_missing(127, "", 0, "bash: true: command not found\n", 30));
    lb_buf_free(&line);
    cJSON_Delete(j);
    /* which commands take the fast form: plain words, no builtin that can
     * change the shell, no assignment, no stdin */
    const struct {
        const char *cmd;
        int fast;
    } forms[] = {{"ls -l /nope", 1},  {"python3 main.py --n=3", 1}, {"./run.sh a,b", 1}, {"echo hi", 1},
                 {"pwd", 1},          {"cd /etc", 0},               {"export A=1", 0},    {"exit 3", 0},
                 {"exec ls", 0},      {"set -e", 0},                {"A=1 ls", 0},        {"echo $HOME", 0},
                 {"ls; cd /", 0},     {"ls | wc", 0},               {"ls > x", 0},        {"echo 'a'", 0},
                 {"printf x", 0},     {"source x", 0},              {". x", 0},           {"ulimit -n 1", 0},
                 {"time ls", 0},      {"ls *", 0},                  {"read x", 0},        {"ls\nls", 0},
                 {"   ", 0},          {"-v ls", 0},                 {"%1", 0},            {"ls 50%", 1},
                 {"__llmbox_exec x", 0}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        er.command = forms[i].cmd;
        CHECK(lb_sbx_exec_line(&er, NULL, NULL, &line) == LB_OK);
        CHECK((strncmp(line.data, "__llmbox_exec ", 14) == 0) == forms[i].fast);
        lb_buf_free(&line);
    }
    er.command = "ls";
    CHECK(lb_sbx_exec_line(&er, NULL, "/tmp/.in", &line) == LB_OK);
    CHECK(strncmp(line.data, "( rm -f", 7) == 0);
    lb_buf_free(&line);
    cJSON *envj = cJSON_Parse("{\"A\":\"it's\"}");
    CHECK(lb_sbx_exec_line(&er, envj, NULL, &line) == LB_OK);
    CHECK_STR(line.data, "A='it'\\''s' __llmbox_exec '/' ls");
    lb_buf_free(&line);
    cJSON_Delete(envj);
    /* a command of quotes only grows fourfold: over the line cap it is refused */
    char *q = malloc(LB_SBX_COMMAND_MAX + 1);
    memset(q, '\'', LB_SBX_COMMAND_MAX);
    q[LB_SBX_COMMAND_MAX] = '\0';
    er.command = q;
    CHECK(lb_sbx_exec_line(&er, NULL, NULL, &line) == LB_E_TOOBIG);
    free(q);
    cJSON_Delete(base);
}

int main(void)
{
    RUN(sh_quote);
    RUN(sandbox_paths);
    RUN(env_names);
    RUN(base64);
    RUN(spec_defaults_and_echo);
    RUN(spec_network_within_the_users_ceiling);
    RUN(spec_full);
    RUN(spec_refusals);
    RUN(spec_operator_caps);
    RUN(exec_parse);
    RUN(exec_line);
    return testlib_done();
}
