"""The evaluations API (the evaluation harness, docs/API.md "Evaluations"): a bad
dataset refused with file, line and field before any model call,
duplicate ids, a row that cannot run reported while the others run, an
eval in both modes scored row by row, results.jsonl and summary.md,
cancel, delete, resume from a results.jsonl, the slots kept for people's
tasks while an eval holds all it may, and a web restart in the middle.

Against the real stack with the fake model's eval behaviour
(tests/fake_model.py, {"eval": true}): LLM-ANSWER[x] is the llm-mode
reply, SANDBOX-ANSWER[x] what sandbox mode writes to the answer file."""
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, Reporter, Skip, Stack, image_ready, multipart  # noqa: E402

FINAL = ("succeeded", "failed", "cancelled")


def jsonl(rows):
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def row(rid, llm, sbx, gt="4", domain="math", **extra):
    r = {"id": rid, "domain": domain, "ground_truth": gt, "scorer": "numeric",
         "problem_statement": "Compute it. LLM-ANSWER[%s] SANDBOX-ANSWER[%s]" % (llm, sbx)}
    r.update(extra)
    return r


def post_eval(s, data, fname="set.jsonl", resume=None, **fields):
    files = [("dataset", fname, data)]
    if resume is not None:
        files.append(("resume", "results.jsonl", resume))
    f = {}
    f.update(fields)
    ctype, body = multipart(f, files)
    st, _, resp = s.request("POST", "/api/evals", body, {"Content-Type": ctype})
    return st, json.loads(resp) if resp else None


def wait_eval(s, eid, timeout=180, until=None):
    deadline = time.time() + timeout
    e = None
    while time.time() < deadline:
        st, e = s.get_json("/api/evals/%s?limit=1000" % eid)
        assert st == 200, (st, e)
        if (until or (lambda x: x["status"] in FINAL))(e):
            return e
        time.sleep(0.2)
    raise AssertionError("eval %s: not there after %ss: %s" % (eid, timeout, json.dumps(e)[:2000]))


def model_requests(s):
    p = os.path.join(s.model_log, "requests.jsonl")
    if not os.path.exists(p):
        return 0
    with open(p) as f:
        return sum(1 for line in f if line.strip())


def by_key(runs):
    return {(r["id"], r["mode"], r["repeat"]): r for r in runs}


# ---- refusals before anything runs --------------------------------------------

def test_bad_dataset_refused_before_any_model_call(s):
    data = jsonl([row("a", 4, 4), {"id": "b", "domain": "math", "ground_truth": "1"}, row("c", 4, 4)])
    st, e = post_eval(s, data, fname="bad.jsonl", mode="both")
    assert st == 400, (st, e)
    assert e["file"] == "bad.jsonl", e
    assert e["line"] == 2, e
    assert e["field"] == "problem_statement", e
    assert "bad.jsonl:2" in e["error"]["message"], e
    # not stored, nothing ran, nothing left on disk
    st, lst = s.get_json("/api/evals")
    assert st == 200 and lst["evals"] == [], lst
    assert model_requests(s) == 0
    assert os.listdir(os.path.join(s.prefix, "var", "web", "evals")) == []
    # a syntax error names its line too; a mode that does not exist is a plain 400
    st, e = post_eval(s, b'{"id": "a"}\n{not json\n', fname="broken.jsonl")
    assert st == 400 and e["line"] in (1, 2) and e["file"] == "broken.jsonl", e
    st, e = post_eval(s, jsonl([row("a", 4, 4)]), mode="fast")
    assert st == 400 and "mode" in e["error"]["message"], e
    st, e = post_eval(s, jsonl([row("a", 4, 4)]), fname="set.csv")
    assert st == 400 and e["error"]["code"] == "bad_dataset", e
    st, e = post_eval(s, jsonl([row("a", 4, 4)]), repeats="65")
    assert st == 400 and "repeats" in e["error"]["message"], e
    assert model_requests(s) == 0


