#!/usr/bin/env python3
"""Follow-ups: time from "send" (POST /api/tasks/{id}/messages)
to the model's first request of the new round, with the sandbox kept
(adopted and thawed) and with it restored from the state saved at the end
of the last round, for a /testbed of 50 MB; the time the save adds at the
end of a round; the memory of a kept, frozen sandbox. The real stack
(nginx, web, agents, sandboxd as root) and tests/fake_model.py, which
stamps each request's arrival (requests.jsonl).

    python3 bench/followups.py [--mb 50] [--runs 3]
"""
import argparse
import glob
import json
import os
import re
import sqlite3
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from stack import Stack, image_ready, multipart  # noqa: E402


def bash(cmd):
    return {"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]}


def finish(a):
    return {"tool_calls": [{"name": "finish", "arguments": {"answer": a}}]}


def scenario(mb, runs):
    # half incompressible, half text: a dataset and the code that made it
    make = ("mkdir -p /testbed/data && head -c %dM /dev/urandom > /testbed/data/random.bin && "
            "yes 'row,1.5,2.5,label' | head -c %dM > /testbed/data/rows.csv && du -sh /testbed" % (mb // 2, mb - mb // 2))
    steps = [bash(make), finish("made"), bash("du -sh /testbed"), finish("kept"), bash("du -sh /testbed"),
             finish("restored")]
    return {"steps": [], "scenarios": [{"match": "[bench-%d]" % i, "steps": steps} for i in range(runs)]}


def arrivals(st):
    p = os.path.join(st.model_log, "requests.jsonl")
    return [json.loads(ln) for ln in open(p)] if os.path.exists(p) else []


def first_request_after(st, match, t0, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for r in arrivals(st):
            if r.get("match") == match and r["t"] >= t0:
                return r["t"] - t0
        time.sleep(0.01)
    raise RuntimeError("no model request for %s" % match)


def wait_round(st, tid, n, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        code, t = st.get_json("/api/tasks/" + tid)
        if t["round"] == n and t["status"] in ("succeeded", "failed", "cancelled"):
            return t
        time.sleep(0.05)
    raise RuntimeError("round %d of %s did not end" % (n, tid))


def send(st, tid, prompt):
    ctype, body = multipart({"prompt": prompt}, [])
    t0 = time.time()
    code, _, resp = st.request("POST", "/api/tasks/%s/messages" % tid, body, {"Content-Type": ctype})
    assert code == 201, (code, resp)
    return t0


def kept_memory(st, tid):
    db = sqlite3.connect(os.path.join(st.prefix, "var", "web", "llmbox.db"))
    row = db.execute("SELECT sandbox_id FROM task_sandboxes WHERE task_id = ?", (tid,)).fetchone()
    db.close()
    if not row:
        return None
    paths = glob.glob("/sys/fs/cgroup/memory/llmbox-*/%s/memory.usage_in_bytes" % row[0])
    paths += glob.glob("/sys/fs/cgroup/llmbox-*/%s/memory.current" % row[0])
    return int(open(paths[0]).read()) if paths else None


def save_times(st):
    log = open(os.path.join(st.prefix, "var", "log", "sandboxd.log")).read()
    return [(int(b), int(ms)) for b, ms in re.findall(r"saved as t[0-9a-f]+-r\d+: (\d+) bytes, \d+ entries, (\d+) ms", log)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if os.geteuid() != 0 or not image_ready():
        sys.exit("needs root and the sandbox image")
    keep = 8
    kept, restored, mem = [], [], []
    with Stack(scenario=scenario(a.mb, a.runs), env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_FOLLOWUP_KEEP_S": str(keep),
                                                      "LLMBOX_SANDBOX_STATE_MAX_MIB": "1024"}) as st:
        for i in range(a.runs):
            match = "[bench-%d]" % i
            code, t = st.create_task(match + " make a 50 MB /testbed")
            tid = t["id"]
            t = st.wait_task(tid, timeout=300)
            assert t["status"] == "succeeded" and t["rounds"][0]["state_bytes"], t
            mem.append(kept_memory(st, tid))
            kept.append(first_request_after(st, match, send(st, tid, "again")))
            t = wait_round(st, tid, 2)
            assert t["rounds"][1]["sandbox"] == "kept", t["rounds"][1]
            time.sleep(keep + 4)  # the kept sandbox's lease runs out: the next round restores
            restored.append(first_request_after(st, match, send(st, tid, "once more")))
            t = wait_round(st, tid, 3)
            assert t["rounds"][2]["sandbox"] == "restored", t["rounds"][2]
            st.request("DELETE", "/api/tasks/" + tid)
        saves = save_times(st)
    ms = lambda xs: "%.0f ms" % (1000 * statistics.median(xs))
    print("send -> first model request, kept (adopt + thaw):       median %s  %s" % (
        ms(kept), [round(x * 1000) for x in kept]))
    print("send -> first model request, restored from the state:  median %s  %s" % (
        ms(restored), [round(x * 1000) for x in restored]))
    print("save at the end of a round (%d MB /testbed): %s" % (a.mb, ["%d ms, %.1f MB" % (m, b / 1e6) for b, m in saves]))
    print("memory of a kept, frozen sandbox (cgroup): %s" % ["%.1f MiB" % (m / 1048576) if m else "?" for m in mem])


if __name__ == "__main__":
    main()
