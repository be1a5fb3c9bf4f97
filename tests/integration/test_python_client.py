#!/usr/bin/env python3
"""The Python client (clients/python, package `llmbox`) as a user runs it:
installed with pip, offline, into a fresh venv, and driven by scripts run
with that venv's python against the real stack (fake model with the eval
behaviour, sandboxd, web, nginx): sandbox life cycle under NeMo Gym's names,
a failed create, retries on 429/503 with Retry-After against a tiny local
server, timeouts, a task followed to its end and its artifacts downloaded,
an evaluation followed to its results, the asyncio facade with several
sandboxes at once, and the NeMo Gym provider against a stand-in of NeMo
Gym's interface (tests/integration/nemo_gym_standin: NeMo Gym itself cannot
be installed here). Rollout groups and tool calls when the server has them.
"""
import glob
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import REPO, Reporter, Skip, Stack, image_ready  # noqa: E402

TOKEN = "pyclient-" + os.urandom(16).hex()
API_MAX = 6
STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nemo_gym_standin")


# ---- the venv ------------------------------------------------------------------

def base_python():
    """Debian's python3 (the one the install must work with), else ours."""
    return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def test_pip_install_offline_into_a_plain_venv(ctx):
    tmp = ctx["tmp"]
    src = os.path.join(tmp, "src")
    # a copy: a build must not write into the repository (and this one does not)
    shutil.copytree(os.path.join(REPO, "clients", "python"), src,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    venv = os.path.join(tmp, "venv")
    r = subprocess.run([base_python(), "-m", "venv", venv], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, ("%s -m venv failed (Debian: the python3-venv package, scripts/deps.sh): %s"
                               % (base_python(), r.stderr[-1000:]))
    py = os.path.join(venv, "bin", "python")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-build-isolation", src],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, "pip install failed:\n" + r.stdout[-2000:] + r.stderr[-2000:]
    r = subprocess.run([py, "-c", "import llmbox, llmbox.nemo_gym; print(llmbox.__file__, llmbox.__version__)"],
                       capture_output=True, text=True, timeout=60, cwd=tmp)
    assert r.returncode == 0, r.stderr
    where, ver = r.stdout.split()
    assert where.startswith(os.path.join(venv, "lib")), where  # the installed copy, not the repo's
    assert ver == "0.1.0", ver
    left = sorted(set(os.listdir(src)) - {"README.md", "pyproject.toml", "_build", "llmbox"})
    assert not left, "the build wrote into the source folder: %s" % left
    ctx["py"] = py


def run_user(ctx, script, env=None, timeout=300):
    """Runs a user's script with the venv's python; its last stdout line is
    a JSON object (what the script saw), returned."""
    if "py" not in ctx:
        raise Skip("the package did not install")
    path = os.path.join(ctx["tmp"], "user_%d.py" % len(os.listdir(ctx["tmp"])))
    with open(path, "w") as f:
        f.write(script)
    e = dict(os.environ, LLMBOX_URL=ctx["url"], LLMBOX_SANDBOX_TOKEN=TOKEN, WORK=ctx["tmp"])
    e.pop("PYTHONPATH", None)
    e.update(env or {})
    r = subprocess.run([ctx["py"], path], capture_output=True, text=True, timeout=timeout, env=e,
                       cwd=ctx["tmp"])
    assert r.returncode == 0, "user script failed (%d):\n%s\n%s" % (r.returncode, r.stdout[-3000:],
                                                                   r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---- sandboxes -------------------------------------------------------------------

LIFECYCLE = r'''
import hashlib, json, os
from llmbox import Client, SandboxSpec
c = Client(os.environ["LLMBOX_URL"], sandbox_token=os.environ["LLMBOX_SANDBOX_TOKEN"])
blob = bytes(range(256)) * 1200 + b"\x00\r\n\xff"            # binary, 300 KiB
local = os.path.join(os.environ["WORK"], "blob.bin")
open(local, "wb").write(blob)
spec = SandboxSpec(ttl_s=300, workdir="/job", env={"GREETING": "hi there"},
                   files={"main.py": "print(6 * 7)\n", "raw.bin": b"\x00\x01\xfe\xff"},
                   resources={"memory_mib": 512, "pids": 128}, metadata={"rollout": 17})
sb = c.sandbox(spec).start()
out = {"id": sb.id, "status_created": sb.status(), "metadata": sb.info["metadata"]}
r = sb.exec("python3 main.py; echo \"$GREETING\"; pwd")
out["ok"] = [r.stdout, r.stderr, r.return_code, r.error_type]
r = sb.exec("echo oops >&2; echo $X; exit 3", env={"X": "per-call"}, cwd="/tmp")
out["nonzero"] = [r.stdout, r.stderr, r.return_code, r.error_type]
r = sb.exec("wc -c", stdin="abcde")
out["stdin"] = r.stdout.strip()
r = sb.exec("echo started; sleep 30", timeout_s=1)
out["timeout"] = [r.stdout, r.return_code, r.error_type]
sb.upload(local, "data/blob.bin")
r = sb.exec("sha256sum data/blob.bin | cut -d' ' -f1; od -An -tx1 raw.bin | tr -d ' \n'")
out["sums"] = r.stdout.split()
back = os.path.join(os.environ["WORK"], "out", "blob.bin")
sb.download("/job/data/blob.bin", back)
out["download_equal"] = open(back, "rb").read() == blob
out["sha_local"] = hashlib.sha256(blob).hexdigest()
try:
    sb.read_file("nope.txt")
except Exception as e:
    out["missing"] = [type(e).__name__, getattr(e, "status", None), getattr(e, "code", None), str(e)]
sb.stop()
sb.stop()                                                # idempotent
out["status_after"] = sb.status()
out["list_after"] = [s["id"] for s in c.list_sandboxes()["sandboxes"]]
out["connections"] = c.connections_opened
print(json.dumps(out))
'''


def test_sandbox_lifecycle(ctx):
    o = run_user(ctx, LIFECYCLE)
    assert o["status_created"] == "running" and o["metadata"] == {"rollout": 17}, o
    assert o["ok"] == ["42\nhi there\n/job\n", "", 0, None], o["ok"]
    # a non-zero exit is a result, with what the command printed
    assert o["nonzero"] == ["per-call\n", "oops\n", 3, None], o["nonzero"]
    assert o["stdin"] == "5", o
    assert o["timeout"] == ["started\n", None, "timeout"], o["timeout"]
    assert o["sums"] == [o["sha_local"], "0001feff"], o
    assert o["download_equal"] is True, o
    name, status, code, text = o["missing"]
    assert (name, status, code) == ("APIError", 404, "not_found"), o["missing"]
    assert "GET /api/sandboxes/%s/files/job/nope.txt -> HTTP 404 not_found" % o["id"] in text, text
    assert o["status_after"] == "stopped" and o["id"] not in o["list_after"], o
    # keep-alive: every call of the script went over one connection
    assert o["connections"] == 1, o["connections"]
    st, _, body = ctx["stack"].request("GET", "/api/sandboxes/" + o["id"],
                                       headers={"Authorization": "Bearer " + TOKEN})
    assert st == 404, (st, body)


CREATE_FAIL = r'''
import json, os
from llmbox import APIError, Client, SandboxCreateError, SandboxSpec
url, tok = os.environ["LLMBOX_URL"], os.environ["LLMBOX_SANDBOX_TOKEN"]
c = Client(url, sandbox_token=tok, max_retries=1, backoff_s=0.1)
out = {}
def fail(name, client, spec):
    try:
        client.sandbox(spec).start()
        out[name] = "created"
    except SandboxCreateError as e:
        out[name] = [e.status, e.code, str(e)]
fail("bad_field", c, SandboxSpec(resources={"memory_mib": 1}))
fail("bad_image", c, SandboxSpec(image="no-such-image"))
fail("wrong_token", Client(url, sandbox_token="wrong"), SandboxSpec())
fail("no_server", Client("http://127.0.0.1:9", sandbox_token=tok, max_retries=0), SandboxSpec())
held = [c.sandbox(SandboxSpec(ttl_s=120)).start() for _ in range(int(os.environ["API_MAX"]))]
fail("full", c, SandboxSpec())
for s in held:
    s.stop()
out["left"] = c.list_sandboxes()["count"]
try:
    Client(url, sandbox_token="wrong").list_sandboxes()
except APIError as e:
    out["list_wrong_token"] = [e.status, e.code]
print(json.dumps(out))
'''


def test_create_failure_is_sandbox_create_error(ctx):
    o = run_user(ctx, CREATE_FAIL, env={"API_MAX": str(API_MAX)})
    st, code, text = o["bad_field"]
    assert (st, code) == (400, "bad_request") and "memory_mib" in text, o["bad_field"]
    st, code, text = o["bad_image"]
    assert st in (400, 503) and code and "no-such-image" in text, o["bad_image"]
    assert o["wrong_token"][:2] == [401, "unauthorized"], o["wrong_token"]
    st, code, text = o["no_server"]
    assert st is None and code is None and "cannot reach http://127.0.0.1:9" in text, o["no_server"]
    # 429 too_many_sandboxes, retried once, then the error with its code
    st, code, text = o["full"]
    assert (st, code) == (429, "too_many_sandboxes") and "LLMBOX_SANDBOX_API_MAX" in text, o["full"]
    assert o["left"] == 0 and o["list_wrong_token"] == [401, "unauthorized"], o


# ---- retries and timeouts, against a tiny local server -------------------------

class Flaky(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log = []
    lock = threading.Lock()
    counts = {}

    def log_message(self, *a):
        pass

    def _send(self, status, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with self.lock:
            n = self.counts.get(self.path, 0) + 1
            self.counts[self.path] = n
            self.log.append((self.path, time.monotonic(), self.client_address[1]))
        busy = {"error": {"code": "rate_limited", "message": "Too many task starts; wait a moment."}}
        if self.path == "/r429" and n == 1:
            return self._send(429, busy, [("Retry-After", "1")])
        if self.path == "/r503" and n <= 2:
            return self._send(503, {"error": {"code": "unavailable", "message": "The database is busy."}})
        if self.path == "/always429":
            return self._send(429, busy, [("Retry-After", "1")])
        if self.path == "/slow":
            time.sleep(3)
            try:  # the client gave up long ago
                return self._send(200, {"ok": True, "n": n})
            except OSError:
                return
        if self.path == "/notjson":
            body = b"<html>Bad Gateway</html>"
            self.send_response(502)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path == "/drop_after":  # answers, then closes as an idle keep-alive timeout would
            self._send(200, {"ok": True, "n": n})
            self.close_connection = True
            return
        return self._send(200, {"ok": True, "n": n})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.lock:
            n = self.counts.get("POST " + self.path, 0) + 1
            self.counts["POST " + self.path] = n
        if self.path == "/post_drop":  # reads the request, closes without an answer
            self.close_connection = True
            return
        return self._send(200, {"ok": True, "n": n})


RETRIES = r'''
import json, os, time
import llmbox
from llmbox import APIError, Client
url = os.environ["FLAKY"]
c = Client(url, max_retries=3, backoff_s=0.2)
out = {}
t = time.monotonic(); out["r429"] = [c.get_json("/r429"), time.monotonic() - t]
t = time.monotonic(); out["r503"] = [c.get_json("/r503"), time.monotonic() - t]
t = time.monotonic()
try:
    Client(url, max_retries=2).get_json("/always429")
except APIError as e:
    out["always"] = [e.status, e.code, e.message, e.retry_after, str(e), time.monotonic() - t]
try:
    c.get_json("/notjson")
except APIError as e:
    out["notjson"] = [e.status, e.code, e.message]
t = time.monotonic()
try:
    Client(url, timeout=0.5, max_retries=3).get_json("/slow")
    out["slow"] = "answered"
except llmbox.Timeout as e:
    out["slow"] = [isinstance(e, TimeoutError), str(e), time.monotonic() - t]
out["after_timeout"] = c.get_json("/fine")
k = Client(url)
out["drop"] = [k.get_json("/drop_after")["ok"]]
time.sleep(0.3)                                   # the server has closed it by now
out["drop"] += [k.call("POST", "/after_drop", {"x": 1})["ok"], k.connections_opened]
try:
    k.call("POST", "/post_drop", {"x": 1})
except llmbox.ConnectionFailed as e:
    out["post_drop"] = str(e)
print(json.dumps(out))
'''


def test_retries_honour_retry_after_and_timeouts(ctx):
    Flaky.log.clear()
    Flaky.counts.clear()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        o = run_user(ctx, RETRIES, env={"FLAKY": "http://127.0.0.1:%d" % srv.server_address[1]})
    finally:
        srv.shutdown()
        srv.server_close()
    body, took = o["r429"]
    assert body == {"ok": True, "n": 2} and took >= 1.0, o["r429"]
    seen = [(t, port) for p, t, port in Flaky.log if p == "/r429"]
    assert len(seen) == 2 and seen[1][0] - seen[0][0] >= 1.0, seen  # waited Retry-After: 1
    assert seen[0][1] == seen[1][1], seen                             # on the same connection
    body, took = o["r503"]
    assert body == {"ok": True, "n": 3} and 0.1 <= took < 3, o["r503"]  # backoff 0.2 then 0.4, jittered
    st, code, msg, ra, text, took = o["always"]
    assert (st, code, ra) == (429, "rate_limited", 1.0) and Flaky.counts["/always429"] == 3, o["always"]
    assert text == "GET /always429 -> HTTP 429 rate_limited: Too many task starts; wait a moment.", text
    assert took >= 2.0, took
    assert o["notjson"] == [502, None, "<html>Bad Gateway</html>"], o["notjson"]
    is_te, text, took = o["slow"]
    assert is_te is True and "GET /slow: no answer within 0.5s" in text and took < 2.5, o["slow"]
    assert Flaky.counts["/slow"] == 1, Flaky.counts  # a timeout is not retried
    assert o["after_timeout"]["ok"] is True, o
    # a connection the server closed while idle is replaced before use
    assert o["drop"] == [True, True, 2], o["drop"]
    # a POST whose connection dies is not sent again (an exec must not run twice)
    assert "POST /post_drop: the server closed the connection" in o["post_drop"], o
    assert Flaky.counts["POST /post_drop"] == 1 and Flaky.counts["POST /after_drop"] == 1, Flaky.counts


# ---- tasks and evaluations ------------------------------------------------------

TASK = r'''
import json, os
from llmbox import Client
c = Client(os.environ["LLMBOX_URL"])
t = c.submit_task("Put the answer in the answer file. SANDBOX-ANSWER[42] FINISH-ANSWER[done]",
                  files=[("notes/in.txt", b"hello\n")], max_turns=5)
evs = list(c.task_events(t["id"]))
final = c.get_task(t["id"])
got = c.download_artifacts(t["id"], os.path.join(os.environ["WORK"], "arts"))
traj = c.trajectory(t["id"])
# resuming after event 2 gives the rest, without the first two
rest = list(c.task_events(t["id"], last_event_id=2))
print(json.dumps({"queued": t["status"], "ids": [e.id for e in evs], "types": [e.event for e in evs],
                  "done": evs[-1].data, "status": final["status"], "inputs": final["inputs"],
                  "answer": final["answer"], "files": {os.path.basename(p): open(p).read() for p in got},
                  "traj_keys": sorted(traj)[:20], "rest_ids": [e.id for e in rest]}))
'''


def test_task_followed_and_artifacts_downloaded(ctx):
    o = run_user(ctx, TASK)
    # the answer to the POST: queued, or already running when the agent was quick
    assert o["queued"] in ("queued", "running") and o["status"] == "succeeded", o
    ids = o["ids"]
    assert ids == list(range(1, len(ids) + 1)), ids
    assert o["types"][-1] == "done" and o["done"]["status"] == "succeeded", o
    assert "model" in o["types"] and "tool" in o["types"], o["types"]
    assert o["inputs"] == [{"path": "notes/in.txt", "size": 6}], o["inputs"]
    assert o["files"] == {"answer.txt": "42\n"}, o["files"]
    assert o["answer"], o
    assert o["traj_keys"], o
    assert o["rest_ids"] == ids[2:], (o["rest_ids"], ids)


EVAL = r'''
import json, os
from llmbox import APIError, Client
c = Client(os.environ["LLMBOX_URL"])
rows = [{"id": "a", "domain": "math", "ground_truth": "4", "scorer": "numeric",
         "problem_statement": "Compute it. LLM-ANSWER[4] SANDBOX-ANSWER[4]"},
        {"id": "b", "domain": "math", "ground_truth": "4", "scorer": "numeric",
         "problem_statement": "Compute it. LLM-ANSWER[5] SANDBOX-ANSWER[4]"}]
data = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
out = {}
try:
    c.start_eval(("bad.jsonl", data + b'{"id": "c"}\n'))
except APIError as e:
    out["bad"] = [e.status, e.code, e.body.get("file"), e.body.get("line"), e.body.get("field")]
e = c.start_eval(("set.jsonl", data), mode="both", concurrency=2, name="pyclient")
seen = [x["progress"]["done"] for x in c.follow_eval(e["id"], poll_s=0.3, timeout=240)]
final = c.get_eval(e["id"])
res = c.eval_results(e["id"])
out.update({"created": [e["rows"], e["runs"]], "seen": seen, "status": final["status"],
            "scores": sorted([r["id"], r["mode"], r["score"]] for r in res),
            "summary_md": c.eval_summary_md(e["id"])[:200]})
print(json.dumps(out))
'''


def test_eval_followed_to_its_results(ctx):
    o = run_user(ctx, EVAL)
    assert o["bad"][:2] == [400, "bad_dataset"] and o["bad"][2:4] == ["bad.jsonl", 3], o["bad"]
    assert o["created"] == [2, 4], o
    assert o["seen"] and o["seen"][-1] == 4 and o["seen"] == sorted(o["seen"]), o["seen"]
    assert o["status"] == "succeeded", o
    assert o["scores"] == [["a", "llm", 1], ["a", "sandbox", 1], ["b", "llm", 0], ["b", "sandbox", 1]], o["scores"]
    assert o["summary_md"].strip(), o


# ---- asyncio ------------------------------------------------------------------------

ASYNC = r'''
import asyncio, json, os, time
from llmbox import AsyncClient, SandboxSpec

async def one(ac, i):
    async with ac.sandbox(SandboxSpec(ttl_s=120, env={"I": str(i)})) as sb:
        await sb.write_file("in.txt", "n=%d\n" % i)
        r = await sb.exec("date +%s.%N >&2; sleep 1; date +%s.%N >&2; cat in.txt; echo $I")
        data = await sb.read_file("in.txt")
        return [sb.id, r.stdout, r.return_code, data.decode(), [float(x) for x in r.stderr.split()]]

async def main():
    import inspect, llmbox
    twin = {"close": "aclose"}
    missing = [n for n, f in inspect.getmembers(llmbox.Client, inspect.isfunction)
               if not n.startswith("_") and not hasattr(AsyncClient, twin.get(n, n))]
    missing += [n for n, f in inspect.getmembers(llmbox.Sandbox, inspect.isfunction)
                if not n.startswith("_") and not hasattr(llmbox.AsyncSandbox, n)]
    assert not missing, "no async twin: %s" % missing
    async with AsyncClient(os.environ["LLMBOX_URL"], sandbox_token=os.environ["LLMBOX_SANDBOX_TOKEN"],
                           max_workers=8) as ac:
        t = time.monotonic()
        res = await asyncio.gather(*(one(ac, i) for i in range(4)))
        # attach: a second handle on a sandbox that exists
        sb = await ac.start_sandbox(SandboxSpec(ttl_s=60))
        other = await ac.attach_sandbox(sb.id)
        assert (await other.exec("echo attached")).stdout == "attached\n"
        await other.stop()
        assert await sb.status() == "stopped"       # the server says it is gone
        took = time.monotonic() - t
        left = (await ac.list_sandboxes())["count"]
        print(json.dumps({"res": res, "took": took, "left": left}))

asyncio.run(main())
'''


def test_asyncio_several_sandboxes_at_once(ctx):
    o = run_user(ctx, ASYNC)
    res = o["res"]
    assert len({r[0] for r in res}) == 4, res
    for i, (_, out, rc, data, _) in enumerate(res):
        assert (out, rc, data) == ("n=%d\n%d\n" % (i, i), 0, "n=%d\n" % i), res[i]
    # the four 1 s commands ran at once: every one started before any ended
    # (the sandboxes' own clocks: the host's, whatever the machine's load)
    spans = [r[4] for r in res]
    assert all(len(x) == 2 for x in spans), spans
    assert max(a for a, _ in spans) < min(b for _, b in spans), spans
    assert o["left"] == 0, o


# ---- NeMo Gym provider, against the stand-in -------------------------------------

NEMO = r'''
import asyncio, json, os
from pathlib import Path
from nemo_gym.sandbox.api import AsyncSandbox
from nemo_gym.sandbox.providers.base import (SandboxCreateError, SandboxExecResult, SandboxHandle,
                                              SandboxSpec, SandboxStatus)
import llmbox
from llmbox.nemo_gym import HAVE_NEMO_GYM, LlmboxSandboxProvider

async def main():
    out = {"have": HAVE_NEMO_GYM}
    p = LlmboxSandboxProvider(os.environ["LLMBOX_URL"], sandbox_token=os.environ["LLMBOX_SANDBOX_TOKEN"])
    spec = SandboxSpec(ttl_s=300, workdir="/job", env={"X": "from-spec"}, files={"a.txt": "hello\n"},
                       resources={"memory_mib": 512}, metadata={"m": "1"})
    sb = AsyncSandbox(p, spec)
    out["before"] = (await sb.status()).value
    await sb.start()
    out["handle"] = isinstance(sb._handle, SandboxHandle) and sb._handle.provider_name
    r = await sb.exec("cat a.txt; echo $X $Y; pwd; exit 4", env={"Y": "per-call"})
    out["exec"] = [isinstance(r, SandboxExecResult), r.stdout, r.stderr, r.return_code, r.error_type]
    r = await sb.exec("sleep 20", timeout_s=1)
    out["timeout"] = [r.return_code, r.error_type]
    src = Path(os.environ["WORK"]) / "ng.bin"
    src.write_bytes(b"\x00\x01binary\xff")
    await sb.upload(src, "/job/up/ng.bin")
    dst = Path(os.environ["WORK"]) / "ng-back.bin"
    await sb.download("/job/up/ng.bin", dst)
    out["roundtrip"] = dst.read_bytes() == src.read_bytes()
    st = await sb.status()
    out["running"] = [isinstance(st, SandboxStatus), st.value]
    try:
        await sb.exec("id", user="root")
    except ValueError as e:
        out["user"] = str(e)
    await sb.stop()
    await sb.stop()
    out["after"] = (await sb.status()).value
    for name, bad in (("image", SandboxSpec(image="no-such-image")),
                      ("gpu", SandboxSpec(resources={"gpu": 1}))):
        try:
            await AsyncSandbox(p, bad).start()
            out[name] = "created"
        except SandboxCreateError as e:
            out[name] = [isinstance(e, llmbox.SandboxCreateError), str(e)]
    # one provider, several sandboxes at once
    sbs = [AsyncSandbox(p, SandboxSpec(ttl_s=120)) for _ in range(3)]
    await asyncio.gather(*(s.start() for s in sbs))
    rs = await asyncio.gather(*(s.exec("echo %d" % i) for i, s in enumerate(sbs)))
    out["many"] = [r.stdout for r in rs]
    await asyncio.gather(*(s.stop() for s in sbs))
    out["left"] = llmbox.Client(os.environ["LLMBOX_URL"],
                                sandbox_token=os.environ["LLMBOX_SANDBOX_TOKEN"]).list_sandboxes()["count"]
    print(json.dumps(out))

asyncio.run(main())
'''


def test_nemo_gym_provider_against_the_standin(ctx):
    o = run_user(ctx, NEMO, env={"PYTHONPATH": STANDIN})
    assert o["have"] is True, o  # it took the (stand-in) NeMo Gym types
    assert o["before"] == "unknown" and o["handle"] == "llmbox", o
    assert o["exec"] == [True, "hello\nfrom-spec per-call\n/job\n", "", 4, None], o["exec"]
    assert o["timeout"] == [-1, "timeout"], o["timeout"]
    assert o["roundtrip"] is True and o["running"] == [True, "running"], o
    assert "user" in o and "cannot be honoured" in o["user"], o
    assert o["after"] == "stopped", o
    assert o["image"][0] is True and "no-such-image" in o["image"][1], o["image"]
    assert o["gpu"][0] is True and "GPU" in o["gpu"][1], o["gpu"]
    assert o["many"] == ["0\n", "1\n", "2\n"] and o["left"] == 0, o


# ---- rollouts and tool calls (RL rollouts's server side) -------------------------------

def has_rollouts(stack):
    """POST /api/rollouts with no prompt: 400 where the route exists."""
    st, _, _ = stack.request("POST", "/api/rollouts", b"{}", {"Authorization": "Bearer " + TOKEN})
    return st == 400


def has_tools(stack):
    """A tools call on a sandbox that does not exist: 404 either way, but
    only a server without the route says it has no such route."""
    st, _, body = stack.request("POST", "/api/sandboxes/%s/tools/bash" % ("0" * 32), b"{}",
                                {"Authorization": "Bearer " + TOKEN})
    return not (st in (404, 405) and b"no such sandbox route" in body)


TOOLS = r'''
import json, os
from llmbox import Client, SandboxSpec
c = Client(os.environ["LLMBOX_URL"], sandbox_token=os.environ["LLMBOX_SANDBOX_TOKEN"])
with c.sandbox(SandboxSpec(ttl_s=120)) as sb:
    a = sb.tool("bash", command="echo hi; exit 2")
    b = sb.tool("bash", {"command": "cd /tmp && export Z=7"})
    d = sb.tool("bash", command="pwd; echo $Z")
print(json.dumps({"a": [a.observation, a.status, a.exit_code, a.truncated], "d": d.observation}))
'''


def test_tool_calls(ctx):
    if not has_tools(ctx["stack"]):
        raise Skip("this server has no POST /api/sandboxes/{id}/tools/{name} yet (branch e18-rollouts)")
    o = run_user(ctx, TOOLS)
    obs, status, code, trunc = o["a"]
    assert "hi" in obs and code == 2 and trunc is False, o["a"]
    # bash is a persistent shell: cd and export carry over
    assert "/tmp" in o["d"] and "7" in o["d"], o["d"]


ROLLOUT = r'''
import json, os
from llmbox import APIError, Client
c = Client(os.environ["LLMBOX_URL"], sandbox_token=os.environ["LLMBOX_SANDBOX_TOKEN"])
g = c.create_rollout("Read the file. ANSWER-FROM-INPUT[data/x.txt]", n=3,
                     files=[{"path": "data/x.txt", "content": "4\n"}],
                     reward={"scorer": "numeric", "ground_truth": 4}, max_turns=5, metadata={"step": 1})
streamed = [s["index"] for s in c.rollout_events(g["id"])]
done = c.wait_rollout(g["id"], timeout=240)
traj = c.rollout_trajectory(g["id"], 0)
batch = c.create_rollouts([{"prompt": "Read it. ANSWER-FROM-INPUT[a.txt]", "n": 1,
                            "files": [{"path": "a.txt", "content": "5\n"}],
                            "reward": {"scorer": "numeric", "ground_truth": 6}}])
wrong = c.wait_rollout(batch[0]["id"], timeout=240)
h = c.create_rollout("Another. SANDBOX-ANSWER[1]", n=4, max_turns=5)
try:
    cancel = c.cancel_rollout(h["id"])["status"]
except APIError as e:
    cancel = [e.status, e.code]                   # it had already finished
cancelled = c.wait_rollout(h["id"], timeout=120)
try:
    c.get_rollout("0" * 32)
except APIError as e:
    missing = [e.status, e.code]
deleted = c.delete_rollout(batch[0]["id"])["deleted"]
try:
    c.create_rollout("x", n=2, sampling={"temperature": 7})
    refused = "accepted"
except APIError as e:
    refused = [e.status, e.code, str(e)]
print(json.dumps({"created": [g["n"], [x["index"] for x in g["samples"]]], "streamed": sorted(streamed),
                  "cancelled_samples": sorted(set((x["status"], x["outcome"] is not None) for x in cancelled["samples"])),
                  "status": done["status"], "rewards": [x["reward"] for x in done["samples"]],
                  "outcomes": [x["outcome"] for x in done["samples"]], "answers": [x["answer"] for x in done["samples"]],
                  "traj": isinstance(traj, dict) and bool(traj), "batch": [wrong["status"], wrong["samples"][0]["reward"]],
                  "cancel": cancel, "cancelled": cancelled["status"], "missing": missing, "deleted": deleted,
                  "refused": refused}))
'''


def test_rollout_group(ctx):
    if not has_rollouts(ctx["stack"]):
        raise Skip("this server has no /api/rollouts yet (branch e18-rollouts)")
    o = run_user(ctx, ROLLOUT)
    assert o["created"] == [3, [0, 1, 2]], o
    assert o["streamed"] == [0, 1, 2], o           # each sample once, the end line not yielded
    assert o["status"] == "done" and o["outcomes"] == ["ok"] * 3 and o["rewards"] == [1, 1, 1], o
    assert [a.strip() for a in o["answers"]] == ["4"] * 3, o
    assert o["traj"] is True and o["batch"] == ["done", 0], o
    # cancelled while running, or already done (409) when the fake model was quicker
    assert (o["cancel"] == "cancelled" and o["cancelled"] == "cancelled") or \
        (o["cancel"] == [409, "conflict"] and o["cancelled"] == "done"), o
    # wait_rollout returned once every sample had stopped and has its outcome
    assert o["cancelled_samples"] == [["done", True]], o
    assert o["missing"] == [404, "not_found"] and o["deleted"] is True, o
    # what the server refuses comes back as its own sentence
    st, code, text = o["refused"]
    assert (st, code) == (400, "bad_request") and "POST /api/rollouts -> HTTP 400" in text, o["refused"]
    assert "temperature" in text, text


def python39():
    """A Python 3.9 interpreter, the oldest the package supports, if this
    machine has one (pyenv's, here)."""
    for c in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3.9"))) + [
            "/usr/bin/python3.9", "/usr/local/bin/python3.9"]:
        if not os.access(c, os.X_OK):
            continue
        r = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2] == (3, 9))"],
                           capture_output=True, text=True, timeout=30)
        if r.stdout.strip() == "True":  # a real 3.9, not a shim that refuses
            return c
    return None


def test_python39_runs_the_client(ctx):
    py = python39()
    if py is None:
        raise Skip("no Python 3.9 on this machine")
    o = run_user(dict(ctx, py=py), LIFECYCLE, env={"PYTHONPATH": os.path.join(REPO, "clients", "python"),
                                                   "PYTHONDONTWRITEBYTECODE": "1"})
    assert o["ok"] == ["42\nhi there\n/job\n", "", 0, None] and o["download_equal"] is True, o
    o = run_user(dict(ctx, py=py), ASYNC, env={"PYTHONPATH": os.path.join(REPO, "clients", "python"),
                                               "PYTHONDONTWRITEBYTECODE": "1"})
    assert len(o["res"]) == 4 and o["left"] == 0, o


def readme_examples():
    """The ```python blocks of clients/python/README.md that start with
    `# example: NAME`: {NAME: code}."""
    text = open(os.path.join(REPO, "clients", "python", "README.md")).read()
    out = {}
    for block in text.split("```python\n")[1:]:
        code = block.split("```", 1)[0]
        if code.startswith("# example: "):
            out[code.split("\n", 1)[0][len("# example: "):].strip()] = code
    return out


def test_readme_examples_run(ctx):
    ex = readme_examples()
    assert sorted(ex) == ["asyncio", "create_error", "eval", "rollout", "sandbox", "task"], sorted(ex)
    for name, code in sorted(ex.items()):
        if name == "rollout" and not has_rollouts(ctx["stack"]):
            continue
        try:
            run_user(ctx, code + "\nprint('{}')\n")
        except AssertionError as e:
            raise AssertionError("README example %r: %s" % (name, e))


def main():
    if not image_ready():
        print("SKIP python_client: the sandbox image is not built (make image)")
        return
    rep = Reporter()
    ctx = {"tmp": tempfile.mkdtemp(prefix="llmbox-pyclient-")}
    try:
        rep.run("pip_install_offline_into_a_plain_venv", test_pip_install_offline_into_a_plain_venv, ctx)
        web_env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN, "LLMBOX_SANDBOX_API_MAX": str(API_MAX)}
        with Stack(scenario={"eval": True}, web_env=web_env) as s:
            ctx["stack"] = s
            ctx["url"] = "http://127.0.0.1:%d" % s.port
            rep.run("sandbox_lifecycle", test_sandbox_lifecycle, ctx)
            rep.run("create_failure_is_sandbox_create_error", test_create_failure_is_sandbox_create_error, ctx)
            rep.run("retries_honour_retry_after_and_timeouts", test_retries_honour_retry_after_and_timeouts, ctx)
            rep.run("task_followed_and_artifacts_downloaded", test_task_followed_and_artifacts_downloaded, ctx)
            rep.run("eval_followed_to_its_results", test_eval_followed_to_its_results, ctx)
            rep.run("asyncio_several_sandboxes_at_once", test_asyncio_several_sandboxes_at_once, ctx)
            rep.run("nemo_gym_provider_against_the_standin", test_nemo_gym_provider_against_the_standin, ctx)
            rep.run("readme_examples_run", test_readme_examples_run, ctx)
            rep.run("python39_runs_the_client", test_python39_runs_the_client, ctx)
            rep.run("tool_calls", test_tool_calls, ctx)
            rep.run("rollout_group", test_rollout_group, ctx)
            # a cancelled group's tasks tear their sandboxes down after
            # the group reads as ended: wait for that, a leak stays
            deadline = time.time() + 20
            left = s.sandbox_leftovers()
            while left and time.time() < deadline:
                time.sleep(0.5)
                left = s.sandbox_leftovers()
            if left:
                print("FAIL python_client_leftovers: %s" % left)
                rep.failed += 1
    finally:
        shutil.rmtree(ctx["tmp"], ignore_errors=True)
    rep.done()


if __name__ == "__main__":
    main()
