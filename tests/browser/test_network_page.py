"""The task view's Network section (web/js/network.js) in headless Chromium
against the real stack: a task whose network is a policy of rules and whose
scripted model fetches an allowed name (allowed.test), a refused one
(denied.test: no rule names it) and an address typed by hand shows those
rows (time, name, address:port, allowed or refused with the rule, bytes)
from the record the agent kept in the task's files when its sandbox ended.
A record line with hostile text (a name like <img src=x onerror=...>.test)
shows as text. A task still running shows its sandbox's live record.
Screenshots: tests/browser/screenshots/network-record.png and
network-card.png (SHOTS overrides).

It runs in tests/security/test_egress.py's world (two network namespaces,
the fake internet at 45.1.1.x and its DNS; nothing leaves the machine):
test_egress.outer makes it and runs this file again inside. Root only.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "security"))

FETCH = ("curl -s -m 8 http://allowed.test/page; echo; curl -s -m 8 http://denied.test/ || echo refused=$?; "
         "curl -s -m 8 http://45.1.1.20/ || echo refused=$?")
SCENARIO = {"steps": [{"tool_calls": [{"name": "finish", "arguments": {"answer": "done"}}]}],
            "scenarios": [{"match": "[net]", "steps": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": FETCH}}], "delay_ms": 200},
                {"tool_calls": [{"name": "finish", "arguments": {"answer": "fetched"}}]}]},
                # fetches, then stays busy: the page shows the live record
                {"match": "[netslow]", "steps": [
                    {"tool_calls": [{"name": "bash", "arguments": {
                        "command": "curl -s -m 8 http://allowed.test/live; sleep 25"}}]},
                    {"tool_calls": [{"name": "finish", "arguments": {"answer": "slow"}}]}]}]}
HOSTILE = {"time_ms": 1765090000999, "kind": "tcp", "name": "<img src=x onerror=\"window.__xss=1\">.test",
           "addr": "<script>window.__xss=2</script>", "port": 80, "allowed": False,
           "rule": "<b onmouseover=\"window.__xss=3\">deny</b>", "bytes_out": 0, "bytes_in": 0}


def inner():
    from stack import Stack, image_ready
    if not image_ready():
        print("SKIP network_page: the sandbox image is not built (make image)")
        return 0
    shots = os.environ.get("SHOTS") or os.path.join(HERE, "screenshots")
    os.makedirs(shots, exist_ok=True)
    env = {"LLMBOX_NETWORK_EGRESS_MAX": "*.test", "LLMBOX_POOL_SIZE": "0"}
    with Stack(SCENARIO, env=env) as s:
        code, t = s.create_task("[net] fetch two pages", network=json.dumps({"allow": ["allowed.test"]}))
        assert code == 201, (code, t)
        t = s.wait_task(t["id"])
        assert t["status"] == "succeeded", t
        # the sandbox has ended: the record is the task's own copy; one
        # hostile line in it, as a record that was tampered with would be
        path = os.path.join(s.prefix, "artifacts", t["id"], "network.json")
        with open(path) as f:
            rec = json.load(f)
        rec["connections"].append(HOSTILE)
        with open(path + ".tmp", "w") as f:
            json.dump(rec, f)
        os.rename(path + ".tmp", path)
        code, slow = s.create_task("[netslow] fetch and wait", network=json.dumps({"allow": ["allowed.test"]}))
        assert code == 201, (code, slow)
        r = subprocess.run(["node", os.path.join(HERE, "network_e2e.mjs"), "http://127.0.0.1:%d/" % s.port, t["id"],
                            slow["id"]],
                           cwd=HERE, timeout=180, env=dict(os.environ, SHOTS=shots))
    return r.returncode


def outer():
    if os.geteuid() != 0:
        print("SKIP network_page: needs root (network namespaces, sandboxd)")
        return 0
    if not os.path.isdir(os.path.join(HERE, "node_modules", "playwright-core")):
        # from the registry before the world: inside it nothing is reachable
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=HERE, check=True,
                       stdout=sys.stderr)
    import test_egress
    return test_egress.outer(__file__)


if __name__ == "__main__":
    sys.exit(inner() if "--inner" in sys.argv else outer())
