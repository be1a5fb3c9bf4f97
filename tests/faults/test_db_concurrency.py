"""Many writers on one SQLite database: every agent process and the web
write tasks and events into var/web/llmbox.db at once (WAL, a busy timeout,
one transaction per change).

What a user relies on: no event of a task is lost or stored twice, whatever
else writes at the same time: event ids of every task are 1..N without a
hole, each model turn and each tool call is there exactly once, "done" is
last and single. And when something else holds the write lock for a while
(here sqlite3 from Python, as a backup or an operator's shell would),
writers wait and then succeed: a task created meanwhile is answered once
the lock is gone, agents go on where they were, and not one event is
dropped, even when the lock outlasts the store's 10 s busy timeout (the web
then answers 503 with Retry-After rather than hanging)."""
import os
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Reporter, Stack, bash, check_sequence, create, finish, skip_reason, wait_final, wait_until  # noqa: E402


def steps(tag, n, delay_ms=0):
    return {"match": tag, "steps": [bash("echo %s turn %d | tee -a /testbed/output/log.txt" % (tag, i),
                                         delay_ms=delay_ms) for i in range(n)]
            + [finish("%s done" % tag, delay_ms=delay_ms)]}


SCENARIOS = {"scenarios":
             [steps("[many-%d]" % i, 7) for i in range(8)]
             + [steps("[lock-%d]" % i, 6, delay_ms=250) for i in range(4)]
             + [steps("[long-%d]" % i, 5, delay_ms=400) for i in range(3)]
             + [{"match": "[quick]", "steps": [finish("quick")]}]}


def db_path(s):
    return os.path.join(s.prefix, "var", "web", "llmbox.db")


def check_task(s, tid, turns):
    """The stored events of a task: contiguous, each turn and call once."""
    evs = s.events(tid)
    check_sequence(evs, "task %s" % tid[:8])
    model_turns = [e[2]["turn"] for e in evs if e[1] == "model"]
    assert model_turns == list(range(1, turns + 1)), "model events: %r" % model_turns
    calls = [(e[2]["turn"], e[2]["call_id"]) for e in evs if e[1] == "tool"]
    assert len(calls) == len(set(calls)) == turns, "tool events: %r" % calls
    assert [e[1] for e in evs].count("done") == 1
    assert evs[-1][2]["status"] == "succeeded", evs[-1]
    # and in the database itself, as the stream does not show it
    c = sqlite3.connect(db_path(s), timeout=30)
    try:
        seqs = [r[0] for r in c.execute("SELECT seq FROM events WHERE task_id = ? ORDER BY seq", (tid,))]
    finally:
        c.close()
    assert seqs == list(range(1, len(evs) + 1)), seqs
    return evs


class Lock(threading.Thread):
    """Holds the database's write lock (BEGIN IMMEDIATE) for `hold` s."""

    def __init__(self, path, hold):
        super().__init__(daemon=True)
        self.path, self.hold = path, hold
        self.taken = threading.Event()
        self.error = None

    def run(self):
        try:
            c = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            c.execute("BEGIN IMMEDIATE")
            self.t0 = time.time()
            self.taken.set()
            time.sleep(self.hold)
            c.execute("COMMIT")
            self.t1 = time.time()
            c.close()
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e
            self.taken.set()


def timed_create(s, prompt):
    t0 = time.time()
    st, body = s.create_task(prompt)
    return st, body, time.time() - t0


def main():
    rep = Reporter()
    why = skip_reason()
    if why:
        print("SKIP db_concurrency: %s" % why)
        return 0
    with Stack(scenario=SCENARIOS, env={"LLMBOX_POOL_SIZE": "2"}) as s:

        def many_writers():
            ids = [create(s, "[many-%d] go" % i) for i in range(8)]
            # the web writes too: tasks created and finished while they run
            extra = [create(s, "[quick] meanwhile") for _ in range(4)]
            for tid in ids + extra:
                assert wait_final(s, tid, timeout=90)["status"] == "succeeded"
            for tid in ids:
                check_task(s, tid, 8)
            for tid in extra:
                check_task(s, tid, 1)
        rep.run("concurrent_agents_events_contiguous_and_once", many_writers)

        def short_lock():
            ids = [create(s, "[lock-%d] go" % i) for i in range(4)]
            for tid in ids:
                wait_until(lambda: s.get_json("/api/tasks/" + tid)[1]["turns"] >= 1, 30, "the tasks to run")
            lk = Lock(db_path(s), 3.0)
            lk.start()
            lk.taken.wait(10)
            assert lk.error is None, lk.error
            st, body, took = timed_create(s, "[quick] during a short lock")
            lk.join(20)
            assert st == 201, (st, body)
            assert took >= 2.0, "the insert did not wait for the lock (%.1f s)" % took
            for tid in ids + [body["id"]]:
                assert wait_final(s, tid, timeout=60)["status"] == "succeeded"
            for tid in ids:
                check_task(s, tid, 7)
        rep.run("write_lock_held_3s_writers_wait_and_succeed", short_lock)

        def long_lock():
            ids = [create(s, "[long-%d] go" % i) for i in range(3)]
            for tid in ids:
                wait_until(lambda: s.get_json("/api/tasks/" + tid)[1]["turns"] >= 1, 30, "the tasks to run")
            lk = Lock(db_path(s), 13.0)
            lk.start()
            lk.taken.wait(10)
            assert lk.error is None, lk.error
            t0 = time.time()
            st, h, body = s.request("POST", "/api/tasks", *_form("[quick] during a long lock"), timeout=60)
            took = time.time() - t0
            lk.join(30)
            for tid in ids:
                t = wait_final(s, tid, timeout=90)
                assert t["status"] == "succeeded", t
                check_task(s, tid, 6)
            assert st == 503 and b'"code":"unavailable"' in body and b"busy" in body, (st, body[:200])
            assert h.get("retry-after") == "1", h
            assert 9 <= took <= 14, took
            st, page = s.get_json("/api/tasks?limit=200")
            assert not [t for t in page["tasks"] if "long lock" in t["prompt"]], "the refused task was stored"
        rep.run("write_lock_held_past_busy_timeout_no_event_lost_web_503", long_lock)

        def integrity():
            c = sqlite3.connect(db_path(s), timeout=30)
            try:
                assert [r[0] for r in c.execute("PRAGMA integrity_check")] == ["ok"]
                dup = list(c.execute("SELECT task_id, COUNT(*) FROM events WHERE type = 'done' "
                                     "GROUP BY task_id HAVING COUNT(*) != 1"))
                assert not dup, dup
            finally:
                c.close()
        rep.run("database_consistent_after_concurrency", integrity)
    return rep.failed


def _form(prompt):
    from stack import multipart
    ctype, body = multipart({"prompt": prompt}, [])
    return body, {"Content-Type": ctype}


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
