"""`llmbox eval --benchmark DIR`: an official benchmark folder (config.yaml,
reward.py, vanilla_llm_prompt.py, a data file, in the shape of the official
project's `benchmark/<domain>/`) run as the official runner runs it.
docs/EVAL.md, "--benchmark". The folders are written here.

- the rendered prompts, byte for byte, against this test's own rendering
  done the official way (Python str.replace of the three directories, then
  str.format: command_docs/demo for the system prompt, problem_statement
  for the instance prompt, so {{ and }} become braces); the directories'
  defaults; a folder without instance_prompt;
- what the model receives in a real run: that system message and first
  user message, the official tool names, the inputs in input_dir and the
  answer read from {output_dir}/answer.txt;
- LLM mode's prompt from the folder's create_prompt, run in a sandbox;
- scores from compute_score for a right, a wrong and an empty answer (no
  answer file: the official "" — not the finish tool's answer), the row's
  other fields as keyword arguments;
- a reward.py that raises, loops, prints to stdout, imports a missing
  module (the run stops before any model call, naming the module and the
  image), returns NaN, 2.0 or text: a classified scorer error, not a zero;
- a config.yaml that is malformed, huge, uses anchors and aliases, has an
  unknown key, a nested value or a directory under /proc: refused, named;
- a data file with hostile rows.
Needs root (sandboxd) and the built image for all but the rendering cases.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, ".."))
from stack import LLMBOX, Reporter, Stack, free_port, image_ready  # noqa: E402

try:
    import yaml  # PyYAML: the official runner's reader, when installed
except ImportError:
    yaml = None

SYSTEM = r"""You are an expert.

<DIRECTORIES>
- Working directory: {working_dir}
- Input directory: {input_dir}
- Output directory: {output_dir}
</DIRECTORIES>
{command_docs}{demo}
- The answer file holds the answer within \\boxed{{}} (a {{literal}} pair).
- Use execute_bash, str_replace_editor and submit."""

INSTANCE = r"""<problem>
{problem_statement}
</problem>

Write the final answer to {output_dir}/answer.txt; inputs in {input_dir}.
Working directory: {working_dir} {{not a field}}"""

REWARD_EXACT = '''
def compute_score(agent_answer, ground_truth, **kwargs):
    # the row's other fields arrive as keyword arguments
    if kwargs.get("weight") != 7 or "problem_statement" not in kwargs or "id" not in kwargs:
        raise ValueError("kwargs missing: %r" % sorted(kwargs))
    if not agent_answer or not ground_truth:
        return 0.0
    return 1.0 if agent_answer.strip().lower() == ground_truth.strip().lower() else 0.0
'''

VANILLA = '''
def create_prompt(problem_data):
    return "VANILLA<" + problem_data["problem_statement"] + ">\\n\\nid=" + str(problem_data["id"]) + \\
        " extra=" + repr(problem_data.get("extra"))
'''


def yaml_block(text):
    return "|-\n" + "".join("  " + line + "\n" if line else "\n" for line in text.split("\n"))


def write_folder(parent, name, rows, system=SYSTEM, instance=INSTANCE, reward=REWARD_EXACT, vanilla=VANILLA,
                 dirs=None, extra_yaml="", raw_config=None):
    d = os.path.join(parent, name)
    os.makedirs(d, exist_ok=True)
    if raw_config is not None:
        cfg = raw_config
    else:
        cfg = 'dataset: "json"\ndata_files: "%s/data.json"\nsplit: "train"\n' % name
        cfg += "system_prompt: " + yaml_block(system)
        if instance is not None:
            cfg += "instance_prompt: " + yaml_block(instance)
        for k, v in (dirs or {}).items():
            cfg += '%s: "%s"\n' % (k, v)
        cfg += extra_yaml
    with open(os.path.join(d, "config.yaml"), "w") as f:
        f.write(cfg)
    with open(os.path.join(d, "reward.py"), "w") as f:
        f.write(reward)
    if vanilla is not None:
        with open(os.path.join(d, "vanilla_llm_prompt.py"), "w") as f:
            f.write(vanilla)
    with open(os.path.join(d, "data.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return d


def official_render(folder, row):
    """The official runner's and agent's rendering, done here: runner.py's
    str.replace of the directories (its defaults when absent), then
    Agent.run's str.format."""
    with open(os.path.join(folder, "config.yaml")) as f:
        text = f.read()
    cfg = yaml.safe_load(text) if yaml else None
    assert cfg is not None, "PyYAML is needed to render the official way"
    wd = cfg.get("working_dir", "/testbed")
    ind = cfg.get("input_dir", "/testbed/documents")
    od = cfg.get("output_dir", "/testbed")

    def dirs(s):
        return s.replace("{working_dir}", wd).replace("{input_dir}", ind).replace("{output_dir}", od)
    system = dirs(cfg["system_prompt"]).format(command_docs="", demo="")
    inst_t = dirs(cfg.get("instance_prompt", "") or "")
    instance = inst_t.format(problem_statement=row["problem_statement"]) if inst_t else row["problem_statement"]
    return system, instance


