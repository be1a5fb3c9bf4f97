#!/usr/bin/env python3
"""Security: resource exhaustion and runaway processes inside a sandbox.

fork bomb, memory bomb, disk fill, output floods and fake sentinels,
signal-ignoring commands, double-forked daemons. Each runs in a real
sandbox of a private sandboxd (see seclib.py); run as root from the repo:

    python3 tests/security/test_resources.py [CHECK...]
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seclib import (Problems, cgroup_file, cgroup_paths, daemon_rss_kib, init_hostpid, pidns_of,  # noqa: E402
                    proc_cmdline, procs_in, py, read_text, sh, suite_main, wait_gone)

MiB = 1 << 20


def _timed_exec(conn, sid, cmd, timeout_ms):
    t0 = time.time()
    r = conn.exec(sid, cmd, timeout_ms=timeout_ms)
    return r, time.time() - t0


def fork_bomb(d):
    """pids limit holds, the host and another sandbox stay responsive, and
    destroy in the middle of the bomb leaves no process."""
    p = Problems()
    pids = 64
    with d.connect() as c, d.connect() as c2:
        other = c2.create(memory_mib=128)
        sid = c.create(memory_mib=256, pids=pids)
        ns = pidns_of(c, sid)
        init = init_hostpid(ns)
        # the limit may sit on the sandbox's cgroup or a parent of it
        limited = [cg for cg in cgroup_paths(init, "pids")
                   if read_text(os.path.join(cg, "pids.max")).strip() == str(pids)]
        nproc = [l for l in read_text("/proc/%d/limits" % init).splitlines()
                 if l.startswith("Max processes")]
        # never set a real fork bomb loose without a limit on a shared machine
        if not limited and not (nproc and nproc[0].split()[2] == str(pids)):
            raise AssertionError("no pids limit of %d on the sandbox (cgroups %s, %s): bomb "
                                 "not started" % (pids, cgroup_paths(init, "pids"), nproc))
        events = os.path.join(limited[0], "pids.events") if limited else None
        before = read_text(events)
        c.send({"op": "exec", "id": sid, "timeout_ms": 8000,
                "command": "b(){ b | b & }; b; sleep 3; echo survived"})
        # while it rages: count its processes, fork on the host, use the other sandbox
        peak, host_fork, other_rt = 0, None, None
        t_end = time.time() + 3.0
        while time.time() < t_end:
            peak = max(peak, len(procs_in(ns)))
            if host_fork is None and time.time() > t_end - 2.0:
                t0 = time.time()
                subprocess.run(["true"], check=True, timeout=10)
                host_fork = time.time() - t0
                r, other_rt = _timed_exec(c2, other, "echo other-ok", 10000)
                p.expect(r.get("stdout") == "other-ok\n", "other sandbox: %r" % r)
            time.sleep(0.05)
        r = c.recv()
        after = read_text(events)
        hit = (before != after and "max" in after) or "Resource temporarily unavailable" in \
            r.get("stderr", "")
        p.expect(hit, "the pids limit was never hit (pids.events %r -> %r)" % (before, after))
        p.expect(peak <= pids + 1, "%d processes in the sandbox, limit %d" % (peak, pids))
        p.expect(host_fork is not None and host_fork < 2.0, "host fork took %r s" % host_fork)
        p.expect(other_rt is not None and other_rt < 5.0, "other sandbox answered in %r s"
                 % other_rt)
        # destroy while the bomb is still forking in the background
        t0 = time.time()
        r = c.destroy(sid)
        dt = time.time() - t0
        left = wait_gone(d.var, sid, ns, secs=5)
        p.expect(r.get("ok") and dt < 5.0, "destroy: %r in %.1f s" % (r, dt))
        p.expect(not left, "left after destroy: %s" % left)
        r = c2.exec(other, "echo still-ok")
        p.expect(r.get("stdout") == "still-ok\n", "other sandbox after destroy: %r" % r)
    p.raise_if()


def memory_bomb(d):
    """OOM kills inside the sandbox only; the command reports state "oom"."""
    p = Problems()
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        with d.connect() as c, d.connect() as c2:
            other = c2.create(memory_mib=128)
            sid = c.create(memory_mib=128)
            ns = pidns_of(c, sid)
            init = init_hostpid(ns)
            r, dt = _timed_exec(c, sid, "python3 -c 'a = []\nwhile True: a.append(bytearray(8 << 20))'",
                                30000)
            p.expect(r.get("state") == "oom", "state %r (exit %r, %.1f s), wanted oom: %r"
                     % (r.get("state"), r.get("exit_code"), dt, r.get("stderr", "")[-200:]))
            r = c.exec(sid, "echo alive")
            p.expect(r.get("stdout") == "alive\n", "sandbox after OOM: %r" % r)
            p.expect(init_hostpid(ns) == init, "the sandbox init died (was %d)" % init)
            r = c2.exec(other, "echo other-ok")
            p.expect(r.get("stdout") == "other-ok\n", "other sandbox after OOM: %r" % r)
            p.expect(sleeper.poll() is None, "a host process died (status %r)" % sleeper.poll())
            p.expect(d.alive(), "sandboxd died")
            peak = read_text(cgroup_file(init, "memory", "memory.max_usage_in_bytes") or
                             cgroup_file(init, "memory", "memory.peak")).strip()
            p.expect(not peak or int(peak) <= 136 * MiB, "sandbox memory peaked at %s bytes "
                     "with a 128 MiB limit" % peak)
    finally:
        sleeper.kill()
        sleeper.wait()
    p.raise_if()


def disk_fill(d):
    """dd until ENOSPC: the writable layer and /tmp stop at disk_mib, far below
    the host's free space; the sandbox stays usable and the upload API too
    reports the full disk."""
    p = Problems()
    disk = 64
    st = os.statvfs(d.var)
    host_free = st.f_bavail * st.f_frsize
    p.expect(host_free > 1024 * MiB, "host has only %d MiB free: the check cannot tell a "
             "quota from a full host disk" % (host_free // MiB))
    cap = 256  # never write more than this, quota or not
    with d.connect() as c:
        sid = c.create(memory_mib=512, disk_mib=disk)
        ns = pidns_of(c, sid)
        for where in ("/testbed/fill", "/tmp/fill"):
            r = c.exec(sid, "dd if=/dev/zero of=%s bs=1M count=%d 2>&1; echo rc=$?; "
                            "stat -c %%s %s; rm -f %s" % (where, cap, where, where), timeout_ms=60000)
            out = r.get("stdout", "")
            lines = out.strip().splitlines()
            try:
                size = int(lines[-1])
            except (ValueError, IndexError):
                size = -1
            p.expect("No space left on device" in out or "Disk quota exceeded" in out,
                     "%s: no ENOSPC after writing %d MiB with disk_mib=%d" % (where, size // MiB,
                                                                             disk))
            p.expect(0 <= size <= (disk + 8) * MiB, "%s: %d MiB written with disk_mib=%d"
                     % (where, size // MiB, disk))
            p.expect(size >= disk // 2 * MiB, "%s: only %d MiB writable with disk_mib=%d"
                     % (where, size // MiB, disk))
        # fill the layer again: the upload API must say it is full
        sh(c, sid, "dd if=/dev/zero of=/testbed/fill bs=1M count=%d 2>/dev/null; sync" % cap,
           timeout_ms=60000)
        r = c.call({"op": "write", "id": sid, "path": "/testbed/output/up.bin"}, b"u" * MiB)
        p.expect(r.get("ok") is False and r.get("error") == "toobig",
                 "1 MiB upload into a full sandbox: %r" % r)
        r = c.exec(sid, "echo usable; rm -f /testbed/fill && echo > /testbed/after && echo writable")
        p.expect(r.get("stdout") == "usable\nwritable\n", "after ENOSPC: %r" % r)
        r = c.destroy(sid)
        left = wait_gone(d.var, sid, ns)
        p.expect(r.get("ok") and not left, "destroy: %r %s" % (r, left))
    p.raise_if()


def output_flood(d):
    """Floods without newlines on stdout, stderr, forever and from a
    background job: every answer capped, sandboxd's memory bounded."""
    p = Problems()
    rss0, _ = daemon_rss_kib(d)
    cap = 1100 * 1024  # 512 KiB head + 512 KiB tail + the omission note
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        r, dt = _timed_exec(c, sid, "head -c 40000000 /dev/zero | tr '\\0' x; echo -n END", 60000)
        so = r.get("stdout", "")
        p.expect(r.get("state") == "exited" and r.get("exit_code") == 0,
                 "40 MB stdout: state %r code %r" % (r.get("state"), r.get("exit_code")))
        p.expect(r.get("truncated") is True and len(so) <= cap and so.endswith("END")
                 and "bytes omitted" in so, "40 MB stdout: len %d truncated %r tail %r"
                 % (len(so), r.get("truncated"), so[-20:]))
        r = c.exec(sid, "head -c 40000000 /dev/zero | tr '\\0' y >&2; echo -n E2 >&2", 60000)
        se = r.get("stderr", "")
        p.expect(r.get("truncated") is True and len(se) <= cap and se.endswith("E2"),
                 "40 MB stderr: len %d truncated %r" % (len(se), r.get("truncated")))
        r = c.exec(sid, "cat /dev/zero | tr '\\0' z", timeout_ms=2000)
        so = r.get("stdout", "")
        p.expect(r.get("state") == "timeout" and len(so) <= cap and r.get("truncated") is True,
                 "endless stdout: state %r len %d" % (r.get("state"), len(so)))
        # a background job floods between commands: the next answer is capped too
        sh(c, sid, "(head -c 20000000 /dev/zero | tr '\\0' w) &")
        time.sleep(1.5)
        r = c.exec(sid, "echo next")
        so = r.get("stdout", "")
        p.expect(len(so) <= cap and so.endswith("next\n"),
                 "background flood: len %d tail %r" % (len(so), so[-20:]))
        r = c.exec(sid, "echo fine")
        p.expect(r.get("stdout") == "fine\n", "after the floods: %r" % r)
    _, hwm = daemon_rss_kib(d)
    p.expect(hwm - rss0 < 96 * 1024, "sandboxd grew from %d KiB to a peak of %d KiB" % (rss0, hwm))
    p.raise_if()


