"""nginx reloaded (SIGHUP) and stopped and started again (SIGTERM, then the
same command as `make run`) while clients follow tasks' event streams.

What a user relies on: a client that reconnects with Last-Event-ID, as
EventSource does, sees every event of the task exactly once, in order, to
the "done" event: no gap, no duplicate; the streams cut by nginx free their
backend workers (the web runs with 8 here and the clients open more streams
than that over the test)."""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import (Reporter, SSEClient, Stack, bash, check_sequence, children, create, finish,  # noqa: E402
                      skip_reason)


def slow_task(tag, n):
    return {"match": tag, "steps": [bash("echo %s step %d" % (tag, i), delay_ms=600) for i in range(n)]
            + [finish("streamed %s" % tag)]}


def main():
    rep = Reporter()
    why = skip_reason()
    if why:
        print("SKIP nginx_sse: %s" % why)
        return 0
    sc = {"scenarios": [slow_task("[s1]", 14), slow_task("[s2]", 14)]}
    with Stack(scenario=sc, env={"LLMBOX_POOL_SIZE": "2"}, web_env={"LLMBOX_WEB_THREADS": "8"}) as s:
        ids = [create(s, "[s1] stream"), create(s, "[s2] stream")]
        clients = [SSEClient(lambda: s.port, tid, patience=20) for tid in ids for _ in range(2)]
        threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
        for t in threads:
            t.start()
        restarts = []

        def bounce():
            time.sleep(1.2)
            s.kill("nginx", signal.SIGHUP, wait=False)  # reload: old workers keep their streams
            restarts.append("reload")
            time.sleep(1.5)
            s.kill("nginx", signal.SIGTERM)             # full stop: every stream is cut
            time.sleep(0.4)                              # clients meet a closed port meanwhile
            s.restart("nginx")
            restarts.append("stop/start")
            time.sleep(1.5)
            workers = children(s.pid("nginx"))
            s.kill("nginx", signal.SIGKILL)             # and the hard way
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.3)
            s.restart("nginx")
            restarts.append("kill -9/start")
        b = threading.Thread(target=bounce, daemon=True)
        b.start()
        b.join(30)
        for t in threads:
            t.join(40)

        def every_event_once():
            assert restarts == ["reload", "stop/start", "kill -9/start"], restarts
            for c in clients:
                assert c.done, "a client did not reach done (%d events, errors %r)" % (len(c.events), c.errors[-3:])
                check_sequence(c.events, "client of %s" % c.task_id[:8])
                stored = s.events(c.task_id)
                assert [(e[0], e[1]) for e in c.events] == [(e[0], e[1]) for e in stored], \
                    "the client's events differ from the stored ones"
                assert c.events == stored
        rep.run("sse_every_event_once_across_nginx_restarts", every_event_once)

        def resumed():
            for c in clients:
                assert c.connects >= 3, "client of %s connected %d times: the restarts did not cut it" % (
                    c.task_id[:8], c.connects)
        rep.run("sse_clients_resumed_with_last_event_id", resumed)

        def workers_freed():
            # more streams than the web has workers were opened and cut; a
            # fresh one must still be served at once
            t0 = time.time()
            evs = s.events(ids[0], timeout=10)
            assert evs[-1][1] == "done" and time.time() - t0 < 5, time.time() - t0
            for tid in ids:
                st, t = s.get_json("/api/tasks/" + tid)
                assert t["status"] == "succeeded", t
        rep.run("sse_cut_streams_free_backend_workers", workers_freed)
    return rep.failed


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
