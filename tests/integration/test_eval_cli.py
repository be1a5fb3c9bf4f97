"""`llmbox eval`, the command a researcher runs (the evaluation harness, docs/EVAL.md
"Running it"), end to end against the real stack and the fake model's
eval behaviour (tests/fake_model.py, {"eval": true}: LLM-ANSWER[x] is the
llm-mode reply, SANDBOX-ANSWER[x] what sandbox mode writes to the answer
file; every reply's token counts are a function of the request).

- both modes on a small set whose right and wrong answers are known: the
  exit status, the files of --out, and the summary's accuracy per domain
  and mode, Δ and token ratio, the ratio recomputed independently from
  the requests the fake model received;
- a bad dataset: the file, line and field named, exit 1, no model call;
- Ctrl-C in the middle: exit 130, the finished runs kept in --out; the
  same command again runs only the rest (counted at the fake model);
- the same --out with other options is refused, not mixed;
- the folder form (row.json + binary files) packed and run;
- no service: a sentence saying so."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, ".."))
from stack import LLMBOX, REPO, Reporter, Stack, image_ready  # noqa: E402
import fake_model  # noqa: E402

# (id, domain, scorer, ground truth, llm answer, sandbox answer)
ROWS = [
    ("m1", "math", "numeric", "12", "12", "12"),
    ("m2", "math", "numeric", "7", "8", "7"),
    ("c1", "chem", "choice", "B", "B", "C"),
    ("c2", "chem", "choice", "D", "A", "D"),
    ("l1", "long_context", "exact", "blue", "blue", "blue"),
]
# exact is strict: the llm reply "The answer is blue." is not "blue"
SCORES = {("m1", "llm"): 1, ("m1", "sandbox"): 1, ("m2", "llm"): 0, ("m2", "sandbox"): 1,
          ("c1", "llm"): 1, ("c1", "sandbox"): 0, ("c2", "llm"): 0, ("c2", "sandbox"): 1,
          ("l1", "llm"): 0, ("l1", "sandbox"): 1}
# llm: math 1/2, chem 1/2, long_context 0/1 -> 2/5; sandbox: 2/2, 1/2, 1/1 -> 4/5
WANT = {"math": (50, 100), "chem": (50, 50), "long_context": (0, 100)}
WANT_OVERALL = (40, 80)


def write_dataset(path, rows, extra=None):
    with open(path, "w") as f:
        for rid, dom, scorer, gt, la, sa in rows:
            r = {"id": rid, "domain": dom, "scorer": scorer, "ground_truth": gt,
                 "problem_statement": "Question %s. LLM-ANSWER[%s] SANDBOX-ANSWER[%s]" % (rid, la, sa)}
            if dom == "long_context":
                r["input_files"] = {"a.txt": "the sky is blue\n", "b.txt": "grass is green\n"}
            f.write(json.dumps(r) + "\n")
        for line in extra or []:
            f.write(line + "\n")


def run_cli(s, *args, timeout=300):
    argv = [LLMBOX, "eval", "--url", "http://127.0.0.1:%d" % s.port] + list(args)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def model_requests(s):
    """The request bodies the fake model received, in order."""
    out = []
    n = 1
    while True:
        p = os.path.join(s.model_log, "request-%04d.json" % n)
        if not os.path.exists(p):
            return out
        with open(p) as f:
            out.append(f.read())
        n += 1


class _State:
    ctx_seen = set()


def expected_token_ratio(bodies):
    """Σ sandbox trajectory tokens / Σ llm trajectory tokens, from what the
    fake model answered: an llm run is its one request; a sandbox run's
    trajectory is its last request (the finish call) and its answer."""
    llm = sbx = 0
    for b in bodies:
        step, match, turn = fake_model.eval_step(_State(), b)
        u = step["usage"]
        if match == "eval-llm":
            llm += u["prompt_tokens"] + u["completion_tokens"]
        elif turn == 1:
            sbx += u["prompt_tokens"] + u["completion_tokens"]
    return sbx / llm


def test_both_modes_exact_summary(s, tmp):
    ds = os.path.join(tmp, "set.jsonl")
    write_dataset(ds, ROWS)
    out = os.path.join(tmp, "out-both")
    code, stdout, stderr = run_cli(s, "--data", ds, "--mode", "both", "--out", out, "--concurrency", "4",
                                   "--layout", "official")
    assert code == 0, (code, stdout[-2000:], stderr[-2000:])
    for f in ("results.jsonl", "summary.json", "summary.md", "eval.json"):
        assert os.path.getsize(os.path.join(out, f)) > 0, f
    with open(os.path.join(out, "results.jsonl")) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    assert len(lines) == 10 and all(x["status"] == "ok" for x in lines), lines
    assert {(x["id"], x["mode"]) for x in lines} == {(r[0], m) for r in ROWS for m in ("llm", "sandbox")}
    for x in lines:
        want = dict((r[0], r) for r in ROWS)[x["id"]]
        assert x["score"] == SCORES[(x["id"], x["mode"])], x
        assert x["task_id"] and x["wall_ms"] > 0 and x["scorer"] == want[2], x
    with open(os.path.join(out, "summary.json")) as f:
        summ = json.load(f)
    for dom, (l, sb) in WANT.items():
        g = summ["domains"][dom]
        assert abs(g["llm"]["accuracy"] - l) < 1e-6 and abs(g["sandbox"]["accuracy"] - sb) < 1e-6, (dom, g)
        assert abs(g["delta"] - (sb - l)) < 1e-6, (dom, g)
    ov = summ["overall"]
    assert abs(ov["llm"]["accuracy"] - WANT_OVERALL[0]) < 1e-6, ov
    assert abs(ov["sandbox"]["accuracy"] - WANT_OVERALL[1]) < 1e-6, ov
    assert abs(ov["delta"] - 40) < 1e-6, ov
    bodies = model_requests(s)
    assert len(bodies) == 5 + 2 * 5, len(bodies)  # one request a llm run, two a sandbox run
    want_ratio = expected_token_ratio(bodies)
    assert abs(summ["tokens"]["ratio"] - round(want_ratio, 4)) < 1e-4, (summ["tokens"], want_ratio)
    assert 0 < summ["env_token_share"] < 1 and 0 < summ["exec_time_share"] < 1, summ
    assert summ["qpm"]["llm"] and summ["qpm"]["sandbox"], summ["qpm"]
    # the command printed the tables a person reads
    assert "| math" in stdout and "Table 5" in stdout, stdout[:1500]
    assert "done: results in" in stderr, stderr[-500:]


def test_bad_dataset_names_line_and_field(s, tmp):
    ds = os.path.join(tmp, "bad.jsonl")
    write_dataset(ds, ROWS[:1], extra=['{"id": "x2", "domain": "math", "ground_truth": "1"}'])
    before = len(model_requests(s))
    code, stdout, stderr = run_cli(s, "--data", ds, "--mode", "both", "--out", os.path.join(tmp, "out-bad"))
    assert code == 1, (code, stderr)
    assert "bad.jsonl:2" in stderr and "problem_statement" in stderr, stderr
    assert len(model_requests(s)) == before, "a model was called for a bad dataset"


def test_same_out_other_options_refused(s, tmp):
    ds = os.path.join(tmp, "set.jsonl")
    code, _, stderr = run_cli(s, "--data", ds, "--mode", "llm", "--out", os.path.join(tmp, "out-both"))
    assert code == 2 and "other options" in stderr, (code, stderr)


def test_folder_form(s, tmp):
    before = len(model_requests(s))
    out = os.path.join(tmp, "out-folder")
    code, stdout, stderr = run_cli(s, "--data", os.path.join(REPO, "examples", "eval", "folder-demo"),
                                   "--mode", "sandbox", "--out", out)
    assert code == 0, (code, stderr[-2000:])
    with open(os.path.join(out, "results.jsonl")) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    assert len(lines) == len(os.listdir(os.path.join(REPO, "examples", "eval", "folder-demo"))) - \
        sum(1 for n in os.listdir(os.path.join(REPO, "examples", "eval", "folder-demo"))
            if not os.path.isdir(os.path.join(REPO, "examples", "eval", "folder-demo", n))), lines
    assert all(x["status"] in ("ok", "failed") and x["task_id"] for x in lines), lines
    assert len(model_requests(s)) > before


def test_ctrl_c_keeps_finished_and_resume_runs_the_rest(s, tmp):
    rows = [("r%d" % i, "math", "numeric", str(i), str(i), str(i)) for i in range(8)]
    ds = os.path.join(tmp, "slow.jsonl")
    write_dataset(ds, rows)
    out = os.path.join(tmp, "out-slow")
    argv = [LLMBOX, "eval", "--url", "http://127.0.0.1:%d" % s.port, "--data", ds, "--mode", "llm",
            "--concurrency", "1", "--out", out]
    before = len(model_requests(s))
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the fake model takes 1 s a request: let a few runs finish
    deadline = time.time() + 60
    while time.time() < deadline and len(model_requests(s)) - before < 4:
        time.sleep(0.2)
    # the eval's agent runs at a lower priority than people's (nice 10)
    nices = agent_nices(s)
    assert nices and all(n == 10 for n in nices.values()), nices
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, stderr[-1500:])
    assert "Run the same command again" in stderr, stderr[-1500:]
    with open(os.path.join(out, "results.jsonl")) as f:
        first = [json.loads(x) for x in f if x.strip()]
    kept = [x for x in first if x["status"] == "ok"]
    assert 2 <= len(kept) < 8, first
    # the run stopped by the cancel is there, marked, and runs again below
    assert all(x["status"] == "ok" or x["error_class"] == "cancelled" for x in first), first
    asked_first = len(model_requests(s)) - before
    # again, the same command: only the rest runs
    code, stdout, stderr = run_cli(s, *argv[4:])
    assert code == 0, (code, stderr[-1500:])
    assert "resuming" in stderr, stderr
    with open(os.path.join(out, "results.jsonl")) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    assert len(lines) == 8 and all(x["status"] == "ok" and x["score"] == 1 for x in lines), lines
    asked_second = len(model_requests(s)) - before - asked_first
    assert asked_second == 8 - len(kept), (asked_first, asked_second, len(kept))
    with open(os.path.join(out, "summary.json")) as f:
        assert json.load(f)["overall"]["llm"]["accuracy"] == 100


def agent_nices(s):
    """{pid: nice} of the agents running a task of this stack's web."""
    web = s.pid("web")
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%s/stat" % pid) as f:
                st = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # "agent [--spare] --task ID": a task's agent (an idle spare shows dots)
        idle_spare = any(a.startswith(b"....") for a in argv)
        if b"agent" in argv[1:2] and b"--task" in argv and not idle_spare and int(st[1]) == web:
            out[int(pid)] = int(st[16])
    return out