def fake_sentinel(d):
    """Output that looks like the end-of-command marker does not end the
    command, and does not leak into the next one."""
    p = Problems()
    fake = ("for i in 1 2 3; do printf '\\n__LBSD_%s__0\\n' "
            "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'); done; "
            "printf '\\n__LBSD_0123456789abcdef0123456789abcdef__0\\n'; "
            "printf '\\n__LBSD_0123456789abcdef0123456789abcdef__\\n' >&2; "
            "printf '__LBSD_'; sleep 0.4; printf '\\0\\n__LBSD_%s__0\\n' x; "
            "head -c 3000000 /dev/zero | tr '\\0' q; echo; "
            "echo after; sh -c 'exit 7'")
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        r, dt = _timed_exec(c, sid, fake, 30000)
        so = r.get("stdout", "")
        p.expect(r.get("state") == "exited" and r.get("exit_code") == 7,
                 "state %r code %r (wanted exited 7)" % (r.get("state"), r.get("exit_code")))
        p.expect(so.endswith("after\n") and dt >= 0.4,
                 "command ended early (%.2f s): tail %r" % (dt, so[-60:]))
        p.expect(r.get("truncated") is True and len(so) <= 1100 * 1024,
                 "output not capped: %d" % len(so))
        r = c.exec(sid, "echo clean")
        p.expect(r.get("stdout") == "clean\n" and r.get("stderr") == "" and r.get("exit_code") == 0,
                 "next command polluted: %r" % r)
    p.raise_if()


