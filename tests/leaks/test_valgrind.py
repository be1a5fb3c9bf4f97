#!/usr/bin/env python3
"""Leaks: one full task through the real stack (fake model, sandboxd, web,
nginx) with `llmbox web` and the agent it spawns under valgrind, and the
same task through `llmbox run` (the terminal path) under valgrind. Any
definite leak, invalid read or write, or use of uninitialised memory in
those processes fails the check, with valgrind's report in the message.

The web runs under valgrind with --trace-children=yes, so the agent is
started exactly as in production (posix_spawn of the web's own binary)
and valgrind follows it; each process writes var/valgrind/vg-<pid>.log.
The task exercises what an agent does: a model reply with reasoning,
bash with stdout, stderr and an exit code, file_editor create, view and
str_replace, an unknown tool, arguments that are not JSON, a reply without
a tool call (the corrective message), outputs collected, finish.

sandboxd (root, namespaces, clone) and nginx are not run under valgrind.
Needs root, valgrind and the built image; about 30 s on 2 cores.

    python3 tests/leaks/test_valgrind.py          (make check-valgrind)
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import stack  # noqa: E402
from stack import REPO, Reporter, Skip, Stack, image_ready  # noqa: E402

VG_EXIT = 97  # valgrind's exit code when it found an error (a definite leak counts)
VG = ["valgrind", "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=definite",
      "--errors-for-leak-kinds=definite", "--error-exitcode=%d" % VG_EXIT, "--num-callers=30",
      "--track-fds=no", "--child-silent-after-fork=yes",
      "--suppressions=" + os.path.join(REPO, "tests", "leaks", "valgrind.supp")]


def steps(tag):
    """A conversation that walks most of the agent's paths."""
    return [
        {"content": "Looking around first.", "reasoning_content": "The " + tag + " run starts with a listing.",
         "tool_calls": [{"name": "bash", "arguments": {"command": "ls /testbed; echo to-stderr >&2; exit 3"}}]},
        {"tool_calls": [{"name": "file_editor", "arguments": {"command": "create", "path": "/testbed/output/r.md",
                                                              "file_text": "# Report\nline two\n"}},
                        {"name": "file_editor", "arguments": {"command": "str_replace", "path": "/testbed/output/r.md",
                                                              "old_str": "line two", "new_str": "line 2"}},
                        {"name": "file_editor", "arguments": {"command": "view", "path": "/testbed/output/r.md"}}]},
        {"tool_calls": [{"name": "no_such_tool", "arguments": {}},
                        {"name": "bash", "arguments": "{not json"}]},
        {"content": "I believe I am done."},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "mkdir -p /testbed/output/d && "
                                                                  "printf 'a,b\\n1,2\\n' > /testbed/output/d/t.csv"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"answer": "done " + tag}}]},
    ]


SCENARIO = {"scenarios": [{"match": "[vg-web]", "steps": steps("web")},
                          {"match": "[vg-run]", "steps": steps("run")}], "steps": []}


class VgStack(Stack):
    """The stack with `llmbox web` (and so every agent it spawns) under
    valgrind."""

    def _spawn(self, argv, out, env=None):
        if argv[1:2] == ["web"]:
            d = os.path.join(self.prefix, "var", "valgrind")
            os.makedirs(d, exist_ok=True)
            os.chmod(d, 0o1777)  # the web drops to the service user; its agents log here too
            argv = VG + ["--trace-children=yes", "--log-file=" + os.path.join(d, "vg-%p.log")] + argv
        return super()._spawn(argv, out, env)


def reports(paths):
    """(leaked bytes, errors, text) over valgrind logs."""
    leaked, errors, text = 0, 0, []
    for p in paths:
        t = open(p, errors="replace").read()
        m = re.search(r"definitely lost: ([\d,]+) bytes", t)
        if m:
            leaked += int(m.group(1).replace(",", ""))
        m = re.search(r"ERROR SUMMARY: ([\d,]+) errors", t)
        if m:
            errors += int(m.group(1).replace(",", ""))
        if (m and int(m.group(1).replace(",", ""))) or "definitely lost: 0 bytes" not in t and "definitely lost" in t:
            text.append("--- %s\n%s" % (os.path.basename(p), t[-6000:]))
    return leaked, errors, "\n".join(text)


def cmdline_of(log):
    t = open(log, errors="replace").read(4000)
    m = re.search(r"^==\d+== Command: (.*)$", t, re.M)
    return m.group(1) if m else ""


