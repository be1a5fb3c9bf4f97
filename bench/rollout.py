#!/usr/bin/env python3
"""Rollout benchmark (RL rollouts): rollout samples per minute at group size 8
and concurrency 64, 256 and 512 with a 200 ms model, and the harness's
overhead per turn.

For each concurrency c it starts the whole service (tests/lib/stack.py)
with max_tasks = c + 16 and eval_reserve_slots = 16 (so c slots are the
rollouts'), the fake model's eval behaviour (tests/fake_model.py
{"eval": true}) answering every request after --delay-ms, and posts
--samples-per-slot x c samples as groups of --group-size through the batch
form; then waits for every group (GET ?wait=60). A sample is two model
turns (a bash command that copies an input file into the answer file,
then finish) in a fresh sandbox, scored by the numeric scorer.

Peer, in the same run: the model-bound ceiling, c x 60 s / (2 x delay)
samples per minute (every slot always waiting on the model); ratio =
llmbox samples/min / that ceiling. Overhead per turn = (a sample's wall
time, task created -> finished, minus turns x delay) / turns: sandbox
start, agent start, tools, the store, scheduling.

Token capture is on (`capture_tokens`, the fake model answering in vLLM's
shape with ids and log-probabilities): the benchmark prints the bytes of
token data per turn (tokens.jsonl) and checks, on every sample of the run,
that every stored turn's prompt ids, generated ids and log-probabilities
equal one answer the server sent (the fake model keeps each answer as
response-NNNN.json), compared as ints and as the same doubles.

    python3 bench/rollout.py [--concurrency 64,256,512] [--group-size 8] [--samples-per-slot 2] [--delay-ms 200]
                             [--peer DIR [--rounds 2]]

--peer DIR: the same levels on the checkout in DIR (built there, e.g. main
in a second worktree), alternating with this one --rounds times, each in a
fresh stack; prints the CPU per sample of each and their ratio.

--floor: after each level, in a fresh stack of the same configuration, the
irreducible work of the same number of samples at the same concurrency,
straight at sandboxd's RPC (no web, no agent, no store, no model): per
sample the create the agent sends (the group's input folder copied in),
the scripted model's bash command (the exec the agent sends, with its
timeouts), the answer's collection (list of /testbed/output, read of the
answer file) and destroy, each sample on its own connection as an agent's.
Its CPU is counted as the harness's is (from /proc: the web, sandboxd and
nginx and everything under them; this script's own client, like the fake
model, not counted), and printed beside the harness's figure as a ratio:
how far the harness is from the sandbox's own cost.

    python3 bench/rollout.py --concurrency 16 --group-size 4 --samples-per-slot 4 --floor [--peer DIR]
"""
import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# --repo DIR: the service of another checkout (its build, its tests/lib), for
# a peer measured in the same run (--peer)
if "--repo" in sys.argv:
    REPO = os.path.abspath(sys.argv[sys.argv.index("--repo") + 1])
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from stack import Stack, image_ready  # noqa: E402
import load  # noqa: E402

TOKEN = "bench-rollout-token-0123456789abcdef0123"
AUTH = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
RESERVE = 16
BATCH = 64  # groups per POST (the API's cap)


def group(i, size):
    return {"prompt": "Group %d. ANSWER-FROM-INPUT[q.txt]" % i, "n": size, "capture_tokens": True,
            "files": [{"path": "q.txt", "content": "%d\n" % i}],
            "reward": {"scorer": "numeric", "ground_truth": i}}


