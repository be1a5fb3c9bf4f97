/* The folder's Python in a sandbox (bench_py.h): the generated check and
 * scorer programs, and the check's run in a fresh sandbox of sandboxd. */
#include "eval/bench_py.h"

#include "common/buf.h"
#include "llmbox/sandbox.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_WORKDIR "/testbed/bench"

static const char CHECK_PY[] =
    "# llmbox eval --benchmark: the folder's Python, checked in a fresh sandbox\n"
    "# before any model is called. Imports reward.py and calls\n"
    "# compute_score(\"test\", \"test\") as the official runner does (a module the\n"
    "# image lacks shows here); with rows.jsonl, create_prompt(row) of\n"
    "# vanilla_llm_prompt.py per row (the runner's default without one: the\n"
    "# problem statement). The verdict goes to result.json, not stdout, so\n"
    "# nothing the folder prints is mistaken for it.\n"
    "import importlib.util\n"
    "import json\n"
    "import os\n"
    "import signal\n"
    "import sys\n"
    "\n"
    "\n"
    "def result(obj):\n"
    "    with open(\"result.json.tmp\", \"w\", encoding=\"utf-8\") as f:\n"
    "        json.dump(obj, f)\n"
    "    os.replace(\"result.json.tmp\", \"result.json\")\n"
    "    sys.stdout.flush()\n"
    "    os._exit(0)\n"
    "\n"
    "\n"
    "def load(name):\n"
    "    spec = importlib.util.spec_from_file_location(name, os.path.abspath(name + \".py\"))\n"
    "    mod = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(mod)\n"
    "    return mod\n"
    "\n"
    "\n"
    "def missing(e, where):\n"
    "    result({\"missing_module\": getattr(e, \"name\", None) or str(e), \"where\": where})\n"
    "\n"
    "\n"
    "def failed(what, e):\n"
    "    result({\"error\": \"%s raised %s: %s\" % (what, type(e).__name__, str(e)[:400])})\n"
    "\n"
    "\n"
    "os.dup2(2, 1)\n"
    "try:\n"
    "    reward = load(\"reward\")\n"
    "except ImportError as e:\n"
    "    missing(e, \"reward.py\")\n"
    "except BaseException as e:\n"
    "    failed(\"importing reward.py\", e)\n"
    "if not callable(getattr(reward, \"compute_score\", None)):\n"
    "    result({\"error\": \"reward.py must define compute_score(agent_answer, ground_truth, **kwargs)\"})\n"
    "\n"
    "\n"
    "def too_long(sig, frame):\n"
    "    raise TimeoutError(\"compute_score(\\\"test\\\", \\\"test\\\") ran over 10 s\")\n"
    "\n"
    "\n"
    "# only an ImportError matters here; a compute_score that loops is the\n"
    "# scorer's time limit's business, run by run\n"
    "signal.signal(signal.SIGALRM, too_long)\n"
    "signal.alarm(10)\n"
    "try:\n"
    "    reward.compute_score(\"test\", \"test\")\n"
    "except ImportError as e:\n"
    "    missing(e, \"reward.py's compute_score\")\n"
    "except BaseException:\n"
    "    pass\n"
    "signal.alarm(0)\n"
    "prompts = None\n"
    "if os.path.exists(\"rows.jsonl\"):\n"
    "    create = None\n"
    "    if os.path.exists(\"vanilla_llm_prompt.py\"):\n"
    "        try:\n"
    "            create = getattr(load(\"vanilla_llm_prompt\"), \"create_prompt\", None)\n"
    "        except ImportError as e:\n"
    "            missing(e, \"vanilla_llm_prompt.py\")\n"
    "        except BaseException as e:\n"
    "            failed(\"importing vanilla_llm_prompt.py\", e)\n"
    "    if create is None:\n"
    "        def create(p):\n"
    "            return p[\"problem_statement\"]\n"
    "    prompts = []\n"
    "    with open(\"rows.jsonl\", encoding=\"utf-8\") as f:\n"
    "        for n, line in enumerate(f):\n"
    "            row = json.loads(line)\n"
    "            try:\n"
    "                p = create(row)\n"
    "            except ImportError as e:\n"
    "                missing(e, \"create_prompt\")\n"
    "            except BaseException as e:\n"
    "                failed(\"create_prompt on row %d (id %.80r)\" % (n + 1, row.get(\"id\")), e)\n"
    "            if not isinstance(p, str):\n"
    "                result({\"error\": \"create_prompt returned %s, not a string, on row %d (id %.80r)\"\n"
    "                        % (type(p).__name__, n + 1, row.get(\"id\"))})\n"
    "            prompts.append(p)\n"
    "result({\"ok\": True, \"prompts\": prompts})\n";

