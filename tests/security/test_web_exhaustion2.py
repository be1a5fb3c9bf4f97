#!/usr/bin/env python3
"""Security: more long work in the web's request threads cannot take them
all, against the real stack (web with 4 threads, nginx; two users, alice
the attacker and bob the victim). Each check floods one handler as alice
while bob lists his tasks; bob's GET /api/tasks stays quick (bound:
VICTIM_MAX_S), and alice's refused requests are JSON 429/503 with
Retry-After.

- task_unpack_flood: 24 concurrent POST /api/tasks, each with a .tar.gz of
  6,000 files 20 folders deep and a symlink last (refused with 400 once
  everything before it is unpacked: the work without the task). Past
  unpack_max_per_user the answer is 429 too_many_unpacks.
- eval_unpack_flood: the same archive as 24 concurrent POST /api/evals
  datasets.
- delete_flood: 8 finished tasks of alice's with 20,000 files each (rows
  and files written by the test), deleted at once: every DELETE answers
  200, the task folders leave artifacts/ at once and the trash thread
  removes them within seconds.
- trash_left_by_a_crash: a folder left in artifacts/.trash (a web killed
  mid-way) is removed once the web starts again.

Old code (main's build/ of 2026-12-07 06:18, before this branch, checked
with BUILD=/work/main/build): task_unpack_flood and eval_unpack_flood fail
(bob's list got no answer in 60 s; no 429 too_many_unpacks), delete_flood
fails (bob's list took 5.0 s, the deletes 6.9 s), trash_left_by_a_crash
fails (nothing empties .trash). This branch: bob's list p99 0.083 s,
0.020 s and 0.009 s during the three floods (quiet: 0.002-0.019 s).

The object store fetch (blob_ready.c, cluster mode) is bounded the same
way (blob_fetch_max, blob_fetch_max_per_user) and not flooded here: it
needs the Ceph S3 of tests/lib/s3_server.py.

Run as root:

    python3 tests/security/test_web_exhaustion2.py [CHECK...]
"""
import hashlib
import io
import json
import os
import sqlite3
import sys
import tarfile
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stack import Reporter, Stack, multipart  # noqa: E402

ALICE = "alice-" + uuid.uuid4().hex
BOB = "bob-" + uuid.uuid4().hex
THREADS = 4
# alice's start window is wide: the floods test the unpack places, and the
# uploads that get through them must not fill a 10-a-minute window first
CONF = ('[user "alice"]\ntoken_sha256 = %s\nmax_tasks = 64\ntasks_per_minute = 1000\n[user "bob"]\ntoken_sha256 = %s\nmax_tasks = 8\n'
        % (hashlib.sha256(ALICE.encode()).hexdigest(), hashlib.sha256(BOB.encode()).hexdigest()))
# Bob's task list during an attack: the product's target is 200 ms p99
# (bench/exhaustion.py); here a bound that holds on a machine 3x slower
# and still fails when alice holds the threads.
VICTIM_MAX_S = 3.0
FLOOD = 24


def request(st, method, path, body=None, token=None, headers=None, timeout=60):
    h = dict(headers or {})
    if token:
        h["Authorization"] = "Bearer " + token
    return st.request(method, path, body, h, timeout=timeout)


def victim_lists(st, n, gap=0.1):
    """Bob's GET /api/tasks, n times in a row: the latencies in seconds
    (a request that failed or timed out counts as 60 s)."""
    out = []
    for _ in range(n):
        t0 = time.time()
        try:
            status, _, _ = request(st, "GET", "/api/tasks", token=BOB)
            out.append(time.time() - t0 if status == 200 else 60.0)
        except OSError:
            out.append(60.0)
        time.sleep(gap)
    return out


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


def is_json_refusal(status, headers, body):
    if status not in (429, 503) or not headers.get("retry-after"):
        return False
    try:
        return bool(json.loads(body).get("error"))
    except ValueError:
        return False