def test_duplicate_ids_refused(s):
    st, e = post_eval(s, jsonl([row("a", 4, 4), row("b", 4, 4), row("a", 1, 1)]), fname="dup.jsonl")
    assert st == 400, (st, e)
    assert e["line"] == 3 and e["field"] == "id", e
    assert "dup" in e["error"]["message"] or "twice" in e["error"]["message"] or "duplicate" in \
        e["error"]["message"].lower(), e
    assert model_requests(s) == 0


# ---- an eval in both modes --------------------------------------------------------

def test_both_modes_score_each_row_and_report_the_row_that_cannot_run(s, shared):
    before = model_requests(s)
    rows = [row("r1", 4, 4), row("r2", 5, 4), row("r3", 4, 4, scorer="no-such-scorer"), row("r4", 7, 9, gt="7")]
    st, e = post_eval(s, jsonl(rows), mode="both", concurrency="4", layout="official", name="mix")
    assert st == 201, (st, e)
    assert e["rows"] == 4 and e["runs"] == 8, e
    assert [x["id"] for x in e["row_errors"]] == ["r3"], e
    eid = e["id"]
    done = wait_eval(s, eid)
    assert done["status"] == "succeeded", done
    assert done["name"] == "mix"
    p = done["progress"]
    assert p["total"] == 8 and p["done"] == 6 and p["skipped"] == 2 and p["error"] == 0 and p["pending"] == 0, p
    runs = by_key(done["runs"])
    assert len(runs) == 8
    want = {("r1", "llm"): 1, ("r1", "sandbox"): 1, ("r2", "llm"): 0, ("r2", "sandbox"): 1,
            ("r4", "llm"): 1, ("r4", "sandbox"): 0}
    for (rid, mode), score in want.items():
        r = runs[(rid, mode, 0)]
        assert r["status"] == "done" and r["score"] == score, r
        assert r["scorer"] == "numeric" and r["domain"] == "math", r
        assert r["task_id"], r
    assert runs[("r1", "llm", 0)]["answer"].startswith("The answer is 4"), runs[("r1", "llm", 0)]
    assert runs[("r2", "sandbox", 0)]["answer"] == "4", runs[("r2", "sandbox", 0)]
    for mode in ("llm", "sandbox"):
        r = runs[("r3", mode, 0)]
        assert r["status"] == "skipped" and r["score"] is None and r["task_id"] is None, r
        assert "scorer" in (r["error"] or ""), r
    # the run's task is an ordinary task with the run's options
    t = runs[("r2", "sandbox", 0)]["task_id"]
    st, task = s.get_json("/api/tasks/" + t)
    assert st == 200 and task["options"]["mode"] == "sandbox" and task["options"]["layout"] == "official", task
    t = runs[("r2", "llm", 0)]["task_id"]
    st, task = s.get_json("/api/tasks/" + t)
    assert st == 200 and task["options"]["mode"] == "llm", task
    # results.jsonl in row order, one line per run
    st, h, body = s.request("GET", "/api/evals/%s/results.jsonl" % eid)
    assert st == 200 and h["content-type"].startswith("application/x-ndjson"), (st, h)
    lines = [json.loads(x) for x in body.decode().splitlines()]
    assert [(x["id"], x["mode"]) for x in lines] == [
        ("r1", "llm"), ("r1", "sandbox"), ("r2", "llm"), ("r2", "sandbox"),
        ("r3", "llm"), ("r3", "sandbox"), ("r4", "llm"), ("r4", "sandbox")], lines
    assert lines[1]["task_id"] and lines[1]["turns"] >= 1 and lines[1]["wall_ms"] > 0, lines[1]
    assert lines[4]["status"] == "skipped" and lines[4]["error_class"] == "bad_row", lines[4]
    # Appendix D: the sandbox runs' turns were counted, the llm runs have none
    assert lines[1]["capabilities"] and lines[1]["capabilities"]["turns"] == 2, lines[1]
    assert lines[0]["capabilities"] is None, lines[0]
    # the summary: per mode accuracy over the rows that ran (r1, r2, r4)
    summ = done["summary"]
    assert summ, done
    # llm: r1 1, r2 0, r4 1; sandbox: r1 1, r2 1, r4 0; r3 left out, counted as skipped
    ov = summ["overall"]
    assert abs(ov["llm"]["accuracy"] - 66.6667) < 1e-3 and abs(ov["sandbox"]["accuracy"] - 66.6667) < 1e-3, ov
    assert ov["llm"]["n"] == 3 and ov["llm"]["skipped"] == 1 and ov["sandbox"]["skipped"] == 1, ov
    assert abs(ov["delta"]) < 1e-9, ov
    st, h, md = s.request("GET", "/api/evals/%s/summary.md" % eid)
    assert st == 200 and h["content-type"].startswith("text/markdown") and b"|" in md, (st, md[:300])
    # model requests: 3 llm (one each) + 3 sandbox (two turns each); none for r3
    assert model_requests(s) - before == 3 + 6, model_requests(s) - before
    # it is in the owner's list
    st, lst = s.get_json("/api/evals")
    assert any(x["id"] == eid and x["status"] == "succeeded" for x in lst["evals"]), lst
    shared["results"] = body
    shared["eval"] = eid