static const char SCORER_HEAD[] =
    "# llmbox eval --benchmark: the folder's compute_score, run by the `script`\n"
    "# scorer in a fresh sandbox per run. The answer is read and stripped as the\n"
    "# official runner reads {output_dir}/answer.txt; the row's other fields are\n"
    "# keyword arguments, as the runner passes them. What reward.py prints goes\n"
    "# to stderr, so only this program's last line is the score; an exception,\n"
    "# a non-number, NaN or a value outside [0, 1] exits non-zero: a classified\n"
    "# scorer error, never a zero.\n"
    "import importlib.util\n"
    "import json\n"
    "import math\n"
    "import numbers\n"
    "import os\n"
    "import sys\n"
    "import traceback\n"
    "\n"
    "REWARD = bytes.fromhex(\n";

static const char SCORER_TAIL[] =
    ")\n"
    "\n"
    "\n"
    "def fail(code, msg):\n"
    "    sys.stdout.flush()\n"
    "    sys.stderr.write(\"compute_score %s\\n\" % msg)\n"
    "    sys.stderr.flush()\n"
    "    os._exit(code)\n"
    "\n"
    "\n"
    "def main():\n"
    "    with open(sys.argv[1], encoding=\"utf-8\", errors=\"replace\") as f:\n"
    "        answer = f.read().strip()\n"
    "    with open(sys.argv[3], encoding=\"utf-8\") as f:\n"
    "        row = json.load(f)\n"
    "    orig = row.get(\"official_row\")\n"
    "    if not isinstance(orig, dict) or \"ground_truth\" not in orig:\n"
    "        fail(2, \"cannot run: the row has no official_row (not a dataset of llmbox eval --benchmark)\")\n"
    "    truth = orig[\"ground_truth\"]\n"
    "    kwargs = {k: v for k, v in orig.items() if k != \"ground_truth\"}\n"
    "    with open(\"reward.py\", \"wb\") as f:\n"
    "        f.write(REWARD)\n"
    "    sys.stdout.flush()\n"
    "    keep = os.dup(1)\n"
    "    os.dup2(2, 1)\n"
    "    try:\n"
    "        spec = importlib.util.spec_from_file_location(\"reward\", os.path.abspath(\"reward.py\"))\n"
    "        mod = importlib.util.module_from_spec(spec)\n"
    "        spec.loader.exec_module(mod)\n"
    "        score = mod.compute_score(answer, truth, **kwargs)\n"
    "    except BaseException as e:\n"
    "        traceback.print_exc()\n"
    "        fail(3, \"raised %s: %s\" % (type(e).__name__, str(e)[:300]))\n"
    "    sys.stdout.flush()\n"
    "    os.dup2(keep, 1)\n"
    "    if not isinstance(score, numbers.Real):\n"
    "        fail(4, \"returned %s, not a number\" % type(score).__name__)\n"
    "    score = float(score)\n"
    "    if math.isnan(score) or not 0.0 <= score <= 1.0:\n"
    "        fail(5, \"returned %r, not a score in [0, 1]\" % score)\n"
    "    print(repr(score))\n"
    "\n"
    "\n"
    "main()\n";

