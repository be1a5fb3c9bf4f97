"""Starts the real stack with the fake model's eval behaviour
(tests/fake_model.py, {"eval": true}) and runs evals_e2e.mjs in headless
Chromium against it: the Evaluations view from the form to the summary
table, the runs and their task links; then evals_bench_e2e.mjs: the view of
an official benchmark folder's run (llmbox eval --benchmark) names the
folder and its files' hashes. About 30 s."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from stack import LLMBOX, Stack, image_ready  # noqa: E402


def row(rid, domain, llm, sbx, gt):
    return {"id": rid, "domain": domain, "ground_truth": gt, "scorer": "numeric",
            "problem_statement": "Compute it. LLM-ANSWER[%s] SANDBOX-ANSWER[%s]" % (llm, sbx)}


# math: llm right on m1 only, sandbox on m1 and m2; chem: both right
ROWS = [row("m1", "math", 4, 4, "4"), row("m2", "math", 5, 4, "4"), row("m3", "math", 1, 2, "3"),
        row("c1", "chem", 7, 7, "7")]


def bench_page(s, tmp):
    """A benchmark folder in the official shape run with llmbox eval
    --benchmark, then its page view checked."""
    import hashlib
    d = os.path.join(tmp, "page-bench")
    os.makedirs(d)
    cfg = ('dataset: "json"\ndata_files: "page-bench/data.json"\nsystem_prompt: "Answer in {output_dir}/answer.txt"\n'
           'instance_prompt: "{problem_statement}"\n')
    with open(os.path.join(d, "config.yaml"), "w") as f:
        f.write(cfg)
    with open(os.path.join(d, "reward.py"), "w") as f:
        f.write("def compute_score(a, g, **k):\n    return 1.0 if a.strip() == g else 0.0\n")
    with open(os.path.join(d, "data.json"), "w") as f:
        json.dump([{"id": "b1", "problem_statement": "Say 4. LLM-ANSWER[4]", "ground_truth": "4"}], f)
    out = os.path.join(tmp, "bench-out")
    p = subprocess.run([LLMBOX, "eval", "--url", "http://127.0.0.1:%d" % s.port, "--benchmark", d, "--mode", "llm",
                        "--out", out], capture_output=True, text=True, timeout=300, env=s.env)
    if p.returncode:
        print("FAIL browser_bench_eval: %s" % p.stderr[-1500:])
        return p
    with open(os.path.join(out, "eval.json")) as f:
        eid = json.load(f)["id"]
    env = dict(os.environ, LLMBOX_TEST_BENCH_EVAL=eid,
               LLMBOX_TEST_BENCH_SHA=hashlib.sha256(cfg.encode()).hexdigest())
    return subprocess.run(["node", os.path.join(HERE, "evals_bench_e2e.mjs"), "http://127.0.0.1:%d/" % s.port],
                          cwd=HERE, timeout=120, env=env)


def main():
    if not image_ready():
        print("SKIP browser evals: the sandbox image is not built")
        return 0
    shots = os.environ.get("SHOTS") or os.path.join(HERE, "screenshots")
    os.makedirs(shots, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="llmbox-browser-evals-")
    good, bad = os.path.join(tmp, "set.jsonl"), os.path.join(tmp, "bad.jsonl")
    with open(good, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in ROWS))
    with open(bad, "w") as f:
        f.write(json.dumps(ROWS[0]) + "\n" + json.dumps({"id": "x", "domain": "math", "ground_truth": "1"}) + "\n")
    try:
        with Stack(scenario={"eval": True}) as s:
            env = dict(os.environ, SHOTS=shots, LLMBOX_TEST_DATASET=good, LLMBOX_TEST_BAD=bad)
            r = subprocess.run(["node", os.path.join(HERE, "evals_e2e.mjs"), "http://127.0.0.1:%d/" % s.port],
                               cwd=HERE, timeout=300, env=env)
            if r.returncode == 0:
                r = bench_page(s, tmp)
            if r.returncode:
                print(s.logs()[-4000:], file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