def cli(*args, env=None, timeout=300, port=None):
    argv = [LLMBOX, "eval"] + (["--url", "http://127.0.0.1:%d" % port] if port else []) + list(args)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def printed(folder, mode="sandbox", env=None, extra=()):
    code, out, err = cli("--benchmark", folder, "--mode", mode, "--print-prompts", *extra, env=env)
    assert code == 0, (code, err)
    return [json.loads(x) for x in out.splitlines() if x.strip()]


ROWS = [
    {"id": "r1", "problem_statement": "Say blue. SANDBOX-ANSWER[blue] LLM-ANSWER[blue]", "ground_truth": "blue",
     "weight": 7, "input_files": {}},
    {"id": "r2", "problem_statement": "Say red. SANDBOX-ANSWER[green] LLM-ANSWER[green]", "ground_truth": "red",
     "weight": 7, "input_files": {}},
    # no marker: nothing is written to the answer file; FINISH-ANSWER is what
    # submit says, which the official runner never reads
    {"id": 3, "problem_statement": "Say x {not a field} {{ }} FINISH-ANSWER[x]", "ground_truth": "x", "weight": 7},
    {"id": "r4", "problem_statement": "Copy the input. ANSWER-FROM-INPUT[color.txt]", "ground_truth": "Purple",
     "weight": 7, "input_files": {"color.txt": "purple\n"}},
]


# ---- rendering (no sandbox) ------------------------------------------------

def test_prompts_byte_for_byte(tmp):
    rows = ROWS + [{"id": "u", "problem_statement": "ünïcödé {problem_statement} }{ \\boxed{} %s",
                    "ground_truth": "1", "weight": 7}]
    for name, dirs in (("defaults", None),
                       ("demo-dirs", {"input_dir": "/testbed/input", "output_dir": "/testbed/output",
                                      "working_dir": "/testbed"})):
        folder = write_folder(tmp, name, rows, dirs=dirs)
        lines = printed(folder)
        assert [x["id"] for x in lines] == [r["id"] for r in rows], lines
        for row, line in zip(rows, lines):
            system, instance = official_render(folder, row)
            assert line["system"] == system, (name, line["system"], system)
            assert line["instance"] == instance, (name, line["instance"], instance)
        opts = lines[0]["task_options"]
        want_in = (dirs or {}).get("input_dir", "/testbed/documents")
        want_out = (dirs or {}).get("output_dir", "/testbed")
        assert opts["input_dir"] == want_in and opts["output_dir"] == want_out, opts
        assert opts["tool_names"] == "official" and opts["verbatim_prompts"] is True, opts
        assert opts["finish_answer"] is False, opts
    # --runner-dirs: the directories runner.py really renders (its defaults)
    folder = os.path.join(tmp, "demo-dirs")
    for row, line in zip(rows, printed(folder, extra=("--runner-dirs",))):
        assert "/testbed/input" not in line["system"] and "/testbed/documents" in line["system"], line["system"]
        assert line["task_options"]["input_dir"] == "/testbed/documents", line["task_options"]
    # without instance_prompt the problem statement is the message as is
    folder = write_folder(tmp, "no-instance", rows, instance=None)
    for row, line in zip(rows, printed(folder)):
        assert line["instance"] == row["problem_statement"], line


