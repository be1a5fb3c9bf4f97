#!/usr/bin/env python3
"""The artifacts cache's trim (several nodes; server/web/cache_trim.h): with an
object store, a host's artifacts/ is a cache of the bucket, kept under
artifacts_cache_max_mb. A real Ceph radosgw, one stack, tasks that each
leave 700 KB of output, a cap of 1 MiB and a look every second:

  1. oldest_trimmed_and_fetched_again: two tasks (1.4 MB): the older
     task's folder is removed, the newer kept through later passes (its
     output has two names, output/ and rounds/1/output/, and is counted
     once); the older one's output and
     trajectory are then served again, byte for byte (fetched back);
  2. unstored_never_trimmed: a task that ended while the store was down
     ("its outputs could not be stored": the only copy is here), 1.2 MB
     alone, is kept however long the cache stays over its cap, and the
     web says why.

    python3 tests/integration/test_cache_trim.py   (as root; Ceph from make deps)
"""
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stack import LLMBOX, Reporter, Stack, image_ready  # noqa: E402
import s3_server  # noqa: E402


def bash(cmd):
    return {"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]}


def finish(answer):
    return {"tool_calls": [{"name": "finish", "arguments": {"answer": answer}}]}


BIG = "mkdir -p /testbed/output && head -c %d /dev/urandom > /testbed/output/big.bin"
# c alone is over the cap: only its protection keeps it
SCENARIO = {"scenarios": [{"match": "[big-%s]" % k, "steps": [bash(BIG % n), finish(k)]}
                          for k, n in (("a", 700000), ("b", 700000), ("c", 1200000))]}


def folder(s, tid):
    return os.path.join(s.prefix, "artifacts", tid)


def run(s, key):
    st, t = s.create_task("Make a big file [big-%s]" % key)
    assert st in (200, 201), (st, t)
    return s.wait_task(t["id"], timeout=120)


def wait_for(what, cond, timeout=15):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, what
        time.sleep(0.2)


def main():
    rep = Reporter()
    if s3_server.missing() or os.geteuid() != 0 or not image_ready():
        print("SKIP cache_trim: needs root, the sandbox image and %s (make deps)" % " ".join(s3_server.missing()))
        return
    with s3_server.S3Server() as s3:
        env = s3.env(bucket="llmbox-trim")
        r = subprocess.run([LLMBOX, "blob", "mkbucket"], env=dict(os.environ, LLMBOX_HOME="/", **env),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        env.update({"LLMBOX_ARTIFACTS_CACHE_MAX_MB": "1", "LLMBOX_ARTIFACTS_CACHE_TRIM_S": "1",
                    "LLMBOX_ARTIFACTS_CACHE_MIN_AGE_S": "0", "LLMBOX_S3_RETRIES": "0", "LLMBOX_S3_TIMEOUT_S": "3"})
        with Stack(scenario=SCENARIO, env=env) as s:

            def oldest_trimmed_and_fetched_again():
                a = run(s, "a")
                assert a["status"] == "succeeded", a
                time.sleep(1.1)  # a later second for b's files: the order is by mtime
                b = run(s, "b")
                assert b["status"] == "succeeded", b
                wait_for("the older task's folder was not trimmed", lambda: not os.path.exists(folder(s, a["id"])))
                # two more passes: b alone (its output linked from rounds/1/output too) is under the cap
                time.sleep(2.5)
                trims = [ln for ln in open(os.path.join(s.prefix, "var", "log", "web.log")) if "artifacts cache" in ln]
                assert os.path.exists(folder(s, b["id"])), ("the newer task's folder went too", a["id"], b["id"], trims)
                st, _, arts = s.request("GET", "/api/tasks/%s/artifacts" % a["id"])
                want = [x for x in json.loads(arts)["artifacts"] if x["path"] == "big.bin"][0]["sha256"]
                st, _, body = s.request("GET", "/api/tasks/%s/artifacts/big.bin" % a["id"])
                assert st == 200 and hashlib.sha256(body).hexdigest() == want, (st, len(body))
                st, _, body = s.request("GET", "/api/tasks/%s/trajectory" % a["id"])
                assert st == 200 and json.loads(body)["answer"] == "a", (st, body[:200])
                log = open(os.path.join(s.prefix, "var", "log", "web.log")).read()
                assert "the artifacts cache: 1 task folders removed" in log, log[-2000:]

            def unstored_never_trimmed():
                s3.kill_gateway()
                try:
                    c = run(s, "c")
                finally:
                    s3.start_gateway()
                assert c["status"] == "failed" and "outputs could not be stored" in (c.get("reason") or ""), c
                assert os.path.exists(os.path.join(folder(s, c["id"]), ".agent-here"))
                assert not os.path.exists(os.path.join(folder(s, c["id"]), ".in-store"))
                # over the cap with c alone (1.2 MB): passes go by, the others go, c stays
                time.sleep(3.5)
                assert os.path.exists(os.path.join(folder(s, c["id"]), "output", "big.bin")), "the only copy went"
                wait_for("the web did not say why it keeps the folder",
                         lambda: "hold files the object store does not" in
                         open(os.path.join(s.prefix, "var", "log", "web.log")).read())

            rep.run("cache_trim/oldest_trimmed_and_fetched_again", oldest_trimmed_and_fetched_again)
            rep.run("cache_trim/unstored_never_trimmed", unstored_never_trimmed)
    rep.done()


if __name__ == "__main__":
    main()
