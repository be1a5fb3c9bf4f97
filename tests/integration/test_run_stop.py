#!/usr/bin/env python3
"""`make run`'s stop (scripts/run.sh): on SIGTERM or Ctrl-C it stops what it
started and says "stopped", within its bounds, whatever else it is sent.

The stop function is taken from scripts/run.sh itself (from `pids=()` to
the EXIT trap) and run by a small bash script with three stand-ins for
nginx, the web and sandboxd, each in its own session as run.sh starts them:
one that ignores SIGTERM (a web that does not stop), one that stops at
once, one that takes a moment. The script is then sent SIGTERM twice and
SIGINT (a second Ctrl-C, or a SIGTERM to the whole process group).

- stop_survives_more_signals: "llmbox: stopped" is printed, the script
  exits 0, and no stand-in is left running.
- stop_is_bounded: all of it within 20 s (the stand-in that ignores
  SIGTERM is killed after 5 s).

Old code (commit bbc3343): the stop reset the signal traps to their
defaults first, so the second SIGTERM killed the script half-way: no
"stopped", and the stand-ins that had not been stopped yet ran on (as the
web and sandboxd did after `make run` was stopped).

    python3 tests/integration/test_run_stop.py
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from stack import REPO, Reporter  # noqa: E402

HARNESS = r'''
set -euo pipefail
source "$1"
setsid bash -c 'trap "" TERM; exec sleep 300' >/dev/null 2>&1 & a=$!
setsid sleep 300 >/dev/null 2>&1 & b=$!
setsid bash -c 'trap "sleep 0.5; exit 0" TERM; while :; do sleep 0.1; done' >/dev/null 2>&1 & c=$!
echo "$a $b $c" > "$2"
pids=("$a" "$b" "$c")
while :; do sleep 0.2; done
'''


def stop_part():
    text = open(os.path.join(REPO, "scripts", "run.sh")).read()
    start = text.index("pids=()\n")
    end = text.index("trap 'stop 1' EXIT\n") + len("trap 'stop 1' EXIT\n")
    return text[start:end]


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


class Ctx:
    result = None


def run_once():
    d = tempfile.mkdtemp(prefix="llmbox-run-stop-")
    part, pidfile = os.path.join(d, "stop.sh"), os.path.join(d, "pids")
    with open(part, "w") as f:
        f.write(stop_part())
    log = open(os.path.join(d, "out"), "w+b")
    p = subprocess.Popen(["bash", "-c", HARNESS, "harness", part, pidfile], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 10
    while not (os.path.exists(pidfile) and open(pidfile).read().strip()) and time.time() < deadline:
        time.sleep(0.05)
    pids = [int(x) for x in open(pidfile).read().split()]
    t0 = time.time()
    p.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    took = time.time() - t0
    log.seek(0)
    out = log.read()
    log.close()
    shutil.rmtree(d, ignore_errors=True)
    left = [x for x in pids if alive(x)]
    for x in left:  # the stand-ins this test started, by pid
        os.kill(x, signal.SIGKILL)
    Ctx.result = (p.returncode, out.decode(errors="replace"), took, left)


def t_survives():
    run_once()
    rc, out, took, left = Ctx.result
    assert "llmbox: stopped" in out and rc == 0, "the stop did not finish (rc %s): %r" % (rc, out)
    assert not left, "left running: %r" % left


def t_bounded():
    rc, out, took, left = Ctx.result
    assert took < 20, "the stop took %.1f s" % took


def main():
    r = Reporter()
    r.run("run_stop/stop_survives_more_signals", t_survives)
    r.run("run_stop/stop_is_bounded", t_bounded)
    r.done()


if __name__ == "__main__":
    main()
