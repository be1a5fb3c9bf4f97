"""Many tasks at once through the whole service (nginx, web, one agent per
task, sandboxd, the scripted fake model answering in 200 ms a turn).

What an operator relies on at LLMBOX_MAX_TASKS=N: N tasks started together
all succeed; every step each one took is stored exactly once, in order
(seq 1..n per task, no gap, no repeat), so the page and the event stream
show each step once; once they are done no sandbox is left behind (no
process, cgroup, mount or scratch folder); and the machine's memory holds
them. It also reports tasks per minute and what the harness adds to each
turn beyond the model's 200 ms and the command.

Size: LLMBOX_LOAD_TASKS (default 64, `make load`: 256), LLMBOX_LOAD_TURNS
bash turns per task (default 10; the finish call is one more turn),
LLMBOX_LOAD_MODEL_MS (default 200).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Skip, Stack, image_ready  # noqa: E402
import load  # noqa: E402

N = int(os.environ.get("LLMBOX_LOAD_TASKS", "64"))
TURNS = int(os.environ.get("LLMBOX_LOAD_TURNS", "10"))
MODEL_MS = int(os.environ.get("LLMBOX_LOAD_MODEL_MS", "200"))
# an agent is ~10 MiB, its sandbox ~1.5 MiB idle plus bash; keep a margin
MIB_PER_TASK = 40


def say(fmt, *a):
    print("  " + (fmt % a if a else fmt), flush=True)


def main():
    r = Reporter()
    if os.geteuid() != 0:
        print("SKIP load_tasks: needs root (sandboxd)")
        return r.done()
    if not image_ready():
        print("SKIP load_tasks: the sandbox image is not built (make image)")
        return r.done()
    need = N * MIB_PER_TASK + 1024
    if load.meminfo_mib() < need:
        print("SKIP load_tasks: %d tasks need about %d MiB free, the machine has %d" % (N, need, load.meminfo_mib()))
        return r.done()
    load.raise_nofile(65536)

    env = {
        "LLMBOX_MAX_TASKS": str(N),
        "LLMBOX_SANDBOX_MAX": str(max(1024, N + 64)),
        "LLMBOX_WEB_THREADS": "64",
        "LLMBOX_TASK_TIMEOUT_S": "900",
    }
    say("%d tasks x (%d bash turns + finish), model %d ms a turn; %s", N, TURNS, MODEL_MS, load.machine())
    s = Stack(scenario=load.per_conversation(load.bash_steps(TURNS, "true")), env=env,
              model_args=["--delay-ms", str(MODEL_MS)], model_log=False)
    s.start()
    state = {}
    try:
        def run_all():
            mem = load.MemSampler()
            cpu = load.CpuMeter(s).start()
            t0 = time.time()
            ids = load.create_tasks(s, N, "[load] run true %d times" % TURNS)
            t_created = time.time()
            load.wait_final(s, ids, timeout=120 + N * TURNS * MODEL_MS / 1000.0)
            state["ids"] = ids
            state["mem_mib"] = mem.stop()
            cpu.stop()
            state["cpu"] = cpu.line()
            state["t0"], state["t_created"], state["t_end"] = t0, t_created, time.time()
            tasks = load.api_tasks(s, ids)
            state["tasks"] = tasks
            bad = {i: (t["status"], t.get("reason")) for i, t in tasks.items() if t["status"] != "succeeded"}
            assert not bad, "%d of %d tasks did not succeed, e.g. %s" % (len(bad), N, list(bad.items())[:3])
            short = [i for i, t in tasks.items() if t["turns"] != TURNS + 1]
            assert not short, "%d tasks took another number of turns than %d, e.g. %s: %s" % (
                len(short), TURNS + 1, short[0], tasks[short[0]]["turns"])

        def events_once():
            if "ids" not in state:
                raise Skip("the tasks did not run")
            evs = load.task_events(s, state["ids"])
            probs = {i: load.check_events(e, TURNS + 1) for i, e in evs.items()}
            probs = {i: p for i, p in probs.items() if p}
            n = sum(len(e) for e in evs.values())
            say("events stored: %d (%d per task)", n, n // max(1, N))
            assert not probs, "%d tasks with event problems, e.g. %s: %s" % (len(probs), *list(probs.items())[0])

        def no_leaks_running():
            left = load.leaks_while_running(s)
            assert not left, "; ".join(left)

        r.run("load_tasks_all_succeed", run_all)
        r.run("load_tasks_events_once", events_once)
        r.run("load_tasks_no_sandbox_left", no_leaks_running)
        if "tasks" in state:
            report(state)
    finally:
        left = load.stop_and_check(s)
        s.stop()

    def no_leaks_stopped():
        assert not left, "; ".join(left)
    r.run("load_tasks_nothing_left_after_stop", no_leaks_stopped)
    return r.done()


def report(st):
    tasks = list(st["tasks"].values())
    first = min(t["created_ms"] for t in tasks)
    last = max(t["finished_ms"] for t in tasks)
    span = (last - first) / 1000.0
    turns = sum(t["turns"] for t in tasks)
    wall = [t["finished_ms"] - t["started_ms"] for t in tasks]
    start_wait = [t["started_ms"] - t["created_ms"] for t in tasks]
    sb = [t["usage"]["sandbox_ms"] for t in tasks]
    # per turn, over all tasks: what the harness adds beyond the model's
    # answer time (MODEL_MS) and the command (`true`, microseconds)
    per_turn = [(w - s_ - t["turns"] * MODEL_MS) / t["turns"] for w, s_, t in zip(wall, sb, tasks)]
    client = [(t["usage"]["model_ms"] - t["turns"] * MODEL_MS) / t["turns"] for t in tasks]
    tools = [t["usage"]["tools_ms"] / t["turns"] for t in tasks]
    say("%d tasks, %d turns in %.1f s (first created -> last finished): %.0f tasks/min, %.0f turns/s",
        len(tasks), turns, span, len(tasks) * 60 / span, turns / span)
    say("starting the tasks took %.1f s (POST /api/tasks x %d)", st["t_created"] - st["t0"], len(tasks))
    say("task wall time (started -> finished): p50 %.0f ms, p90 %.0f, max %.0f; model alone: %d ms",
        load.pct(wall, 50), load.pct(wall, 90), max(wall), (TURNS + 1) * MODEL_MS)
    say("created -> agent running: p50 %.0f ms, max %.0f; sandbox ready: p50 %.0f ms, max %.0f",
        load.pct(start_wait, 50), max(start_wait), load.pct(sb, 50), max(sb))
    say("harness overhead per turn (wall - sandbox start - %d ms model, per turn): p50 %.1f ms, p90 %.1f, max %.1f",
        MODEL_MS, load.pct(per_turn, 50), load.pct(per_turn, 90), max(per_turn))
    say("  of which model client (model_ms - %d ms): p50 %.1f ms; tools (bash `true` + finish): p50 %.1f ms",
        MODEL_MS, load.pct(client, 50), load.pct(tools, 50))
    say("memory: MemAvailable fell by %.0f MiB at the peak (%.1f MiB per task)", st["mem_mib"],
        st["mem_mib"] / len(tasks))
    say("%s", st["cpu"])


if __name__ == "__main__":
    main()
