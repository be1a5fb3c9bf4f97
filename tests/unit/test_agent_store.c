/* `llmbox agent --task ID` in-process against the real task store, a
 * scripted fake model and a fake sandbox daemon (both python3 scripts in
 * tests/; the fake daemon runs commands on the host, without isolation).
 * Checks the events, their shapes, the artifact index and the files. */
#include "testlib.h"

#include "common/config.h"
#include "common/status.h"
#include "common/util.h"
#include "entry.h"
#include "store/store.h"
#include "web/task_json.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char T[64];
static pid_t model_pid = -1, sbd_pid = -1;
static int model_port;
static const char *task_id = "0123456789abcdef0123456789abcdef";

/* Starts a python3 script with stdout to a file; returns its pid. */
static pid_t spawn_py(char *const argv[], const char *out)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    if (posix_spawnp(&pid, "python3", &fa, NULL, argv, environ) != 0)
        pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

static int wait_for_line(const char *path, const char *prefix, char *line, size_t sz)
{
    for (int i = 0; i < 100; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            int ok = fgets(line, (int)sz, f) && !strncmp(line, prefix, strlen(prefix));
            fclose(f);
            if (ok)
                return 0;
        }
        usleep(50000);
    }
    return -1;
}

static const char scenario[] =
    "[{\"content\":\"Start.\",\"reasoning_content\":\"plan\",\"tool_calls\":["
    "{\"name\":\"bash\",\"arguments\":{\"command\":\"cat input/in.txt; echo warn >&2; exit 2\"}}]},"
    "{\"tool_calls\":[{\"name\":\"file_editor\",\"arguments\":{\"command\":\"create\","
    "\"path\":\"/testbed/output/page.html\",\"file_text\":\"<h1>hi</h1>\\n\"}}]},"
    "{\"tool_calls\":[{\"name\":\"bash\",\"arguments\":{\"command\":\"echo 42 > output/answer.txt\"}},"
    "{\"name\":\"finish\",\"arguments\":{\"answer\":\"ignored: answer.txt exists\"}}]}]";