def test_template_errors_named(tmp):
    folder = write_folder(tmp, "keyerror", ROWS, system="Hello {name}")
    code, _, err = cli("--benchmark", folder, "--mode", "sandbox", "--print-prompts")
    assert code == 1 and "{name}" in err and "KeyError" in err, err
    folder = write_folder(tmp, "lonebrace", ROWS, instance="x } {problem_statement}")
    code, _, err = cli("--benchmark", folder, "--mode", "sandbox", "--print-prompts")
    assert code == 1 and "Single '}'" in err, err


BASE = 'dataset: "json"\ndata_files: "x/data.json"\nsystem_prompt: "hi"\n'


def test_bad_configs_refused(tmp):
    # the billion laughs, under keys the file may have: 9^8 "lol"s if expanded
    keys = ["dataset", "config", "split", "data_files", "system_prompt", "instance_prompt", "input_dir",
            "output_dir", "working_dir"]
    laughs = '%s: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' % keys[0] + "".join(
        "%s: &a%d [%s]\n" % (keys[i], i, ",".join(["*a%d" % (i - 1)] * 9)) for i in range(1, 9))
    cases = [
        ("malformed", BASE + "instance_prompt: \"unterminated\n", "not valid YAML"),
        ("huge", BASE + "instance_prompt: \"" + "x" * (300 << 10) + "\"\n", "at most"),
        ("laughs", laughs, "anchor"),
        ("alias", BASE + "x_ref: *nothing\n", "alias"),
        ("anchor", BASE + "split: &s train\n", "anchor"),
        ("unknown", BASE + "temprature: 0.6\n", "unknown key `temprature`"),
        ("nested", BASE + "config:\n  a: 1\n", "nested mapping"),
        ("tagged", BASE + "split: !!python/object:os.system train\n", "tag"),
        ("proc-dir", BASE + "output_dir: /proc/self\n", "output_dir"),
        ("dotdot", BASE + "input_dir: /testbed/../etc\n", "input_dir"),
        ("no-system", 'dataset: "json"\ndata_files: "x/data.json"\n', "system_prompt"),
        ("twice", BASE + "split: a\nsplit: b\n", "given twice"),
        ("nested-list", BASE + "config: [[1]]\n", "nested list"),
    ]
    for name, text, want in cases:
        folder = write_folder(tmp, "bad-" + name, ROWS, raw_config=text)
        code, out, err = cli("--benchmark", folder, "--mode", "sandbox", "--print-prompts")
        assert code == 1 and want in err and "config.yaml" in err, (name, code, err[:600])
        assert not out, (name, out[:200])


def test_hostile_data_rows(tmp):
    cases = [
        ("not-object", ["a row"], "not a JSON object"),
        ("no-id", [{"problem_statement": "p", "ground_truth": "g"}], "field `id`"),
        ("no-gt", [{"id": 1, "problem_statement": "p"}], "ground_truth"),
        ("ps-number", [{"id": 1, "problem_statement": 5, "ground_truth": "g"}], "problem_statement"),
    ]
    for name, rows, want in cases:
        folder = write_folder(tmp, "rows-" + name, rows)
        code, _, err = cli("--benchmark", folder, "--mode", "sandbox", "--print-prompts")
        assert code == 1 and "data.json:1" in err and want in err, (name, err)
    folder = write_folder(tmp, "rows-jsonl", [])
    with open(os.path.join(folder, "data.json"), "w") as f:
        f.write('{"id": 1, "problem_statement": "p", "ground_truth": "g"}\n{"id": 2, "problem_statement": \n')
    code, _, err = cli("--benchmark", folder, "--mode", "sandbox", "--print-prompts")
    assert code == 1 and "data.json:2: not valid JSON" in err, err


