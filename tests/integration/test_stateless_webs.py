"""Two webs on one store answer the same (several nodes, stateless webs).

A real PostgreSQL (tests/lib/pg_server.py), a real Ceph radosgw
(tests/lib/s3_server.py: outputs in a bucket, as a cluster keeps them) and
two full stacks on them, w1 and w2 (each its own nginx, web, sandboxd and
prefix, as two hosts would have), with users. Asserted:

1. A task made through w1 is answered by w2: the same preview_base; its
   signed download link, made by w1, downloads the file's exact bytes from
   w2 (whose nginx was started with another key, so the link goes through
   the backend's check against the store's key), ranges included; a link
   with one character changed is a JSON 403 on both; the preview link made
   by w1 serves the file on w2.
2. A user's start window counts requests to both webs: tasks_per_minute 2,
   two starts (one on each web), then 429 with Retry-After on both.
3. w2's web restarted: the preview link and the download link handed out
   before still work (the secrets are the store's, not the process's), and
   w2's var/web/download.key now holds the store's key.
4. `llmbox secrets rotate preview`: within the refresh both webs hand out a
   new preview_base, and the old one still serves (one generation of
   overlap); a second rotation ends the first key on both within the
   refresh (10 s).
5. Event streams across webs: tasks started through w1 are streamed from
   w2 while they run (every event once, in order, ending with done), and a
   stream cut on w2 resumes on w1 with Last-Event-ID: the rest, nothing
   twice (STREAMS of them at once; LLMBOX_TEST_STREAMS for the full 200).
6. HAProxy (deploy/haproxy/llmbox.cfg, a real one) in front of both:
   health checks up, task reads and downloads answered by both webs
   (X-Llmbox-Web), bytes identical.
7. Sandbox calls routed by the id's node prefix (nodes.map): n1.… to the
   web of node n1, n2.… to n2's, by path, E2b-Sandbox-Id header and E2B
   host name; an id without a prefix is balanced.
8. A web killed (SIGKILL) while it holds event streams through HAProxy:
   every client reconnects through HAProxy with Last-Event-ID, lands on
   the other web, and gets every event exactly once, ending with done.
"""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, REPO, Reporter, Stack, image_ready, multipart  # noqa: E402
import pg_server  # noqa: E402
import s3_server  # noqa: E402

STREAMS = int(os.environ.get("LLMBOX_TEST_STREAMS", "12"))
TASKS = 6  # the streams follow this many tasks (several streams a task, as several tabs would)

SCEN = {"scenarios": [
    {"match": "[file]", "steps": [
        {"content": "", "tool_calls": [{"name": "bash", "arguments": {
            "command": "printf 'hello from the stateless test\\n%.0s' $(seq 1 200) > /testbed/output/hello.txt"}}]},
        {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "written"}}]},
    ]},
    {"match": "[stream]", "steps": [
        {"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 1; echo one"}}]},
        {"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 1; echo two"}}]},
        {"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 1; echo three"}}]},
        {"content": "", "tool_calls": [{"name": "finish", "arguments": {"answer": "streamed"}}]},
    ]},
]}


def new_user(name):
    out = subprocess.check_output([LLMBOX, "user", "add", name], text=True,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_CONF": "/dev/null"})
    tok = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("lbx_")][0]
    hsh = [ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("token_sha256 =")][0]
    return tok, hsh


