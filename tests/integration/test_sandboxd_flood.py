#!/usr/bin/env python3
"""Output floods are read slowly (python3 stdlib only, run as root).

What an exec answer keeps of a stream is its first and last 512 KiB; a
stream past that for more than 100 ms is read one 64 KiB chunk per
millisecond (sandbox_exec.c, LBSD_FLOOD_GRACE_MS), so the writer sleeps on
its full pipe instead of taking a core from every other sandbox:

  - `timeout 2 yes`: sandboxd and yes together use under 0.35 CPU seconds
    per second of the flood (read flat out they used 0.9-1.3 here: sandboxd
    0.6-0.85, yes 0.3-0.5), and the answer is whole: exit 124, truncated,
    the last bytes are yes's;
  - 400 MB through a throttled stream loses nothing: the answer ends with
    the command's last word and the omission note counts every byte not
    kept; it takes longer than reading flat out could (at most 64 KiB per
    ms after the grace, on a millisecond clock: over 1.5 s), which is the throttle itself;
  - a background job flooding between commands is throttled too (the idle
    cap is 64 KiB), and the next command's answer is still its own.

    python3 tests/integration/test_sandboxd_flood.py   (from the repo root)
"""
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import Daemon, Reporter, skip_reason  # noqa: E402

KEPT = 1 << 20  # 512 KiB head + 512 KiB tail (LBSD_OUT_HEAD + LBSD_OUT_TAIL)


def cpu_s(pid):
    """utime + stime of a process, all threads, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


def check_yes_is_throttled(d):
    with d.connect() as c:
        sid = c.create()
        c0 = cpu_s(d.proc.pid)
        t0 = time.time()
        # bash's `time` reports the CPU of yes (and timeout) on stderr
        r = c.exec(sid, "TIMEFORMAT='cpu %U %S'; time timeout 2 yes", timeout_ms=30000)
        wall = time.time() - t0
        daemon = cpu_s(d.proc.pid) - c0
        assert r.get("ok") and r.get("exit_code") == 124, "timeout 2 yes: %r" % {
            k: v for k, v in r.items() if k not in ("stdout", "stderr")}
        so = r.get("stdout", "")
        assert r.get("truncated") is True and len(so) <= KEPT + 200 and so.endswith("y\ny\n"), \
            "the answer: truncated %r, %d bytes, ends %r" % (r.get("truncated"), len(so), so[-20:])
        m = re.search(r"cpu ([0-9.]+) ([0-9.]+)", r.get("stderr", ""))
        assert m, "no cpu line in stderr: %r" % r.get("stderr", "")[-200:]
        yes = float(m.group(1)) + float(m.group(2))
        per_s = (daemon + yes) / wall
        assert per_s < 0.35, ("the flood cost %.2f CPU s per s (sandboxd %.2f s, yes %.2f s in %.1f s): "
                              "it is read flat out" % (per_s, daemon, yes, wall))


def check_throttled_stream_loses_nothing(d):
    # more than can be read flat out within the 100 ms grace on a quiet
    # machine (about 1 GB/s here), so most of it is read throttled
    n = 400 * 1000 * 1000
    with d.connect() as c:
        sid = c.create()
        t0 = time.time()
        r = c.exec(sid, "head -c %d /dev/zero | tr '\\0' x; echo -n END" % n, timeout_ms=60000)
        took = time.time() - t0
        so = r.get("stdout", "")
        assert r.get("ok") and r.get("exit_code") == 0 and so.endswith("xEND"), \
            "400 MB: code %r, ends %r" % (r.get("exit_code"), so[-20:])
        m = re.search(r"\n\[\.\.\. (\d+) bytes omitted \.\.\.\]\n", so)
        assert m, "no omission note in the answer"
        kept = len(so) - len(m.group(0))
        assert int(m.group(1)) + kept == n + 3, \
            "omitted %s + kept %d != the %d bytes written" % (m.group(1), kept, n + 3)
        # read flat out, 400 MB drain in 0.4-1.2 s here; throttled after
        # the grace, one 64 KiB chunk per rest of 1 ms on a millisecond
        # clock (so 0-1 ms in fact): at least about 2.5 s
        assert took > 1.5, "400 MB drained in %.2f s: the stream was not throttled" % took


def check_background_flood(d):
    with d.connect() as c:
        sid = c.create()
        # it starts after this command's answer: its output is all idle
        r = c.exec(sid, "(sleep 0.5; timeout 3 yes) & echo started")
        so = r.get("stdout", "")
        assert so == "started\n", "start: %d bytes, ends %r" % (len(so), so[-40:])
        time.sleep(0.8)  # past the idle cap
        c0 = cpu_s(d.proc.pid)
        time.sleep(1.5)
        daemon = cpu_s(d.proc.pid) - c0
        assert daemon < 0.4, "sandboxd used %.2f CPU s in 1.5 s reading a background flood" % daemon
        # the job still writes to the shared stdout while this runs, so its
        # y's may land on either side of the command's own line: the command
        # speaks on stderr, which only it writes
        r = c.exec(sid, "echo next >&2")
        so = r.get("stdout", "")
        assert r.get("exit_code") == 0 and r.get("stderr") == "next\n" and len(so) <= KEPT + 200, \
            "after the background flood: code %r, stderr %r, %d bytes of stdout" % (
                r.get("exit_code"), r.get("stderr", "")[-40:], len(so))
        # the flood is over: a command answers as quickly as ever
        time.sleep(3)
        done = {}

        def run():
            done["r"] = c.exec(sid, "echo quiet")
        t = threading.Thread(target=run)
        t.start()
        t.join(10)
        assert not t.is_alive(), "the shell did not answer after the flood ended"
        so = done["r"].get("stdout", "")
        assert so.endswith("quiet\n"), "after the flood ended: %r" % so[-40:]


def main():
    p = Reporter("sandboxd_flood/")
    why = skip_reason()
    if why:
        print("SKIP sandboxd_flood: %s" % why)
        return 0
    with Daemon(env={"LLMBOX_POOL_SIZE": "0"}) as d:
        p.run("a_yes_flood_is_read_slowly", check_yes_is_throttled, d)
        p.run("a_throttled_stream_loses_no_byte", check_throttled_stream_loses_nothing, d)
        p.run("a_background_flood_is_throttled_too", check_background_flood, d)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