def test_resume_imports_finished_lines(s, shared):
    if "results" not in shared:
        raise Skip("needs the both-modes eval's results")
    before = model_requests(s)
    rows = [row("r1", 4, 4), row("r2", 5, 4), row("r3", 4, 4, scorer="no-such-scorer"), row("r4", 7, 9, gt="7"),
            row("r5", 3, 3, gt="3")]
    # r4's sandbox line is left out: it is run again; r3's error lines are not finished: the row errs again
    prev = b"\n".join(x for x in shared["results"].splitlines()
                      if not (b'"r4"' in x and b'"sandbox"' in x)) + b"\n"
    st, e = post_eval(s, jsonl(rows), resume=prev, mode="both", concurrency="4")
    assert st == 201, (st, e)
    assert e["runs"] == 10 and e["resumed"] == 5, e
    done = wait_eval(s, e["id"])
    assert done["status"] == "succeeded", done
    runs = by_key(done["runs"])
    assert runs[("r5", "llm", 0)]["score"] == 1 and runs[("r5", "sandbox", 0)]["score"] == 1
    assert runs[("r4", "sandbox", 0)]["score"] == 0 and runs[("r4", "sandbox", 0)]["task_id"]
    # the resumed runs keep the tasks of the eval they came from
    assert runs[("r1", "llm", 0)]["task_id"] == by_key(s.get_json(
        "/api/evals/%s?limit=1000" % shared["eval"])[1]["runs"])[("r1", "llm", 0)]["task_id"]
    # r5 both modes (1 + 2 requests) and r4's sandbox run (2): nothing else ran again
    assert model_requests(s) - before == 5, model_requests(s) - before
    # a resume line that does not read names its line
    st, e = post_eval(s, jsonl(rows), resume=b'{"id":"r1","mode":"llm","status":"ok"}\nnot json\n')
    assert st == 400 and e["file"] == "resume" and e["line"] == 2, e


def test_judge_down_is_an_error_not_a_zero(s):
    r = row("j1", 4, 4, scorer="judge")
    st, e = post_eval(s, jsonl([r]), mode="llm", judge_model="down")
    assert st == 201, (st, e)
    done = wait_eval(s, e["id"])
    run = done["runs"][0]
    assert run["status"] == "error" and run["score"] is None, run
    assert run["error_class"] == "judge_unavailable" and run["scorer"] == "judge", run
    assert done["progress"]["error"] == 1 and done["summary"]["overall"]["llm"]["errors"] == 1, done["progress"]
    # a judge that is not configured is refused up front
    st, e = post_eval(s, jsonl([r]), mode="llm", judge_model="nobody")
    assert st == 400 and "judge_model" in e["error"]["message"], (st, e)


def test_delete(s, shared):
    if "eval" not in shared:
        raise Skip("needs the both-modes eval")
    eid = shared["eval"]
    st, _, body = s.request("DELETE", "/api/evals/" + eid)
    assert st == 200 and json.loads(body)["deleted"], body
    st, e = s.get_json("/api/evals/" + eid)
    assert st == 404, (st, e)
    st, _, _ = s.request("GET", "/api/evals/%s/results.jsonl" % eid)
    assert st == 404
    assert not os.path.exists(os.path.join(s.prefix, "var", "web", "evals", eid))
    st, e = s.get_json("/api/evals/" + "0" * 32)
    assert st == 404
    st, e = s.get_json("/api/evals/nothex")
    assert st == 404