def test_no_service(tmp):
    ds = os.path.join(tmp, "set.jsonl")
    p = subprocess.run([LLMBOX, "eval", "--url", "http://127.0.0.1:9", "--data", ds, "--mode", "llm",
                        "--out", os.path.join(tmp, "out-none")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "cannot reach the service" in p.stderr and "make run" in p.stderr, p.stderr


def main():
    if not image_ready():
        print("SKIP eval_cli: the sandbox image is not built (make image)")
        return
    rep = Reporter()
    tmp = tempfile.mkdtemp(prefix="llmbox-evalcli-")
    try:
        with Stack(scenario={"eval": True}) as s:
            rep.run("both_modes_exact_summary", test_both_modes_exact_summary, s, tmp)
            rep.run("bad_dataset_names_line_and_field", test_bad_dataset_names_line_and_field, s, tmp)
            rep.run("same_out_other_options_refused", test_same_out_other_options_refused, s, tmp)
            rep.run("folder_form", test_folder_form, s, tmp)
        with Stack(scenario={"eval": True}, model_args=["--delay-ms", "1000"]) as s:
            rep.run("ctrl_c_keeps_finished_and_resume_runs_the_rest",
                    test_ctrl_c_keeps_finished_and_resume_runs_the_rest, s, tmp)
        rep.run("no_service", test_no_service, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rep.done()


if __name__ == "__main__":
    main()
