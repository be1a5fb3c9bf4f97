"""Hundreds of live event streams at once, through nginx, on running tasks.

What a user relies on when many people watch tasks: every open page gets
every step of its task, in order, once, and the done event at the end,
however many other pages are open. Clients are asyncio streams in one
process (EventSource's protocol: HTTP/1.1, chunked, text/event-stream);
they all connect while the tasks run, so each stream is a mix of stored
history and live events.

Size: LLMBOX_LOAD_SSE clients (default 300, `make load`: 1000), 10 per
task; each task takes LLMBOX_LOAD_SSE_TURNS bash turns (default 20) of 500 ms,
long enough for every client to connect before the first task ends.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Skip, Stack, image_ready  # noqa: E402
import load  # noqa: E402

CLIENTS = int(os.environ.get("LLMBOX_LOAD_SSE", "300"))
PER_TASK = 10
TASKS = max(1, CLIENTS // PER_TASK)
TURNS = int(os.environ.get("LLMBOX_LOAD_SSE_TURNS", "20"))
MODEL_MS = 500


def say(fmt, *a):
    print("  " + (fmt % a if a else fmt), flush=True)


def main():
    r = Reporter()
    if os.geteuid() != 0:
        print("SKIP load_sse: needs root (sandboxd)")
        return r.done()
    if not image_ready():
        print("SKIP load_sse: the sandbox image is not built (make image)")
        return r.done()
    have = load.raise_nofile(CLIENTS * 2 + 1024)
    if have < CLIENTS + 256:
        print("SKIP load_sse: the open-file limit %d is too low for %d clients" % (have, CLIENTS))
        return r.done()

    env = {
        "LLMBOX_MAX_TASKS": str(TASKS + 8),
        # one thread per open stream, and some for everything else (the
        # streams' reserve of 8 among them)
        "LLMBOX_WEB_THREADS": str(CLIENTS + 64),
        # every client connects from 127.0.0.1: one address holds them all
        "LLMBOX_SSE_MAX_PER_CLIENT": str(CLIENTS),
    }
    say("%d SSE clients on %d tasks (%d each) x %d turns of %d ms; %s", CLIENTS, TASKS, PER_TASK, TURNS,
        MODEL_MS, load.machine())
    s = Stack(scenario=load.per_conversation(load.bash_steps(TURNS, "echo step")), env=env,
              model_args=["--delay-ms", str(MODEL_MS)], model_log=False)
    s.start()
    try:
        st = {}

        def streams():
            ids = load.create_tasks(s, TASKS, "[sse] watch me")
            t0 = time.time()
            web, ngx = load.stack_pids(s, "web"), load.stack_pids(s, "nginx")
            # the web's own CPU: its reaped children are the agents, which
            # end (and are counted) within the window
            web_cpu = lambda: sum(load.cpu_split(p)[0] for p in web)
            cpu0 = web_cpu(), load.cpu_seconds(ngx)
            res = load.run_sse_clients(s.port, [i for i in ids for _ in range(PER_TASK)],
                                       timeout=120 + TURNS * MODEL_MS / 1000.0)
            t1 = time.time()
            cpu = web_cpu() - cpu0[0], load.cpu_seconds(ngx) - cpu0[1]
            say("CPU while streaming: web %.1f s (%.0f %% of a core; its agents not counted), nginx %.1f s (%.0f %%)",
                cpu[0], 100 * cpu[0] / (t1 - t0), cpu[1], 100 * cpu[1] / (t1 - t0))
            load.wait_final(s, ids, timeout=120 + TURNS * MODEL_MS / 1000.0)
            tasks = load.api_tasks(s, ids)
            evs = load.task_events(s, ids)
            st.update(ids=ids, res=res, tasks=tasks)
            first_end = min(t["finished_ms"] for t in tasks.values()) / 1000.0
            connected = [x.t_headers_wall for x in res if x.t_headers_wall]
            say("all %d streams open %.1f s after the tasks started; first task ended at %.1f s; "
                "all streams done at %.1f s", len(connected), max(connected) - t0 if connected else -1,
                first_end - t0, t1 - t0)
            errs = [x for x in res if x.error]
            assert not errs, "%d of %d streams failed, e.g. task %s: %s" % (len(errs), len(res), errs[0].task_id,
                                                                           errs[0].error)
            bad = []
            for x in res:
                want = [(seq, typ) for seq, typ, _ in evs[x.task_id]]
                got = list(zip(x.ids, x.types))
                if got != want:
                    bad.append((x.task_id, len(got), len(want)))
            assert not bad, "%d streams differ from the stored events, e.g. task %s: %d events, %d stored" % (
                len(bad), *bad[0])
            not_live = [x for x in res if x.t_headers_wall > first_end]
            assert not not_live, ("%d streams opened after the first task had ended: the test did not "
                                  "watch running tasks (raise LLMBOX_LOAD_SSE_TURNS)" % len(not_live))
            failed = [t for t in tasks.values() if t["status"] != "succeeded"]
            assert not failed, "%d tasks did not succeed: %s" % (len(failed), failed[0].get("reason"))
            n = sum(len(x.ids) for x in res)
            lat = [x.t_done - x.t_headers for x in res]
            say("%d events delivered (%d per stream); stream open -> done p50 %.1f s", n, n // len(res),
                load.pct(lat, 50))

        r.run("load_sse_every_event_once", streams)

        def no_leaks():
            if "ids" not in st:
                raise Skip("the tasks did not run")
            left = load.leaks_while_running(s)
            assert not left, "; ".join(left)

        r.run("load_sse_no_sandbox_left", no_leaks)
    finally:
        s.stop()
    return r.done()


if __name__ == "__main__":
    main()