static int setup(void)
{
    snprintf(T, sizeof T, "/tmp/lb-agent-store-XXXXXX");
    if (!mkdtemp(T))
        return -1;
    char p[1024], q[1200], line[64];
    snprintf(p, sizeof p, "%s/scenario.json", T);
    if (lb_write_file_atomic(p, scenario, strlen(scenario), 0644))
        return -1;
    snprintf(q, sizeof q, "%s/model.out", T);
    char logdir[256];
    snprintf(logdir, sizeof logdir, "%s/requests", T);
    char *margv[] = {"python3", "tests/fake_model.py", "--scenario", p, "--log-dir", logdir, NULL};
    model_pid = spawn_py(margv, q);
    if (model_pid < 0 || wait_for_line(q, "PORT ", line, sizeof line))
        return -1;
    model_port = atoi(line + 5);

    char sock[256], root[256], sbout[256];
    snprintf(sock, sizeof sock, "%s/sandboxd.sock", T);
    snprintf(root, sizeof root, "%s/sandboxes", T);
    snprintf(sbout, sizeof sbout, "%s/sbd.out", T);
    char *sargv[] = {"python3", "tests/fake_sandboxd.py", "--socket", sock, "--root", root, NULL};
    sbd_pid = spawn_py(sargv, sbout);
    if (sbd_pid < 0 || wait_for_line(sbout, "READY", line, sizeof line))
        return -1;

    char url[128], db[256], arts[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", model_port);
    snprintf(db, sizeof db, "%s/llmbox.db", T);
    snprintf(arts, sizeof arts, "%s/artifacts", T);
    setenv("LLMBOX_LLM_URL", url, 1);
    setenv("LLMBOX_DB", db, 1);
    setenv("LLMBOX_ARTIFACTS", arts, 1);
    setenv("LLMBOX_SANDBOXD_SOCKET", sock, 1);
    /* one round, as before follow-ups: the fake daemon has no leases, saved
     * states or freezer (tests/integration/test_followups.py covers them) */
    setenv("LLMBOX_FOLLOWUP_KEEP_S", "0", 1);
    if (lb_config_load(lb_cfg_mut()))
        return -1;

    /* the task and its uploaded input, as the web backend leaves them */
    lb_store *st;
    if (lb_store_open(db, &st))
        return -1;
    lb_task_new t = {.id = task_id, .prompt = "Read the input and answer.", .model = "", .max_turns = 10,
                     .inputs_json = "[{\"path\":\"in.txt\",\"size\":6}]"};
    int rc = lb_store_task_insert(st, &t);
    lb_store_close(st);
    if (rc)
        return -1;
    snprintf(p, sizeof p, "%s/%s/input", arts, task_id);
    LB_IGNORE(lb_mkdirs(p, 0755)); /* a missing dir fails the write just below */
    snprintf(q, sizeof q, "%s/in.txt", p);
    return lb_write_file_atomic(q, "input\n", 6, 0644) ? -1 : 0;
}

static void teardown(void)
{
    if (model_pid > 0)
        kill(model_pid, SIGTERM);
    if (sbd_pid > 0)
        kill(sbd_pid, SIGTERM);
    if (model_pid > 0)
        waitpid(model_pid, NULL, 0);
    if (sbd_pid > 0)
        waitpid(sbd_pid, NULL, 0);
    if (T[0])
        LB_IGNORE(lb_rmtree(T)); /* cleanup of a scratch dir */
}

typedef struct evlist {
    int n;
    char type[64][16];
    cJSON *data[64];
} evlist;

static int collect(void *arg, int64_t seq, int64_t ts, const char *type, const char *data)
{
    (void)seq, (void)ts;
    evlist *e = arg;
    if (e->n < 64) {
        snprintf(e->type[e->n], sizeof e->type[0], "%s", type);
        e->data[e->n] = cJSON_Parse(data);
        e->n++;
    }
    return 0;
}

static const char *js(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static evlist EV;
static cJSON *TASK, *ARTS;

TEST(agent_runs_task)
{
    char *argv[] = {"agent", "--task", (char *)task_id, NULL};
    CHECK(lb_agent_main(3, argv) == 0);
    lb_store *st;
    CHECK(lb_store_open(lb_cfg()->db_path, &st) == LB_OK);
    CHECK(lb_store_task_get(st, task_id, &TASK) == LB_OK);
    CHECK(lb_store_events_after(st, task_id, 0, 1000, collect, &EV) == LB_OK);
    CHECK(lb_task_artifacts_json(st, task_id, &ARTS) == LB_OK);
    lb_store_close(st);
    CHECK_STR(js(TASK, "status"), "succeeded");
}

TEST(answer_from_answer_txt)
{
    CHECK(TASK && js(TASK, "answer") && !strcmp(js(TASK, "answer"), "42\n"));
}

TEST(event_sequence)
{
    /* "running", then "running" with the sandbox ready (the page's "starting
     * the sandbox" ends there) */
    const char *want[] = {"status", "status", "model", "tool", "model", "tool", "model", "tool", "tool",
                          "artifacts", "answer", "done"};
    CHECK(EV.n == (int)(sizeof want / sizeof want[0]));
    for (int i = 0; i < EV.n && i < (int)(sizeof want / sizeof want[0]); i++)
        CHECK_STR(EV.type[i], want[i]);
    CHECK_STR(js(EV.data[0], "status"), "running");
    CHECK_STR(js(EV.data[1], "sandbox"), "ready");
}

TEST(model_event_shape)
{
    const cJSON *m = EV.data[2];
    CHECK(cJSON_GetObjectItem(m, "turn")->valueint == 1);
    CHECK_STR(js(m, "content"), "Start.");
    CHECK_STR(js(m, "reasoning"), "plan");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "tool_calls"), 0);
    CHECK_STR(js(c, "name"), "bash");
    CHECK(js(c, "id") && js(c, "arguments"));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "usage"), "prompt_tokens")));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(m, "duration_ms")));
}

