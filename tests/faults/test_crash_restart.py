"""kill -9 of an agent, of sandboxd, of the web process and of everything at
once, in the middle of running tasks, then a restart the way `make run`
(scripts/run.sh) and tests/lib/stack.py start them.

What a user relies on: no task is lost or left "running" forever, each gets
a true final state with the reason; results that were finished stay
downloadable, artifacts and bundles, byte for byte; an event stream open
across a web restart resumes and sees every event once; and no sandbox
process, scratch dir, cgroup, mount or slirp4netns is left behind.

The warm pool is off (LLMBOX_POOL_SIZE=0), so every sandbox process on the
host belongs to a task and leftovers can be counted exactly."""
import io
import os
import signal
import sys
import threading
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import (Reporter, SSEClient, Snapshot, Stack, agent_pid, bash, check_sequence, children, create,  # noqa: E402
                      finish, pid_gone, skip_reason, wait_final, wait_until)

SCENARIOS = {"scenarios": [
    {"match": "[done]", "steps": [
        bash("echo result > /testbed/output/result.txt; mkdir -p /testbed/output/plots; "
             "head -c 3000 /dev/urandom > /testbed/output/plots/noise.bin"),
        finish("finished before the crashes")]},
    {"match": "[agent-kill]", "steps": [bash("echo started > /testbed/output/s.txt; sleep 30"), finish()]},
    {"match": "[sbd-sleep]", "steps": [bash("sleep 30"), finish()]},
    {"match": "[sbd-think]", "steps": [bash("echo made > /testbed/output/made.txt"),
                                       finish("too late", delay_ms=4000)]},
    {"match": "[sbd-down]", "steps": [finish("never")]},
    {"match": "[after]", "steps": [bash("echo ok > /testbed/output/ok.txt"), finish("ok")]},
    {"match": "[web-survivor]", "steps": [bash("sleep 3; echo survived > /testbed/output/s.txt"),
                                          finish("survived")]},
    {"match": "[web-victim]", "steps": [bash("sleep 30"), finish()]},
    {"match": "[web-long]", "steps": [bash("sleep 6; echo late > /testbed/output/late.txt"), finish("late")]},
    {"match": "[web-orphan]", "steps": [bash("sleep 30"), finish()]},
    {"match": "[all]", "steps": [bash("sleep 30"), finish()]},
]}

FINAL = ("succeeded", "failed", "cancelled")


def task(s, tid):
    st, t = s.get_json("/api/tasks/" + tid)
    assert st == 200, (st, t)
    return t


def started_tool(s, tid):
    """Until the task's first tool call runs (its first reply is counted)."""
    wait_until(lambda: task(s, tid)["turns"] >= 1, 30, "task %s to run its first tool" % tid)
    time.sleep(0.5)


def get(s, path):
    st, h, body = s.request("GET", path)
    return st, h, body


def results(s, tid):
    """{artifact path: bytes} and the zip bundle's {name: bytes}."""
    st, t = s.get_json("/api/tasks/%s/artifacts" % tid)
    assert st == 200, (st, t)
    files = {}
    for a in t["artifacts"]:
        st, _, body = get(s, "/api/tasks/%s/artifacts/%s" % (tid, a["path"]))
        assert st == 200, (a["path"], st)
        files[a["path"]] = body
    st, h, body = get(s, "/api/tasks/%s/bundle.zip" % tid)
    assert st == 200, (st, body[:200])
    z = zipfile.ZipFile(io.BytesIO(body))
    assert z.testzip() is None
    bundle = {n: z.read(n) for n in z.namelist()}
    return files, bundle


def revive(s):
    """Restarts whatever an earlier failed case left dead, so one failure
    does not take the next cases with it."""
    dead = [n for n in ("sandboxd", "web", "nginx") if s.named[n][0].poll() is not None]
    for n in dead:
        s.restart(n, wait=False)
    if dead:
        s.wait_healthy()