class Web:
    """One web (its stack's nginx) as one user."""

    def __init__(self, stack, token):
        self.s, self.tok = stack, token

    def req(self, method, path, body=None, headers=None, auth=True, timeout=30):
        h = dict(headers or {})
        if auth:
            h["Authorization"] = "Bearer " + self.tok
        return self.s.request(method, path, body, h, timeout=timeout)

    def get(self, path, auth=True):
        st, h, b = self.req("GET", path, auth=auth)
        try:
            return st, h, json.loads(b) if b else None
        except ValueError:
            return st, h, b

    def create(self, prompt):
        ctype, body = multipart({"prompt": prompt}, [])
        st, h, b = self.req("POST", "/api/tasks", body, {"Content-Type": ctype})
        return st, h, json.loads(b) if b else None

    def wait(self, tid, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            st, _, t = self.get("/api/tasks/" + tid)
            if st == 200 and t["status"] in ("succeeded", "failed", "cancelled"):
                return t
            time.sleep(0.1)
        raise AssertionError("task %s not final" % tid)

    def stream(self, tid, last_id=None, stop_after=None, timeout=90):
        """[(id, event)] of the task's stream, to done, or cut after
        stop_after events."""
        h = {"Accept": "text/event-stream", "Authorization": "Bearer " + self.tok}
        if last_id is not None:
            h["Last-Event-ID"] = str(last_id)
        c = http.client.HTTPConnection("127.0.0.1", self.s.port, timeout=timeout)
        c.request("GET", "/api/tasks/%s/events" % tid, headers=h)
        r = c.getresponse()
        assert r.status == 200, (r.status, r.read()[:300])
        evs, cur = [], {}
        while True:
            line = r.readline()
            if not line:
                break
            line = line.decode().rstrip("\r\n")
            if line == "":
                if "event" in cur or "data" in cur:
                    evs.append((int(cur.get("id", "0")), cur.get("event", "message")))
                    if cur.get("event") == "done" or (stop_after and len(evs) >= stop_after):
                        break
                cur = {}
            elif not line.startswith(":"):
                k, _, v = line.partition(":")
                cur[k] = v[1:] if v.startswith(" ") else v
        c.close()
        return evs


class LB(Web):
    """HAProxy's frontend, as one user: req/get/stream as Web, plus which
    web answered."""

    def __init__(self, port, token):
        self.port, self.tok = port, token
        self.s = self

    def request(self, method, path, body=None, headers=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def follow(self, tid, first_events, killed, timeout=120):
        """The task's whole stream as a browser reads it: on a cut
        connection, again with Last-Event-ID. [(id, event)], the webs
        that served it, and how many connections it took."""
        evs, webs, conns, last = [], [], 0, None
        self.seen = getattr(self, "seen", {})
        self.seen[tid] = info = {"statuses": [], "evs": evs}
        deadline = time.time() + timeout
        while time.time() < deadline:
            h = {"Accept": "text/event-stream", "Authorization": "Bearer " + self.tok}
            if last is not None:
                h["Last-Event-ID"] = str(last)
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            conns += 1
            try:
                c.request("GET", "/api/tasks/%s/events" % tid, headers=h)
                r = c.getresponse()
                info["statuses"].append(r.status)
                if r.status != 200:
                    info["body"] = r.read()[:200]
                    time.sleep(0.2)
                    continue
                webs.append(r.getheader("X-Llmbox-Web"))
                cur = {}
                while True:
                    line = r.readline()
                    if not line:
                        break
                    line = line.decode().rstrip("\r\n")
                    if line == "":
                        if "event" in cur or "data" in cur:
                            evs.append((int(cur.get("id", "0")), cur.get("event", "message")))
                            last = evs[-1][0]
                            if cur.get("event") == "done":
                                return evs, webs, conns
                            if len(evs) == 2:
                                first_events.release()
                        cur = {}
                    elif not line.startswith(":"):
                        k, _, v = line.partition(":")
                        cur[k] = v[1:] if v.startswith(" ") else v
            except (OSError, http.client.HTTPException):
                pass
            finally:
                c.close()
            killed.wait(30)  # a cut before the kill is a failure below: no retry storm
        raise AssertionError("%s: no done within %ds: %s" % (tid, timeout, evs[-3:]))


def once_in_order(evs, what):
    ids = [i for i, _ in evs]
    assert ids == sorted(set(ids)), "%s: ids not once and in order: %s" % (what, ids)
    assert evs and evs[-1][1] == "done", "%s: no done at the end: %s" % (what, evs[-3:])


class T:
    def __init__(self, w1, w2, b1, b2, pg, db):
        self.w1, self.w2, self.b1, self.b2, self.pg, self.db = w1, w2, b1, b2, pg, db
        self.tid = None

    def task(self):
        if not self.tid:
            st, _, t = self.w1.create("[file] write it")
            assert st in (200, 201, 202), (st, t)
            self.tid = t["id"]
            done = self.w1.wait(self.tid)
            assert done["status"] == "succeeded", done
        return self.tid

    def test_1_any_web_answers_links(self):
        tid = self.task()
        _, _, t1 = self.w1.get("/api/tasks/" + tid)
        st, _, t2 = self.w2.get("/api/tasks/" + tid)
        assert st == 200 and t1["preview_base"] == t2["preview_base"], (t1.get("preview_base"), t2)
        st, _, arts = self.w1.get("/api/tasks/%s/artifacts" % tid)
        a = [x for x in (arts if isinstance(arts, list) else arts.get("artifacts", [])) if x["path"] == "hello.txt"]
        assert a and a[0].get("download_url"), arts
        url = a[0]["download_url"]
        want = b"hello from the stateless test\n" * 200
        for w in (self.w1, self.w2):
            st, h, body = w.req("GET", url, auth=False)
            assert st == 200 and body == want, (w.s.port, st, body[:200])
            st, h, body = w.req("GET", url, headers={"Range": "bytes=6-9"}, auth=False)
            assert st == 206 and body == b"from", (w.s.port, self.w1.s.port, st, h, body[:100])
            # one character of the signature changed: a JSON 403, never the file
            # (the first character of the signature: the last one of 22
            # base64 characters carries only 2 bits, which a decoder may
            # ignore, so changing it can leave the same signature)
            i = url.index("&s=") + 3
            bad = url[:i] + ("A" if url[i] != "A" else "B") + url[i + 1:]
            st, h, body = w.req("GET", bad, auth=False)
            assert st == 403 and json.loads(body)["error"]["code"] == "forbidden", (st, body[:300])
            st, h, body = w.req("GET", t1["preview_base"] + "hello.txt", auth=False)
            assert st == 200 and body == want, (w.s.port, self.w1.s.port, st, h, len(body), body[-100:])
        # a preview key of the right shape but not the task's is a 404 on both
        forged = t1["preview_base"].rstrip("/").rsplit("/", 1)[0] + "/" + "0" * 32 + "/hello.txt"
        for w in (self.w1, self.w2):
            st, _, _ = w.req("GET", forged, auth=False)
            assert st == 404, st

    def test_1b_deleted_task_links_stop_everywhere(self):
        """A task deleted through one web: its signed link stops working on
        the other too, whose nginx serves it from its own copy with no word
        from its backend, within about a second (the webs' look for
        tombstones every 250 ms, and nginx's open-file cache of 1 s)."""
        # each nginx started again with the store's key (as after a
        # restart of the host): links are served by nginx alone
        stored = self.pg.sql("SELECT value FROM web_secrets WHERE name = 'download'", db=self.db).strip()
        for w in (self.w1, self.w2):
            key = open(os.path.join(w.s.prefix, "var", "web", "download.key")).read().strip()
            assert key == stored, "web %d: its key file is not the store's key" % w.s.port
            subprocess.check_call([os.path.join(REPO, "scripts", "nginx-local.sh"), "llmbox"], cwd=w.s.prefix)
            w.s.kill("nginx", sig=signal.SIGHUP, wait=False)  # nginx -s reload
        time.sleep(1)  # the new workers take over
        st, _, t = self.w1.create("[file] to delete")
        assert st in (200, 201, 202), (st, t)
        tid = t["id"]
        assert self.w1.wait(tid)["status"] == "succeeded"
        st, _, arts = self.w2.get("/api/tasks/%s/artifacts" % tid)
        url = [x for x in (arts if isinstance(arts, list) else arts.get("artifacts", []))
               if x["path"] == "hello.txt"][0]["download_url"]

        def fetches(w):
            with open(os.path.join(w.s.prefix, "var", "log", "web.log")) as f:
                return sum(1 for line in f if '"dl_fetch"' in line and tid in line)
        for w in (self.w1, self.w2):
            st, _, body = w.req("GET", url, auth=False)  # w2: fetched from the bucket into its copy
            assert st == 200 and body.startswith(b"hello from"), (st, body[:100])
            before = fetches(w)
            st, _, body = w.req("GET", url, auth=False)
            assert st == 200 and fetches(w) == before, "web %d: the link did not come from nginx alone" % w.s.port
        copies = [os.path.join(w.s.prefix, "artifacts", tid, "output", "hello.txt") for w in (self.w1, self.w2)]
        assert all(os.path.exists(c) for c in copies), copies
        st, _, _ = self.w1.req("DELETE", "/api/tasks/" + tid)
        assert st in (200, 204), st
        deleted = time.time()
        for w in (self.w1, self.w2):
            while True:
                st, _, body = w.req("GET", url, auth=False)
                if st == 404:
                    break
                assert time.time() - deleted < 1.5, ("web %d still serves a deleted task's link (%d) %.1f s later"
                                                     % (w.s.port, st, time.time() - deleted))
                time.sleep(0.05)
        assert not any(os.path.exists(c) for c in copies), "a copy of the deleted task is left: %s" % copies
        print("# a deleted task's link stopped on both webs %.2f s after the delete" % (time.time() - deleted),
              file=sys.stderr)

    def test_2_start_window_counts_both_webs(self):
        answers = []
        for w in (self.b1, self.b2, self.b1, self.b2):
            st, h, b = w.create("[none] a start")
            answers.append((st, h.get("retry-after"), (b or {}).get("error", {}).get("code")))
        assert [a[0] for a in answers[:2]] != [429, 429] and all(a[0] in (200, 201, 202) for a in answers[:2]), answers
        for st, ra, code in answers[2:]:
            assert st == 429 and code == "rate_limited" and ra and 1 <= int(ra) <= 60, answers
        n = int(self.pg.sql("SELECT COUNT(*) FROM rate_slots WHERE owner = 'bob' AND at_ms > 0", db=self.db))
        assert n == 2, n

    def test_3_restarted_web_keeps_the_links(self):
        tid = self.task()
        _, _, t1 = self.w1.get("/api/tasks/" + tid)
        _, _, arts = self.w1.get("/api/tasks/%s/artifacts" % tid)
        url = [x for x in (arts if isinstance(arts, list) else arts["artifacts"]) if x["path"] == "hello.txt"][0][
            "download_url"]
        self.w2.s.kill("web")
        self.w2.s.restart("web")
        st, _, body = self.w2.req("GET", t1["preview_base"] + "hello.txt", auth=False)
        assert st == 200, (st, body[:200])
        st, _, body = self.w2.req("GET", url, auth=False)
        assert st == 200, (st, body[:200])
        k1 = open(os.path.join(self.w1.s.prefix, "var", "web", "download.key")).read()
        k2 = open(os.path.join(self.w2.s.prefix, "var", "web", "download.key")).read()
        assert k1 == k2 and len(k1) == 65, "the webs' key files differ"
        stored = self.pg.sql("SELECT value FROM web_secrets WHERE name = 'download'", db=self.db).strip()
        assert stored == k1.strip(), "the key file is not the store's"
        # the secret is never logged
        for w in (self.w1, self.w2):
            logs = w.s.logs()
            assert stored not in logs, "the download key is in a log"

    def test_4_rotation_overlaps_one_generation(self):
        tid = self.task()
        _, _, t1 = self.w1.get("/api/tasks/" + tid)
        old = t1["preview_base"]
        env = dict(self.w1.s.env)
        r = subprocess.run([LLMBOX, "secrets", "rotate", "preview"], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and "generation 2" in r.stdout, (r.returncode, r.stdout, r.stderr)
        deadline = time.time() + 20
        new = {}
        while True:
            for name, w in (("w1", self.w1), ("w2", self.w2)):
                new[name] = w.get("/api/tasks/" + tid)[2]["preview_base"]
            if all(v != old for v in new.values()):
                break
            assert time.time() < deadline, ("no new preview key within 20 s", new)
            time.sleep(0.5)
        gens = self.pg.sql("SELECT gen FROM web_secrets WHERE name = 'preview' ORDER BY gen", db=self.db)
        assert new["w1"] == new["w2"] != old, (new, old, gens)
        for w in (self.w1, self.w2):
            for base in (old, new["w1"]):
                st, _, body = w.req("GET", base + "hello.txt", auth=False)
                assert st == 200, (base, st, body[:200])
        r = subprocess.run([LLMBOX, "secrets", "rotate", "preview"], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        # the first key ends on every web within the refresh (10 s); the
        # second still serves
        for w in (self.w1, self.w2):
            deadline = time.time() + 20
            while w.req("GET", old + "hello.txt", auth=False)[0] != 404:
                assert time.time() < deadline, "the first preview key still serves 20 s after two rotations"
                time.sleep(0.5)
            st, _, _ = w.req("GET", new["w1"] + "hello.txt", auth=False)
            assert st == 200, st
        r = subprocess.run([LLMBOX, "secrets", "rotate", "nothing"], env=env, capture_output=True, text=True)
        assert r.returncode == 2 and "usage" in r.stderr, (r.returncode, r.stderr)

    def test_5_streams_across_webs(self):
        tasks = []
        for i in range(min(STREAMS, TASKS)):
            st, _, t = self.w1.create("[stream] %d" % i)
            assert st in (200, 201, 202), (st, t)
            tasks.append(t["id"])
        tids = [tasks[i % len(tasks)] for i in range(STREAMS)]  # STREAMS streams over the tasks
        results, errors = {}, []

        def follow(i, tid):
            try:
                # half read whole on w2; half cut on w2 after 3 events and
                # resumed on w1 from the last id seen
                if i % 2 == 0:
                    results[i] = self.w2.stream(tid)
                else:
                    head = self.w2.stream(tid, stop_after=3)
                    tail = self.w1.stream(tid, last_id=head[-1][0])
                    results[i] = head + tail
            except Exception as e:  # noqa: BLE001
                errors.append("%s: %r" % (tid, e))

        th = [threading.Thread(target=follow, args=(i, t)) for i, t in enumerate(tids)]
        for t in th:
            t.start()
        for t in th:
            t.join(180)
        assert not errors, errors[:3]
        counts = {tid: int(self.pg.sql("SELECT COUNT(*) FROM events WHERE task_id = '%s'" % tid, db=self.db))
                  for tid in tasks}
        for i, tid in enumerate(tids):
            once_in_order(results[i], tid)
            assert len(results[i]) == counts[tid], (tid, len(results[i]), counts[tid])


class H:
    """Through HAProxy."""

    def __init__(self, t, lb, s1, s2):
        self.t, self.lb, self.s1, self.s2 = t, lb, s1, s2

    def test_6_haproxy_balances_reads_and_downloads(self):
        tid = self.t.task()
        seen = set()
        want = b"hello from the stateless test\n" * 200
        for _ in range(12):
            st, h, task = self.lb.get("/api/tasks/" + tid)
            assert st == 200 and task["id"] == tid, (st, task)
            seen.add(h.get("x-llmbox-web"))
            url = [a for a in task["artifacts"] if a["path"] == "hello.txt"][0]["download_url"]
            st, h, body = self.lb.req("GET", url, auth=False)
            assert st == 200 and body == want, (st, body[:200])
            seen.add(h.get("x-llmbox-web"))
        assert seen == {"w1", "w2"}, seen

    def test_7_sandbox_calls_routed_by_node_prefix(self):
        hexid = "0123456789abcdef" * 2
        cases = [("GET", "/api/sandboxes/n1.%s" % hexid, {}, "n1"),
                 ("GET", "/api/sandboxes/n2.%s/files/a.txt" % hexid, {}, "n2"),
                 ("DELETE", "/api/snapshots/n2.%s" % hexid, {}, "n2"),
                 ("POST", "/e2b/sandboxes/n1.%s/timeout" % hexid, {}, "n1"),
                 ("GET", "/e2b/sandbox/files", {"E2b-Sandbox-Id": "n2." + hexid}, "n2"),
                 ("GET", "/health", {"Host": "49983-n1.%s.e2b.test" % hexid}, "n1")]
        for method, path, hdr, want in cases:
            st, h, body = self.lb.req(method, path, headers=hdr)
            assert h.get("x-llmbox-web") == want, (method, path, st, h.get("x-llmbox-web"), body[:200])
        # no prefix (as ids are today: see docs) and an unknown node: balanced
        for path in ("/api/sandboxes/" + hexid, "/api/sandboxes/n9.%s" % hexid):
            st, h, _ = self.lb.req("GET", path)
            assert h.get("x-llmbox-web") in ("w1", "w2"), (path, st, h)

    def test_8_web_killed_mid_stream(self):
        n = max(4, STREAMS)
        tasks = []
        for i in range(min(n, TASKS)):
            st, _, t = self.lb.create("[stream] lb %d" % i)
            assert st in (200, 201, 202), (st, t)
            tasks.append(t["id"])
        tids = [tasks[i % len(tasks)] for i in range(n)]
        first = threading.Semaphore(0)
        killed = threading.Event()
        out, errors = {}, []

        def run(i, tid):
            try:
                out[i] = self.lb.follow(tid, first, killed)
            except Exception as e:  # noqa: BLE001
                errors.append("%s: %r" % (tid, e))
                first.release()

        th = [threading.Thread(target=run, args=(i, tid)) for i, tid in enumerate(tids)]
        for x in th:
            x.start()
        for _ in tids:  # every stream has its first events
            if not first.acquire(timeout=120):
                raise AssertionError("streams did not start: %s" % {
                    k: (v["statuses"], len(v["evs"]), v.get("body")) for k, v in self.lb.seen.items()})
        self.s1.kill("web")
        killed.set()
        try:
            for x in th:
                x.join(180)
            assert not errors, errors[:3]
            moved = 0
            counts = {tid: int(self.t.pg.sql("SELECT COUNT(*) FROM events WHERE task_id = '%s'" % tid, db=self.t.db))
                      for tid in tasks}
            for i, tid in enumerate(tids):
                evs, webs, conns = out[i]
                once_in_order(evs, tid)
                assert len(evs) == counts[tid], (tid, len(evs), counts[tid])
                if webs[0] == "w1":
                    assert conns >= 2 and "w2" in webs[1:], (tid, webs, conns)
                    moved += 1
            assert moved >= 1, "no stream was on the killed web: %s" % [out[i][1] for i in range(n)]
            print("# %d streams through HAProxy, %d moved from the killed web, every event once" % (n, moved),
                  file=sys.stderr)
        finally:
            self.s1.restart("web")


def haproxy_start(s1, s2):
    d = __import__("tempfile").mkdtemp(prefix="llmbox-lb-")
    port = __import__("stack").free_port()
    env = dict(os.environ, LLMBOX_LB_BIND="127.0.0.1:%d" % port, LLMBOX_WEB1="127.0.0.1:%d" % s1.port,
               LLMBOX_WEB2="127.0.0.1:%d" % s2.port, LLMBOX_LB_STATE=d,
               LLMBOX_NODES_MAP=os.path.join(REPO, "deploy", "haproxy", "nodes.map"))
    cfg = os.path.join(REPO, "deploy", "haproxy", "llmbox.cfg")
    p = subprocess.Popen(["haproxy", "-db", "-f", cfg], env=env, stdout=open(os.path.join(d, "haproxy.log"), "w"),
                         stderr=subprocess.STDOUT, cwd=d)
    deadline = time.time() + 20
    while time.time() < deadline:  # both webs up by their health checks
        try:
            import socket
            c = socket.create_connection(("127.0.0.1", port), timeout=1)
            c.close()
            seen = set()
            for _ in range(6):
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/api/health")
                r = c.getresponse()
                r.read()
                seen.add(r.getheader("X-Llmbox-Web"))
                c.close()
            if seen == {"w1", "w2"}:
                return p, port, d
        except OSError:
            pass
        time.sleep(0.3)
    p.kill()
    p.wait(10)
    log = open(os.path.join(d, "haproxy.log")).read()[-2000:]
    shutil.rmtree(d, ignore_errors=True)
    raise AssertionError("HAProxy did not see both webs up: %s" % log)


def behind_haproxy(s1, s2, fn):
    """fn(port) with a real HAProxy (haproxy_start) in front of s1 and s2;
    HAProxy is stopped and its folder removed afterwards."""
    lbp, lbport, lbdir = haproxy_start(s1, s2)
    try:
        return fn(lbport)
    finally:
        lbp.send_signal(signal.SIGTERM)
        lbp.wait(10)
        shutil.rmtree(lbdir, ignore_errors=True)


def run_tests(rep, obj):
    """Runs obj's test_* methods in name order."""
    for name in sorted(n for n in dir(obj) if n.startswith("test_")):
        rep.run(name, getattr(obj, name))


def main():
    rep = Reporter()
    if pg_server.missing():
        print("SKIP stateless_webs: %s" % pg_server.missing())
        return rep.done()
    if not image_ready():
        print("SKIP stateless_webs: the sandbox image is not built (make image)")
        return rep.done()
    if os.geteuid() != 0 or s3_server.missing():
        print("SKIP stateless_webs: needs root (sandboxd) and %s (make deps)" % " ".join(s3_server.missing() or ["root"]))
        return rep.done()
    ann, bob = new_user("ann"), new_user("bob")
    conf = ("user_tasks_per_minute = 0\nuser_max_tasks = 0\n"
            '[user "ann"]\ntoken_sha256 = %s\n[user "bob"]\ntoken_sha256 = %s\ntasks_per_minute = 2\n'
            % (ann[1], bob[1]))
    # every open stream holds a web thread and that thread's connection
    with pg_server.PgServer(max_connections=max(200, 3 * STREAMS + 100)) as pg, s3_server.S3Server() as s3:
        db = "webs"
        pg.sql('CREATE DATABASE "%s"' % db)
        url = pg.url.replace("/%s?" % pg.db, "/%s?" % db)
        env = s3.env(bucket="llmbox-webs")
        r = subprocess.run([LLMBOX, "blob", "mkbucket"], env=dict(os.environ, LLMBOX_HOME="/", **env),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        # every stream of the test is one user's: past the default 8 per web;
        # and each open stream holds one of a web's threads
        env["LLMBOX_SSE_MAX_PER_CLIENT"] = str(max(8, STREAMS))
        env["LLMBOX_WEB_THREADS"] = str(max(32, STREAMS + 24))
        kw = dict(scenario=SCEN, db_url=url, conf=conf, env=env)
        with Stack(**kw) as s1, Stack(**kw) as s2:
            t = T(Web(s1, ann[0]), Web(s2, ann[0]), Web(s1, bob[0]), Web(s2, bob[0]), pg, db)
            run_tests(rep, t)
            if not shutil.which("haproxy"):
                print("SKIP haproxy: not installed (make deps)")
                return rep.done()
            behind_haproxy(s1, s2, lambda port: run_tests(rep, H(t, LB(port, ann[0]), s1, s2)))
    return rep.done()


if __name__ == "__main__":
    main()