def test_folder_form_archive_reaches_the_sandbox(s):
    # one enclosing folder, a row per sub-folder with row.json and files/;
    # the fake model answers with the input file's content, so a right
    # answer proves the file was in the layout's input folder
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        def add(name, data):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
        for rid, value in (("f1", b"42"), ("f2", b"17")):
            add("set/%s/row.json" % rid, json.dumps({
                "id": rid, "domain": "physics", "scorer": "numeric", "ground_truth": value.decode(),
                "problem_statement": "Read the input. ANSWER-FROM-INPUT[value.bin]"}).encode())
            add("set/%s/files/value.bin" % rid, value)
    st, e = post_eval(s, buf.getvalue(), fname="set.tar.gz", mode="sandbox", layout="official")
    assert st == 201 and e["rows"] == 2 and e["row_errors"] == [], (st, e)
    done = wait_eval(s, e["id"])
    assert done["status"] == "succeeded", done
    for r in done["runs"]:
        assert r["score"] == 1 and r["domain"] == "physics", r
        st, task = s.get_json("/api/tasks/" + r["task_id"])
        assert [i["path"] for i in task["inputs"]] == ["value.bin"], task["inputs"]
    # a bad row.json inside an archive is named by the archive and its path in it
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        data = json.dumps({"id": "g1", "problem_statement": "x", "ground_truth": "1"}).encode()
        ti = tarfile.TarInfo("set/g1/row.json")
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    st, e = post_eval(s, buf.getvalue(), fname="bad.tar.gz")
    assert st == 400 and e["file"] == "bad.tar.gz:g1/row.json" and e["field"] == "domain", (st, e)
    assert "/var/" not in e["error"]["message"], e
    # an archive with a link in it is refused whole, naming the problem
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        ti = tarfile.TarInfo("set/f1/files/x")
        ti.type = tarfile.SYMTYPE
        ti.linkname = "/etc/passwd"
        t.addfile(ti)
    st, e = post_eval(s, buf.getvalue(), fname="evil.tar.gz")
    assert st == 400 and "link" in e["error"]["message"], (st, e)


def test_upload_over_the_cap_is_413(s):
    # this stack has eval_max_upload_mb = 2 and eval_max_rows = 50
    big = jsonl([row("b%d" % i, 4, 4, pad="x" * 1000) for i in range(3000)])
    assert len(big) > 2 << 20
    st, e = post_eval(s, big)
    assert st == 413, (st, e)
    # and eval_max_rows = 50
    st, e = post_eval(s, jsonl(slow_rows(51, "n")), fname="many.jsonl")
    assert st == 413 and e["file"] == "many.jsonl" and e["line"] == 51, (st, e)


# ---- with a slow model: cancel, the reserve, a restart ---------------------------

def slow_rows(n, prefix="s"):
    return [row("%s%d" % (prefix, i), 4, 4) for i in range(n)]


def test_cancel_keeps_what_finished(s):
    st, e = post_eval(s, jsonl(slow_rows(6, "c")), mode="llm", concurrency="1")
    assert st == 201, (st, e)
    eid = e["id"]
    wait_eval(s, eid, until=lambda x: x["progress"]["done"] >= 1)
    st, _, body = s.request("POST", "/api/evals/%s/cancel" % eid)
    assert st == 202 and json.loads(body)["status"] == "cancelled", (st, body)
    # the run that was going ends (cancelled) and is recorded; nothing new starts
    e = wait_eval(s, eid, until=lambda x: x["progress"]["running"] == 0 and x["progress"]["scoring"] == 0)
    assert e["status"] == "cancelled", e
    p = e["progress"]
    assert p["pending"] == 0 and p["skipped"] >= 3 and p["done"] >= 1, p
    assert p["done"] + p["skipped"] + p["error"] == 6, p
    done = [r for r in e["runs"] if r["status"] == "done"]
    assert any(r["score"] == 1 for r in done), done
    # the run that was stopped is recorded as failed, and says why
    stopped = [r for r in done if r["result_status"] == "failed"]
    assert stopped and all(r["error_class"] == "cancelled" and r["score"] == 0 for r in stopped), done
    assert e["summary"]["overall"]["llm"]["runs"] == p["done"], e["summary"]
    st, _, body = s.request("POST", "/api/evals/%s/cancel" % eid)
    assert st == 409, (st, body)
    st, _, body = s.request("GET", "/api/evals/%s/results.jsonl" % eid)
    assert st == 200 and len(body.splitlines()) == p["done"] + p["error"], body