def signal_ignorer(d):
    """A command ignoring SIGINT/SIGTERM/SIGHUP (also in its own session, and
    a shell that traps INT) is killed at the hard timeout; the shell is
    usable after."""
    p = Problems()
    ign = ("python3 -c 'import signal, time\n"
           "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
           "while True: time.sleep(0.1)'")
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        ns = pidns_of(c, sid)
        sh(c, sid, "cd /tmp")
        for name, cmd in (("child", ign), ("setsid child", "setsid -w " + ign)):
            r, dt = _timed_exec(c, sid, cmd, 1000)
            p.expect(r.get("state") == "timeout" and dt < 4.0,
                     "%s: state %r after %.1f s" % (name, r.get("state"), dt))
            r = c.exec(sid, "echo ok; pwd")
            p.expect(r.get("stdout") == "ok\n/tmp\n", "%s: shell after: %r" % (name, r))
            left = [proc_cmdline(x) for x in procs_in(ns) if "python3" in proc_cmdline(x)]
            p.expect(not left, "%s: still running: %s" % (name, left))
        # the shell itself ignores SIGINT and SIGTERM: it is replaced
        r, dt = _timed_exec(c, sid, "trap '' INT TERM HUP; while :; do :; done", 800)
        p.expect(r.get("state") == "timeout" and dt < 4.0,
                 "stuck shell: state %r after %.1f s" % (r.get("state"), dt))
        r = c.exec(sid, "echo fresh; pwd")
        p.expect(r.get("stdout") == "fresh\n/testbed\n", "after the stuck shell: %r" % r)
        n = len(procs_in(ns))
        p.expect(n <= 2, "%d processes in the sandbox after the timeouts (init + shell = 2)" % n)
    p.raise_if()