def slow_archive():
    """A .tar.gz that costs seconds to unpack and is refused at its end:
    6,000 one-byte files 20 folders deep, then a symlink."""
    buf = io.BytesIO()
    deep = "/".join("d%d" % i for i in range(20))
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for i in range(6000):
            ti = tarfile.TarInfo("%s/%d/f%d" % (deep, i % 50, i))
            ti.size = 1
            tf.addfile(ti, io.BytesIO(b"x"))
        ti = tarfile.TarInfo("last")
        ti.type = tarfile.SYMTYPE
        ti.linkname = "/etc/passwd"
        tf.addfile(ti)
    return buf.getvalue()


def flood(st, n, send):
    """n concurrent send() while bob lists: (answers, bob's latencies)."""
    results = []
    lock = threading.Lock()

    def one():
        try:
            r = send()
        except OSError as e:
            r = (0, {}, str(e).encode())
        with lock:
            results.append(r)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for th in threads:
        th.start()
    time.sleep(0.3)
    during = victim_lists(st, 15)
    for th in threads:
        th.join(300)
    return results, during


def check_flood(results, during, quiet, n, ok_status, code):
    print("  bob's list: quiet max %.3f s, during p99 %.3f s max %.3f s; alice's answers %r"
          % (max(quiet), p99(during), max(during), sorted(r[0] for r in results)), flush=True)
    assert len(results) == n, "%d of %d requests answered" % (len(results), n)
    bad = [(r[0], r[2][:160]) for r in results if r[0] != ok_status and not is_json_refusal(*r)]
    assert not bad, "answers neither %d nor a JSON 429/503 with Retry-After: %r" % (ok_status, bad[:3])
    codes = [json.loads(r[2])["error"].get("code") for r in results if r[0] in (429, 503)]
    assert code in codes, "no %s refusal among %r: %s" % (code, sorted(set(codes)), [r[2][:200] for r in results if r[0] in (429, 503)][:1])
    assert p99(during) < VICTIM_MAX_S, ("bob's task list took up to %.2f s (p99 %.2f) during the flood "
                                        "(quiet: %.3f s)" % (max(during), p99(during), max(quiet)))


ARCHIVE = None


def t_task_unpack_flood(st):
    quiet = victim_lists(st, 5)
    ctype, body = multipart({"prompt": "unpack this"}, [("files", "data.tar.gz", ARCHIVE)])

    def send():
        return request(st, "POST", "/api/tasks", body, ALICE, {"Content-Type": ctype}, timeout=300)

    results, during = flood(st, FLOOD, send)
    for r in results:
        if r[0] == 400:
            assert b"link" in r[2].lower(), r[2][:200]  # refused for the symlink, after the work
    check_flood(results, during, quiet, FLOOD, 400, "too_many_unpacks")
    # nothing of the refused uploads stays
    left = [n for n in os.listdir(os.path.join(st.prefix, "artifacts")) if len(n) == 32]
    assert not left, "task folders left by refused uploads: %r" % left[:3]


def t_eval_unpack_flood(st):
    # nginx's start zone (30 a minute per address, bursts of 20) is shared
    # with the task flood just before: let it refill some places, so that
    # more requests reach the backend than it has unpack places
    time.sleep(16)
    quiet = victim_lists(st, 5)
    ctype, body = multipart({}, [("dataset", "set.tar.gz", ARCHIVE)])

    def send():
        return request(st, "POST", "/api/evals", body, ALICE, {"Content-Type": ctype}, timeout=300)

    results, during = flood(st, FLOOD, send)
    check_flood(results, during, quiet, FLOOD, 400, "too_many_unpacks")


FILES = 20000
TASKS = 8


def give_to_web(st, top):
    """top and what is under it owned as the web's files are (the test
    writes as root; the web runs as the artifacts folder's owner)."""
    a = os.stat(os.path.join(st.prefix, "artifacts"))
    os.chown(top, a.st_uid, a.st_gid)
    for root, dirs, files in os.walk(top):
        for n in dirs + files:
            os.chown(os.path.join(root, n), a.st_uid, a.st_gid)