def test_failed_task_scores_zero_and_says_why(s):
    # the model takes 1.5 s; the task may take 1
    st, e = post_eval(s, jsonl(slow_rows(1, "t")), mode="llm", timeout_s="1")
    assert st == 201, (st, e)
    done = wait_eval(s, e["id"])
    assert done["status"] == "succeeded", done
    r = done["runs"][0]
    assert r["status"] == "done" and r["result_status"] == "failed", r
    assert r["score"] == 0 and r["error_class"] == "timeout" and "time limit" in r["error"], r
    assert done["progress"]["failed"] == 1, done["progress"]
    llm = done["summary"]["overall"]["llm"]
    assert llm["accuracy"] == 0 and llm["failed"] == 1, llm


def test_reserve_keeps_slots_for_people(s):
    # max_tasks 4, eval_reserve_slots 2: an eval of concurrency 8 holds 2
    st, e = post_eval(s, jsonl(slow_rows(8, "q")), mode="llm", concurrency="8")
    assert st == 201, (st, e)
    eid = e["id"]
    peak = 0
    deadline = time.time() + 20
    while time.time() < deadline:
        st, x = s.get_json("/api/evals/" + eid)
        peak = max(peak, x["progress"]["running"])
        if x["progress"]["running"] >= 2:
            break
        time.sleep(0.1)
    assert peak == 2, peak
    # a person's task is admitted at once, and so is a second one
    st, t1 = s.create_task("a person's question LLM-ANSWER[1]")
    assert st == 201, (st, t1)
    st, t2 = s.create_task("another one LLM-ANSWER[2]")
    assert st == 201, (st, t2)
    for _ in range(10):
        st, x = s.get_json("/api/evals/" + eid)
        assert x["progress"]["running"] <= 2, x["progress"]
        time.sleep(0.1)
    s.request("POST", "/api/evals/%s/cancel" % eid)
    s.wait_task(t1["id"])
    s.wait_task(t2["id"])


def test_web_restart_resumes_runs(s):
    st, e = post_eval(s, jsonl(slow_rows(4, "w")), mode="llm", concurrency="2")
    assert st == 201, (st, e)
    eid = e["id"]
    wait_eval(s, eid, until=lambda x: x["progress"]["running"] == 2)
    s.kill("web", signal.SIGKILL)
    s.restart("web")
    done = wait_eval(s, eid)
    assert done["status"] == "succeeded", done
    p = done["progress"]
    assert p["done"] == 4 and p["error"] == 0, p
    assert all(r["score"] == 1 for r in done["runs"]), done["runs"]


def new_user(name):
    out = subprocess.check_output([LLMBOX, "user", "add", name], text=True,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_CONF": "/dev/null"})
    tok = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("lbx_")][0]
    hsh = [ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("token_sha256 =")][0]
    return tok, hsh


