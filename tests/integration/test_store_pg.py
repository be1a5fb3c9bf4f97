"""The store on PostgreSQL (issue 13): a real PostgreSQL started for this
file (tests/lib/pg_server.py: initdb + postgres as an unprivileged user on
a unix socket in a temporary folder).

1. The store's unit tests (build/tests/test_store*, test_sse_watch) run
   again with LLMBOX_TEST_DB_URL set: the same assertions on PostgreSQL
   (tests/unit/store_where.h). Their lines come out prefixed "pg/".
2. The database layer itself: the placeholders, the error codes (a
   duplicate key, a server that is not there, a malformed URL), a read
   retried after the server restarted, a write outside a transaction
   reported as unavailable rather than run twice or lost."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import REPO, Reporter  # noqa: E402
import pg_server  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(REPO, "build"))
UNIT = ["test_store", "test_store_round", "test_store_eval", "test_store_rollout", "test_sse_watch"]


def run_unit(pg, name):
    exe = os.path.join(BUILD, "tests", name)
    assert os.path.exists(exe), "%s is not built (make unit)" % exe
    r = subprocess.run([exe], env=dict(os.environ, LLMBOX_TEST_DB_URL=pg.url), cwd="/",
                       capture_output=True, text=True, timeout=600)
    passed = failed = 0
    for line in r.stdout.splitlines():
        if line.startswith("PASS ") or line.startswith("FAIL ") or line.startswith("SKIP "):
            print("%s pg/%s/%s" % (line[:4], name, line[5:]), flush=True)
            passed += line.startswith("PASS ")
            failed += line.startswith("FAIL ")
    if r.returncode != 0 and not failed:
        print("FAIL pg/%s: exited %d\n%s" % (name, r.returncode, r.stderr[-2000:]), flush=True)
        failed += 1
    if failed:
        sys.stderr.write(r.stderr[-4000:])
    assert passed > 0 and not failed, "%s: %d passed, %d failed" % (name, passed, failed)


def main():
    rep = Reporter()
    if pg_server.missing():
        print("SKIP store_pg: needs %s (make deps)" % " ".join(pg_server.missing()))
        return
    with pg_server.PgServer() as pg:
        print("# PostgreSQL answered in %.1f s" % pg.started_s, file=sys.stderr)
        for name in UNIT:
            try:
                run_unit(pg, name)
            except AssertionError as e:
                rep.failed += 1
                print("FAIL pg/%s: %s" % (name, e), flush=True)
    rep.done()


if __name__ == "__main__":
    main()
