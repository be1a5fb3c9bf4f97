#!/usr/bin/env python3
"""Security: one user's scorers must not starve everyone's, and one user's
forks are not a free copy machine.

Scoring (jobs/score_pool.c): alice's rollout group has 8 samples whose
`scorer: script` sleeps a minute, enough to fill every score thread of
the old pool (4). While they run:
- bob's sample with the built-in `exact` scorer is scored within seconds
  (the fast lane: it never waits behind script scorers);
- bob's sample with a quick `script` scorer is scored within seconds too
  (alice holds at most her share of the script threads);
- cancelling alice's group kills her running scorers: every sample ends
  `cancelled` within seconds, and no `llmbox score` process of the web is
  left.

Forks (POST /api/tasks/{id}/fork): a fork is a new task of its user, so
the user's start rate (tasks_per_minute) holds for it: a burst of forks
gets 429 rate_limited past the rate, and no folder is left for a refused
fork.

Against the real stack (fake model, sandboxd, web, nginx) with two users,
on SQLite and then on PostgreSQL (the cluster's store; LLMBOX_TEST_SKIP_PG=1
leaves that part out).

    python3 tests/security/test_fairness.py [WORD...]   # the checks whose name holds a WORD
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from pg_server import PgServer  # noqa: E402
from stack import LLMBOX, Reporter, Stack, image_ready, multipart, pg_fresh_db  # noqa: E402

SLOW = "import time\ntime.sleep(90)\nprint(1)\n"
QUICK = "print(1)\n"
PROMPT = "Say the answer. ANSWER-FROM-INPUT[x.txt]"
PROMPT_FILE = [{"path": "x.txt", "content": "42\n"}]
# scored within this long while alice's scorers sleep (theirs take 90 s:
# the old pool answers after 90 s at best); a bound for hangs, 3x slack
PROMPT_S = 40


def new_user(name):
    out = subprocess.check_output([LLMBOX, "user", "add", name], text=True,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LLMBOX_CONF": "/dev/null"})
    tok = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("lbx_")][0]
    hsh = [ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith("token_sha256 =")][0]
    return tok, hsh


def hdr(tok):
    return {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}


def call(s, tok, method, path, body=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    st, _, raw = s.request(method, path, data, hdr(tok), timeout=timeout)
    try:
        return st, json.loads(raw) if raw else None
    except ValueError:
        return st, raw


def group(s, tok, n, reward):
    st, g = call(s, tok, "POST", "/api/rollouts", {"prompt": PROMPT, "files": PROMPT_FILE, "n": n, "reward": reward,
                                                  "max_turns": 3})
    assert st == 201, (st, g)
    return g["id"]


def wait_group(s, tok, gid, until, timeout):
    deadline = time.time() + timeout
    g = None
    while time.time() < deadline:
        st, g = call(s, tok, "GET", "/api/rollouts/" + gid)
        assert st == 200, (st, g)
        if until(g):
            return g
        time.sleep(0.3)
    raise AssertionError("group %s: not there after %ss: %s" % (gid, timeout, json.dumps(g)[:1500]))


def score_children(s):
    """`llmbox score` processes whose parent is the web."""
    web = s.pid("web")
    n = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == web and len(argv) > 1 and argv[1] == b"score":
            n += 1
    return n


class Scoring:
    def __init__(self, s, ta, tb):
        self.s, self.ta, self.tb = s, ta, tb
        self.alice = None

    def alice_fills_the_scorers(self):
        self.alice = group(self.s, self.ta, 8, {"scorer": "script", "script": SLOW, "timeout_s": 300})
        # every sample's episode over: her 8 scorers are queued or running
        wait_group(self.s, self.ta, self.alice, lambda g: all(x["status"] == "scoring" for x in g["samples"]), 180)
        deadline = time.time() + 60
        while score_children(self.s) < 2 and time.time() < deadline:
            time.sleep(0.3)
        assert score_children(self.s) >= 2, "alice's scorers did not start"
        time.sleep(2)

    def exact_is_not_behind_scripts(self):
        t0 = time.time()
        gid = group(self.s, self.tb, 1, {"scorer": "exact", "ground_truth": "42"})
        g = wait_group(self.s, self.tb, gid, lambda y: y["status"] != "running", 180)
        took = time.time() - t0
        assert g["samples"][0]["outcome"] == "ok", g["samples"][0]
        assert took < PROMPT_S, "bob's exact sample took %.1f s behind alice's script scorers" % took

    def script_gets_a_share(self):
        t0 = time.time()
        gid = group(self.s, self.tb, 1, {"scorer": "script", "script": QUICK, "timeout_s": 60})
        g = wait_group(self.s, self.tb, gid, lambda y: y["status"] != "running", 240)
        took = time.time() - t0
        assert g["samples"][0]["outcome"] == "ok", g["samples"][0]
        assert took < PROMPT_S, "bob's script sample took %.1f s behind alice's" % took
        assert all(x["status"] == "scoring" for x in
                   call(self.s, self.ta, "GET", "/api/rollouts/" + self.alice)[1]["samples"]), \
            "alice's scorers ended early: the test measured nothing"

    def cancel_kills_running_scorers(self):
        assert score_children(self.s) >= 1, "no scorer of alice's runs"
        st, e = call(self.s, self.ta, "POST", "/api/rollouts/%s/cancel" % self.alice)
        assert st == 202, (st, e)
        t0 = time.time()
        g = wait_group(self.s, self.ta, self.alice, lambda y: all(x["status"] == "done" for x in y["samples"]), 60)
        took = time.time() - t0
        assert took < 30, "the cancelled group's scorers ran on for %.1f s" % took
        outs = [x["outcome"] for x in g["samples"]]
        assert outs == ["cancelled"] * 8, outs
        deadline = time.time() + 15
        while score_children(self.s) and time.time() < deadline:
            time.sleep(0.3)
        assert score_children(self.s) == 0, "scorer processes left after the cancel"


def forks_are_rate_limited(s, ta):
    ctype, body = multipart({"prompt": "hello"}, [])
    h = {"Authorization": "Bearer " + ta, "Content-Type": ctype}
    st, _, raw = s.request("POST", "/api/tasks", body, h)
    assert st == 201, (st, raw)
    tid = json.loads(raw)["id"]
    deadline = time.time() + 120
    while time.time() < deadline:
        st, t = call(s, ta, "GET", "/api/tasks/" + tid)
        if t["status"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.2)
    before = set(os.listdir(os.path.join(s.prefix, "artifacts")))
    codes = []
    for _ in range(12):
        st, e = call(s, ta, "POST", "/api/tasks/%s/fork" % tid)
        codes.append(st)
        if st == 429:
            assert e["error"]["code"] in ("rate_limited", "too_many_tasks"), e
    made = codes.count(201)
    # tasks_per_minute = 5 here, and the first task took one start
    assert made == 4 and codes.count(429) == 8, codes
    after = set(os.listdir(os.path.join(s.prefix, "artifacts")))
    assert len(after - before) == made, "a refused fork left a folder: %d new for %d forks" % (
        len(after - before), made)


class Picked(Reporter):
    """Runs only the checks whose name holds a word given on the command
    line (all without one)."""

    def run(self, name, fn, *args):
        if len(sys.argv) < 2 or any(w in name for w in sys.argv[1:]):
            super().run(name, fn, *args)


def main():
    if not image_ready():
        print("SKIP fairness: the sandbox image is not built (make image)")
        return
    rep = Picked()
    (ta, ha), (tb, hb) = new_user("alice"), new_user("bob")
    conf = ('[user "alice"]\ntoken_sha256 = %s\nmax_tasks = 16\ntasks_per_minute = 1000\n'
            '[user "bob"]\ntoken_sha256 = %s\nmax_tasks = 16\ntasks_per_minute = 1000\n' % (ha, hb))
    env = {"LLMBOX_MAX_TASKS": "12", "LLMBOX_SCORE_THREADS": "4"}
    with Stack(scenario={"eval": True}, conf=conf, env=env) as s:
        sc = Scoring(s, ta, tb)
        rep.run("fairness/alice_fills_the_scorers", sc.alice_fills_the_scorers)
        rep.run("fairness/exact_is_not_behind_scripts", sc.exact_is_not_behind_scripts)
        rep.run("fairness/script_gets_a_share", sc.script_gets_a_share)
        rep.run("fairness/cancel_kills_running_scorers", sc.cancel_kills_running_scorers)
    fconf = '[user "alice"]\ntoken_sha256 = %s\nmax_tasks = 4\ntasks_per_minute = 5\n' % ha
    with Stack(conf=fconf) as s:
        rep.run("fairness/forks_are_rate_limited", forks_are_rate_limited, s, ta)
    # the cluster's store: the same limits and pool on PostgreSQL (the
    # start rate's rows are shared by every web there)
    if os.environ.get("LLMBOX_TEST_SKIP_PG"):
        rep.done()
    with PgServer() as pg:
        with Stack(scenario={"eval": True}, conf=conf, env=env, db_url=pg_fresh_db(pg.url)) as s:
            sc = Scoring(s, ta, tb)
            rep.run("fairness/pg_alice_fills_the_scorers", sc.alice_fills_the_scorers)
            rep.run("fairness/pg_exact_is_not_behind_scripts", sc.exact_is_not_behind_scripts)
            rep.run("fairness/pg_cancel_kills_running_scorers", sc.cancel_kills_running_scorers)
        with Stack(conf=fconf, db_url=pg_fresh_db(pg.url)) as s:
            rep.run("fairness/pg_forks_are_rate_limited", forks_are_rate_limited, s, ta)
    rep.done()


if __name__ == "__main__":
    main()
