"""API sandboxes across a restart of `llmbox web` (sbxapi/sandbox_leases.h):
each is created in sandboxd with a lease, the web keeps a record of it, a
new web adopts it, and a lease nobody renews ends it.

  - restart: 50 API sandboxes alive, the web killed -9 and started again:
    every one is adopted (same id, status running, the file written before
    is there, commands run), and deleting them leaves nothing: no sandbox in
    sandboxd, no record, no sandbox process, scratch dir, cgroup or mount;
  - unrenewed: the web killed -9 and not started for longer than
    sandbox_api_lease_s: sandboxd destroys the sandboxes; a web started
    after that has nothing to adopt, answers 404, and keeps no record.

The warm pool is off, so every sandbox on the host is one of these."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Reporter, Snapshot, Stack, skip_reason, wait_until  # noqa: E402

TOKEN = "restart-token-" + os.urandom(16).hex()
N = 50
LEASE_S = 6


def api(s, method, path, body=None, timeout=60):
    h = {"Authorization": "Bearer " + TOKEN}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    st, _, resp = s.request(method, path, data, h, timeout=timeout)
    return st, (json.loads(resp) if resp else None)


def records(s):
    d = os.path.join(s.prefix, "var", "web", "sandboxes")
    # the web's empty spare files (".spare-*", sandbox_leases.c) are no records
    return sorted(x for x in os.listdir(d) if not x.startswith(".spare-")) if os.path.isdir(d) else []


def main():
    rep = Reporter()
    why = skip_reason()
    if why:
        print("SKIP sandbox_api_restart: %s" % why)
        return 0
    web_env = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN, "LLMBOX_SANDBOX_API_LEASE_S": str(LEASE_S)}
    with Stack(model=False, env={"LLMBOX_POOL_SIZE": "0"}, web_env=web_env) as s:

        def restart_adopts_all():
            ids = []
            for i in range(N):
                st, o = api(s, "POST", "/api/sandboxes", {"ttl_s": 600})
                assert st == 201, (st, o)
                ids.append(o["id"])
                st, o = api(s, "POST", "/api/sandboxes/%s/exec" % o["id"],
                            {"command": "echo %d > /testbed/mark" % i})
                assert st == 200 and o["return_code"] == 0, (st, o)
            assert len(records(s)) == N, records(s)
            snap = Snapshot(s)
            assert snap.procs, "no sandbox process seen"
            s.kill("web")
            s.restart("web")
            for i, sid in enumerate(ids):
                st, o = api(s, "GET", "/api/sandboxes/" + sid)
                assert st == 200 and o["status"] == "running", (sid, st, o)
                st, o = api(s, "POST", "/api/sandboxes/%s/exec" % sid, {"command": "cat /testbed/mark"})
                assert st == 200 and o["stdout"] == "%d\n" % i, (sid, st, o)
            p = s.sandboxd_ping()
            assert p["sandboxes"] == N and p.get("leased_unheld") == 0, p
            # a renewal period passes: the new web renews what it adopted
            time.sleep(LEASE_S + 1)
            st, o = api(s, "POST", "/api/sandboxes/%s/exec" % ids[0], {"command": "true"})
            assert st == 200 and o["return_code"] == 0, (st, o)
            for sid in ids:
                st, o = api(s, "DELETE", "/api/sandboxes/" + sid)
                assert st == 200, (st, o)
            assert not records(s), records(s)
            wait_until(lambda: s.sandboxd_ping()["sandboxes"] == 0, 10, "sandboxd to hold no sandbox")
            wait_until(lambda: not snap.leftovers(), 10, "every sandbox to be gone from the host")

        def unrenewed_lease_ends_them():
            ids = []
            for _ in range(3):
                st, o = api(s, "POST", "/api/sandboxes", {"ttl_s": 600})
                assert st == 201, (st, o)
                ids.append(o["id"])
            snap = Snapshot(s)
            s.kill("web")
            wait_until(lambda: s.sandboxd_ping()["sandboxes"] == 0, LEASE_S + 10,
                       "sandboxd to end the sandboxes of a web gone for longer than their lease")
            wait_until(lambda: not snap.leftovers(), 10, "every sandbox to be gone from the host")
            s.restart("web")
            for sid in ids:
                st, o = api(s, "GET", "/api/sandboxes/" + sid)
                assert st == 404, (sid, st, o)
            assert not records(s), records(s)

        rep.run("sandbox_api_restart/%d_sandboxes_adopted_by_a_new_web" % N, restart_adopts_all)
        rep.run("sandbox_api_restart/unrenewed_lease_ends_them", unrenewed_lease_ends_them)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
