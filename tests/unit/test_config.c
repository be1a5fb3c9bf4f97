/* llmbox.conf and the environment: values, precedence, named models, and
 * an error naming file:line for every kind of mistake. */
#include "testlib.h"
#include "conf_file.h"

#include "common/config.h"
#include "common/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>


/* Every variable these tests touch, cleared between cases. */
static const char *const vars[] = {
    "LLMBOX_CONF", "LLMBOX_MAX_TURNS", "LLMBOX_LLM_URL", "OPENAI_BASE_URL", "LLMBOX_LLM_MODEL",
    "LLMBOX_LLM_PROVIDER", "LLMBOX_LLM_KEY", "OPENAI_API_KEY", "LLMBOX_TOOLS", "LLMBOX_TOKEN_BUDGET",
    "LLMBOX_DEFAULT_MODEL", "QWEN_TEST_KEY", "LLMBOX_LLM_EXTRA_BODY", "LLMBOX_REPLAY_FILE", "LLMBOX_POOL_IMAGES", "LLMBOX_IMAGE",
    "LLMBOX_SANDBOX_API_TOKEN", "LLMBOX_SANDBOX_API_TTL_S", "LLMBOX_SANDBOX_API_TTL_MAX_S",
    "LLMBOX_SANDBOX_UID_BASE", "LLMBOX_ALLOWED_HOSTS",
    "LLMBOX_S3_BUCKET", "LLMBOX_S3_SECRET_KEY", "LLMBOX_S3_RETRIES", /* several nodes */
    "LLMBOX_TASK_RUNNER", "LLMBOX_NODE_NAME", "LLMBOX_NODE_LEASE_S", /* several nodes: nodes */
    "LLMBOX_RUNNER_LEASE_S", NULL, /* several nodes: the runners' claims */
};

static void clean_env(void)
{
    for (int i = 0; vars[i]; i++)
        unsetenv(vars[i]);
}

