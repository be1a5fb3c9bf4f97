"""bench/capacity.py (several nodes) at a smoke size: the benchmark runs to its
end and prints its figures, and what it measures holds at that size.

1. figures: every part printed its lines: the web mix for the PostgreSQL
   web, the SQLite web and the static nginx (req/s > 0), a knee (or that
   no step met the bound) for each; the node and local sides' tasks/s
   with every task succeeded; execs/s through both webs without an error.
2. streams: every stream the web was given threads for opened (200), and
   the one past them was refused with 429 (sse_reserve_threads kept).
3. nothing_left: the run says it left nothing behind (its stacks, its
   PostgreSQL, the peer nginx and the nodes' folders gone, no process
   working in them) and exits 0.

`make capacity` runs it at full size (bench/RESULTS.md has the figures)."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import REPO, Reporter, Skip, image_ready  # noqa: E402
import pg_server  # noqa: E402

STREAMS = 20
ARGS = ["--quick", "--steps", "8", "--secs", "1", "--streams", str(STREAMS), "--tasks", "4", "--api-steps", "2"]
OUT = {}


def run():
    if os.geteuid() != 0 or not image_ready():
        raise Skip("needs root and the sandbox image (make image)")
    if pg_server.missing():
        raise Skip("PostgreSQL is not installed (scripts/deps.sh)")
    r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "capacity.py")] + ARGS,
                       capture_output=True, text=True, timeout=300)
    OUT["rc"], OUT["out"], OUT["err"] = r.returncode, r.stdout, r.stderr
    print("\n".join("  " + ln for ln in r.stdout.splitlines() if re.search(r"knee|c=\d+ .*round|tasks/s|execs/s|"
                                                                           r"streams open|left behind", ln)))
    assert r.returncode in (0, 1), "bench/capacity.py failed (%d):\n%s\n%s" % (r.returncode, r.stdout[-3000:],
                                                                               r.stderr[-3000:])


def need_run():
    if "out" not in OUT:
        raise Skip("the benchmark did not run")
    return OUT["out"]


def test_figures():
    out = need_run()
    for name in ("PostgreSQL web", "SQLite web", "static nginx"):
        m = re.search(r"c=8\s+%s\s+round 1:\s+(\d+) req/s" % re.escape(name), out)
        assert m and int(m.group(1)) > 0, "no req/s for %s:\n%s" % (name, out[-3000:])
        assert re.search(r"^\s+%s\s+(c=8, \d+ req/s|no step met the bound)$" % re.escape(name), out, re.M), \
            "no knee line for %s" % name
    for side in ("node \\(PostgreSQL\\)", "local \\(SQLite\\)"):
        m = re.search(r"%s\s+round 1:\s+([\d.]+) tasks/s \(4 in [\d.]+ s, (\d+) not succeeded\)" % side, out)
        assert m and float(m.group(1)) > 0, "no tasks/s for %s:\n%s" % (side, out[-3000:])
        assert m.group(2) == "0", "%s tasks did not succeed on %s" % (m.group(2), side)
        m = re.search(r"k=2\s+%s\s+round 1:\s+(\d+) execs/s.*errors (\d+)" % side, out)
        assert m and int(m.group(1)) > 0, "no execs/s for %s" % side
        assert m.group(2) == "0", "%s execs failed on %s" % (m.group(2), side)


def test_streams():
    out = need_run()
    m = re.search(r"round 1: (\d+) of (\d+) streams open \(200\) in [\d.]+ s; the next one answered (\w+)", out)
    assert m, "no streams line:\n%s" % out[-3000:]
    assert (int(m.group(1)), int(m.group(2))) == (STREAMS, STREAMS), m.group(0)
    assert m.group(3) == "429", "the stream past the web's threads: %s" % m.group(0)


def test_nothing_left():
    out = need_run()
    m = re.search(r"left behind: (.*)$", out, re.M)
    assert m and m.group(1) == "nothing", "the run left: %s" % (m.group(1) if m else "(no line)")
    assert OUT["rc"] == 0, OUT["rc"]


def main():
    rep = Reporter()
    rep.run("capacity_run", run)
    rep.run("capacity_figures", test_figures)
    rep.run("capacity_streams", test_streams)
    rep.run("capacity_nothing_left", test_nothing_left)
    rep.done()


if __name__ == "__main__":
    main()