def level(c, size, per_slot, delay_ms, perf=None):
    env = {"LLMBOX_MAX_TASKS": str(c + RESERVE), "LLMBOX_EVAL_RESERVE_SLOTS": str(RESERVE),
           "LLMBOX_ROLLOUT_MAX_SAMPLES": str(c), "LLMBOX_WEB_THREADS": "64",
           # every agent holds one sandboxd connection: room for c of them
           "LLMBOX_SANDBOXD_MAX_CONNS": str(c + RESERVE + 64), "LLMBOX_SANDBOX_MAX": str(c + RESERVE + 64)}
    ngroups = max(1, (per_slot * c) // size)
    with Stack(scenario={"eval": True, "tokens": "vllm"}, env=env, web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN},
               model_args=["--delay-ms", str(delay_ms)], model_log=True) as s:
        ids = []
        cpu0 = stack_cpu(s)
        model = [p.pid for p in s.procs if "fake_model.py" in " ".join(map(str, p.args))]
        m0 = proc_cpu(model[0])[0] if model else 0.0
        prof = perf_start(s, perf) if perf else None
        t0 = time.time()
        for b in range(0, ngroups, BATCH):
            body = {"groups": [group(i, size) for i in range(b, min(ngroups, b + BATCH))]}
            st, _, raw = s.request("POST", "/api/rollouts", json.dumps(body).encode(), AUTH, timeout=120)
            assert st == 201, (st, raw[:500])
            ids += [g["id"] for g in json.loads(raw)["groups"]]
        t_posted = time.time() - t0
        groups = []
        for gid in ids:
            while True:
                st, _, raw = s.request("GET", "/api/rollouts/%s?wait=60" % gid, None, AUTH, timeout=90)
                assert st == 200, (st, raw[:300])
                g = json.loads(raw)
                if g["status"] != "running":
                    groups.append(g)
                    break
        wall = time.time() - t0
        cpu1 = stack_cpu(s)
        m1 = proc_cpu(model[0])[0] if model else 0.0
        if prof:
            perf_stop(prof)
        samples = [x for g in groups for x in g["samples"]]
        tok = check_tokens(s, samples)
    samples = [x for g in groups for x in g["samples"]]
    n = len(samples)
    right = sum(1 for x in samples if x["outcome"] == "ok" and x["reward"] == 1)
    outcomes = {}
    for x in samples:
        outcomes[x["outcome"]] = outcomes.get(x["outcome"], 0) + 1
    per_turn = sorted((x["wall_ms"] - x["turns"] * delay_ms) / x["turns"]
                      for x in samples if x.get("turns") and x.get("wall_ms"))
    spm = n / wall * 60
    ceiling = c * 60000.0 / (2 * delay_ms)
    p50 = per_turn[len(per_turn) // 2] if per_turn else float("nan")
    p90 = per_turn[int(len(per_turn) * 0.9)] if per_turn else float("nan")
    print("  c=%-4d %5d samples (%d groups of %d) in %6.1f s (posted in %.1f s): %7.0f samples/min, %d right, "
          "outcomes %s; ceiling %7.0f/min, ratio %.2fx; overhead/turn p50 %.0f ms p90 %.0f ms" % (
              c, n, len(groups), size, wall, t_posted, spm, right, json.dumps(outcomes, sort_keys=True), ceiling,
              spm / ceiling, p50, p90))
    per = {k: (cpu1.get(k, 0) - cpu0.get(k, 0)) * 1000.0 / max(1, n) for k in cpu1}
    print("         cpu per sample: %.1f ms (%s; from /proc, the fake model not counted: it took %.1f ms a sample)" % (
        sum(per.values()), ", ".join("%s %.1f" % (k, v) for k, v in sorted(per.items())), (m1 - m0) * 1000.0 / max(1, n)))
    print("         tokens: %d turns stored, %d equal to an answer the server sent, %d not, %d samples without "
          "tokens.jsonl; %.0f bytes of token data per turn (tokens.jsonl)" % tok)
    sys.stdout.flush()
    return {"cpu_ms": sum(per.values()), "spm": spm, "n": n, "right": right}


def floor_level(c, size, per_slot):
    """The floor of level(c, size, per_slot): the same samples' sandbox
    work alone, straight at sandboxd's RPC, c at a time; its CPU per sample
    from /proc, counted as level() counts the harness's."""
    import shutil
    import tempfile
    import threading
    from sandbox_rpc import Conn
    env = {"LLMBOX_MAX_TASKS": str(c + RESERVE), "LLMBOX_EVAL_RESERVE_SLOTS": str(RESERVE),
           "LLMBOX_ROLLOUT_MAX_SAMPLES": str(c), "LLMBOX_WEB_THREADS": "64",
           "LLMBOX_SANDBOXD_MAX_CONNS": str(c + RESERVE + 64), "LLMBOX_SANDBOX_MAX": str(c + RESERVE + 64)}
    ngroups = max(1, (per_slot * c) // size)
    inputs = tempfile.mkdtemp(prefix="llmbox-floor-")
    todo = []
    for i in range(ngroups):
        # the group's input folder, as the web writes it (q.txt) for its samples
        d = os.path.join(inputs, str(i), "input")
        os.makedirs(d)
        with open(os.path.join(d, "q.txt"), "w") as f:
            f.write("%d\n" % i)
        todo += [(i, d)] * size
    lock = threading.Lock()
    bad = []
    try:
        with Stack(model=False, env=env) as s:
            sock = os.path.join(s.prefix, "var", "run", "sandboxd.sock")

            def one(i, d):
                with Conn(sock, timeout=120) as cn:
                    r = cn.call({"op": "create", "image": "default", "memory_mib": 2048, "pids": 512, "input_dir": d})
                    if not r.get("ok"):
                        raise RuntimeError("create: %s" % r)
                    sid = r["id"]
                    r = cn.call({"op": "exec", "id": sid, "timeout_ms": 120000, "soft_timeout_ms": 10000,
                                 "command": "cat /testbed/input/q.txt > /testbed/output/answer.txt"})
                    ok = r.get("ok") and r.get("exit_code") == 0
                    r = cn.call({"op": "list", "id": sid, "path": "/testbed/output", "max_depth": 32,
                                 "max_entries": 40001})
                    ok = ok and r.get("ok")
                    r = cn.call({"op": "read", "id": sid, "path": "/testbed/output/answer.txt", "max": 67107840})
                    ok = ok and r.get("ok") and r.get("_data", b"").strip() == str(i).encode()
                    cn.call({"op": "destroy", "id": sid})
                    if not ok:
                        with lock:
                            bad.append(i)

            def worker():
                while True:
                    with lock:
                        if not todo:
                            return
                        i, d = todo.pop()
                    try:
                        one(i, d)
                    except Exception as e:  # counted as a wrong sample, and said
                        with lock:
                            bad.append("%s: %s" % (i, e))

            n = len(todo)
            cpu0 = stack_cpu(s)
            t0 = time.time()
            ts = [threading.Thread(target=worker) for _ in range(c)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            wall = time.time() - t0
            cpu1 = stack_cpu(s)
    finally:
        shutil.rmtree(inputs, ignore_errors=True)
    per = {k: (cpu1.get(k, 0) - cpu0.get(k, 0)) * 1000.0 / max(1, n) for k in cpu1}
    print("  floor c=%-4d %5d samples straight at sandboxd's RPC (create, exec, list, read, destroy) in %.1f s: "
          "%d right; cpu per sample: %.1f ms (%s)" % (c, n, wall, n - len(bad), sum(per.values()),
                                                     ", ".join("%s %.1f" % (k, v) for k, v in sorted(per.items()))))
    if bad:
        print("         wrong: %s" % "; ".join(str(x) for x in bad[:5]))
    sys.stdout.flush()
    return {"cpu_ms": sum(per.values()), "n": n, "right": n - len(bad)}


def perf_start(s, out):
    """`perf record -g` (Debian's linux-perf) of the web, sandboxd and
    every process under them (the zygote and its agents, the sandboxes)
    for the measured window, into out; perf follows the processes they
    start from then on."""
    import subprocess
    kids = children_map()
    pids = []
    for name in ("web", "sandboxd"):
        ent = s.named.get(name)
        if ent:
            todo = [ent[0].pid]
            while todo:
                p = todo.pop()
                pids.append(p)
                todo += kids.get(p, [])
    p = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-g", "-o", out, "-p",
                          ",".join(str(x) for x in pids)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # attached before the first sample is posted
    return p


def perf_stop(p):
    import signal
    p.send_signal(signal.SIGINT)
    p.wait(timeout=120)


TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """(own CPU s, CPU s of reaped children) of pid from /proc, or (0, 0)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    return (int(st[11]) + int(st[12])) / TICK, (int(st[13]) + int(st[14])) / TICK


def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def stack_cpu(s):
    """CPU seconds so far, by process kind, read from /proc: each named
    process itself, and everything under it (its live descendants' own and
    reaped-children time, plus its own reaped children): agents and
    scorers under the web, the sandboxes under sandboxd."""
    kids = children_map()
    out = {}
    for name in ("web", "sandboxd", "nginx"):
        ent = s.named.get(name)
        if not ent:
            continue
        root = ent[0].pid
        own, reaped = proc_cpu(root)
        below = reaped
        todo = list(kids.get(root, []))
        while todo:
            p = todo.pop()
            a, b = proc_cpu(p)
            below += a + b
            todo += kids.get(p, [])
        out[name] = own
        out[name + " children"] = below
    return out


def sent_answers(model_log):
    """{(prompt ids, generated ids, log-probs)} of every answer the fake
    model sent, read from its response-NNNN.json files (vLLM's shape)."""
    out = set()
    for name in os.listdir(model_log):
        if not name.startswith("response-"):
            continue
        with open(os.path.join(model_log, name)) as f:
            r = json.load(f)
        ch = r["choices"][0]
        lp = tuple(x["logprob"] for x in (ch.get("logprobs") or {}).get("content") or [])
        out.add((tuple(r.get("prompt_token_ids") or ()), tuple(ch.get("token_ids") or ()), lp))
    return out


def check_tokens(s, samples):
    """(turns, equal, different, samples without a file, bytes per turn)."""
    sent = sent_answers(s.model_log)
    turns = equal = bad = missing = nbytes = 0
    for x in samples:
        url = x.get("tokens_url")
        st, _, raw = s.request("GET", url, None, AUTH, timeout=60) if url else (404, None, b"")
        if st != 200:
            missing += 1
            continue
        nbytes += len(raw)
        for line in raw.decode().splitlines():
            if not line.strip():
                continue
            t = json.loads(line)
            turns += 1
            key = (tuple(t.get("prompt_token_ids") or ()), tuple(t.get("generation_token_ids") or ()),
                   tuple(t.get("generation_log_probs") or ()))
            if t.get("tokens_status") == "ok" and key in sent:
                equal += 1
            else:
                bad += 1
    return turns, equal, bad, missing, nbytes / max(1, turns)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrency", default="64,256,512")
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--samples-per-slot", type=int, default=2)
    ap.add_argument("--delay-ms", type=int, default=200)
    ap.add_argument("--repo", help="run the service of this checkout (default: this one)")
    ap.add_argument("--peer", help="a second checkout, measured alternately in the same run")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--floor", action="store_true", help="after each level, the same samples' sandbox work alone "
                    "straight at sandboxd's RPC, and the harness against it")
    ap.add_argument("--json-out", help=argparse.SUPPRESS)
    ap.add_argument("--perf", metavar="FILE", help="perf record -g the web and sandboxd trees of the (single) level "
                    "into FILE (no --peer)")
    a = ap.parse_args()
    if os.geteuid() != 0 or not image_ready():
        print("rollout benchmark: needs root and the sandbox image (make image); skipped")
        return 0
    if a.peer:
        return with_peer(a)
    if a.json_out:
        res = {}
        for c in [int(x) for x in a.concurrency.split(",") if x.strip()]:
            res[c] = level(c, a.group_size, a.samples_per_slot, a.delay_ms)
            if a.floor:
                res[c]["floor_ms"] = floor_level(c, a.group_size, a.samples_per_slot)["cpu_ms"]
        with open(a.json_out, "w") as f:
            json.dump(res, f)
        return 0
    print("rollout benchmark, %s" % time.strftime("%Y-%m-%d %H:%M"))
    print("machine: %s" % load.machine())
    print("command: python3 bench/rollout.py --concurrency %s --group-size %d --samples-per-slot %d --delay-ms %d%s" % (
        a.concurrency, a.group_size, a.samples_per_slot, a.delay_ms, " --floor" if a.floor else ""))
    print("load at the start: %s" % open("/proc/loadavg").read().split()[0])
    for c in [int(x) for x in a.concurrency.split(",") if x.strip()]:
        got = level(c, a.group_size, a.samples_per_slot, a.delay_ms, a.perf)
        if a.floor:
            fl = floor_level(c, a.group_size, a.samples_per_slot)
            print("  c=%d cpu per sample: harness %.1f ms, floor %.1f ms: the harness is %.2fx the floor" % (
                c, got["cpu_ms"], fl["cpu_ms"], got["cpu_ms"] / max(0.001, fl["cpu_ms"])))
    print("load at the end: %s" % open("/proc/loadavg").read().split()[0])
    return 0


def with_peer(a):
    """Each level on this checkout and on a.peer, alternating, a.rounds
    times; the CPU per sample of each and the ratio this / peer."""
    import subprocess
    import tempfile
    me = os.path.abspath(__file__)
    print("rollout benchmark against a peer, %s" % time.strftime("%Y-%m-%d %H:%M"))
    print("machine: %s" % load.machine())
    print("command: python3 bench/rollout.py --concurrency %s --group-size %d --samples-per-slot %d --delay-ms %d "
          "--peer %s --rounds %d%s" % (a.concurrency, a.group_size, a.samples_per_slot, a.delay_ms, a.peer, a.rounds,
                                      " --floor" if a.floor else ""))
    print("load at the start: %s" % open("/proc/loadavg").read().split()[0])
    got = {"this": [], "peer": []}
    for r in range(a.rounds):
        for who, repo in (("peer", os.path.abspath(a.peer)), ("this", REPO)):
            with tempfile.NamedTemporaryFile(suffix=".json") as tf:
                print("round %d, %s (%s):" % (r + 1, who, repo))
                sys.stdout.flush()
                subprocess.run([sys.executable, me, "--repo", repo, "--concurrency", a.concurrency,
                                "--group-size", str(a.group_size), "--samples-per-slot", str(a.samples_per_slot),
                                "--delay-ms", str(a.delay_ms), "--json-out", tf.name]
                               + (["--floor"] if a.floor and who == "this" else []), check=True)
                got[who].append(json.load(open(tf.name)))
    for c in [x.strip() for x in a.concurrency.split(",") if x.strip()]:
        this = [g[c]["cpu_ms"] for g in got["this"]]
        peer = [g[c]["cpu_ms"] for g in got["peer"]]
        t, p = sum(this) / len(this), sum(peer) / len(peer)
        print("  c=%s cpu per sample: this %s ms (mean %.1f), peer %s ms (mean %.1f): ratio %.2fx" % (
            c, ", ".join("%.1f" % x for x in this), t, ", ".join("%.1f" % x for x in peer), p, t / p))
        if a.floor:
            fl = [g[c]["floor_ms"] for g in got["this"]]
            f = sum(fl) / len(fl)
            print("  c=%s floor (sandboxd's RPC alone) %s ms (mean %.1f): this is %.2fx the floor, the peer %.2fx; "
                  "a quarter of the peer is %.1f ms" % (c, ", ".join("%.1f" % x for x in fl), f, t / f, p / f, p / 4))
        this = [g[c]["spm"] for g in got["this"]]
        peer = [g[c]["spm"] for g in got["peer"]]
        t, p = sum(this) / len(this), sum(peer) / len(peer)
        print("  c=%s samples per minute: this %s (mean %.0f), peer %s (mean %.0f): ratio %.2fx" % (
            c, ", ".join("%.0f" % x for x in this), t, ", ".join("%.0f" % x for x in peer), p, t / p))
    print("load at the end: %s" % open("/proc/loadavg").read().split()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