def test_owner_only_and_users_limits(s, ta, tb):
    def call(tok, method, path, body=None, ctype=None):
        h = {"Authorization": "Bearer " + tok}
        if ctype:
            h["Content-Type"] = ctype
        st, _, resp = s.request(method, path, body, h)
        return st, json.loads(resp) if resp else None
    ctype, body = multipart({"mode": "llm", "concurrency": "9"}, [("dataset", "a.jsonl", jsonl([row("a", 4, 4)]))])
    st, e = call(ta, "POST", "/api/evals", body, ctype)
    # alice may have 2 tasks at once: an eval may not run more
    assert st == 400 and "concurrency" in e["error"]["message"] and "2" in e["error"]["message"], (st, e)
    ctype, body = multipart({"mode": "llm", "concurrency": "2"}, [("dataset", "a.jsonl", jsonl([row("a", 4, 4)]))])
    st, e = call(ta, "POST", "/api/evals", body, ctype)
    assert st == 201, (st, e)
    eid = e["id"]
    st, x = call(tb, "GET", "/api/evals/" + eid)
    assert st == 404, (st, x)
    st, x = call(tb, "GET", "/api/evals")
    assert st == 200 and x["evals"] == [], x
    st, x = call(tb, "POST", "/api/evals/%s/cancel" % eid)
    assert st == 404, (st, x)
    st, x = call(tb, "DELETE", "/api/evals/" + eid)
    assert st == 404, (st, x)
    st, _, _ = s.request("GET", "/api/evals")
    assert st == 401
    deadline = time.time() + 60
    while time.time() < deadline:
        st, x = call(ta, "GET", "/api/evals/" + eid)
        if x["status"] == "succeeded":
            break
        time.sleep(0.2)
    assert x["status"] == "succeeded" and x["runs"][0]["score"] == 1, x
    # the run's task is alice's: hers to open, not bob's
    tid = x["runs"][0]["task_id"]
    assert call(ta, "GET", "/api/tasks/" + tid)[0] == 200
    assert call(tb, "GET", "/api/tasks/" + tid)[0] == 404


def main():
    if not image_ready():
        print("SKIP evals_api: the sandbox image is not built (make image)")
        return
    rep = Reporter()
    shared = {}
    # a judge model that answers nothing (port 9: discard, closed here)
    conf = '[model "down"]\nbase_url = http://127.0.0.1:9/v1\nmodel = judge\n'
    with Stack(scenario={"eval": True}, conf=conf) as s:
        rep.run("bad_dataset_refused_before_any_model_call", test_bad_dataset_refused_before_any_model_call, s)
        rep.run("duplicate_ids_refused", test_duplicate_ids_refused, s)
        rep.run("both_modes_score_each_row_and_report_the_row_that_cannot_run",
                test_both_modes_score_each_row_and_report_the_row_that_cannot_run, s, shared)
        rep.run("resume_imports_finished_lines", test_resume_imports_finished_lines, s, shared)
        rep.run("judge_down_is_an_error_not_a_zero", test_judge_down_is_an_error_not_a_zero, s)
        rep.run("delete", test_delete, s, shared)
        rep.run("folder_form_archive_reaches_the_sandbox", test_folder_form_archive_reaches_the_sandbox, s)
    env = {"LLMBOX_MAX_TASKS": "4", "LLMBOX_EVAL_RESERVE_SLOTS": "2", "LLMBOX_AGENT_SPARE": "0",
           "LLMBOX_EVAL_MAX_UPLOAD_MB": "2", "LLMBOX_EVAL_MAX_ROWS": "50"}
    with Stack(scenario={"eval": True}, model_args=["--delay-ms", "1500"], env=env) as s:
        rep.run("cancel_keeps_what_finished", test_cancel_keeps_what_finished, s)
        rep.run("failed_task_scores_zero_and_says_why", test_failed_task_scores_zero_and_says_why, s)
        rep.run("reserve_keeps_slots_for_people", test_reserve_keeps_slots_for_people, s)
        rep.run("web_restart_resumes_runs", test_web_restart_resumes_runs, s)
        rep.run("upload_over_the_cap_is_413", test_upload_over_the_cap_is_413, s)
    (ta, ha), (tb, hb) = new_user("alice"), new_user("bob")
    conf = '[user "alice"]\ntoken_sha256 = %s\nmax_tasks = 2\n[user "bob"]\ntoken_sha256 = %s\n' % (ha, hb)
    with Stack(scenario={"eval": True}, conf=conf) as s:
        rep.run("owner_only_and_users_limits", test_owner_only_and_users_limits, s, ta, tb)
    rep.done()


if __name__ == "__main__":
    main()