def finished_tasks(st, n):
    """n finished tasks of alice's, written into the store as an agent
    would leave them, each with FILES output files."""
    db = sqlite3.connect(os.path.join(st.prefix, "var", "web", "llmbox.db"), timeout=30)
    ids = []
    now = int(time.time() * 1000)
    for _ in range(n):
        tid = uuid.uuid4().hex
        db.execute("INSERT INTO tasks(id, status, prompt, model, max_turns, created_ms, finished_ms, owner)"
                   " VALUES(?, 'succeeded', 'many files', 'fake', 5, ?, ?, 'alice')", (tid, now, now))
        ids.append(tid)
        out = os.path.join(st.prefix, "artifacts", tid, "output")
        for d in range(FILES // 500):
            p = os.path.join(out, "d%d" % d)
            os.makedirs(p)
            for i in range(500):
                open(os.path.join(p, "f%d" % i), "w").close()
        give_to_web(st, os.path.join(st.prefix, "artifacts", tid))
    db.commit()
    db.close()
    return ids


def t_delete_flood(st):
    ids = finished_tasks(st, TASKS)
    quiet = victim_lists(st, 5)
    it = iter(ids)
    lock = threading.Lock()

    def send():
        with lock:
            tid = next(it)
        return request(st, "DELETE", "/api/tasks/" + tid, None, ALICE, timeout=300)

    t0 = time.time()
    results, during = flood(st, TASKS, send)
    print("  bob's list: quiet max %.3f s, during p99 %.3f s max %.3f s; deletes answered in %.1f s"
          % (max(quiet), p99(during), max(during), time.time() - t0), flush=True)
    assert sorted(r[0] for r in results) == [200] * TASKS, [(r[0], r[2][:120]) for r in results]
    assert p99(during) < VICTIM_MAX_S, ("bob's task list took up to %.2f s while alice deleted %d tasks of "
                                        "%d files (quiet: %.3f s)" % (max(during), TASKS, FILES, max(quiet)))
    arts = os.path.join(st.prefix, "artifacts")
    assert not [t for t in ids if os.path.exists(os.path.join(arts, t))], "a deleted task's folder is still there"
    trash = os.path.join(arts, ".trash")
    deadline = time.time() + 120
    while time.time() < deadline and os.path.isdir(trash) and os.listdir(trash):
        time.sleep(0.5)
    assert os.path.isdir(trash) and not os.listdir(trash), "the trash still holds %r" % os.listdir(trash)[:3]
    for tid in ids:
        status, _, _ = request(st, "GET", "/api/tasks/" + tid, token=ALICE)
        assert status == 404, status


def t_trash_left_by_a_crash(st):
    trash = os.path.join(st.prefix, "artifacts", ".trash")
    left = os.path.join(trash, uuid.uuid4().hex + "-0011223344556677")
    os.makedirs(os.path.join(left, "output", "x"))
    open(os.path.join(left, "output", "x", "f"), "w").close()
    give_to_web(st, trash)
    st.kill("web")
    st.restart("web")
    deadline = time.time() + 30
    while time.time() < deadline and os.path.exists(left):
        time.sleep(0.3)
    assert not os.path.exists(left), "a folder left in artifacts/.trash is still there 30 s after the start"


CHECKS = [
    ("task_unpack_flood", t_task_unpack_flood),
    ("eval_unpack_flood", t_eval_unpack_flood),
    ("delete_flood", t_delete_flood),
    ("trash_left_by_a_crash", t_trash_left_by_a_crash),
]


def main():
    global ARCHIVE
    r = Reporter()
    if os.geteuid() != 0:
        print("SKIP web_exhaustion2: sandboxd needs root")
        return
    only = set(sys.argv[1:])
    ARCHIVE = slow_archive()
    web_env = {"LLMBOX_WEB_THREADS": str(THREADS), "LLMBOX_SSE_RESERVE_THREADS": "1"}
    with Stack(web_env=web_env, conf=CONF, env={"LLMBOX_POOL_SIZE": "0"}) as st:
        for name, fn in CHECKS:
            if only and name not in only:
                continue
            r.run("security/web_exhaustion2/" + name, fn, st)
    r.done()


if __name__ == "__main__":
    main()
