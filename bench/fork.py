#!/usr/bin/env python3
"""What a fork adds to the store (bench/fork_bench.c, built here against
build/'s objects), on SQLite and on PostgreSQL (tests/lib/pg_server.py's),
in the same run: one source task of --turns turns, each an event of
--event-bytes (a tool's output), forked --forks times with the fork of
this build (events shared), then --forks times more with the copy of the
events a fork made before (the peer, on the same source in the same
store). Prints bytes per fork of each and their ratio.

    python3 bench/fork.py [--turns 30] [--event-bytes 30000] [--forks 60]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "lib"))
import pg_server  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(os.path.dirname(HERE), "build"))


def build_driver(name):
    """bench/<name>.c built against build/'s store and common objects."""
    objs = sorted(glob.glob(os.path.join(BUILD, "server", "store", "*.o")) +
                  glob.glob(os.path.join(BUILD, "server", "common", "*.o")))
    out = os.path.join(BUILD, "bench", name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    repo = os.path.dirname(HERE)
    cmd = ["cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-I" + os.path.join(repo, "include"),
           "-I" + os.path.join(repo, "server"), "-I/usr/include/postgresql", "-o", out,
           os.path.join(HERE, name + ".c")] + objs + \
        ("-linih -lfcgi -lcurl -lcjson -larchive -lmagic -lsqlite3 -lpq -lcrypto -lyaml -ldl -lpthread "
         "-lseccomp").split()
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def run(drv, where, a):
    out = subprocess.run([drv, where, str(a.turns), str(a.event_bytes), str(a.forks)], capture_output=True,
                         text=True, cwd="/", timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--event-bytes", type=int, default=30000)
    ap.add_argument("--forks", type=int, default=60)
    a = ap.parse_args()
    drv = build_driver("fork_bench")
    print("# %s, %d forks of a %d-turn task (%d-byte events)"
          % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), a.forks, a.turns, a.event_bytes))
    tmp = tempfile.mkdtemp(prefix="llmbox-bench-fork-")
    rows = [("sqlite", run(drv, os.path.join(tmp, "fork.db"), a))]
    with pg_server.PgServer() as pg:
        pg.sql('CREATE DATABASE "benchfork"', db="postgres")
        rows.append(("postgresql", run(drv, pg.url.replace("/llmbox?", "/benchfork?"), a)))
    for engine, r in rows:
        print("%-10s source %9d B   per fork: shared %8d B   copied (before) %9d B   copied/shared %.0fx"
              % (engine, r["source_bytes"], r["shared_fork_bytes"], r["copy_fork_bytes"],
                 r["copy_fork_bytes"] / max(1.0, r["shared_fork_bytes"])))


if __name__ == "__main__":
    main()