TEST(tool_event_shape)
{
    const cJSON *t = EV.data[3];
    CHECK(cJSON_GetObjectItem(t, "turn")->valueint == 1);
    CHECK_STR(js(t, "name"), "bash");
    CHECK_STR(js(t, "status"), "exit 2");
    CHECK(cJSON_GetObjectItem(t, "exit_code") && cJSON_GetObjectItem(t, "exit_code")->valueint == 2);
    CHECK_STR(js(t, "stdout"), "input\n");
    CHECK_STR(js(t, "stderr"), "warn\n");
    CHECK(js(t, "call_id") && js(t, "arguments"));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(t, "duration_ms")));
    const cJSON *fe = EV.data[5];
    CHECK_STR(js(fe, "name"), "file_editor");
    CHECK(js(fe, "text") && strstr(js(fe, "text"), "File created successfully"));
    CHECK(cJSON_GetObjectItem(fe, "exit_code") == NULL);
}

TEST(artifact_index_and_files)
{
    CHECK(cJSON_GetArraySize(ARTS) == 2);
    const cJSON *a0 = cJSON_GetArrayItem(ARTS, 0), *a1 = cJSON_GetArrayItem(ARTS, 1);
    CHECK_STR(js(a0, "path"), "answer.txt");
    CHECK_STR(js(a1, "path"), "page.html");
    CHECK(js(a1, "mime") && strstr(js(a1, "mime"), "html"));
    CHECK(js(a0, "sha256") && strlen(js(a0, "sha256")) == 64);
    char p[2048];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s/output/page.html", lb_cfg()->artifacts_dir, task_id);
    CHECK(stat(p, &sb) == 0 && sb.st_size == 12);
    snprintf(p, sizeof p, "%s/%s/trajectory.json", lb_cfg()->artifacts_dir, task_id);
    char *traj = NULL;
    CHECK(lb_read_file(p, 1 << 24, &traj, NULL) == LB_OK);
    cJSON *tj = cJSON_Parse(traj);
    CHECK_STR(js(tj, "status"), "succeeded");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(tj, "turns")) == 3);
    cJSON_Delete(tj);
    free(traj);
    const cJSON *ae = EV.data[9];
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(ae, "artifacts")) == 2);
}

TEST(usage_recorded)
{
    const cJSON *u = cJSON_GetObjectItem(TASK, "usage");
    CHECK(cJSON_GetObjectItem(TASK, "turns") && cJSON_GetObjectItem(TASK, "turns")->valueint == 3);
    CHECK(u && cJSON_GetObjectItem(u, "prompt_tokens")->valuedouble == 600);
}

TEST(final_task_not_rerun)
{
    char *argv[] = {"agent", "--task", (char *)task_id, NULL};
    CHECK(lb_agent_main(3, argv) != 0);
}

int main(void)
{
    if (access("tests/fake_model.py", R_OK) || system("python3 -c 'import http.server' 2>/dev/null")) {
        printf("PASS agent_store_skipped_without_python3\n");
        return 0;
    }
    if (setup()) {
        printf("FAIL setup: could not start the fake model or sandbox daemon\n");
        teardown();
        return 1;
    }
    RUN(agent_runs_task);
    RUN(answer_from_answer_txt);
    RUN(event_sequence);
    RUN(model_event_shape);
    RUN(tool_event_shape);
    RUN(artifact_index_and_files);
    RUN(usage_recorded);
    RUN(final_task_not_rerun);
    for (int i = 0; i < EV.n; i++)
        cJSON_Delete(EV.data[i]);
    cJSON_Delete(TASK);
    cJSON_Delete(ARTS);
    teardown();
    return testlib_done();
}
