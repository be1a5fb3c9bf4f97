"""The data directory fills up: the database folder (var/web) and artifacts/
live on one 20 MiB tmpfs mounted for this test, and tasks are created until
it is full.

What a user relies on: a clear error when the disk is full (507 disk_full
with a sentence, never a bare 500 or a hang); a task that runs into the full
disk ends "failed" with a reason that starts "disk full"; no task is left
running; the database stays consistent (PRAGMA integrity_check); and once
space comes back new tasks succeed, without a restart.

The suite runs itself in a private mount namespace (unshare), so the small
disk disappears with its last process whatever happens to the test."""
import os
import pwd
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Reporter, Stack, bash, create, finish, skip_reason, wait_final, wait_until  # noqa: E402

DISK_MB = 20
MARK = "LLMBOX_FAULTS_PRIVATE_MNT"

SCENARIOS = {"scenarios": [
    {"match": "[small]", "steps": [bash("echo small > /testbed/output/small.txt"), finish("small")]},
    {"match": "[fill]", "steps": [finish("filled")]},
    {"match": "[late]", "steps": [bash("sleep 2; echo x > /testbed/output/x.txt"), finish("late")]},
    {"match": "[big-output]", "steps": [bash("head -c 6000000 /dev/urandom > /testbed/output/big.bin; "
                                             "echo note > /testbed/output/a-note.txt"),
                                        finish("wrote a big file")]},
]}