def test_published_dataset_needs_data(tmp):
    folder = write_folder(tmp, "published", ROWS, raw_config='dataset: "org/bench"\nconfig: "math"\nsplit: "test"\n'
                          'system_prompt: "S {output_dir}"\ninstance_prompt: "{problem_statement}"\n')
    code, _, err = cli("--benchmark", folder, "--mode", "sandbox", "--print-prompts")
    assert code == 1 and '"org/bench"' in err and "config math" in err and "--data" in err, err
    data = os.path.join(tmp, "rows.jsonl")
    with open(data, "w") as f:
        f.write(json.dumps(ROWS[0]) + "\n")
    lines = printed(folder, extra=("--data", data))
    assert len(lines) == 1 and lines[0]["system"] == "S /testbed", lines


# ---- the folder's Python in a sandbox ----------------------------------------

def test_llm_prompt_from_create_prompt(s, tmp):
    rows = [dict(r) for r in ROWS]
    rows[0]["extra"] = {"k": [1, 2]}
    folder = write_folder(tmp, "llmprompt", rows)
    lines = printed(folder, mode="llm", env=s.env)
    for row, line in zip(rows, lines):
        # the dataset loader's columns: a field one row has is None in the others
        want = "VANILLA<" + row["problem_statement"] + ">\n\nid=" + str(row["id"]) + " extra=" + \
            repr(row.get("extra"))
        assert line["llm_prompt"] == want, (line["llm_prompt"], want)
    # a create_prompt that raises or returns no text stops the run, naming the row
    for name, vanilla, want in (("cp-raises", "def create_prompt(p):\n    raise KeyError('nope')\n", "KeyError"),
                                ("cp-number", "def create_prompt(p):\n    return 5\n", "not a string")):
        folder = write_folder(tmp, name, rows, vanilla=vanilla)
        code, out, err = cli("--benchmark", folder, "--mode", "llm", "--print-prompts", env=s.env)
        assert code == 1 and want in err and "row 1" in err and not out, (name, code, err)
    # no vanilla_llm_prompt.py: the problem statement, as the runner's default
    folder = write_folder(tmp, "llmprompt-default", rows, vanilla=None)
    for row, line in zip(rows, printed(folder, mode="llm", env=s.env)):
        assert line["llm_prompt"] == row["problem_statement"], line


def model_requests(s):
    out, n = [], 1
    while os.path.exists(os.path.join(s.model_log, "request-%04d.json" % n)):
        with open(os.path.join(s.model_log, "request-%04d.json" % n)) as f:
            out.append(json.loads(f.read()))
        n += 1
    return out


def test_missing_module_stops_before_any_model_call(s, tmp):
    folder = write_folder(tmp, "needs-mv", ROWS, reward="from math_verify_nope.metric import math_metric\n"
                          "def compute_score(a, g, **k):\n    return 1.0\n")
    before = len(model_requests(s))
    code, _, err = cli("--benchmark", folder, "--mode", "both", "--out", os.path.join(tmp, "o-mv"),
                       env=s.env, port=s.port)
    assert code == 1 and '"math_verify_nope"' in err and "image" in err and '"default"' in err, err
    assert len(model_requests(s)) == before, "a model was called"


