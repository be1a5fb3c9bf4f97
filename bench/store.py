#!/usr/bin/env python3
"""The store on PostgreSQL against SQLite (several nodes), on this machine, in
the same run, engines taken in turn (A B A B ...) so that load drifts hit
both alike.

  store level   bench/store_bench.c (built here against build/'s objects):
                one task's life as its agent writes it (insert, running,
                --events model-sized events of 1.6 KB, the artifact index,
                the end), --tasks tasks; per event and per task, median and
                p99, in microseconds.
  stack level   the whole service (nginx, web, agent, sandboxd, the fake
                model) with LLMBOX_DB_URL or without: --stack-tasks tasks of
                3 bash turns and a finish, one at a time; created ->
                finished per task (median), in ms. (--stack-tasks 0: skip.)

PostgreSQL is tests/lib/pg_server.py's (unix socket, fsync off, as the
tests run it): a production server with fsync on pays a flush per commit,
as SQLite's WAL does not with synchronous=NORMAL.

    python3 bench/store.py [--rounds 3] [--tasks 200] [--events 10] [--stack-tasks 10]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import pg_server  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(REPO, "build"))


def build_driver(name="store_bench"):
    """bench/<name>.c built against build/'s objects (bench/queue.py's too)."""
    objs = [o for o in glob.glob(os.path.join(BUILD, "server", "**", "*.o"), recursive=True)
            if not o.endswith(("/server/main.o", "/sandboxd/main.o")) and "/stateio/" not in o]
    out = os.path.join(BUILD, "bench", name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cmd = ["cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-I" + os.path.join(REPO, "include"),
           "-I" + os.path.join(REPO, "server"), "-I/usr/include/postgresql", "-o", out,
           os.path.join(HERE, name + ".c")] + objs + \
        "-linih -lfcgi -lcurl -lcjson -larchive -lmagic -lsqlite3 -lpq -lcrypto -ldl -lpthread -lseccomp".split()
    subprocess.run(cmd, check=True)
    return out


def load():
    return open("/proc/loadavg").read().split()[0]


def store_level(drv, pg, rounds, tasks, events):
    rows = {"sqlite": [], "postgresql": []}
    tmp = tempfile.mkdtemp(prefix="llmbox-bench-store-")
    try:
        for r in range(rounds):
            for engine in ("sqlite", "postgresql"):
                if engine == "sqlite":
                    where = os.path.join(tmp, "r%d.db" % r)
                else:
                    db = "bench%d" % r
                    pg.sql('CREATE DATABASE "%s"' % db, db="postgres")
                    where = pg.url.replace("/llmbox?", "/%s?" % db)
                l0 = load()
                out = subprocess.run([drv, where, str(tasks), str(events)], capture_output=True, text=True,
                                     cwd="/", timeout=900)
                assert out.returncode == 0, out.stderr[-2000:]
                res = json.loads(out.stdout.strip().splitlines()[-1])
                res["load"] = l0
                rows[engine].append(res)
                print("store  round %d %-10s load %s  event p50 %5d us p99 %6d us  task p50 %6d us p99 %7d us"
                      % (r + 1, engine, l0, res["event_us_p50"], res["event_us_p99"], res["task_us_p50"],
                         res["task_us_p99"]), flush=True)
    finally:
        subprocess.run(["rm", "-rf", tmp])
    for k in ("event_us_p50", "task_us_p50"):
        ratios = [p[k] / s[k] for s, p in zip(rows["sqlite"], rows["postgresql"])]
        print("store  %s PostgreSQL / SQLite per round: %s" % (k, ", ".join("%.2f" % x for x in ratios)))
    return rows


def stack_level(pg, rounds, n):
    from stack import Stack
    scen = [{"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]}] * 3 + \
        [{"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "ok"}}]}]
    meds = {"sqlite": [], "postgresql": []}
    for r in range(rounds):
        for engine in ("sqlite", "postgresql"):
            url = None
            if engine == "postgresql":
                db = "stack%d" % r
                pg.sql('CREATE DATABASE "%s"' % db, db="postgres")
                url = pg.url.replace("/llmbox?", "/%s?" % db)
            l0 = load()
            with Stack(scenario={"scenarios": [{"match": "[b]", "steps": scen}]}, db_url=url,
                       model_log=False) as s:
                walls = []
                for i in range(n + 1):
                    st, t = s.create_task("[b] task %d" % i)
                    assert st in (200, 201, 202), (st, t)
                    d = s.wait_task(t["id"])
                    assert d["status"] == "succeeded", d
                    if i:  # the first one warms the pool and the connections
                        walls.append(d["finished_ms"] - d["created_ms"])
            m = statistics.median(walls)
            meds[engine].append(m)
            print("stack  round %d %-10s load %s  created->finished median %5.0f ms (min %d, max %d, n=%d)"
                  % (r + 1, engine, l0, m, min(walls), max(walls), len(walls)), flush=True)
    ratios = [p / s for s, p in zip(meds["sqlite"], meds["postgresql"])]
    print("stack  per task PostgreSQL / SQLite per round: %s" % ", ".join("%.2f" % x for x in ratios))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--events", type=int, default=10)
    ap.add_argument("--stack-tasks", type=int, default=10)
    a = ap.parse_args()
    drv = build_driver()
    print("# %s, uptime: %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()))
    with pg_server.PgServer() as pg:
        store_level(drv, pg, a.rounds, a.tasks, a.events)
        if a.stack_tasks > 0:
            stack_level(pg, a.rounds, a.stack_tasks)


if __name__ == "__main__":
    main()
