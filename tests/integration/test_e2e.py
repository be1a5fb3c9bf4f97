"""End to end through nginx: the real web backend, agent, sandboxd and the
scripted fake model. Each case is one thing a user relies on."""
import hashlib
import io
import json
import os
import subprocess
import sys
import time
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Skip, Stack, image_ready, free_port  # noqa: E402

PLOT_PY = r'''
import csv
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open("/testbed/input/data.csv")))
xs = [float(r["x"]) for r in rows]
ys = [float(r["y"]) for r in rows]
plt.plot(xs, ys, marker="o")
plt.title("y over x")
plt.savefig("/testbed/output/plot.png", dpi=80)
mean = sum(ys) / len(ys)
open("/testbed/output/answer.txt", "w").write("mean y = %.2f" % mean)
print("rows", len(rows), "mean", mean)
'''

# The paper's showcase tools, offline: SVG poster → PNG with CairoSVG, a tune
# with MIDIUtil rendered to WAV by FluidSynth, numbers with SciPy and pandas.
SHOWCASE_PY = r'''
import cairosvg, pandas, scipy.optimize
from midiutil import MIDIFile
svg = '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="120"><defs><linearGradient id="g"><stop offset="0" stop-color="#246"/><stop offset="1" stop-color="#8ac"/></linearGradient></defs><rect width="200" height="120" fill="url(#g)"/><text x="20" y="70" font-size="28" fill="white">Summit</text></svg>'
open("/testbed/output/poster.svg", "w").write(svg)
cairosvg.svg2png(bytestring=svg.encode(), write_to="/testbed/output/poster.png")
m = MIDIFile(1)
m.addTempo(0, 0, 90)
for i, n in enumerate([57, 60, 64, 62, 60, 57]):
    m.addNote(0, 0, n, i, 1, 80)
m.writeFile(open("/testbed/output/tune.mid", "wb"))
root = scipy.optimize.brentq(lambda x: x * x - 2, 0, 2)
print(pandas.DataFrame({"root": [round(root, 4)]}).to_string(index=False))
'''

CSV = b"x,y\n1,2\n2,4\n3,5\n4,7\n"


