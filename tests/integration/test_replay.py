"""The replay provider and the text tool-call mode end to end through
`llmbox run`, with tests/fake_sandboxd.py (and tests/fake_model.py for the
text mode): no root needed. Prints PASS/FAIL lines for tests/run.sh."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.abspath(os.path.join(here, "..", ".."))
binary = os.environ.get("LLMBOX") or os.path.join(repo, os.environ.get("BUILD", "build"), "llmbox")
failed = 0
procs = []


def check(name, ok, why=""):
    global failed
    if ok:
        print("PASS " + name)
    else:
        failed = 1
        print("FAIL %s: %s" % (name, str(why)[-600:].replace("\n", " | ")))
    sys.stdout.flush()


def start_model(tmp, name, steps):
    scen = os.path.join(tmp, name + ".json")
    with open(scen, "w") as f:
        json.dump(steps, f)
    log = os.path.join(tmp, name + ".log")
    os.makedirs(log)
    p = subprocess.Popen([sys.executable, os.path.join(repo, "tests", "fake_model.py"), "--scenario", scen,
                          "--log-dir", log], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(p)
    port = p.stdout.readline().split()[1]
    return "http://127.0.0.1:%s/v1" % port, log


def run(tmp, env, out, prompt, max_turns=10):
    e = dict(base_env)
    e.update(env)
    r = subprocess.run([binary, "run", "-o", out, "--max-turns", str(max_turns), prompt], env=e,
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def requests(log):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(log, "request-[0-9][0-9][0-9][0-9].json")))]


if not os.access(binary, os.X_OK):
    print("FAIL replay_setup: no llmbox binary at %s (run make first)" % binary)
    sys.exit(1)
tmp = tempfile.mkdtemp(prefix="llmbox-replay-test.")
sock = os.path.join(tmp, "sandboxd.sock")
base_env = dict(os.environ, LLMBOX_HOME=repo, LLMBOX_SANDBOXD_SOCKET=sock, NO_COLOR="1")
for k in ("LLMBOX_LLM_PROVIDER", "LLMBOX_LLM_TOOL_MODE", "LLMBOX_REPLAY_FILE", "LLMBOX_LLM_URL"):
    base_env.pop(k, None)
try:
    procs.append(subprocess.Popen([sys.executable, os.path.join(repo, "tests", "fake_sandboxd.py"), "--socket", sock,
                                   "--root", os.path.join(tmp, "sandboxes")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for _ in range(50):
        if os.path.exists(sock):
            break
        time.sleep(0.1)

    # ---- text mode: tools in the system prompt, calls and results as text ----
    url, log = start_model(tmp, "text", [
        {"content": "Let me write it.\n<function=bash>\n<parameter=command>\nmkdir -p output && "
                    "printf 'a\\nb\\n' > output/lines.txt && echo written\n</parameter>\n</function>"},
        {"content": "```xml\n<function=file_editor>\n<parameter=command>view</parameter>\n"
                    "<parameter=path>/testbed/output/lines.txt</parameter>\n"
                    "<parameter=view_range>[2, 2]</parameter>\n</function>\n```"},
        {"content": "The file has two lines.\nfinish(answer=\"2\")"},
    ])
    out_text = os.path.join(tmp, "out-text")
    rc, text = run(tmp, {"LLMBOX_LLM_URL": url, "LLMBOX_LLM_TOOL_MODE": "text"}, out_text, "Count the lines")
    check("text_mode_run_succeeds", rc == 0, "exit %d: %s" % (rc, text))
    ans = open(os.path.join(out_text, "answer.txt")).read() if os.path.exists(os.path.join(out_text, "answer.txt")) else None
    check("text_mode_finish_as_text_answer", ans == "2", ans)
    check("text_mode_command_ran", os.path.exists(os.path.join(out_text, "lines.txt")), os.listdir(out_text) if os.path.isdir(out_text) else "")
    try:
        reqs = requests(log)
        assert len(reqs) == 3, len(reqs)
        assert all("tools" not in r for r in reqs), "tools sent"
        sysmsg = reqs[0]["messages"][0]
        assert sysmsg["role"] == "system" and "# Tools" in sysmsg["content"], sysmsg
        assert "## file_editor" in sysmsg["content"] and "<function=NAME>" in sysmsg["content"]
        m2 = reqs[1]["messages"]
        assert all(m["role"] in ("system", "user", "assistant") for m in m2), [m["role"] for m in m2]
        assert m2[2]["role"] == "assistant" and "tool_calls" not in m2[2], m2[2]
        assert m2[2]["content"].startswith("Let me write it.\n\n<function=bash>\n<parameter=command>\n"), m2[2]
        assert m2[3]["role"] == "user" and m2[3]["content"].startswith("Observation of bash:\n"), m2[3]
        assert "written" in m2[3]["content"], m2[3]
        obs = reqs[2]["messages"][-1]
        # view_range "[2, 2]" came as text and was coerced to an array by the schema check
        assert obs["role"] == "user" and obs["content"].startswith("Observation of file_editor:"), obs
        assert "b" in obs["content"] and "Invalid arguments" not in obs["content"], obs
        check("text_mode_requests", True)
    except Exception as e:  # noqa: BLE001
        check("text_mode_requests", False, repr(e))
    traj_text = os.path.join(out_text, "trajectory.json")

    # ---- replay the text-mode run's trajectory: same tools, same outcome, no model ----
    out_rep = os.path.join(tmp, "out-replay")
    rc, text = run(tmp, {"LLMBOX_LLM_PROVIDER": "replay", "LLMBOX_REPLAY_FILE": traj_text,
                         "LLMBOX_LLM_URL": "http://127.0.0.1:9/v1"}, out_rep, "Count the lines")
    check("replay_trajectory_succeeds", rc == 0, "exit %d: %s" % (rc, text))
    check("replay_trajectory_reruns_tools",
          open(os.path.join(out_rep, "lines.txt")).read() == "a\nb\n" if os.path.exists(os.path.join(out_rep, "lines.txt")) else False,
          text)
    try:
        t0 = json.load(open(traj_text))
        t1 = json.load(open(os.path.join(out_rep, "trajectory.json")))
        assert t1["status"] == "succeeded" and t1["answer"] == "2", (t1["status"], t1["answer"])
        a0 = [m for m in t0["messages"] if m["role"] == "assistant"]
        a1 = [m for m in t1["messages"] if m["role"] == "assistant"]
        assert [m.get("tool_calls") for m in a0] == [m.get("tool_calls") for m in a1]
        assert t1["model"]["url"] == "replay:trajectory.json", t1["model"]
        check("replay_trajectory_same_calls", True)
    except Exception as e:  # noqa: BLE001
        check("replay_trajectory_same_calls", False, repr(e))

    # ---- a hand-written list; the recording runs out -> finish ----
    script = os.path.join(tmp, "script.json")
    with open(script, "w") as f:
        json.dump([{"content": "Writing.", "reasoning_content": "plan",
                    "tool_calls": [{"name": "bash", "arguments": {"command": "echo 5 > output/answer.txt"}}]}], f)
    out_s = os.path.join(tmp, "out-script")
    rc, text = run(tmp, {"LLMBOX_LLM_PROVIDER": "replay", "LLMBOX_REPLAY_FILE": script}, out_s, "Five")
    ans = open(os.path.join(out_s, "answer.txt")).read().strip() if os.path.exists(os.path.join(out_s, "answer.txt")) else None
    check("replay_script_runs_out_into_finish", rc == 0 and ans == "5" and "replaying" in text, "exit %d ans %r: %s" % (rc, ans, text))

    # ---- missing and garbage files: a plain sentence, a failed run ----
    rc, text = run(tmp, {"LLMBOX_LLM_PROVIDER": "replay", "LLMBOX_REPLAY_FILE": os.path.join(tmp, "nope.json")},
                   os.path.join(tmp, "out-missing"), "x")
    check("replay_missing_file", rc == 1 and "nope.json does not exist" in text, "exit %d: %s" % (rc, text))
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write("this is not json")
    rc, text = run(tmp, {"LLMBOX_LLM_PROVIDER": "replay", "LLMBOX_REPLAY_FILE": bad}, os.path.join(tmp, "out-bad"), "x")
    check("replay_garbage_file", rc == 1 and "is not valid JSON" in text, "exit %d: %s" % (rc, text))
finally:
    for p in procs:
        p.kill()
        p.wait()
    if os.environ.get("KEEP"):
        print("kept " + tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
sys.exit(failed)