def test_full_run_scores_and_what_the_model_saw(s, tmp):
    folder = write_folder(tmp, "bench", ROWS)
    out = os.path.join(tmp, "o-full")
    before = len(model_requests(s))
    code, stdout, err = cli("--benchmark", folder, "--mode", "both", "--out", out, env=s.env, port=s.port)
    assert code == 0, (code, stdout[-1500:], err[-2000:])
    with open(os.path.join(out, "results.jsonl")) as f:
        lines = {(str(x["id"]), x["mode"]): x for x in map(json.loads, f) if x}
    want = {("r1", "sandbox"): 1, ("r2", "sandbox"): 0, ("3", "sandbox"): 0, ("r4", "sandbox"): 1,
            ("r1", "llm"): 0, ("r2", "llm"): 0, ("3", "llm"): 0, ("r4", "llm"): 0}
    # llm replies are "The answer is blue.": not an exact match of the folder's scorer
    for k, v in want.items():
        assert lines[k]["status"] == "ok" and lines[k]["score"] == v, (k, lines[k])
        assert "script: the scorer printed" in lines[k]["score_detail"], lines[k]
    # the empty answer is the official "", not what submit said
    assert lines[("3", "sandbox")]["answer"] in ("", None), lines[("3", "sandbox")]
    with open(os.path.join(out, "summary.json")) as f:
        summ = json.load(f)
    files = summ["benchmark"]["files"]
    assert set(files) == {"config.yaml", "reward.py", "vanilla_llm_prompt.py", "data.json"}, summ["benchmark"]
    import hashlib
    with open(os.path.join(folder, "reward.py"), "rb") as f:
        assert files["reward.py"] == hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(out, "summary.md")) as f:
        assert files["config.yaml"] in f.read()
    # what the model received
    reqs = model_requests(s)[before:]
    sandbox_first = [r for r in reqs if r.get("tools") and len(r["messages"]) == 2]
    llm = [r for r in reqs if not r.get("tools")]
    assert len(sandbox_first) == 4 and len(llm) == 4, (len(sandbox_first), len(llm))
    by_ps = {r["problem_statement"]: r for r in ROWS}
    for r in sandbox_first:
        sysm, user = r["messages"][0]["content"], r["messages"][1]["content"]
        row = next(v for k, v in by_ps.items() if k in user)
        system, instance = official_render(folder, row)
        assert sysm == system and user == instance, (sysm, user)
        assert r.get("temperature") == 1.0, r.get("temperature")  # the official CLI's default
        names = {t["function"]["name"] for t in r["tools"]}
        assert {"execute_bash", "str_replace_editor", "submit"} <= names, names
    for r in llm:
        assert r["messages"][0]["content"].startswith("VANILLA<"), r["messages"]
        assert len(r["messages"]) == 1 and r.get("temperature") == 1.0, r


def test_hostile_rows_at_the_service(s, tmp):
    """Rows the command passes on are checked again by the service as any
    dataset is: an input file named to escape its folder, or an id with a
    control character, refuses the dataset naming the row's folder
    (r0000002 is the data file's second row) and the field; no model is
    called. An input file whose content is null is left out, as the
    runner skips it, and the row runs."""
    before = len(model_requests(s))
    for name, bad, want in (("hostile-name", {"input_files": {"../../escape.txt": "x"}}, "../../escape.txt"),
                            ("hostile-id", {"id": "a\u0001b"}, "`id`")):
        row = {"id": "h2", "problem_statement": "p SANDBOX-ANSWER[x]", "ground_truth": "x", "weight": 7}
        row.update(bad)
        folder = write_folder(tmp, name, [dict(ROWS[0]), row])
        code, _, err = cli("--benchmark", folder, "--mode", "sandbox", "--out", os.path.join(tmp, "o-" + name),
                           env=s.env, port=s.port)
        assert code == 1 and want in err and "r0000002/row.json" in err, (name, code, err)
    assert len(model_requests(s)) == before, "a model was called"
    row = dict(ROWS[0], input_files={"gone.txt": None})
    out = os.path.join(tmp, "o-nullfile")
    code, _, err = cli("--benchmark", write_folder(tmp, "nullfile", [row]), "--mode", "sandbox", "--out", out,
                       env=s.env, port=s.port)
    assert code == 0, (code, err[-1500:])
    with open(os.path.join(out, "results.jsonl")) as f:
        line = json.loads(f.readline())
    assert line["status"] == "ok" and line["score"] == 1, line