def setsid_daemon(d):
    """A double-forked setsid daemon ignoring signals survives its command
    (that is allowed) but not destroy."""
    p = Problems()
    with d.connect() as c:
        sid = c.create(memory_mib=256)
        ns = pidns_of(c, sid)
        sh(c, sid, "( setsid sh -c 'trap \"\" HUP INT TERM; exec sleep 31338' "
                   "</dev/null >/dev/null 2>&1 & ) ; "
                   "python3 -c 'import os, signal, time\n"
                   "if os.fork(): os._exit(0)\n"
                   "os.setsid()\n"
                   "if os.fork(): os._exit(0)\n"
                   "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
                   "os.closerange(0, 3)\n"
                   "time.sleep(31339)'")
        time.sleep(0.3)
        daemons = [x for x in procs_in(ns) if "3133" in proc_cmdline(x)]
        if not p.expect(len(daemons) >= 2, "the daemons did not start: %s"
                        % [proc_cmdline(x) for x in procs_in(ns)]):
            p.raise_if()
        r = c.destroy(sid)
        left = wait_gone(d.var, sid, ns)
        alive = [x for x in daemons if os.path.exists("/proc/%d" % x)]
        p.expect(r.get("ok") and not left and not alive,
                 "after destroy: %r left=%s alive=%s" % (r, left, alive))
    p.raise_if()


def cpu_quota(d):
    """cpu_milli caps the CPU a sandbox gets: two busy loops with a quota of
    a quarter core use about a quarter of a core-second per second."""
    p = Problems()
    code = r'''
import time
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        end = time.time() + 1.5
        while time.time() < end:
            pass
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
t = os.times()
out({"cpu": t.children_user + t.children_system})
'''
    with d.connect() as c:
        sid = c.create(memory_mib=256, cpu_milli=250)
        cpu = py(c, sid, code)["cpu"]
    # 1.5 s of wall time at 0.25 core: about 0.4 s; without a quota up to 3 s
    p.expect(cpu <= 0.8, "two busy loops used %.2f s of CPU in 1.5 s with cpu_milli=250" % cpu)
    p.raise_if()


CHECKS = [
    ("output_flood", output_flood),
    ("fake_sentinel", fake_sentinel),
    ("signal_ignorer", signal_ignorer),
    ("setsid_daemon", setsid_daemon),
    ("memory_bomb", memory_bomb),
    ("disk_fill", disk_fill),
    ("fork_bomb", fork_bomb),
    ("cpu_quota", cpu_quota),
]

if __name__ == "__main__":
    sys.exit(suite_main("security/", CHECKS))