TEST(defaults_without_a_file)
{
    clean_env();
    setenv("LLMBOX_CONF", "/dev/null", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
    const lb_config *c = lb_cfg();
    CHECK(c->max_turns_default == 100 && c->task_timeout_s == 3600 && c->tool_timeout_s == 60);
    CHECK(c->task_deadline_grace_s == 30);
    CHECK(c->token_budget == 65536);
    CHECK(c->n_models == 1);
    const lb_model_cfg *m = lb_cfg_model(c, NULL);
    CHECK(m && !strcmp(m->name, "default") && !strcmp(m->provider, "openai"));
    CHECK(m && !strcmp(m->base_url, "http://127.0.0.1:8000/v1") && !strcmp(m->model, "default"));
    CHECK(m && !strcmp(m->api_key_env, "OPENAI_API_KEY") && isnan(m->temperature) && m->top_k == -1);
    CHECK(lb_cfg_tool_enabled(c, "bash") && lb_cfg_tool_enabled(c, "file_editor") && lb_cfg_tool_enabled(c, "finish"));
    CHECK(!lb_cfg_tool_enabled(c, "python"));
}

TEST(file_values_env_wins)
{
    clean_env();
    CHECK(load("; comment\n"
               "# another\n"
               "max_turns = 50\n"
               "token_budget = 32000\n"
               "tools = bash python\n"
               "default_model = qwen\n"
               "\n"
               "[model \"qwen\"]\n"
               "base_url = http://127.0.0.1:8000/v1\n"
               "model = Qwen/Qwen3-Coder-30B-A3B-Instruct\n"
               "api_key_env = QWEN_TEST_KEY\n"
               "temperature = 0.7\n"
               "top_k = 20\n"
               "tool_mode = text\n"
               "timeout_s = 30\n"
               "retries = 5\n"
               "context_length = 32768\n"
               "extra_body = {\"chat_template_kwargs\":\n"
               "    {\"enable_thinking\": true}}\n"
               "[model.claude]\n"
               "provider = anthropic\n"
               "base_url = https://api.anthropic.com\n"
               "tool_names = official\n"
               "max_tokens = 2000\n") == LB_OK);
    const lb_config *c = lb_cfg();
    CHECK(c->max_turns_default == 50 && c->token_budget == 32000);
    CHECK(c->n_models == 2); /* no implicit "default": the file has models and no LLMBOX_LLM_* is set */
    const lb_model_cfg *q = lb_cfg_model(c, NULL);
    CHECK(q && !strcmp(q->name, "qwen") && !strcmp(q->model, "Qwen/Qwen3-Coder-30B-A3B-Instruct"));
    CHECK(q && q->temperature == 0.7 && q->top_k == 20 && q->tool_mode == LB_CFG_TOOLS_TEXT);
    CHECK(q && q->timeout_s == 30 && q->retries == 5 && q->context_length == 32768);
    CHECK(q && !strcmp(q->extra_body, "{\"chat_template_kwargs\": {\"enable_thinking\": true}}"));
    const lb_model_cfg *a = lb_cfg_model(c, "claude");
    CHECK(a && !strcmp(a->provider, "anthropic") && a->max_tokens == 2000 && !strcmp(a->model, "claude"));
    CHECK(a && a->tool_names == 1 && q && q->tool_names == 0); /* the official names; llmbox's by default */
    CHECK(lb_cfg_model(c, "default") == NULL);
    CHECK(lb_cfg_tool_enabled(c, "python") && lb_cfg_tool_enabled(c, "finish") && !lb_cfg_tool_enabled(c, "file_editor"));
    char names[100];
    lb_cfg_model_names(c, names, sizeof names);
    CHECK_STR(names, "qwen, claude");

    /* the key: read from the named variable, never kept */
    CHECK(lb_model_cfg_key(q) == NULL);
    setenv("QWEN_TEST_KEY", "sk-qwen-secret", 1);
    CHECK_STR(lb_model_cfg_key(q), "sk-qwen-secret");
    CHECK(memmem(c, sizeof *c, "sk-qwen-secret", 14) == NULL);

    /* the environment wins over the file */
    setenv("LLMBOX_MAX_TURNS", "7", 1);
    setenv("LLMBOX_TOOLS", "all", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
    CHECK(c->max_turns_default == 7 && c->tools_all && lb_cfg_tool_enabled(c, "anything"));
    /* LLMBOX_LLM_* add the model "default" next to the file's */
    setenv("LLMBOX_LLM_URL", "http://127.0.0.1:9/v1", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_OK);
    CHECK(c->n_models == 3 && lb_cfg_model(c, "default") && !strcmp(lb_cfg_model(c, NULL)->name, "qwen"));
    clean_env();
}

TEST(environment_overrides_model_default)
{
    clean_env();
    setenv("LLMBOX_LLM_MODEL", "from-env", 1);
    setenv("LLMBOX_LLM_KEY", "sk-env", 1);
    CHECK(load("[model \"default\"]\nbase_url = http://127.0.0.1:1/v1\nmodel = from-file\napi_key_env = QWEN_TEST_KEY\n"
               "temperature = 0.2\n") == LB_OK);
    const lb_model_cfg *d = lb_cfg_model(lb_cfg(), NULL);
    CHECK(d && !strcmp(d->model, "from-env") && !strcmp(d->base_url, "http://127.0.0.1:1/v1"));
    CHECK(d && d->temperature == 0.2 && !strcmp(d->api_key_env, "LLMBOX_LLM_KEY"));
    CHECK_STR(lb_model_cfg_key(d), "sk-env");
    clean_env();
}

TEST(errors_name_file_and_line)
{
    clean_env();
    CHECK(load("max_turns = 5\nmax_turnz = 5\n") == LB_E_INVAL);
    CHECK(error_is(2, "unknown key 'max_turnz'"));
    CHECK(load("\n\nmax_turns = 0\n") == LB_E_INVAL);
    CHECK(error_is(3, "max_turns = 0: must be a whole number from 1 to 1000"));
    CHECK(load("max_upload_mb = lots\n") == LB_E_INVAL);
    CHECK(error_is(1, "must be a whole number of MiB"));
    CHECK(load("max_turns = 5\nmax_turns = 6\n") == LB_E_INVAL);
    CHECK(error_is(2, "'max_turns' is set a second time (first on line 1)"));
    CHECK(load("[models]\nx = 1\n") == LB_E_INVAL);
    CHECK(error_is(2, "unknown section [models]"));
    CHECK(load("base_url = http://x/v1\n") == LB_E_INVAL);
    CHECK(error_is(1, "is a model setting: put it in a [model \"NAME\"] section"));
    CHECK(load("[model \"q\"]\nbase_url = http://x/v1\napi_key = sk-abc\n") == LB_E_INVAL);
    CHECK(error_is(3, "keys are never kept in llmbox.conf"));
    CHECK(strstr(lb_config_error(), "sk-abc") == NULL); /* a key put there by mistake is not echoed */
    CHECK(load("[model \"q\"]\nbase_url = http://x/v1\napi_key_env = sk-abc-def\n") == LB_E_INVAL);
    CHECK(error_is(3, "must be the NAME of an environment variable"));
    CHECK(load("[model \"q\"]\nbase_url = http://x/v1\ntemperature = 3\n") == LB_E_INVAL);
    CHECK(error_is(3, "temperature = 3: must be a number from 0 to 2"));
    CHECK(load("[model \"q\"]\nbase_url = http://x/v1\ncapture_tokens = maybe\n") == LB_E_INVAL);
    CHECK(error_is(3, "capture_tokens = maybe: must be true or false"));
    CHECK(load("[model \"q\"]\nbase_url = http://x/v1\ncapture_tokens = true\n") == LB_OK);
    CHECK(lb_cfg_model(lb_cfg(), "q")->capture_tokens == 1);
    CHECK(load("[model \"q\"]\nbase_url = http://x/v1\n") == LB_OK);
    CHECK(lb_cfg_model(lb_cfg(), "q")->capture_tokens == 0); /* off unless asked */
    CHECK(load("[model \"q\"]\nbase_url = http://x/v1\nprovider = gemini\n") == LB_E_INVAL);
    CHECK(error_is(3, "must be openai, anthropic or replay"));
    CHECK(load("[model \"q\"]\nbase_url = http://x/v1\nextra_body = [1, 2]\n") == LB_E_INVAL);
    CHECK(error_is(3, "extra_body = [1, 2]: must be a JSON object"));
    CHECK(load("[model \"q\"]\nbase_url = http://x/v1\nextra_body = {\"a\":\n  1\ntemperature = 0.5\n  0.6\n") == LB_E_INVAL);
    CHECK(error_is(6, "would continue the value of 'temperature'"));
    CHECK(load("[model \"bad name\"]\nbase_url = http://x/v1\n") == LB_E_INVAL);
    CHECK(error_is(2, "a model name is 1 to 63"));
    CHECK(load("this line has no equals sign\n") == LB_E_INVAL);
    CHECK(error_is(1, "not a 'key = value' line"));
    CHECK(load("[model \"q\"\nbase_url = x\n") == LB_E_INVAL);
    CHECK(error_is(1, "not a 'key = value' line or a [section] header"));
    char longline[400];
    memset(longline, 'x', sizeof longline);
    memcpy(longline, "image = ", 8);
    longline[sizeof longline - 2] = '\n';
    longline[sizeof longline - 1] = '\0';
    char text[600];
    snprintf(text, sizeof text, "max_turns = 5\n%s", longline);
    CHECK(load(text) == LB_E_INVAL);
    CHECK(error_is(2, "the line is longer than"));
    CHECK(load("tools = bash, Bad-Name\n") == LB_E_INVAL);
    CHECK(error_is(1, "'Bad-Name' is not a tool name"));
    CHECK(load("tools = ,\n") == LB_E_INVAL);
    CHECK(error_is(1, "lists no tool"));
    /* errors found once the whole file is read name the model's line */
    CHECK(load("\n[model \"q\"]\nmodel = m\n") == LB_E_INVAL);
    CHECK(error_has("[model \"q\"]") && error_has(":3) has no base_url"));
    CHECK(load("[model \"c\"]\nprovider = anthropic\nbase_url = http://x\ntool_mode = text\n") == LB_E_INVAL);
    CHECK(error_has("tool_mode = text works with the openai provider only"));
    CHECK(load("[model \"c\"]\nprovider = anthropic\nbase_url = http://x\nmin_p = 0.1\n") == LB_E_INVAL);
    CHECK(error_has("no min_p or repetition_penalty"));
    CHECK(load("[model \"q\"]\nbase_url = http://x/v1\ntool_names = openai\n") == LB_E_INVAL);
    CHECK(error_has("must be llmbox or official"));
    CHECK(load("[model \"q\"]\nbase_url = ftp://x/v1\n") == LB_E_INVAL);
    CHECK(error_has("is not an http:// or https:// URL"));
    CHECK(load("default_model = nope\n[model \"q\"]\nbase_url = http://x/v1\n") == LB_E_INVAL);
    CHECK(error_has("default_model = nope: there is no model of that name (configured: q)"));
    clean_env();
}

TEST(too_many_models_and_big_file)
{
    clean_env();
    char *text = malloc(64 * 80);
    size_t o = 0;
    for (int i = 0; i < LB_CFG_MAX_MODELS + 1; i++)
        o += (size_t)sprintf(text + o, "[model \"m%d\"]\nbase_url = http://x/v1\n", i);
    CHECK(load(text) == LB_E_TOOBIG);
    CHECK(error_has("more than 32 models"));
    free(text);
    /* over the 1 MiB cap */
    FILE *f = fopen(conf, "w");
    for (int i = 0; i < 70000; i++)
        fputs("; padding padding\n", f);
    fclose(f);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_E_TOOBIG);
    CHECK(error_has("larger than 1024 KiB"));
    clean_env();
}

TEST(environment_errors_name_the_variable)
{
    clean_env();
    setenv("LLMBOX_CONF", "/dev/null", 1);
    setenv("LLMBOX_MAX_TURNS", "lots", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_E_INVAL);
    CHECK(error_has("LLMBOX_MAX_TURNS=lots: must be a whole number from 1 to 1000"));
    unsetenv("LLMBOX_MAX_TURNS");
    setenv("LLMBOX_LLM_EXTRA_BODY", "{oops", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_E_INVAL);
    CHECK(error_has("LLMBOX_LLM_EXTRA_BODY={oops: must be a JSON object"));
    unsetenv("LLMBOX_LLM_EXTRA_BODY");
    setenv("LLMBOX_CONF", "/nonexistent/llmbox.conf", 1);
    CHECK(lb_config_load(lb_cfg_mut()) == LB_E_NOTFOUND);
    CHECK(error_has("/nonexistent/llmbox.conf: cannot read the configuration file"));
    clean_env();
}

/* The sandbox settings are keys of the file too, with their defaults and
 * the rules that tie them together. */
TEST(sandbox_keys)
{
    clean_env();
    CHECK(load("image = img2\nsandbox_disk_mib = 64\nsandbox_api_ttl_s = 9000\n"
               "sandbox_api_ttl_max_s = 600\npool_size = 0\n") == LB_OK);
    const lb_config *c = lb_cfg();
    CHECK(!strcmp(c->pool_images, "img2"));                 /* follows the default image */
    CHECK(c->sandbox_api_ttl_s == 600);                     /* capped by the max */
    CHECK(c->sandbox_disk_mib == 64 && c->pool_size == 0);
    CHECK(c->sandbox_uid_base == 1879048192u && c->bash_soft_timeout_s == 10);
    CHECK(!strcmp(c->network_allow, "none") && c->sandbox_api_token[0] == '\0');
    CHECK(load("sandbox_uid_base = 100\n") == LB_E_INVAL);
    CHECK(error_is(1, "must be a whole number from 65536"));
    /* a CPU quota: none, or at least the kernel's 1 ms per 100 ms period */
    CHECK(load("sandbox_cpu_milli = 0\n") == LB_OK && lb_cfg()->sandbox_cpu_milli == 0);
    CHECK(load("sandbox_cpu_milli = 10\n") == LB_OK && lb_cfg()->sandbox_cpu_milli == 10);
    CHECK(load("sandbox_cpu_milli = 1500\n") == LB_OK && lb_cfg()->sandbox_cpu_milli == 1500);
    CHECK(load("sandbox_cpu_milli = 5\n") == LB_E_INVAL);
    CHECK(error_is(1, "must be 0 (no CPU limit) or a whole number from 10 to 1024000"));
    CHECK(load("sandbox_cpu_milli = -1\n") == LB_E_INVAL);
    /* a token with a control character is refused without repeating it */
    setenv("LLMBOX_SANDBOX_API_TOKEN", "secret\x01value", 1);
    CHECK(load("") == LB_E_INVAL);
    CHECK(error_has("LLMBOX_SANDBOX_API_TOKEN=(value hidden): contains control characters"));
    CHECK(strstr(lb_config_error(), "secret") == NULL);
    unsetenv("LLMBOX_SANDBOX_API_TOKEN");
    CHECK(load("sandbox_api_token = t\x02k\n") == LB_E_INVAL);
    CHECK(error_is(1, "sandbox_api_token = (value hidden)"));
    clean_env();
}

/* several nodes: the object store's keys, their defaults (no bucket: local
 * files), the environment winning, the secret never repeated. */
TEST(s3_keys)
{
    clean_env();
    CHECK(load("") == LB_OK);
    const lb_config *c = lb_cfg();
    CHECK(c->s3_bucket[0] == '\0' && !strcmp(c->s3_region, "us-east-1") && !strcmp(c->s3_addressing, "path"));
    CHECK(c->s3_timeout_s == 30 && c->s3_retries == 3);
    setenv("LLMBOX_S3_BUCKET", "from-env", 1);
    CHECK(load("s3_bucket = from-file\ns3_endpoint = http://127.0.0.1:7480\ns3_retries = 0\n") == LB_OK);
    CHECK(!strcmp(lb_cfg()->s3_bucket, "from-env") && lb_cfg()->s3_retries == 0);
    CHECK(!strcmp(lb_cfg()->s3_endpoint, "http://127.0.0.1:7480"));
    CHECK(load("s3_retries = 11\n") == LB_E_INVAL);
    setenv("LLMBOX_S3_SECRET_KEY", "hush\x01hush", 1);
    CHECK(load("") == LB_E_INVAL);
    CHECK(strstr(lb_config_error(), "hush") == NULL);
    clean_env();
}

/* several nodes: the queue's and the nodes' keys: defaults, checks, the
 * environment winning. */
TEST(node_keys)
{
    clean_env();
    CHECK(load("") == LB_OK);
    const lb_config *c = lb_cfg();
    CHECK(!strcmp(c->task_runner, "local") && c->node_name[0] == '\0' && c->node_capacity == 4);
    CHECK(c->node_lease_s == 15 && !strcmp(c->node_listen, "127.0.0.1:8090"));
    CHECK(load("task_runner = queue\nnode_name = n1\nnode_capacity = 8\nnode_listen = 0.0.0.0:9000\n") == LB_OK);
    CHECK(!strcmp(lb_cfg()->task_runner, "queue") && !strcmp(lb_cfg()->node_name, "n1"));
    CHECK(lb_cfg()->node_capacity == 8 && !strcmp(lb_cfg()->node_listen, "0.0.0.0:9000"));
    CHECK(load("task_runner = remote\n") == LB_E_INVAL);
    CHECK(strstr(lb_config_error(), "local") != NULL);
    CHECK(load("node_name = N1\n") == LB_E_INVAL);
    CHECK(load("node_name = -n\n") == LB_E_INVAL);
    CHECK(load("node_name = n1.x\n") == LB_E_INVAL);
    CHECK(load("node_lease_s = 1\n") == LB_E_INVAL);
    setenv("LLMBOX_NODE_NAME", "from-env", 1);
    setenv("LLMBOX_NODE_LEASE_S", "4", 1);
    CHECK(load("node_name = from-file\n") == LB_OK);
    CHECK(!strcmp(lb_cfg()->node_name, "from-env") && lb_cfg()->node_lease_s == 4);
    clean_env();
    /* the webs' claims on evaluations and rollout groups (store/store_claim.h) */
    CHECK(load("") == LB_OK && lb_cfg()->runner_lease_s == 15);
    CHECK(load("runner_lease_s = 1\n") == LB_E_INVAL);
    CHECK(load("runner_lease_s = 3601\n") == LB_E_INVAL);
    setenv("LLMBOX_RUNNER_LEASE_S", "3", 1);
    CHECK(load("runner_lease_s = 30\n") == LB_OK && lb_cfg()->runner_lease_s == 3);
    clean_env();
}

/* allowed_hosts: checked, lowercased, and what a Host header may name. */
TEST(allowed_hosts)
{
    clean_env();
    CHECK(load("allowed_hosts = LLMBox.Example.org, proxy.example:8443 [2001:DB8::1]:8080\n") == LB_OK);
    const lb_config *c = lb_cfg();
    CHECK(!strcmp(c->allowed_hosts, "llmbox.example.org,proxy.example:8443,[2001:db8::1]:8080"));
    CHECK(lb_cfg_host_allowed(c, "llmbox.example.org", 0) && lb_cfg_host_allowed(c, "llmbox.example.org", 9));
    CHECK(lb_cfg_host_allowed(c, "proxy.example", 8443) && !lb_cfg_host_allowed(c, "proxy.example", 443));
    CHECK(!lb_cfg_host_allowed(c, "proxy.example", 0));
    CHECK(lb_cfg_host_allowed(c, "2001:db8::1", 8080) && !lb_cfg_host_allowed(c, "example.org", 0));
    CHECK(!lb_cfg_host_allowed(c, "x.llmbox.example.org", 0));
    CHECK(load("allowed_hosts = good.example, bad/name\n") != LB_OK && error_is(1, "bad/name"));
    CHECK(load("allowed_hosts = a.example:0\n") != LB_OK);
    CHECK(load("allowed_hosts = a.example:65536\n") != LB_OK);
    CHECK(load("allowed_hosts = a b c d e f g h i j k l m n o p q\n") != LB_OK && error_has("more than 16"));
    setenv("LLMBOX_ALLOWED_HOSTS", "Env.Example", 1);
    CHECK(load("allowed_hosts = file.example\n") == LB_OK && !strcmp(lb_cfg()->allowed_hosts, "env.example"));
    unsetenv("LLMBOX_ALLOWED_HOSTS");
    CHECK(load("\n") == LB_OK && !lb_cfg()->allowed_hosts[0] && !lb_cfg_host_allowed(lb_cfg(), "localhost", 0));
    /* Host header shapes */
    char h[256];
    int port;
    CHECK(lb_cfg_host_split("LocalHost:8080", 14, h, sizeof h, &port) && !strcmp(h, "localhost") && port == 8080);
    CHECK(lb_cfg_host_split("[::1]", 5, h, sizeof h, &port) && !strcmp(h, "::1") && port == 0);
    CHECK(lb_cfg_host_split("[::1]:80", 8, h, sizeof h, &port) && !strcmp(h, "::1") && port == 80);
    CHECK(!lb_cfg_host_split("", 0, h, sizeof h, &port) && !lb_cfg_host_split("a:b", 3, h, sizeof h, &port));
    CHECK(!lb_cfg_host_split("a b", 3, h, sizeof h, &port) && !lb_cfg_host_split("[::1", 4, h, sizeof h, &port));
    CHECK(!lb_cfg_host_split("a:1:2", 5, h, sizeof h, &port) && !lb_cfg_host_split("a:", 2, h, sizeof h, &port));
    CHECK(!lb_cfg_host_split("[]", 2, h, sizeof h, &port) && !lb_cfg_host_split("[::1]x", 6, h, sizeof h, &port));
}

/* e2b_domain (E2B's protocol): a DNS name, lowercased; which hosts are its sandboxes' */
TEST(e2b_domain)
{
    clean_env();
    const char *id = "0123456789abcdef0123456789abcdef";
    char h[128];
    CHECK(load("\n") == LB_OK && !lb_cfg()->e2b_domain[0]);
    snprintf(h, sizeof h, "49983-%s.e2b.example", id);
    CHECK(!lb_cfg_e2b_host(lb_cfg(), h));
    CHECK(load("e2b_domain = E2B.Example\n") == LB_OK && !strcmp(lb_cfg()->e2b_domain, "e2b.example"));
    const lb_config *c = lb_cfg();
    CHECK(lb_cfg_e2b_host(c, h));
    snprintf(h, sizeof h, "8080-%s.E2B.example", id);
    CHECK(lb_cfg_e2b_host(c, h));
    snprintf(h, sizeof h, "49983-%s.x.e2b.example", id);
    CHECK(!lb_cfg_e2b_host(c, h));
    snprintf(h, sizeof h, "49983-%.31s.e2b.example", id);
    CHECK(!lb_cfg_e2b_host(c, h));
    snprintf(h, sizeof h, "-%s.e2b.example", id);
    CHECK(!lb_cfg_e2b_host(c, h));
    snprintf(h, sizeof h, "49983-%s.e2b.example.evil", id);
    CHECK(!lb_cfg_e2b_host(c, h) && !lb_cfg_e2b_host(c, "e2b.example") && !lb_cfg_e2b_host(c, ".e2b.example"));
    /* several nodes: a node's sandbox, "<port>-<node>.<32 hex>.<domain>" */
    snprintf(h, sizeof h, "49983-n1.%s.e2b.example", id);
    CHECK(lb_cfg_e2b_host(c, h));
    snprintf(h, sizeof h, "49983-n1.n2.%s.e2b.example", id);
    CHECK(!lb_cfg_e2b_host(c, h));
    snprintf(h, sizeof h, "49983-N_1.%s.e2b.example", id);
    CHECK(!lb_cfg_e2b_host(c, h));
    CHECK(load("e2b_domain = bad/name\n") != LB_OK && error_is(1, "DNS name"));
    CHECK(load("e2b_domain = a..b\n") != LB_OK && load("e2b_domain = -a.b\n") != LB_OK);
    CHECK(load("e2b_domain = a-.b\n") != LB_OK && load("e2b_domain = a.b.\n") != LB_OK);
}

/* cluster_url (several nodes: where a web forwards an E2B create mounting
 * another node's volume): the balancer's http(s) URL, or nothing */
TEST(cluster_url)
{
    clean_env();
    CHECK(load("\n") == LB_OK && !lb_cfg()->cluster_url[0]);
    CHECK(load("cluster_url = http://10.0.0.5:8080\n") == LB_OK && !strcmp(lb_cfg()->cluster_url, "http://10.0.0.5:8080"));
    CHECK(load("cluster_url = https://lb.example/\n") == LB_OK);
    CHECK(load("cluster_url = ftp://lb.example\n") != LB_OK && error_is(1, "balancer"));
    CHECK(load("cluster_url = lb.example\n") != LB_OK);
    CHECK(load("cluster_url = http://lb.example/?x=1\n") != LB_OK && load("cluster_url = http://a b\n") != LB_OK);
}

int main(void)
{
    snprintf(conf, sizeof conf, "/tmp/lb-conf-%d.conf", (int)getpid());
    RUN(defaults_without_a_file);
    RUN(file_values_env_wins);
    RUN(environment_overrides_model_default);
    RUN(errors_name_file_and_line);
    RUN(too_many_models_and_big_file);
    RUN(environment_errors_name_the_variable);
    RUN(sandbox_keys);
    RUN(s3_keys);
    RUN(node_keys);
    RUN(allowed_hosts);
    RUN(e2b_domain);
    RUN(cluster_url);
    unlink(conf);
    return testlib_done();
}
