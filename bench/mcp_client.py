#!/usr/bin/env python3
"""The agent's cost per MCP tool call against a plugin tool call, in one
task of the whole service (nginx, web, agent, sandboxd) and the scripted
fake model (tests/fake_model.py).

The task's turns interleave three calls that each do next to nothing, --n
of each, round by round:

  plugin   bash `true` (the default plugin: the sandbox RPC, the shell's
           sentinel, the observation)
  stdio    box__echo of tests/mcp/mcp_stdio_server.py running INSIDE the
           sandbox (sandboxd's process API: proc_input on the task's
           connection, the answer as an event on the server's own)
  http     gate__check of a Streamable HTTP server on loopback (the Python
           one of tests/mcp/test_mcp_client.py), answering as an event stream

Each call's time is the agent's own (trajectory tool_results[].duration_ms:
from the call's start to its observation), so the model's time is not in
it. The agent keeps whole milliseconds (the difference of two readings of
a millisecond clock), so a single call reads 0, 1 or 2 ms: the mean over
--n calls is the figure (the truncation cancels out on average), p50 and
p90 are printed beside it. Prints the ratios of the means stdio / plugin
and http / plugin; the peer (plugin) is measured in the same run, the same
task.

    python3 bench/mcp_client.py --n 100
"""
import argparse
import http.server
import json
import os
import statistics
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mcp"))
from stack import Stack  # noqa: E402
from test_mcp_client import SECRET, Gate  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100, help="calls of each kind")
    a = ap.parse_args()
    steps = []
    for _ in range(a.n):
        steps.append({"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]})
        steps.append({"tool_calls": [{"name": "box__echo", "arguments": {"text": "x"}}]})
        steps.append({"tool_calls": [{"name": "gate__check", "arguments": {}}]})
    steps.append({"tool_calls": [{"name": "finish", "arguments": {"answer": "done"}}]})
    gate = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gate)
    threading.Thread(target=gate.serve_forever, daemon=True).start()
    conf = ("[model \"default\"]\nbase_url = {model_url}\nmodel = fake-model\nmcp = box, gate\n\n"
            "[mcp \"box\"]\ncommand = python3 /testbed/input/mcp_stdio_server.py box\n\n"
            "[mcp \"gate\"]\nurl = http://127.0.0.1:%d/mcp\nheader = Authorization: Bearer %s\n"
            % (gate.server_address[1], SECRET))
    with open(os.path.join(HERE, "..", "tests", "mcp", "mcp_stdio_server.py"), "rb") as f:
        server_py = f.read()
    turns = 3 * a.n + 1
    with Stack(scenario=steps, conf=conf, model_log=False,
               env={"LLMBOX_TOKEN_BUDGET": "0", "LLMBOX_MAX_TURNS": str(turns)}) as st:
        code, t = st.create_task("bench", files=[("mcp_stdio_server.py", server_py)], max_turns=str(turns),
                                 timeout_s="3000")
        assert code == 201, (code, t)
        t = st.wait_task(t["id"], 3000)
        code, traj = st.get_json("/api/tasks/%s/trajectory" % t["id"])
    gate.shutdown()
    res = [r for turn in traj["turns"] for r in turn.get("tool_results", [])]
    kinds = {"plugin": "bash", "stdio": "box__echo", "http": "gate__check"}
    ms = {k: [r["duration_ms"] for r in res if r["name"] == v and r["status"] == "ok"] for k, v in kinds.items()}
    print("task %s, %d turns, status %s" % (t["id"], t.get("turns", 0), t["status"]))
    for k, xs in ms.items():
        if not xs:
            print("%-7s no successful calls" % k)
            continue
        print("%-7s n=%d  p50 %.2f ms  p90 %.2f ms  mean %.2f ms" % (k, len(xs), statistics.median(xs),
                                                                      pct(xs, 0.9), statistics.mean(xs)))
    if ms["plugin"] and ms["stdio"] and ms["http"]:
        p = statistics.mean(ms["plugin"])
        print("ratio of the means: stdio/plugin %.2f, http/plugin %.2f" % (statistics.mean(ms["stdio"]) / p,
                                                                           statistics.mean(ms["http"]) / p))


if __name__ == "__main__":
    main()