def scorer_program(s, tmp, name, reward):
    """The scorer.py the command writes for a folder with this reward.py
    (the upload then fails: nothing listens at the port)."""
    folder = write_folder(tmp, name, ROWS, reward=reward)
    out = os.path.join(tmp, "o-" + name)
    cli("--benchmark", folder, "--mode", "sandbox", "--out", out, env=s.env, port=free_port())
    with open(os.path.join(out, "benchmark-dataset", "scorer.py")) as f:
        return f.read()


def score(s, program, answer="blue", timeout_s=10):
    row = {"official_row": dict(ROWS[0])}
    req = {"scorer": "script", "script": program, "answer": answer, "ground_truth": "blue", "row": row,
           "timeout_s": timeout_s}
    p = subprocess.run([LLMBOX, "score"], input=json.dumps(req).encode(), capture_output=True, env=s.env,
                       cwd=s.prefix, timeout=120)
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


def test_reward_misbehaving(s, tmp):
    good = scorer_program(s, tmp, "rw-good", REWARD_EXACT)
    o = score(s, good)
    assert o["score"] == 1 and o["error_class"] is None, o
    o = score(s, good, answer="  Blue \n")
    assert o["score"] == 1, o
    o = score(s, good, answer="green")
    assert o["score"] == 0 and o["error_class"] is None, o
    o = score(s, good, answer="")
    assert o["score"] == 0 and o["error_class"] is None, o
    cases = [
        ("raises", "def compute_score(a, g, **k):\n    raise RuntimeError('boom')\n", "scorer_error", "boom"),
        ("loops", "def compute_score(a, g, **k):\n    while True:\n        pass\n", "scorer_timeout", "time limit"),
        ("nan", "def compute_score(a, g, **k):\n    return float('nan')\n", "scorer_error", "nan"),
        ("two", "def compute_score(a, g, **k):\n    return 2.0\n", "scorer_error", "2.0"),
        ("text", "def compute_score(a, g, **k):\n    return 'high'\n", "scorer_error", "not a number"),
        ("none", "def compute_score(a, g, **k):\n    pass\n", "scorer_error", "NoneType"),
    ]
    for name, reward, cls, why in cases:
        o = score(s, scorer_program(s, tmp, "rw-" + name, reward), timeout_s=5)
        assert o["score"] is None and o["error_class"] == cls and why in o["detail"], (name, o)
    # what reward.py prints is not the score
    o = score(s, scorer_program(s, tmp, "rw-prints", "def compute_score(a, g, **k):\n    print('1.0')\n"
                                "    import os; os.write(1, b'1\\n')\n    return 0.0\n"))
    assert o["score"] == 0 and o["error_class"] is None, o


def main():
    rep = Reporter()
    tmp = tempfile.mkdtemp(prefix="llmbox-bench-")
    try:
        if yaml is None:
            print("SKIP benchmark_folder rendering: PyYAML (python3-yaml) is not installed")
        else:
            rep.run("prompts_byte_for_byte", test_prompts_byte_for_byte, tmp)
        rep.run("template_errors_named", test_template_errors_named, tmp)
        rep.run("bad_configs_refused", test_bad_configs_refused, tmp)
        rep.run("hostile_data_rows", test_hostile_data_rows, tmp)
        rep.run("published_dataset_needs_data", test_published_dataset_needs_data, tmp)
        if not image_ready():
            print("SKIP benchmark_folder sandbox cases: the sandbox image is not built (make image)")
        else:
            with Stack(scenario={"eval": True}) as s:
                rep.run("llm_prompt_from_create_prompt", test_llm_prompt_from_create_prompt, s, tmp)
                rep.run("missing_module_stops_before_any_model_call",
                        test_missing_module_stops_before_any_model_call, s, tmp)
                rep.run("reward_misbehaving", test_reward_misbehaving, s, tmp)
                rep.run("hostile_rows_at_the_service", test_hostile_rows_at_the_service, s, tmp)
                if yaml is not None:
                    rep.run("full_run_scores_and_what_the_model_saw", test_full_run_scores_and_what_the_model_saw,
                            s, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rep.done()


if __name__ == "__main__":
    main()