def mount_small_disk(prefix):
    """One tmpfs for the database folder and artifacts/, as one disk."""
    data = os.path.join(prefix, "data")
    os.makedirs(data)
    subprocess.check_call(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0755" % DISK_MB, "llmbox-test-disk", data])
    pw = pwd.getpwnam("llmbox")
    for sub, target in (("web", "var/web"), ("artifacts", "artifacts")):
        d = os.path.join(data, sub)
        os.makedirs(d)
        os.chown(d, pw.pw_uid, pw.pw_gid)
        os.chmod(d, 0o750 if sub == "web" else 0o755)
        subprocess.check_call(["mount", "--bind", d, os.path.join(prefix, target)])
    os.makedirs(os.path.join(data, "web", "log"))
    os.chown(os.path.join(data, "web", "log"), pw.pw_uid, pw.pw_gid)


def free_bytes(s):
    st = os.statvfs(os.path.join(s.prefix, "data"))
    return st.f_bavail * st.f_frsize


def ballast(s, leave):
    """Fills the disk with a root-owned file until `leave` bytes are free."""
    path = os.path.join(s.prefix, "data", "ballast")
    want = max(0, free_bytes(s) - leave)
    with open(path, "ab") as f:
        block = b"\0" * (1 << 20)
        while want > 0:
            n = min(len(block), want)
            try:
                f.write(block[:n])
                f.flush()
            except OSError:
                break
            want -= n
    return path


def integrity(s):
    db = os.path.join(s.prefix, "var", "web", "llmbox.db")
    c = sqlite3.connect(db, timeout=10)
    try:
        return [r[0] for r in c.execute("PRAGMA integrity_check")]
    finally:
        c.close()


def error_of(st, body):
    return st, (body or {}).get("error", {}) if isinstance(body, dict) else {}


def main():
    rep = Reporter()
    why = skip_reason()
    if why:
        print("SKIP disk_full: %s" % why)
        return 0
    with Stack(scenario=SCENARIOS, env={"LLMBOX_POOL_SIZE": "1"}, prepare=mount_small_disk) as s:
        first = create(s, "[small] before the disk fills")
        assert wait_final(s, first)["status"] == "succeeded"
        blob = os.urandom(3 << 20)
        made, refusal = [], None

        def fill_with_tasks():
            nonlocal refusal
            for i in range(DISK_MB // 3 + 4):
                st, body = s.create_task("[fill] task %d" % i, files=[("data-%d.bin" % i, blob)])
                if st != 201:
                    refusal = (st, body)
                    break
                made.append(body["id"])
            assert refusal, "the disk never filled: %d tasks of 3 MiB on %d MiB" % (len(made), DISK_MB)
            st, err = error_of(*refusal)
            assert st == 507 and err.get("code") == "disk_full", refusal
            assert "disk is full" in err.get("message", ""), refusal
            assert len(made) >= 3, "refused too early: %d tasks made" % len(made)
            for tid in made:
                t = wait_final(s, tid, timeout=30)
                assert t["status"] in ("succeeded", "failed"), t
                if t["status"] == "failed":
                    assert (t["reason"] or "").startswith("disk full"), t
        rep.run("upload_on_full_disk_is_507_with_sentence", fill_with_tasks)

        def running_task_hits_full_disk():
            ballast(s, 1 << 20)  # a MiB left: the 6 MB output cannot fit
            tid = create(s, "[big-output] write")
            t = wait_final(s, tid, timeout=30)
            assert t["status"] == "failed", t
            assert t["reason"].startswith("disk full"), t["reason"]
            evs = s.events(tid)
            assert evs[-1][1] == "done" and evs[-1][2]["status"] == "failed", evs[-1]
        rep.run("task_running_into_full_disk_fails_disk_full", running_task_hits_full_disk)

        def db_full():
            ballast(s, 0)
            st, body = s.create_task("[small] no room at all")
            st, err = error_of(st, body)
            assert st == 507 and err.get("code") == "disk_full", (st, body)
            st, _, body = s.request("POST", "/api/tasks/%s/rerun" % first)
            assert st == 507 and b'"code":"disk_full"' in body, (st, body[:300])
            # a bundle that does not fit: 507 too; the files themselves still download
            st, _, body = s.request("GET", "/api/tasks/%s/bundle.zip" % first)
            assert st == 507 and b'"code":"disk_full"' in body, (st, body[:300])
            st, _, body = s.request("GET", "/api/tasks/%s/artifacts/small.txt" % first)
            assert st == 200 and body == b"small\n", (st, body)
            # reads still work
            st, page = s.get_json("/api/tasks?limit=5")
            assert st == 200 and page["tasks"], (st, page)
            st, h = s.get_json("/api/health")
            assert st == 200, st
        rep.run("database_full_is_507_reads_still_work", db_full)

        def full_while_running():
            os.unlink(os.path.join(s.prefix, "data", "ballast"))
            # the reserve an earlier task end spent comes back within the
            # web's 5 s tick once there is room for it (8 MiB free); only
            # then is an end on a full disk promised to be recorded (without
            # it the end waits for space, as service_recovers_when_space_returns
            # shows). The [fill] tasks' inputs make that room (the first
            # two stay for service_recovers_when_space_returns).
            for tid in made[2:]:
                s.request("DELETE", "/api/tasks/" + tid)
            reserve = os.path.join(s.prefix, "var", "web", "llmbox.db-reserve")
            wait_until(lambda: os.path.exists(reserve), 12, "the disk reserve to be put back")
            tid = create(s, "[late] finish on a full disk")
            wait_until(lambda: s.get_json("/api/tasks/" + tid)[1]["turns"] >= 1, 20, "the task to start its command")
            ballast(s, 0)
            t = wait_final(s, tid, timeout=30)
            assert t["status"] == "failed" and t["reason"].startswith("disk full"), t
        rep.run("task_finishing_on_full_disk_recorded_disk_full", full_while_running)

        def nothing_running_db_intact():
            st, page = s.get_json("/api/tasks?limit=200")
            active = [(t["id"][:8], t["status"]) for t in page["tasks"] if t["status"] in ("queued", "running")]
            assert not active, "tasks left active on a full disk: %r" % active
            assert integrity(s) == ["ok"], integrity(s)
        rep.run("full_disk_leaves_no_task_running_and_db_intact", nothing_running_db_intact)

        def recovers():
            os.unlink(os.path.join(s.prefix, "data", "ballast"))
            for tid in made[:2]:
                st, _, _ = s.request("DELETE", "/api/tasks/" + tid)
                assert st == 200, st
            tid = create(s, "[small] after space came back")
            t = wait_final(s, tid)
            assert t["status"] == "succeeded", t
            st, _, body = s.request("GET", "/api/tasks/%s/artifacts/small.txt" % tid)
            assert st == 200 and body == b"small\n", (st, body)
            st, _, body = s.request("GET", "/api/tasks/%s/bundle.zip" % first)
            assert st == 200 and body[:2] == b"PK", st
            assert integrity(s) == ["ok"]
            # the reserve spent on recording task ends is put back
            reserve = os.path.join(s.prefix, "var", "web", "llmbox.db-reserve")
            wait_until(lambda: os.path.exists(reserve), 12, "the disk reserve to be put back")
            assert os.stat(reserve).st_blocks * 512 >= (2 << 20), os.stat(reserve)
        rep.run("service_recovers_when_space_returns", recovers)
        print("INFO disk: %d tasks of 3 MiB before the refusal; %d KiB free at the end"
              % (len(made), free_bytes(s) >> 10), flush=True)
    return rep.failed


if __name__ == "__main__":
    if skip_reason() is None and os.environ.get(MARK) != "1":
        # into a private mount namespace: nothing mounted here outlives us
        env = dict(os.environ, **{MARK: "1"})
        os.execvpe("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable,
                               os.path.abspath(__file__)] + sys.argv[1:], env)
    sys.exit(1 if main() else 0)
