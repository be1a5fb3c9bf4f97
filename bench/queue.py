#!/usr/bin/env python3
"""The queue's claim (several nodes): claims per second and the latency of one
claim call, on PostgreSQL (FOR UPDATE SKIP LOCKED) and SQLite (under its
write lock), with --claimers processes claiming at once from one queue of
--tasks tasks, --batch tasks per call (a node asks for its free capacity).
Checks that every task was claimed exactly once (attempt 1, claimed total =
tasks). bench/queue_bench.c does the work, built against build/'s objects.

PostgreSQL is tests/lib/pg_server.py's (unix socket, fsync off, as the tests
run it).

    python3 bench/queue.py [--tasks 2000] [--claimers 1,3,8] [--batch 1,8]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import shutil
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import pg_server  # noqa: E402

sys.path.insert(0, HERE)
from store import build_driver  # noqa: E402  (bench/store.py: the same build)


def one(drv, where, reset, tasks, claimers, batch):
    reset()
    subprocess.run([drv, where, "fill", str(tasks)], check=True, stderr=subprocess.DEVNULL)
    t0 = time.time()
    ps = [subprocess.Popen([drv, where, "claim", "b%d" % i, str(batch)], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True) for i in range(claimers)]
    outs = [json.loads(p.communicate()[0]) for p in ps]
    wall = time.time() - t0
    claimed = sum(o["claimed"] for o in outs)
    assert claimed == tasks, (claimed, tasks, outs)
    return {"claims_per_s": tasks / max(o["seconds"] for o in outs), "wall_s": wall,
            "p50_us": statistics.median(o["p50_us"] for o in outs), "p99_us": max(o["p99_us"] for o in outs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--claimers", default="1,3,8")
    ap.add_argument("--batch", default="1,8")
    a = ap.parse_args()
    drv = build_driver("queue_bench")
    tmp = tempfile.mkdtemp(prefix="llmbox-queue-bench-")
    try:
        run(a, drv, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(a, drv, tmp):
    with pg_server.PgServer() as pg:
        lite = os.path.join(tmp, "q.db")

        def reset_lite():
            for suffix in ("", "-wal", "-shm", "-reserve"):
                if os.path.exists(lite + suffix):
                    os.unlink(lite + suffix)

        def reset_pg():
            pg.sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")

        def check_pg():
            n = pg.sql("SELECT COUNT(*) FROM tasks WHERE attempt <> 1").strip()
            assert n == "0", "tasks claimed more than once: %s" % n

        print("| engine | claimers | batch | claims/s | claim call p50 (µs) | p99 (µs) |")
        print("| --- | --- | --- | --- | --- | --- |")
        for c in [int(x) for x in a.claimers.split(",")]:
            for b in [int(x) for x in a.batch.split(",")]:
                for name, where, reset, check in (("SQLite", lite, reset_lite, None),
                                                  ("PostgreSQL", pg.url, reset_pg, check_pg)):
                    r = one(drv, where, reset, a.tasks, c, b)
                    if check:
                        check()
                    print("| %s | %d | %d | %.0f | %.0f | %.0f |" % (name, c, b, r["claims_per_s"], r["p50_us"],
                                                                  r["p99_us"]), flush=True)


if __name__ == "__main__":
    main()