char *lb_bench_scorer_program(const char *reward, size_t rlen)
{
    static const char hexd[] = "0123456789abcdef";
    lb_buf b;
    lb_buf_init(&b, 4 * LB_BENCH_PY_MAX);
    int rc = lb_buf_appends(&b, SCORER_HEAD);
    /* reward.py as hex in adjacent string literals: any bytes survive */
    for (size_t i = 0; rc == LB_OK && i < rlen; i += 48) {
        char line[2 * 48 + 8];
        size_t k = 0, n = rlen - i < 48 ? rlen - i : 48;
        line[k++] = ' ';
        line[k++] = ' ';
        line[k++] = ' ';
        line[k++] = ' ';
        line[k++] = '"';
        for (size_t j = 0; j < n; j++) {
            unsigned char ch = (unsigned char)reward[i + j];
            line[k++] = hexd[ch >> 4];
            line[k++] = hexd[ch & 15];
        }
        line[k++] = '"';
        line[k++] = '\n';
        rc = lb_buf_append(&b, line, k);
    }
    if (rc == LB_OK && !rlen)
        rc = lb_buf_appends(&b, "    \"\"\n");
    if (rc == LB_OK)
        rc = lb_buf_appends(&b, SCORER_TAIL);
    if (rc != LB_OK) {
        lb_buf_free(&b);
        return NULL;
    }
    return lb_buf_steal(&b, NULL);
}

static int put(lbsb_conn *c, const char *id, const char *name, const char *data, size_t len, char *err,
               size_t errsz)
{
    char path[128], e[512] = "";
    snprintf(path, sizeof path, "%s/%s", BENCH_WORKDIR, name);
    int rc = lbsb_write(c, id, path, data, len, 0, e, sizeof e);
    if (rc != LB_OK)
        snprintf(err, errsz, "cannot write %s into the sandbox: %s", name, e);
    return rc;
}

/* The check's verdict in result.json: LB_OK with the prompts, or why not. */
static int verdict(const lb_bench_box *b, const char *json, size_t len, size_t nrows, char ***prompts, char *err,
                   size_t errsz)
{
    cJSON *j = cJSON_ParseWithLength(json, len);
    const char *mod = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "missing_module"));
    const char *where = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "where"));
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "error"));
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(j, "prompts");
    int rc = LB_OK;
    if (mod) {
        snprintf(err, errsz, "%.100s imports the module \"%.100s\", which the image \"%.64s\" lacks: build an "
                 "image that has it (docs/EVAL.md, \"--benchmark\"); nothing was run", where ? where : "reward.py",
                 mod, b->image);
        rc = LB_E_NOTFOUND;
    } else if (why) {
        snprintf(err, errsz, "the folder's Python failed in the sandbox: %.700s", why);
        rc = LB_E_INVAL;
    } else if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ok"))) {
        snprintf(err, errsz, "the check of the folder's Python gave no verdict");
        rc = LB_E_PROTO;
    } else if (prompts) {
        if (!cJSON_IsArray(ps) || (size_t)cJSON_GetArraySize(ps) != nrows) {
            snprintf(err, errsz, "create_prompt gave no prompt for every row");
            rc = LB_E_PROTO;
        } else if (!(*prompts = calloc(nrows ? nrows : 1, sizeof **prompts))) {
            rc = LB_E_NOMEM;
        } else {
            size_t k = 0;
            const cJSON *p;
            cJSON_ArrayForEach(p, ps)
            {
                const char *s = cJSON_GetStringValue(p);
                if (!s || !((*prompts)[k++] = strdup(s))) {
                    rc = s ? LB_E_NOMEM : LB_E_PROTO;
                    snprintf(err, errsz, "create_prompt's prompt of row %zu is not text", k);
                    break;
                }
            }
            if (rc != LB_OK) {
                for (size_t i = 0; i < nrows; i++)
                    free((*prompts)[i]);
                free(*prompts);
                *prompts = NULL;
            }
        }
    }
    cJSON_Delete(j);
    return rc;
}

