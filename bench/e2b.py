#!/usr/bin/env python3
"""E2B's SDK against the native sandbox API, in the same run (E2B's protocol).

Starts the stack of tests/lib/stack.py with the sandbox API on and runs
bench/e2b.mjs with the pinned e2b package (tests/e2b/node_modules, `npm ci`
there on first use), which interleaves, for N rounds:
  create -> first output: Sandbox.create() + commands.run('echo hi') to its
    first stdout, vs POST /api/sandboxes + POST .../exec 'echo hi';
then, on one running sandbox each, RT command round trips:
  commands.run('true') vs POST .../exec 'true'.
The SDK sends every command as `/bin/bash -l -c CMD` (a login shell): each
native figure is also taken with that same line, the like-for-like peer.
Prints p50/p90/max of each and the differences. A benchmark: nothing is
asserted. Needs root, make all and the default image.

With --fin it runs bench/e2b_fin.mjs instead (E2B's protocol's file metadata,
watchDir and pty, RT rounds each, each beside its peer: see that file).

    python3 bench/e2b.py [--n 100] [--rt 200] [--fin]
"""
import argparse
import json
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from stack import Stack  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--rt", type=int, default=200)
    ap.add_argument("--fin", action="store_true", help="file metadata, watchDir and pty (bench/e2b_fin.mjs)")
    a = ap.parse_args()
    e2b_dir = os.path.join(REPO, "tests", "e2b")
    if not os.path.isdir(os.path.join(e2b_dir, "node_modules", "e2b")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=e2b_dir, check=True)
    token = os.urandom(16).hex()
    with open("/proc/loadavg") as f:
        load0 = f.read().split()[:3]
    with Stack(model=False, web_env={"LLMBOX_SANDBOX_API_TOKEN": token}) as st:
        env = dict(os.environ, E2B_API_URL="http://127.0.0.1:%d/e2b" % st.port,
                   E2B_SANDBOX_URL="http://127.0.0.1:%d/e2b/sandbox" % st.port, E2B_API_KEY=token,
                   LLMBOX_URL="http://127.0.0.1:%d" % st.port, BENCH_N=str(a.n), BENCH_RT=str(a.rt),
                   NODE_PATH=os.path.join(e2b_dir, "node_modules"))
        # run from tests/e2b so that `import 'e2b'` finds the pinned package
        script = os.path.join(REPO, "bench", "e2b_fin.mjs" if a.fin else "e2b.mjs")
        tmp = os.path.join(e2b_dir, "_bench_e2b.mjs")
        with open(script) as f, open(tmp, "w") as g:
            g.write(f.read())
        try:
            out = subprocess.run(["node", tmp], env=env, capture_output=True, text=True, check=True).stdout
        finally:
            os.unlink(tmp)
    r = json.loads(out.strip().splitlines()[-1])
    with open("/proc/loadavg") as f:
        load1 = f.read().split()[:3]
    print("machine: %s, %d cores; load at start %s, at end %s" % (
        open("/proc/cpuinfo").read().split("model name")[1].split(":")[1].split("\n")[0].strip(),
        os.cpu_count(), " ".join(load0), " ".join(load1)))
    if a.fin:
        for what, mine, peer, label in (("stat", "e2b", "native", "files.getInfo vs native stat"),
                                        ("watch", "event", "write", "write -> create event vs the write alone"),
                                        ("pty", "echo", "command", "pty echo vs commands.run")):
            m, q = r[what][mine], r[what][peer]
            print("%s (n=%d): %s p50 %.2f ms (p90 %.2f, max %.2f), peer p50 %.2f ms (p90 %.2f, max %.2f): "
                  "ratio %.2f, %+.2f ms" % (label, m["n"], mine, m["p50"], m["p90"], m["max"], q["p50"], q["p90"],
                                            q["max"], m["p50"] / q["p50"], m["p50"] - q["p50"]))
        return
    for what in ("create_first_output", "round_trip"):
        e = r[what]["e2b"]
        print("%s (n=%d): e2b p50 %.2f ms, p90 %.2f, max %.2f" % (what, e["n"], e["p50"], e["p90"], e["max"]))
        for peer, label in (("native", "native, the bare command"),
                            ("native_same", "native, the SDK's line (bash -l -c CMD)")):
            n = r[what][peer]
            print("    %-40s p50 %.2f ms, p90 %.2f, max %.2f: e2b p50 %+.2f ms" % (
                label, n["p50"], n["p90"], n["max"], e["p50"] - n["p50"]))


if __name__ == "__main__":
    main()
