"""Starts the real stack with a two-round scripted conversation, runs its
first round through the API, then followup_e2e.mjs sends the second from
the page (the message box) and checks the thread view and its marks.
Screenshot: tests/browser/screenshots/followup-thread.png (SHOTS overrides).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from stack import Stack, image_ready  # noqa: E402


def bash(cmd):
    return {"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}], "delay_ms": 300}


def finish(answer):
    return {"tool_calls": [{"name": "finish", "arguments": {"answer": answer}}]}


SCENARIO = {"steps": [], "scenarios": [{"match": "[conv-p]", "steps": [
    bash("mkdir -p /testbed/output && cd /testbed/output && echo red > chart.txt && echo draft > draft.txt "
         "&& echo same > same.txt"),
    finish("red done"),
    bash("cd /testbed/output && cat /testbed/input/colors.txt > chart.txt && rm draft.txt && echo legend > legend.txt"),
    finish("blue done"),
]}]}


def main():
    if os.geteuid() != 0 or not image_ready():
        print("SKIP followup_page: needs root and the sandbox image")
        return 0
    shots = os.environ.get("SHOTS") or os.path.join(HERE, "screenshots")
    os.makedirs(shots, exist_ok=True)
    with Stack(SCENARIO, env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_FOLLOWUP_KEEP_S": "600"}) as s:
        code, t = s.create_task("[conv-p] draw a chart")
        assert code == 201, (code, t)
        t = s.wait_task(t["id"])
        assert t["status"] == "succeeded", t
        r = subprocess.run(["node", os.path.join(HERE, "followup_e2e.mjs"), "http://127.0.0.1:%d/" % s.port, t["id"]],
                           cwd=HERE, timeout=180, env=dict(os.environ, SHOTS=shots))
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