def main():
    rep = Reporter()
    why = skip_reason()
    if why:
        print("SKIP crash_restart: %s" % why)
        return 0
    env = {"LLMBOX_POOL_SIZE": "0", "LLMBOX_NETWORK_ALLOW": "none,nat"}
    with Stack(scenario=SCENARIOS, env=env) as s:
        # ---- a finished task whose results must survive everything below
        done = create(s, "[done] make results")
        t = wait_final(s, done)
        assert t["status"] == "succeeded", t
        before = results(s, done)

        def results_kept():
            now = results(s, done)
            assert now[0] == before[0], "artifacts changed: %r" % sorted(now[0])
            assert now[1] == before[1], "bundle changed: %r" % sorted(now[1])
            assert now[0]["result.txt"] == b"result\n" and "output/plots/noise.bin" in now[1]

        # ---- 1. an agent killed -9 in the middle of a command --------------
        def agent_kill9():
            revive(s)
            tid = create(s, "[agent-kill] sleep")
            started_tool(s, tid)
            snap = Snapshot(s)
            assert snap.procs, "no sandbox process seen for the running task"
            pid = agent_pid(tid)
            assert pid, "no agent process for task %s" % tid
            t0 = time.time()
            os.kill(pid, signal.SIGKILL)
            t = wait_final(s, tid, timeout=15)
            took = time.time() - t0
            assert t["status"] == "failed" and t["reason"] == "the agent process died (SIGKILL)", t
            assert took < 3, "the end of a killed agent was recorded after %.1f s" % took
            # its sandbox goes with its connection to sandboxd
            wait_until(lambda: not snap.leftovers(), 10, "the sandbox of the killed agent to go: %r"
                       % snap.leftovers())
            assert s.sandboxd_ping().get("sandboxes") == 0
            evs = s.events(tid)
            check_sequence(evs, "killed agent's events")
            assert evs[-1][2] == {"status": "failed", "reason": "the agent process died (SIGKILL)", "round": 1}, evs[-1]
        rep.run("agent_kill9_task_failed_with_reason_sandbox_gone", agent_kill9)

        # ---- 2. sandboxd killed -9 with two tasks in flight ----------------
        def sandboxd_kill9():
            revive(s)
            b1 = create(s, "[sbd-sleep] sleep", network="nat")
            b2 = create(s, "[sbd-think] think")
            started_tool(s, b1)
            started_tool(s, b2)
            snap = Snapshot(s)
            assert len(snap.dirs) == 2 and snap.slirps, "setup: %d sandboxes %r, %d slirp" % (
                len(snap.dirs), sorted(snap.dirs), len(snap.slirps))
            s.kill("sandboxd")
            t1 = wait_final(s, b1, timeout=15)
            assert t1["status"] == "failed" and "sandbox" in (t1["reason"] or "").lower(), t1
            # a task started while sandboxd is down fails at once, saying so
            b3 = create(s, "[sbd-down] nothing")
            t3 = wait_final(s, b3, timeout=20)
            assert t3["status"] == "failed" and (t3["reason"] or "").startswith("The sandbox could not be started"), t3
            # the task whose model answered after the crash: its outputs are
            # lost with the sandbox, so it cannot have succeeded
            t2 = wait_final(s, b2, timeout=20)
            assert t2["status"] == "failed" and "sandbox" in (t2["reason"] or "").lower(), t2
            # PDEATHSIG took the sandboxes' processes and slirp4netns
            wait_until(lambda: not [x for x in snap.leftovers() if "alive" in x], 10,
                       "sandbox processes to die with sandboxd")
            s.restart("sandboxd")
            # the restarted daemon removed scratch dirs and cgroups
            wait_until(lambda: not snap.leftovers(), 10, "the restarted sandboxd to clean up: %r" % snap.leftovers())
            b4 = create(s, "[after] works again")
            t4 = wait_final(s, b4, timeout=30)
            assert t4["status"] == "succeeded" and t4["answer"] == "ok", t4
            results_kept()
        rep.run("sandboxd_kill9_tasks_failed_restart_cleans_up", sandboxd_kill9)

        # ---- 3. the web killed -9; agents go on without it -----------------
        def web_kill9():
            revive(s)
            c1 = create(s, "[web-survivor] x")
            c2 = create(s, "[web-victim] x")
            c3 = create(s, "[web-long] x")
            c4 = create(s, "[web-orphan] x")
            pids = {}
            for c in (c1, c2, c3, c4):
                started_tool(s, c)
                pids[c] = agent_pid(c)
            assert all(pids.values()), pids
            p1, p2, p4 = pids[c1], pids[c2], pids[c4]
            snap = Snapshot(s)
            sse = SSEClient(lambda: s.port, c3, patience=30)
            th = threading.Thread(target=sse.run, daemon=True)
            th.start()
            time.sleep(0.3)
            s.kill("web")
            st, h, body = s.request("GET", "/api/health")
            assert st == 503 and b'"code":"unavailable"' in body, (st, body[:200])
            os.kill(p2, signal.SIGKILL)       # dies while nobody watches
            wait_until(lambda: pid_gone(p1), 20, "the surviving agent to finish without the web")
            s.restart("web")
            t1 = task(s, c1)
            assert t1["status"] == "succeeded" and t1["answer"] == "survived", t1
            st, _, body = get(s, "/api/tasks/%s/artifacts/s.txt" % c1)
            assert st == 200 and body == b"survived\n", (st, body)
            t2 = task(s, c2)
            assert t2["status"] == "failed" and t2["reason"] == "the service restarted while this task ran", t2
            assert task(s, c3)["status"] == "running", "an agent that outlived the web was given up"
            # an agent that outlived the web and dies later: noticed too
            os.kill(p4, signal.SIGKILL)
            t4 = wait_final(s, c4, timeout=10)
            assert t4["status"] == "failed" and "agent process" in t4["reason"], t4
            t3 = wait_final(s, c3, timeout=30)
            assert t3["status"] == "succeeded" and t3["answer"] == "late", t3
            th.join(30)
            assert sse.done, "the stream did not reach done: %r" % sse.events[-2:]
            check_sequence([e for e in sse.events], "stream across the web restart")
            assert sse.connects >= 2, "the stream was not cut by the restart (%d connects)" % sse.connects
            assert len(sse.events) == len(s.events(c3))
            wait_until(lambda: not snap.leftovers(), 10, "the sandboxes of the web's tasks to go: %r"
                       % snap.leftovers())
            results_kept()
        rep.run("web_kill9_agents_finish_restart_recovers", web_kill9)

        # ---- 4. everything at once (a power cut minus the reboot) ----------
        def kill_everything():
            revive(s)
            d = [create(s, "[all] a"), create(s, "[all] b")]
            for x in d:
                started_tool(s, x)
            snap = Snapshot(s)
            pids = [agent_pid(x) for x in d] + children(s.pid("nginx"))
            for name in ("nginx", "web", "sandboxd"):
                s.kill(name, wait=False)
            for p in pids:  # the agents and nginx's workers die too
                os.kill(p, signal.SIGKILL)
            for name in ("nginx", "web", "sandboxd"):
                s.kill(name)
            # a builder that died in the middle of a bundle left this
            stale = os.path.join(s.prefix, "artifacts", done, "bundle.tar.gz.tmp.0123456789abcdef")
            with open(stale, "wb") as f:
                f.write(b"half a bundle")
            for name in ("sandboxd", "web"):
                s.restart(name, wait=False)
            s.restart("nginx")
            for x in d:
                t = task(s, x)
                assert t["status"] == "failed" and t["reason"] == "the service restarted while this task ran", t
            wait_until(lambda: not snap.leftovers(), 10, "leftovers of the killed sandboxes: %r" % snap.leftovers())
            st, page = s.get_json("/api/tasks?limit=200")
            active = [x["id"] for x in page["tasks"] if x["status"] not in FINAL]
            assert not active, "tasks still active after the restart: %r" % active
            results_kept()
            st, _, body = get(s, "/api/tasks/%s/bundle.tar.gz" % done)
            assert st == 200 and body[:2] == b"\x1f\x8b", (st, body[:20])
            assert not os.path.exists(stale), "the half-written bundle was not removed"
            e = create(s, "[after] again")
            assert wait_final(s, e, timeout=30)["status"] == "succeeded"
        rep.run("kill9_everything_restart_all_tasks_final_results_kept", kill_everything)

        def nothing_left():
            revive(s)
            assert s.sandboxd_ping().get("sandboxes") == 0
            left = s.sandbox_leftovers()
            assert not left, left
        rep.run("crash_restart_leaves_no_sandbox", nothing_left)
    return rep.failed


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
