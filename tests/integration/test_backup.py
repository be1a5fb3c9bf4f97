"""The backup and restore of docs/OPERATIONS.md, done for real: an online
copy of the database (`sqlite3 .backup`) while a task runs, then the files,
then a restore into another installation. An operator relies on the copy
being consistent and on every finished task coming back with its files and
its counts; the task that was running comes back as failed, with a reason."""
import os
import shutil
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, Reporter, Stack, image_ready  # noqa: E402
import prom  # noqa: E402


def step(*calls):
    return {"content": "", "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


SCENARIOS = {"scenarios": [
    {"match": "[b-done]", "steps": [
        step(("bash", {"command": "echo kept > /testbed/output/kept.txt"})),
        step(("finish", {"answer": "kept"})),
    ]},
    {"match": "[b-running]", "steps": [
        step(("bash", {"command": "echo started > /testbed/output/started.txt; sleep 60"})),
        step(("finish", {})),
    ]},
]}


def online_backup(db, dest):
    """What OPERATIONS.md says: the sqlite3 shell's .backup (SQLite's online
    backup API); Python's binding of the same API when the shell is absent."""
    if shutil.which("sqlite3"):
        subprocess.check_call(["sqlite3", db, ".backup '%s'" % dest])
    else:
        src = sqlite3.connect(db)
        out = sqlite3.connect(dest)
        src.backup(out)
        out.close()
        src.close()


class Ctx:
    backup_dir = None
    done_id = None
    running_id = None
    counts = None


def test_backup_while_running(s):
    st, t = s.create_task("[b-done] keep a file")
    assert st == 201, t
    Ctx.done_id = t["id"]
    assert s.wait_task(Ctx.done_id, 60)["status"] == "succeeded"
    st, t = s.create_task("[b-running] a long one")
    assert st == 201, t
    Ctx.running_id = t["id"]
    deadline = time.time() + 30
    while time.time() < deadline:
        st, tk = s.get_json("/api/tasks/" + Ctx.running_id)
        if tk["status"] == "running" and tk.get("turns", 0) >= 1:
            break
        time.sleep(0.2)
    _, _, text = s.request("GET", "/metrics")
    Ctx.counts = prom.parse(text.decode())
    Ctx.backup_dir = os.path.join(s.prefix, "backup")
    os.makedirs(Ctx.backup_dir)
    db = os.path.join(s.prefix, "var", "web", "llmbox.db")
    copy = os.path.join(Ctx.backup_dir, "llmbox.db")
    online_backup(db, copy)
    c = sqlite3.connect(copy)
    assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert c.execute("SELECT status FROM tasks WHERE id = ?", (Ctx.running_id,)).fetchone()[0] == "running"
    c.close()
    # the files after the database; cached bundles are left out
    shutil.copytree(os.path.join(s.prefix, "artifacts"), os.path.join(Ctx.backup_dir, "artifacts"),
                    ignore=shutil.ignore_patterns("bundle.*", "bundles"))
    st, _, _ = s.request("POST", "/api/tasks/%s/cancel" % Ctx.running_id)
    assert st == 202, st


def restore_into(s2):
    """Stops s2's web, puts the backup in its place, starts the web again."""
    web = next(p for p in s2.procs if p.args[:2] == [LLMBOX, "web"])
    web.terminate()
    web.wait(10)
    s2.procs.remove(web)
    vweb = os.path.join(s2.prefix, "var", "web")
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(os.path.join(vweb, "llmbox.db" + sfx)):
            os.unlink(os.path.join(vweb, "llmbox.db" + sfx))
    shutil.copy(os.path.join(Ctx.backup_dir, "llmbox.db"), os.path.join(vweb, "llmbox.db"))
    arts = os.path.join(s2.prefix, "artifacts")
    shutil.rmtree(arts)
    shutil.copytree(os.path.join(Ctx.backup_dir, "artifacts"), arts)
    subprocess.check_call(["chown", "-R", "llmbox:llmbox", vweb, arts])
    s2._spawn([LLMBOX, "web"], open(os.path.join(s2.prefix, "var", "log", "web.log"), "a"))
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            st, _, _ = s2.request("GET", "/api/health")
            if st == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("the web did not come back on the restored database\n" + s2.logs())


def test_restore(_unused):
    with Stack(SCENARIOS) as s2:
        restore_into(s2)
        t = s2.wait_task(Ctx.done_id, 10)
        assert t["status"] == "succeeded" and t["answer"].strip() == "kept", t
        st, _, body = s2.request("GET", "/api/tasks/%s/artifacts/kept.txt" % Ctx.done_id)
        assert st == 200 and body == b"kept\n", (st, body)
        st, _, z = s2.request("GET", "/api/tasks/%s/bundle.zip" % Ctx.done_id)
        assert st == 200 and z[:2] == b"PK", st  # rebuilt on demand
        # the task that ran during the backup: failed by the recovery, files kept
        r = s2.wait_task(Ctx.running_id, 10)
        assert r["status"] == "failed" and "restarted" in (r.get("reason") or ""), r
        st, arts = s2.get_json("/api/tasks/%s/artifacts" % Ctx.running_id)
        assert st == 200, st
        # the counters came with the database, plus the recovery's end
        _, _, text = s2.request("GET", "/metrics")
        now = prom.parse(text.decode())
        assert prom.value(now, "llmbox_tasks_created_total") == prom.value(Ctx.counts, "llmbox_tasks_created_total") == 2
        turns = prom.histogram(now, "llmbox_model_turn_duration_seconds", model="default")
        turns0 = prom.histogram(Ctx.counts, "llmbox_model_turn_duration_seconds", model="default")
        assert turns["count"] == turns0["count"] >= 3, (turns, turns0)
        assert prom.value(now, "llmbox_tasks_finished_total", status="failed") == 1
        assert prom.value(now, "llmbox_tasks_finished_total", status="succeeded") == 1


def main():
    r = Reporter()
    if not image_ready():
        print("SKIP backup: the sandbox image is not built (make image)")
        return
    with Stack(SCENARIOS) as s:
        r.run("backup_online_copy_while_a_task_runs", test_backup_while_running, s)
        if not r.failed:
            # the first stack's files must outlive it for the restore
            keep = os.path.join("/tmp", "llmbox-backup-test-%d" % os.getpid())
            shutil.copytree(Ctx.backup_dir, keep)
            Ctx.backup_dir = keep
    if not r.failed:
        try:
            r.run("backup_restored_into_another_installation", test_restore, None)
        finally:
            shutil.rmtree(Ctx.backup_dir, ignore_errors=True)
    r.done()


if __name__ == "__main__":
    main()
