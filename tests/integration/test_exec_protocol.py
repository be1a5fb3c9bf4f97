#!/usr/bin/env python3
"""The exec protocol's soft and hard timeouts over the real `llmbox sandboxd`
(python3 stdlib only, run as root; skips without root or the image).

Part 1 talks the framing protocol of include/llmbox/sandbox.h directly:
a command still running at its soft timeout answers "running" with the
output so far and goes on; exec "" keeps waiting, "C-c" interrupts, any
other command is "busy"; the hard timeout counts from the command's start
even while nobody waits; files can be moved while a command runs.

Part 2 runs the agent (`llmbox run`) with the scripted fake model against
the same daemon: the model runs `sleep 3; echo done` with a 1 s soft
timeout, sees "still running", sends an empty command and sees "done".

    python3 tests/integration/test_exec_protocol.py      (from the repo root)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_sandbox import BIN, IMAGES, REPO, Conn, pidns_of, wait_gone  # noqa: E402

failed = 0


def report(name, ok, why=""):
    global failed
    if ok:
        print("PASS %s" % name, flush=True)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why), flush=True)


def ex(c, sid, cmd, timeout_ms=20000, soft_ms=None):
    req = {"op": "exec", "id": sid, "command": cmd, "timeout_ms": timeout_ms}
    if soft_ms is not None:
        req["soft_timeout_ms"] = soft_ms
    t0 = time.time()
    r = c.call(req)
    r["_secs"] = time.time() - t0
    return r


def short(r):
    return {k: v for k, v in r.items() if k not in ("_data",)}


def protocol(c, sid):
    # nothing running: "" and "C-c" have nothing to act on
    r = ex(c, sid, "")
    r2 = ex(c, sid, "C-c")
    report("empty_and_ctrl_c_need_a_running_command",
           r.get("error") == "invalid" and "nothing to wait for" in r.get("message", "")
           and r2.get("error") == "invalid" and "nothing to interrupt" in r2.get("message", ""),
           repr((r, r2)))

    # soft timeout: "running" with the output so far, the command goes on
    r = ex(c, sid, "echo start; echo warn >&2; sleep 1.5; echo end; (exit 7)", soft_ms=500)
    report("soft_timeout_returns_running_and_partial_output",
           r.get("state") == "running" and r.get("stdout") == "start\n"
           and r.get("stderr") == "warn\n" and r.get("exit_code") == -1
           and 400 <= r.get("duration_ms", 0) < 1400 and r["_secs"] < 1.4, repr(short(r)))
    # the connection is free meanwhile: other requests are served at once
    t0 = time.time()
    p = c.call({"op": "ping"})
    report("connection_free_while_running", p.get("ok") is True and time.time() - t0 < 0.5,
           repr(p))
    r = ex(c, sid, "", soft_ms=10000)
    report("empty_command_gets_rest_and_exit_code",
           r.get("state") == "exited" and r.get("exit_code") == 7 and r.get("stdout") == "end\n"
           and r.get("stderr") == "" and 1400 <= r.get("duration_ms", 0) < 4000, repr(short(r)))

    # several continuations, each with the output since the previous answer
    r1 = ex(c, sid, "for i in 1 2 3 4 5 6; do echo tick$i; sleep 0.3; done", soft_ms=400)
    r2 = ex(c, sid, "", soft_ms=600)
    r3 = ex(c, sid, "", soft_ms=10000)
    outs = [x.get("stdout", "") for x in (r1, r2, r3)]
    report("continuations_return_new_output_only",
           r1.get("state") == "running" and r2.get("state") == "running"
           and r3.get("state") == "exited" and r3.get("exit_code") == 0
           and "".join(outs) == "".join("tick%d\n" % i for i in range(1, 7))
           and all(outs[:2]), repr([short(x) for x in (r1, r2, r3)]))

    # another command while one runs: busy, with a sentence saying what to do;
    # files can still be moved meanwhile
    r = ex(c, sid, "cd /tmp; sleep 1; echo slept", soft_ms=200)
    b = ex(c, sid, "echo other")
    report("other_command_while_running_is_busy",
           r.get("state") == "running" and b.get("error") == "busy"
           and "empty command" in b.get("message", "") and "C-c" in b.get("message", ""),
           repr((short(r), b)))
    w = c.call({"op": "write", "id": sid, "path": "/testbed/output/during.txt"}, b"while running")
    rd = c.call({"op": "read", "id": sid, "path": "/testbed/output/during.txt", "max": 100})
    st = c.call({"op": "stat", "id": sid, "path": "/testbed/output/during.txt"})
    ls = c.call({"op": "list", "id": sid, "path": "/testbed/output"})
    report("files_work_while_running",
           w.get("ok") is True and rd.get("_data") == b"while running" and st.get("type") == "file"
           and any(e["path"] == "during.txt" for e in ls.get("entries", [])),
           repr((w, short(rd), st, ls)))
    # it ends with nobody waiting: the end is kept until it is collected
    time.sleep(1.3)
    b = ex(c, sid, "echo other")
    r = ex(c, sid, "", soft_ms=5000)
    report("end_kept_until_collected",
           b.get("error") == "busy" and "not been collected" in b.get("message", "")
           and r.get("state") == "exited" and r.get("stdout") == "slept\n" and r["_secs"] < 0.5,
           repr((b, short(r))))
    r = ex(c, sid, "pwd")
    report("shell_state_kept_across_continuation", r.get("stdout") == "/tmp\n", repr(short(r)))

    # C-c: SIGINT first (the program may clean up), state interrupted, shell usable after
    code = (b"import time\ntry:\n    print('ready', flush=True)\n    time.sleep(100)\n"
            b"except KeyboardInterrupt:\n    print('cleaned up', flush=True)\n    raise SystemExit(3)\n")
    c.call({"op": "write", "id": sid, "path": "/testbed/cleanup.py"}, code)
    r = ex(c, sid, "python3 /testbed/cleanup.py; echo after-python", soft_ms=800)
    t0 = time.time()
    i = ex(c, sid, "C-c")
    el = time.time() - t0
    r2 = ex(c, sid, "echo alive; pwd")
    report("ctrl_c_interrupts_with_sigint_first",
           r.get("state") == "running" and r.get("stdout") == "ready\n"
           and i.get("state") == "interrupted" and "cleaned up" in i.get("stdout", "")
           and "after-python" not in i.get("stdout", "") and el < 1.0
           and r2.get("stdout") == "alive\n/tmp\n" and not r2.get("shell_restarted"),
           "%.2f s %r" % (el, [short(x) for x in (r, i, r2)]))

    # a background job ignores the SIGINT of C-c and lives on
    r = ex(c, sid, "sleep 1000 >/dev/null 2>&1 & echo $!")
    bg = r.get("stdout", "").strip()
    r = ex(c, sid, "sleep 100", soft_ms=200)
    i = ex(c, sid, "C-c")
    k = ex(c, sid, "kill -0 %s && echo bg-alive; kill %s" % (bg, bg))
    report("background_job_survives_ctrl_c",
           bg.isdigit() and r.get("state") == "running" and i.get("state") == "interrupted"
           and k.get("stdout") == "bg-alive\n", repr([short(x) for x in (r, i, k)]))

    # the hard timeout counts from the start, also while nobody waits and
    # during a continuation
    r = ex(c, sid, "echo a; sleep 100; echo never", timeout_ms=1500, soft_ms=300)
    r2 = ex(c, sid, "", soft_ms=20000)
    r3 = ex(c, sid, "echo next")
    report("hard_timeout_during_continuation",
           r.get("state") == "running" and r2.get("state") == "timeout"
           and "never" not in r2.get("stdout", "") and r2.get("timeout_ms") == 1500
           and 1400 <= r2.get("duration_ms", 0) < 2800 and r2["_secs"] < 2.8
           and r3.get("stdout") == "next\n", repr([short(x) for x in (r, r2, r3)]))

    # the soft timeout never outlasts the hard one
    r = ex(c, sid, "sleep 100", timeout_ms=700, soft_ms=5000)
    report("soft_timeout_never_past_hard",
           r.get("state") == "timeout" and r["_secs"] < 2.0, repr(short(r)))

    # a process ignoring SIGINT: SIGKILL at the hard timeout, shell usable after
    code = (b"import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            b"print('ignoring', flush=True)\ntime.sleep(100)\n")
    c.call({"op": "write", "id": sid, "path": "/testbed/ignore.py"}, code)
    r = ex(c, sid, "cd /var; python3 /testbed/ignore.py", timeout_ms=1200, soft_ms=500)
    r2 = ex(c, sid, "", soft_ms=20000)
    r3 = ex(c, sid, "echo usable; pwd")
    report("sigint_ignoring_process_killed_at_hard_timeout",
           r.get("state") == "running" and r.get("stdout") == "ignoring\n"
           and r2.get("state") == "timeout" and r2["_secs"] + r["_secs"] < 3.5
           and r3.get("stdout") == "usable\n/var\n", repr([short(x) for x in (r, r2, r3)]))

    # C-c on a shell that ignores SIGINT itself: replaced by a fresh shell
    r = ex(c, sid, "trap '' INT; while :; do :; done", soft_ms=300)
    t0 = time.time()
    i = ex(c, sid, "C-c")
    el = time.time() - t0
    r2 = ex(c, sid, "echo fresh; pwd")
    report("ctrl_c_replaces_stuck_shell",
           r.get("state") == "running" and i.get("state") == "interrupted"
           and i.get("shell_restarted") is True and "shell was killed" in i.get("stderr", "")
           and el < 2.5 and r2.get("stdout") == "fresh\n/testbed\n",
           "%.2f s %r" % (el, [short(x) for x in (r, i, r2)]))

    # a command goes to the shell in one of two forms: a short wrapper is
    # read whole by `read -N` (PIPE_BUF at most), a longer one as the line
    # itself. Commands across the boundary, with bytes that are escaped
    # (quotes, $, newlines, UTF-8) and one that reads stdin, run exactly
    # as written and leave the shell's stream in step.
    bad = []

    def shq(w):
        return "'" + w.replace("'", "'\\''") + "'"

    unit = "a'b\"$x\\\u00e9;\n"  # all but a, b, x escaped: ~4.6 bytes a character
    words = ["a" * n for n in range(3500, 3700, 5)] + [(unit * 200)[:n] for n in range(690, 900, 5)]
    for word in words + ["", unit * 3000]:
        r = ex(c, sid, "printf '%s' " + shq(word) + "; cat; echo \"$?\"")
        if r.get("exit_code") != 0 or r.get("stdout") != word + "0\n":
            bad.append((len(word), short(r)))
    r = ex(c, sid, "echo in-step")
    report("bulk_and_long_forms_run_as_written",
           not bad and r.get("stdout") == "in-step\n", repr(bad[:2] or short(r))[:600])

    # a long line in flight is not held back from a "running" answer
    r = ex(c, sid, "printf 'no newline yet'; sleep 1", soft_ms=300)
    r2 = ex(c, sid, "", soft_ms=5000)
    report("partial_line_shown_while_running",
           r.get("stdout") == "no newline yet" and r2.get("state") == "exited"
           and r2.get("stdout") == "", repr((short(r), short(r2))))


def closing(sock, var):
    # closing the connection while a command runs detached destroys it all
    c = Conn(sock)
    sid = c.call({"op": "create", "memory_mib": 128})["id"]
    ns = pidns_of(c, sid)
    r = ex(c, sid, "sleep 1000 & sleep 1000", soft_ms=200)
    c.close()
    left = wait_gone(var, sid, ns)
    report("close_while_running_destroys", r.get("state") == "running" and not left,
           repr((short(r), left)))
    # and destroy works too, from the same connection
    c = Conn(sock)
    sid = c.call({"op": "create", "memory_mib": 128})["id"]
    ns = pidns_of(c, sid)
    r = ex(c, sid, "sleep 1000", soft_ms=200)
    d = c.call({"op": "destroy", "id": sid})
    left = wait_gone(var, sid, ns)
    p = c.call({"op": "ping"})
    report("destroy_while_running", r.get("state") == "running" and d.get("ok") is True
           and not left and p.get("ok") is True, repr((short(r), d, left)))
    c.close()


def agent(tmp, sock):
    """llmbox run + fake model: soft timeout, then "" sees the rest."""
    scen = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 3; echo done"}}]},
        # the model takes its time: the command ends meanwhile
        {"delay_ms": 2500, "tool_calls": [{"name": "bash", "arguments": {"command": ""}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo again"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"answer": "ok"}}]},
    ]
    sf = os.path.join(tmp, "scenario.json")
    with open(sf, "w") as f:
        json.dump(scen, f)
    logd = os.path.join(tmp, "model-log")
    os.makedirs(logd)
    mp = subprocess.Popen([sys.executable, os.path.join(REPO, "tests", "fake_model.py"),
                           "--port", "0", "--scenario", sf, "--log-dir", logd],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(mp.stdout.readline().split()[-1])
        env = dict(os.environ, LLMBOX_HOME=REPO, LLMBOX_SANDBOXD_SOCKET=sock,
                   LLMBOX_LLM_URL="http://127.0.0.1:%d/v1" % port, LLMBOX_LLM_MODEL="fake-model",
                   LLMBOX_LLM_KEY="sk-test", LLMBOX_BASH_SOFT_TIMEOUT_S="1",
                   LLMBOX_CMD_TIMEOUT_S="60", NO_COLOR="1")
        for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LLMBOX_PLUGINS", "LLMBOX_PROMPTS"):
            env.pop(k, None)
        out = os.path.join(tmp, "agent-out")
        p = subprocess.run([BIN, "run", "-o", out, "--max-turns", "10", "wait for it"], env=env,
                           capture_output=True, text=True, timeout=120, cwd=REPO)
        tools = []
        for n in (2, 3, 4):
            path = os.path.join(logd, "request-%04d.json" % n)
            msgs = json.load(open(path))["messages"] if os.path.exists(path) else []
            tools.append(next((m["content"] for m in reversed(msgs) if m.get("role") == "tool"), ""))
        first, second, third = tools
        report("agent_sees_still_running",
               p.returncode == 0 and "[status: still running after 1 s]" in first
               and "empty command" in first and "done" not in first,
               "rc=%d %r\n%s" % (p.returncode, first, p.stderr[-2000:]))
        report("agent_empty_command_sees_done",
               "[stdout]\ndone\n" in second and "[status: ok]" in second
               and "[stdout]\nagain\n" in third, repr((second, third)))
        tj = json.load(open(os.path.join(out, "trajectory.json")))
        sts = [r.get("status") for t in tj.get("turns", []) for r in t.get("tool_results", [])]
        report("agent_trajectory_statuses",
               sts[:3] == ["still running after 1 s", "ok", "ok"], repr(sts))
    finally:
        mp.terminate()
        mp.wait()


def main():
    if os.geteuid() != 0:
        print("SKIP test_exec_protocol: needs root")
        return 0
    if not os.path.exists(os.path.join(IMAGES, "default", ".complete")):
        print("SKIP test_exec_protocol: image not built (make image)")
        return 0
    if not os.access(BIN, os.X_OK):
        report("binary", False, "%s missing (make)" % BIN)
        return 1
    tmp = tempfile.mkdtemp(prefix="llmbox-exectest-")
    os.chmod(tmp, 0o755)
    var = os.path.join(tmp, "var")
    sock = os.path.join(tmp, "sd.sock")
    env = dict(os.environ, LLMBOX_VAR=var, LLMBOX_IMAGE_STORE=IMAGES, LLMBOX_HOME=REPO)
    env.pop("LLMBOX_SANDBOXD_SOCKET", None)
    log = open(os.path.join(tmp, "sandboxd.log"), "w")
    proc = subprocess.Popen([BIN, "sandboxd", "--socket", sock], env=env, stdout=log,
                            stderr=log, cwd=REPO)
    try:
        for _ in range(100):
            if os.path.exists(sock) or proc.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(sock):
            report("sandboxd_starts", False, "no socket after 5 s (exit status %r)" % proc.poll())
            return 1
        for name, fn in (("protocol", None), ("closing", closing), ("agent", agent)):
            try:
                if name == "protocol":
                    c = Conn(sock)
                    r = c.call({"op": "create", "memory_mib": 256})
                    if not r.get("ok"):
                        report("create", False, repr(r))
                        continue
                    protocol(c, r["id"])
                    c.close()
                elif name == "closing":
                    closing(sock, var)
                else:
                    agent(tmp, sock)
            except Exception as e:  # noqa: BLE001 - a crash of one part is one failure
                report(name, False, "%s: %s" % (type(e).__name__, e))
        r = Conn(sock).call({"op": "ping"})
        report("daemon_still_serving", r.get("ok") is True, repr(r))
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        report("sigterm_exits_cleanly", rc == 0, "rc=%r" % rc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
        if failed:
            with open(os.path.join(tmp, "sandboxd.log")) as f:
                sys.stderr.write("--- sandboxd log (last lines) ---\n")
                sys.stderr.write("".join(f.readlines()[-30:]))
        subprocess.call(["rm", "-rf", tmp])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