def step(*calls, content=""):
    return {"content": content,
            "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


SCENARIOS = {"scenarios": [
    {"match": "[plot-csv]", "steps": [
        step(("bash", {"command": "ls /testbed/input && head -2 /testbed/input/data.csv"}),
             content="Let me look at the input."),
        step(("file_editor", {"command": "create", "path": "/testbed/plot.py", "file_text": PLOT_PY})),
        step(("bash", {"command": "cd /testbed && python3 plot.py"})),
        step(("finish", {"answer": "ignored because answer.txt exists"})),
    ]},
    {"match": "[long-sleep]", "steps": [
        step(("bash", {"command": "echo partial > /testbed/output/partial.txt; sleep 100"})),
        step(("finish", {})),
    ]},
    {"match": "[showcase]", "steps": [
        step(("file_editor", {"command": "create", "path": "/testbed/show.py", "file_text": SHOWCASE_PY})),
        step(("bash", {"command": "cd /testbed && python3 show.py && fluidsynth -ni -F /testbed/output/preview.wav "
                               "/usr/share/sounds/sf2/FluidR3_GM.sf2 /testbed/output/tune.mid >/dev/null"})),
        step(("finish", {"answer": "poster and tune"})),
    ]},
    {"match": "[timeout]", "steps": [
        step(("bash", {"command": "echo before; sleep 30; echo never"})),
        step(("bash", {"command": "echo still alive"})),
        step(("finish", {"answer": "done"})),
    ]},
]}


def find_sleepers(s=None):
    """The `sleep 100` processes; with a stack, only those in its sandboxes
    (their cgroup path names the sandbox id), so that another llmbox running
    the same test on this machine does not count."""
    out = subprocess.run(["pgrep", "-f", "^sleep 100$"], capture_output=True, text=True).stdout
    pids = out.split()
    if s is None:
        return pids
    d = os.path.join(s.prefix, "var", "sandboxes")
    ids = set(os.listdir(d)) if os.path.isdir(d) else set()
    ours = []
    for p in pids:
        try:
            cg = open("/proc/%s/cgroup" % p).read()
        except OSError:
            continue
        if any(i in cg for i in ids):
            ours.append(p)
    return ours


def test_csv_to_png(s):
    st, t = s.create_task("[plot-csv] Plot y over x from data.csv and report the mean of y.",
                          files=[("data.csv", CSV)])
    assert st == 201, (st, t)
    tid = t["id"]
    evs = s.events(tid)
    kinds = [e[1] for e in evs]
    assert kinds[-1] == "done", kinds
    tools = [e[2] for e in evs if e[1] == "tool"]
    assert len(tools) == 4, tools
    assert "data.csv" in tools[0]["stdout"], tools[0]
    assert tools[0]["status"] == "ok", tools[0]
    assert "rows 4" in tools[2]["stdout"], tools[2]
    ids = [e[0] for e in evs]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids

    t = s.wait_task(tid, 30)
    assert t["status"] == "succeeded", t
    assert t["answer"].strip() == "mean y = 4.50", t["answer"]

    st, arts = s.get_json("/api/tasks/%s/artifacts" % tid)
    assert st == 200
    by = {a["path"]: a for a in arts["artifacts"]}
    assert "plot.png" in by and "answer.txt" in by, by
    png = by["plot.png"]
    assert png["mime"] == "image/png", png
    st, h, body = s.request("GET", "/api/tasks/%s/artifacts/plot.png" % tid)
    assert st == 200, st
    assert body[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(body) == png["size"] and hashlib.sha256(body).hexdigest() == png["sha256"]
    assert h.get("content-type") == "image/png", h
    assert h.get("x-content-type-options") == "nosniff", h
    assert "plot.png" in h.get("content-disposition", ""), h

    st, h, z = s.request("GET", "/api/tasks/%s/bundle.zip" % tid)
    assert st == 200, (st, z[:200])
    names = zipfile.ZipFile(io.BytesIO(z)).namelist()
    zf = zipfile.ZipFile(io.BytesIO(z))
    assert any(n.endswith("plot.png") for n in names), names
    assert any(n.endswith("trajectory.json") for n in names), names
    assert any(n.endswith("answer.txt") for n in names), names
    pn = [n for n in names if n.endswith("plot.png")][0]
    assert zf.read(pn) == body

    st, traj = s.get_json("/api/tasks/%s/trajectory" % tid)
    assert st == 200 and isinstance(traj, dict), st
    # the model saw the observation of its first command
    st, _ = s.get_json("/api/tasks/" + tid)
    assert not s.sandbox_leftovers(), s.sandbox_leftovers()


def test_cancel_long_sleep(s):
    st, t = s.create_task("[long-sleep] sleep for a long time")
    assert st == 201, t
    tid = t["id"]
    deadline = time.time() + 30
    while time.time() < deadline and not find_sleepers(s):
        time.sleep(0.1)
    ours = find_sleepers(s)
    assert ours, "the sleep never started"
    t0 = time.time()
    st, h, body = s.request("POST", "/api/tasks/%s/cancel" % tid)
    assert st == 202, (st, body)
    t = s.wait_task(tid, 5)
    took = time.time() - t0
    assert t["status"] == "cancelled", t
    assert took < 2.0, "cancel took %.2fs" % took
    time.sleep(0.3)
    left = [p for p in ours if os.path.exists("/proc/" + p)]
    assert not left, "sandbox process still running: %s" % left
    assert not s.sandbox_leftovers(), s.sandbox_leftovers()
    st, _, _ = s.request("POST", "/api/tasks/%s/cancel" % tid)
    assert st == 409, st
    # what the model wrote before the Stop is kept
    st, arts = s.get_json("/api/tasks/%s/artifacts" % tid)
    assert st == 200 and [a["path"] for a in arts["artifacts"]] == ["partial.txt"], arts


def test_errors(s):
    st, e = s.get_json("/api/tasks/" + "0" * 32)
    assert st == 404 and e["error"]["code"], (st, e)
    st, e = s.get_json("/api/tasks/not-an-id")
    assert st in (400, 404) and "error" in e, (st, e)
    st, _, b = s.request("POST", "/api/tasks", b"--x\r\nbroken", {"Content-Type": "multipart/form-data; boundary=x"})
    assert st == 400 and json.loads(b)["error"]["message"], (st, b)
    st, _, b = s.request("POST", "/api/tasks", b"{}", {"Content-Type": "application/json"})
    assert st == 415, (st, b)
    big = b"a" * (3 << 20)
    st, e = s.create_task("[plot-csv] too big", files=[("big.bin", big)])
    assert st == 413 and "error" in e, (st, e)


def test_showcase_tools(s):
    st, t = s.create_task("[showcase] a poster and a calm tune")
    assert st == 201, t
    evs = s.events(t["id"])
    tools = [e[2] for e in evs if e[1] == "tool"]
    assert tools[1]["status"] == "ok", tools[1]
    assert "1.4142" in tools[1]["stdout"], tools[1]
    st, arts = s.get_json("/api/tasks/%s/artifacts" % t["id"])
    by = {a["path"]: a for a in arts["artifacts"]}
    assert by["poster.png"]["mime"] == "image/png", by
    assert by["poster.svg"]["mime"] == "image/svg+xml", by
    assert by["tune.mid"]["size"] > 0, by
    assert by["preview.wav"]["mime"].startswith("audio/") and by["preview.wav"]["size"] > 44100, by
    st, h, _ = s.request("GET", "/api/tasks/%s/artifacts/poster.svg?inline=1" % t["id"])
    assert st == 200 and "sandbox" in h.get("content-security-policy", ""), h


def test_command_timeout(_unused):
    with Stack(SCENARIOS, env={"LLMBOX_CMD_TIMEOUT_S": "2"}) as s:
        st, t = s.create_task("[timeout] run something slow")
        assert st == 201, t
        tid = t["id"]
        t0 = time.time()
        evs = s.events(tid)
        tools = [e[2] for e in evs if e[1] == "tool"]
        assert "timeout" in tools[0]["status"], tools[0]
        assert "before" in tools[0].get("stdout", ""), tools[0]
        assert "still alive" in tools[1].get("stdout", ""), tools[1]
        assert time.time() - t0 < 20
        assert s.wait_task(tid)["status"] == "succeeded"


def test_unreachable_model(_unused):
    with Stack(model=False) as s:
        st, h = s.get_json("/api/health")
        assert st == 200 and h["model"]["reachable"] is False, h
        assert "not reachable" in h["model"]["message"], h
        st, t = s.create_task("anything")
        assert st == 201, t
        t0 = time.time()
        t = s.wait_task(t["id"], 15)
        assert t["status"] == "failed", t
        assert "not reachable" in (t.get("reason") or ""), t
        assert time.time() - t0 < 10


def test_replay_health(_unused):
    with Stack(model=False, env={"LLMBOX_LLM_PROVIDER": "replay", "LLMBOX_REPLAY_FILE": "/nonexistent/run.json"}) as s:
        st, h = s.get_json("/api/health")
        assert st == 200 and h["model"]["reachable"] is True and "replaying run.json" in h["model"]["message"], h
        st, m = s.get_json("/api/models")
        assert m[0]["provider"] == "replay", m
        # a missing recording fails the task with a sentence, not a hang
        st, t = s.create_task("anything")
        t = s.wait_task(t["id"], 15)
        assert t["status"] == "failed" and "run.json" in (t.get("reason") or ""), t


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP e2e: the sandbox image is not built (make image)")
        return
    with Stack(SCENARIOS, env={"LLMBOX_MAX_UPLOAD_MB": "2"}) as s:
        r.run("e2e_csv_to_png_through_nginx", test_csv_to_png, s)
        r.run("e2e_cancel_long_sleep", test_cancel_long_sleep, s)
        r.run("e2e_http_errors", test_errors, s)
        r.run("e2e_showcase_tools_offline", test_showcase_tools, s)
    r.run("e2e_command_timeout", test_command_timeout, None)
    r.run("e2e_unreachable_model", test_unreachable_model, None)
    r.run("e2e_replay_provider_health", test_replay_health, None)
    r.done()


if __name__ == "__main__":
    main()
