#!/usr/bin/env python3
"""Pause, resume and snapshots of API sandboxes (follow-ups;
docs/API.md "Pause, resume and snapshots"), through nginx against the real
web and sandboxd:

  - pause: 200 {paused: true}; an exec while paused is 409 and says the
    sandbox is frozen; resume: 200, and exec works again;
  - snapshot: 201 {snapshot_id, bytes, files} with a Location; GET
    /api/snapshots lists it; POST /api/sandboxes with "snapshot" starts a
    sandbox with its files, cwd and exported variables;
  - errors: unknown sandbox 404, no token 401, a malformed snapshot id 400,
    an unknown or deleted snapshot 404, a damaged snapshot 422 (and no
    sandbox left), DELETE twice 404.

Needs root (sandboxd) and the built image; Python stdlib only.
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Reporter, Stack, image_ready  # noqa: E402
from test_sandbox_api import TOKEN, Api, wait_sandboxd_count  # noqa: E402


def t_pause_resume(st):
    api = Api(st)
    sid = api.create()["id"]
    s, o = api.json("POST", "/api/sandboxes/%s/pause" % sid)
    assert s == 200 and o == {"id": sid, "paused": True}, (s, o)
    s, o = api.json("GET", "/api/sandboxes/" + sid)
    assert s == 200 and o["paused"] is True and o["status"] == "running", (s, o)
    s, o = api.json("POST", "/api/sandboxes/%s/exec" % sid, {"command": "echo hi"})
    assert s == 409 and "frozen" in o.get("error", {}).get("message", str(o)), (s, o)
    s, o = api.json("POST", "/api/sandboxes/%s/resume" % sid)
    assert s == 200 and o == {"id": sid, "paused": False}, (s, o)
    assert api.exec(sid, "echo back")["stdout"] == "back\n"
    assert api.json("GET", "/api/sandboxes/" + sid)[1]["paused"] is False
    s, o = api.json("POST", "/api/sandboxes/%s/pause" % ("0" * 32))
    assert s == 404, (s, o)
    s, _, _ = api.call("POST", "/api/sandboxes/%s/pause" % sid, token="")
    assert s == 401, s
    api.delete(sid)


def t_snapshot_roundtrip(st):
    api = Api(st)
    sid = api.create()["id"]
    api.exec(sid, "mkdir -p /testbed/w && echo snap > /testbed/w/f")
    s, hd, _ = api.call("POST", "/api/sandboxes/%s/snapshot" % sid)
    assert s == 201 and hd.get("location", "").startswith("/api/snapshots/"), (s, hd)
    s, o = api.json("POST", "/api/sandboxes/%s/snapshot" % sid)
    assert s == 201 and len(o["snapshot_id"]) == 32 and o["bytes"] > 0 and o["files"] > 0, (s, o)
    snap = o["snapshot_id"]
    s, lst = api.json("GET", "/api/snapshots")
    ids = [x["snapshot_id"] for x in lst["snapshots"]]
    assert s == 200 and snap in ids and lst["count"] == len(ids) >= 2, (s, lst)
    api.delete(sid)
    o = api.create({"snapshot": snap})
    assert snap in json.dumps(o), o  # the spec echoed says where it started from
    sid2 = o["id"]
    # the files come back; each API exec starts in the workdir with the
    # spec's env, as always (the shell's cwd and exports are the agent's)
    out = api.exec(sid2, "cat /testbed/w/f; test -d /testbed/w && echo dir")["stdout"]
    assert out == "snap\ndir\n", out
    api.delete(sid2)
    s, o = api.json("DELETE", "/api/snapshots/" + snap)
    assert s == 200 and o == {"snapshot_id": snap, "deleted": True}, (s, o)
    s, o = api.json("DELETE", "/api/snapshots/" + snap)
    assert s == 404, (s, o)
    s, o = api.json("POST", "/api/sandboxes", {"snapshot": snap})
    assert s == 404 and snap in str(o), (s, o)
    for x in lst["snapshots"]:
        if x["snapshot_id"] != snap:
            assert api.json("DELETE", "/api/snapshots/" + x["snapshot_id"])[0] == 200


def t_snapshot_errors(st):
    api = Api(st)
    s, o = api.json("POST", "/api/sandboxes", {"snapshot": "not-an-id"})
    assert s == 400 and "snapshot" in str(o), (s, o)
    s, o = api.json("POST", "/api/sandboxes/%s/snapshot" % ("0" * 32))
    assert s == 404, (s, o)
    # a damaged snapshot: garbage where the web's state would be
    dirs = glob.glob(os.path.join(st.prefix, "var", "sandboxd", "states", "u*"))
    sid = api.create()["id"]
    s, o = api.json("POST", "/api/sandboxes/%s/snapshot" % sid)
    assert s == 201, (s, o)
    api.delete(sid)
    path = glob.glob(os.path.join(st.prefix, "var", "sandboxd", "states", "u*", "api-%s.state" % o["snapshot_id"]))
    assert len(path) == 1, (dirs, path)
    with open(path[0], "wb") as f:
        f.write(os.urandom(2048))
    s, e = api.json("POST", "/api/sandboxes", {"snapshot": o["snapshot_id"]})
    assert s == 422 and "damaged" in str(e), (s, e)
    assert api.json("DELETE", "/api/snapshots/" + o["snapshot_id"])[0] == 200


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP sandbox_pause_api: the sandbox image is not built (make image)")
        return
    if os.geteuid() != 0:
        print("SKIP sandbox_pause_api: sandboxd needs root")
        return
    env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN}
    with Stack(model=False, web_env=env) as st:
        for name, fn in [("pause_resume", t_pause_resume), ("snapshot_roundtrip", t_snapshot_roundtrip),
                         ("snapshot_errors", t_snapshot_errors)]:
            r.run(name, fn, st)
        n = wait_sandboxd_count(st, 0)
        r.run("no_leftovers", lambda: None if not n else (_ for _ in ()).throw(AssertionError("%d left" % n)))
    r.done()


if __name__ == "__main__":
    main()