def web_task(st):
    """A task created through the web runs its agent under valgrind; no
    definite leak and no memory error in that agent."""
    code, t = st.create_task("[vg-web] write a report", files=[("in.txt", b"input file\n")], max_turns="10")
    assert code == 201, t
    t = st.wait_task(t["id"], timeout=240)
    assert t["status"] == "succeeded", t
    assert t["answer"] == "done web", t
    assert sorted(a["path"] for a in t["artifacts"]) == ["answer.txt", "d/t.csv", "r.md"], t["artifacts"]
    vg = os.path.join(st.prefix, "var", "valgrind")
    def agent_logs():
        # started for the task (`agent --task ID`), or the spare agent that
        # took it (`agent --spare ...`): its pid is in the task's agent log
        pids = set()
        alog = os.path.join(st.prefix, "var", "web", "log", "agent-%s.log" % t["id"])
        if os.path.exists(alog):
            pids = set(re.findall(r'"pid":(\d+)', open(alog, errors="replace").read()))
        return [p for p in glob.glob(os.path.join(vg, "vg-*.log"))
                if " agent --task " + t["id"] in cmdline_of(p)
                or re.search(r"vg-(\d+)\.log$", p).group(1) in pids]
    logs = agent_logs()
    deadline = time.time() + 30
    while time.time() < deadline and not (logs and all("ERROR SUMMARY" in open(p).read() for p in logs)):
        time.sleep(0.2)  # the agent finished the task; valgrind is writing its report
        logs = agent_logs()
    assert logs, "no valgrind log of the agent in %s: %s" % (vg, os.listdir(vg))
    assert all("ERROR SUMMARY" in open(p).read() for p in logs), "the agent's valgrind report is incomplete"
    leaked, errors, text = reports(logs)
    assert leaked == 0 and errors == 0, "agent: %d bytes definitely lost, %d errors\n%s" % (leaked, errors, text)


def terminal_run(st):
    """`llmbox run` (the terminal path) against the same sandboxd and fake
    model: exit 0, the answer printed, and valgrind finds nothing."""
    out = tempfile.mkdtemp(prefix="llmbox-vg-run-")
    try:
        inp = os.path.join(out, "in.txt")
        with open(inp, "w") as f:
            f.write("input file\n")
        env = dict(st.env)
        env.update({"LLMBOX_SANDBOXD_SOCKET": os.path.join(st.prefix, "var", "run", "sandboxd.sock"),
                    "NO_COLOR": "1"})
        log = os.path.join(out, "vg.log")
        p = subprocess.run(VG + ["--log-file=" + log, stack.LLMBOX, "run", "-i", inp, "-o",
                                 os.path.join(out, "o"), "--max-turns", "10", "[vg-run] write a report"],
                           cwd=st.prefix, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=240)
        leaked, errors, text = reports([log])
        assert p.returncode != VG_EXIT and leaked == 0 and errors == 0, (
            "llmbox run: %d bytes definitely lost, %d errors\n%s" % (leaked, errors, text))
        assert p.returncode == 0, "llmbox run exited %d\n%s\n%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
        assert "done run" in p.stdout, p.stdout[-2000:]
        assert os.path.exists(os.path.join(out, "o", "d", "t.csv")), os.listdir(os.path.join(out, "o"))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def web_itself(st):
    """The web process, stopped with SIGTERM after serving the task, the
    stream, the artifact list and the tools list: no definite leak and no
    memory error (its worker threads' own buffers are reachable, not
    lost)."""
    tid = st.get_json("/api/tasks")[1]["tasks"][0]["id"]
    assert len(st.events(tid)) > 5
    assert st.get_json("/api/tasks/%s/artifacts" % tid)[0] == 200
    assert st.get_json("/api/tools")[0] == 200  # spawns `agent --list-tools`, also traced
    web = st.procs[2]
    web.terminate()
    web.wait(timeout=60)
    vg = os.path.join(st.prefix, "var", "valgrind")
    logs = [p for p in glob.glob(os.path.join(vg, "vg-*.log")) if cmdline_of(p).endswith("llmbox web")
            or " agent --list-tools" in cmdline_of(p)]
    assert logs, os.listdir(vg)
    leaked, errors, text = reports(logs)
    assert leaked == 0 and errors == 0, "web: %d bytes definitely lost, %d errors\n%s" % (leaked, errors, text)


def main():
    r = Reporter()
    if not shutil.which("valgrind"):
        print("SKIP valgrind: valgrind is not installed (apt install valgrind)")
        return
    if "asan" in os.path.basename(os.path.dirname(stack.LLMBOX)):
        print("SKIP valgrind: %s is a sanitizer build; valgrind needs the plain one" % stack.LLMBOX)
        return
    if not image_ready() or os.geteuid() != 0:
        print("SKIP valgrind: needs root and the built image (make image)")
        return
    t0 = time.time()
    with VgStack(scenario=SCENARIO, env={"LLMBOX_WEB_THREADS": "4"}) as st:
        r.run("valgrind/agent_web_task", web_task, st)
        r.run("valgrind/llmbox_run", terminal_run, st)
        r.run("valgrind/web", web_itself, st)
    print("valgrind suite: %.0f s" % (time.time() - t0), file=sys.stderr)
    r.done()


if __name__ == "__main__":
    main()