int lb_bench_py_check(const lb_bench_box *b, const char *reward, size_t rlen, const char *vanilla, size_t vlen,
                      const char *rows_jsonl, size_t rows_len, size_t nrows, char ***prompts, char *err,
                      size_t errsz)
{
    lbsb_conn *c = NULL;
    char id[128] = "", e[512] = "";
    lbsb_exec_out eo;
    memset(&eo, 0, sizeof eo);
    if (prompts)
        *prompts = NULL;
    int rc = lbsb_connect(b->socket, NULL, &c, e, sizeof e);
    if (rc == LB_OK) {
        lbsb_spec spec = {.image = b->image,
                          .memory_mib = b->memory_mib,
                          .pids = b->pids,
                          .network = "none",
                          .ttl_s = b->timeout_s + 60};
        rc = lbsb_create(c, &spec, id, sizeof id, e, sizeof e);
    }
    if (rc != LB_OK) {
        snprintf(err, errsz, "no sandbox to run the folder's Python in (sandboxd at %s, image \"%s\"): %s",
                 b->socket, b->image, e);
        goto out;
    }
    rc = lbsb_exec(c, id, "mkdir -p " BENCH_WORKDIR, 30000, &eo, e, sizeof e);
    lbsb_exec_out_free(&eo);
    if (rc != LB_OK) {
        snprintf(err, errsz, "cannot prepare the sandbox: %s", e);
        goto out;
    }
    if ((rc = put(c, id, "check.py", CHECK_PY, strlen(CHECK_PY), err, errsz)) != LB_OK ||
        (rc = put(c, id, "reward.py", reward, rlen, err, errsz)) != LB_OK ||
        (vanilla && (rc = put(c, id, "vanilla_llm_prompt.py", vanilla, vlen, err, errsz)) != LB_OK) ||
        (rows_jsonl && (rc = put(c, id, "rows.jsonl", rows_jsonl, rows_len, err, errsz)) != LB_OK))
        goto out;
    rc = lbsb_exec(c, id, "cd " BENCH_WORKDIR " && python3 check.py", b->timeout_s * 1000, &eo, e, sizeof e);
    if (rc != LB_OK) {
        snprintf(err, errsz, "the check of the folder's Python failed: %s", e);
        goto out;
    }
    if (eo.state == LLMBOX_EXEC_TIMEOUT) {
        snprintf(err, errsz, "the folder's Python (importing reward.py, compute_score(\"test\", \"test\")%s) did "
                 "not finish within %d s", rows_jsonl ? ", create_prompt" : "", b->timeout_s);
        rc = LB_E_TIMEOUT;
        goto out;
    }
    if (eo.state == LLMBOX_EXEC_OOM) {
        snprintf(err, errsz, "the folder's Python was killed by the memory cap of %d MiB", b->memory_mib);
        rc = LB_E_TOOBIG;
        goto out;
    }
    char *res = NULL;
    size_t len = 0;
    uint64_t size = 0;
    rc = lbsb_read_range(c, id, BENCH_WORKDIR "/result.json", 0, LB_BENCH_PROMPTS_MAX, &res, &len, &size, e,
                         sizeof e);
    if (rc != LB_OK) {
        size_t n = eo.err_len > 300 ? 300 : eo.err_len;
        snprintf(err, errsz, "the folder's Python gave no verdict (exit %d): %.*s", eo.exit_code, (int)n,
                 eo.err ? eo.err + (eo.err_len - n) : "");
        goto out;
    }
    if (size > LB_BENCH_PROMPTS_MAX) {
        snprintf(err, errsz, "create_prompt's prompts are over %u MiB all together; run fewer rows",
                 LB_BENCH_PROMPTS_MAX >> 20);
        rc = LB_E_TOOBIG;
    } else {
        rc = verdict(b, res, len, nrows, rows_jsonl ? prompts : NULL, err, errsz);
    }
    free(res);
out:
    lbsb_exec_out_free(&eo);
    if (c && id[0])
        LB_IGNORE(lbsb_destroy(c, id, e, sizeof e)); /* closing the connection destroys it too */
    lbsb_close(c);
    return rc;
}
