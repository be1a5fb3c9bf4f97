#!/usr/bin/env python3
"""Security: host-wide kernel pools one sandbox could drain.

The global file table (fs.file-max: descriptors, and files kept by a
mapping after their descriptor is closed), the pty pool (kernel.pty.max),
the OOM killer's choice when sandbox init cannot be shielded, and the
operator caps on memory_mib and pids. Each attack runs in a real sandbox
of a private sandboxd (see seclib.py) with small, explicit budgets; run as
root from the repo:

    python3 tests/security/test_hostpools.py [CHECK...]

Safety: the file-table attack is stopped from the host (every process of
the sandbox SIGKILLed) as soon as the host's fs.file-nr grows past the
sandbox's budget plus a margin, so even a sandboxd without the bound never
takes more than a few percent of the host's table.
"""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seclib import (Problems, RpcError, init_hostpid, pidns_of, procs_in, py, read_text,  # noqa: E402
                    sh, suite_main)

FILES = 100000      # LLMBOX_SANDBOX_FILES for this suite
PTYS = 24           # LLMBOX_SANDBOX_PTYS
MAX_MEM = 3000      # LLMBOX_SANDBOX_MAX_MEMORY_MIB
MAX_PIDS = 700      # LLMBOX_SANDBOX_MAX_PIDS
ENV = {"LLMBOX_SANDBOX_FILES": str(FILES), "LLMBOX_SANDBOX_PTYS": str(PTYS),
       "LLMBOX_SANDBOX_MAX_MEMORY_MIB": str(MAX_MEM), "LLMBOX_SANDBOX_MAX_PIDS": str(MAX_PIDS),
       "LLMBOX_POOL_SIZE": "0"}


def file_nr():
    return int(read_text("/proc/sys/fs/file-nr").split()[0])


FILE_ATTACK = r'''
import mmap, signal, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
with open("/tmp/f", "wb") as f:
    f.write(b"x" * 4096)
kids = []
# route 1: many processes, each opening /dev/null up to its limit (25000 at most)
for i in range(NPROC):
    pid = os.fork()
    if pid == 0:
        fds = []
        try:
            while len(fds) < 25000:
                fds.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
# route 2: open, mmap, close: the mapping keeps the file (60000 per process)
for i in range(NMAP):
    pid = os.fork()
    if pid == 0:
        n = 0
        while n < 60000:
            fd = os.open("/tmp/f", os.O_RDONLY)
            a = libc.mmap(None, 4096, 1, 1, fd, 0)      # PROT_READ, MAP_SHARED
            os.close(fd)
            if a in (None, ctypes.c_void_p(-1).value):
                break
            n += 1
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
time.sleep(60)
'''


def file_table(d):
    """Processes opening /dev/null up to RLIMIT_NOFILE, plus processes
    mapping files and closing the descriptors: the host's fs.file-nr grows
    by no more than the sandbox's budget (plus the file watch's lag); the
    sandbox is destroyed once over it and says why; a host open() and
    another sandbox's exec work meanwhile."""
    p = Problems()
    margin = FILES // 2
    with d.connect() as c, d.connect() as c2:
        other = c2.create(memory_mib=128)
        sid = c.create(memory_mib=1024, pids=64)
        ns = pidns_of(c, sid)
        lim = sh(c, sid, "ulimit -n").strip()
        base = file_nr()
        code = FILE_ATTACK.replace("NPROC", "56").replace("NMAP", "5")
        from seclib import PRELUDE
        script = PRELUDE + "\n" + code
        c.send({"op": "exec", "id": sid, "timeout_ms": 20000,
                "command": "python3 - <<'LLMBOX_PY_EOF'\n%s\nLLMBOX_PY_EOF" % script})
        peak, stopped, t_end = 0, False, time.time() + 12
        host_open = other_ok = None
        while time.time() < t_end:
            grown = file_nr() - base
            peak = max(peak, grown)
            if grown > FILES + margin:
                # never let it go on: this is the old, unbounded behaviour
                for hp in procs_in(ns):
                    try:
                        os.kill(hp, signal.SIGKILL)
                    except OSError:
                        pass
                stopped = True
                break
            if host_open is None and time.time() > t_end - 10:
                try:
                    os.close(os.open("/dev/null", os.O_RDONLY))
                    host_open = "ok"
                except OSError as e:
                    host_open = str(e)
                r = c2.exec(other, "echo other-ok")
                other_ok = r.get("stdout") == "other-ok\n"
            if not procs_in(ns) and time.time() > t_end - 9:
                break   # the sandbox was destroyed
            time.sleep(0.02)
        r = c.recv()
        sys.stderr.write("file_table: host table grew by at most %d (budget %d), RLIMIT_NOFILE "
                         "inside %s\n" % (peak, FILES, lim))
        p.expect(not stopped, "the host's file table grew by %d (budget %d + margin %d): attack "
                 "stopped from the host (RLIMIT_NOFILE inside: %s)" % (peak, FILES, margin, lim))
        p.expect(peak <= FILES + margin, "file table grew by %d" % peak)
        p.expect(host_open == "ok", "host open() during the attack: %s" % host_open)
        p.expect(other_ok, "another sandbox's exec during the attack failed")
        if not stopped:
            # the mapping route goes past the budget: the watch must have destroyed it
            r2 = c.exec(sid, "echo still")
            why = r2.get("message", "") + r.get("stderr", "")[-400:]
            p.expect(not r2.get("ok", True) and "more than its %d open files" % FILES in why,
                     "sandbox over its budget not destroyed with a reason: %r / %r"
                     % (r2, r.get("stderr", "")[-300:]))
        r = c2.exec(other, "echo after")
        p.expect(r.get("stdout") == "after\n", "other sandbox after the attack: %r" % r)
        c.destroy(sid)
    end = time.time() + 5
    while file_nr() - base > 2000 and time.time() < end:
        time.sleep(0.1)
    p.expect(file_nr() - base <= 2000, "files not released after destroy: +%d" % (file_nr() - base))
    p.raise_if()


def pty_pool(d):
    """A sandbox opening /dev/ptmx until refused is refused at its own max
    (LLMBOX_SANDBOX_PTYS), never at the host's pool; another sandbox and
    the host can still open a pty meanwhile."""
    p = Problems()
    code = r'''
fds, err = [], None
try:
    while len(fds) < LIMIT:
        fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
except OSError as e:
    err = ename(e.errno)
print(len(fds), err, flush=True)
out({"n": len(fds), "err": err})
'''.replace("LIMIT", str(PTYS * 4))
    with d.connect() as c, d.connect() as c2:
        other = c2.create(memory_mib=128)
        sid = c.create(memory_mib=256)
        # hold the ptys open while the others try
        c.send({"op": "exec", "id": sid, "timeout_ms": 20000,
                "command": "python3 - <<'EOF'\n%s\n%s\nimport time; time.sleep(2)\nEOF"
                % (__import__("seclib").PRELUDE, code)})
        time.sleep(1.0)
        r = c2.exec(other, "python3 -c 'import os; m, s = os.openpty(); print(\"pty-ok\", "
                           "os.ttyname(s))'")
        p.expect("pty-ok /dev/pts/" in r.get("stdout", ""), "another sandbox cannot open a pty: "
                 "%r" % r)
        try:
            m, s = os.openpty()
            os.close(m)
            os.close(s)
            host = "ok"
        except OSError as e:
            host = str(e)
        p.expect(host == "ok", "the host cannot open a pty: %s" % host)
        r = c.recv()
        got = r.get("stdout", "").split()
        n = int(got[0]) if got and got[0].isdigit() else -1
        p.expect(0 < n <= PTYS, "the sandbox opened %d ptys (max %d)" % (n, PTYS))
        p.expect(n == PTYS * 4 or "ENOSPC" in r.get("stdout", ""),
                 "refused with %r" % r.get("stdout", "")[:200])
    p.raise_if()


def oom_init(d):
    """Sandbox init survives the OOM killer, whichever mode this host
    allows: shielded (init at oom_score_adj -1000) or ranked (everything but
    init at 1000, said at start). Attack: fill the sandbox's tmpfs disk and
    /dev/shm (RAM charged to the sandbox that no kill frees), then ask for
    more memory. The tmpfs pages stop short of the limit (ENOSPC), so the
    process that asks is the one killed and the sandbox stays usable: the
    `rm` that frees the disk can still run (once, before the tmpfs were
    capped, a fresh shell was OOM-killed at once, forever)."""
    p = Problems()
    log = read_text(d.log_path)
    mode = re.search(r"OOM: (sandbox init is shielded|sandbox init cannot be shielded)", log)
    p.expect(mode, "sandboxd did not say at start how sandbox init meets the OOM killer")
    with d.connect() as c:
        sid = c.create(memory_mib=96, disk_mib=512)
        p.expect(re.search(r"sandbox %s created \(.*, \d+ MiB disk \(of 512 asked" % sid,
                           read_text(d.log_path)), "the lowered disk was not logged")
        ns = pidns_of(c, sid)
        init = init_hostpid(ns)
        init_adj = read_text("/proc/%d/oom_score_adj" % init).strip()
        shell_adj = sh(c, sid, "cat /proc/$$/oom_score_adj").strip()
        p.expect(init_adj == "-1000" or shell_adj == "1000",
                 "init %s and shell %s: init is neither shielded nor ranked last"
                 % (init_adj, shell_adj))
        # the tmpfs fill: dd's own memory is small, the pages it writes are
        # charged to the sandbox and cannot be reclaimed
        r = c.exec(sid, "for f in /tmp/fill /dev/shm/fill; do "
                        "dd if=/dev/zero of=$f bs=1M count=128 2>&1 | grep -c 'No space'; done",
                   timeout_ms=20000)
        p.expect(r.get("state") == "exited" and r.get("stdout", "").split() == ["1", "1"],
                 "the fill did not end in ENOSPC on both: %r" % r)
        # then a process asks for memory: tail keeps all its input
        r = c.exec(sid, "head -c 200000000 /dev/zero | tail -c 100000000 | wc -c",
                   timeout_ms=20000)
        p.expect(r.get("state") == "oom" or "OOM" in r.get("message", ""),
                 "the allocation did not reach the memory limit: %r" % r)
        alive = init_hostpid(ns) == init
        p.expect(alive, "the sandbox init died (exec answered %r)" % {k: r.get(k) for k in
                                                                    ("state", "message", "stderr")})
        r = c.exec(sid, "rm -f /tmp/fill* /dev/shm/fill; echo alive")
        p.expect(r.get("stdout") == "alive\n", "sandbox after the fill: %r" % r)
    p.raise_if()


def spec_caps(d):
    """memory_mib and pids above the operator's caps are refused by
    sandboxd itself (the authority), naming the cap and its setting."""
    p = Problems()
    with d.connect() as c:
        for spec, want in (({"memory_mib": 1 << 20}, "LLMBOX_SANDBOX_MAX_MEMORY_MIB"),
                           ({"memory_mib": MAX_MEM + 1}, "LLMBOX_SANDBOX_MAX_MEMORY_MIB"),
                           ({"pids": 1 << 22}, "LLMBOX_SANDBOX_MAX_PIDS"),
                           ({"pids": MAX_PIDS + 1}, "LLMBOX_SANDBOX_MAX_PIDS")):
            try:
                sid = c.create(**spec)
                c.destroy(sid)
                p.expect(False, "%s accepted" % spec)
            except RpcError as e:
                p.expect(e.resp.get("error") == "invalid" and want in e.resp.get("message", ""),
                         "%s: %r" % (spec, e.resp))
        sid = c.create(memory_mib=MAX_MEM, pids=MAX_PIDS)
        c.destroy(sid)
    p.raise_if()


CHECKS = [
    ("spec_caps", spec_caps),
    ("pty_pool", pty_pool),
    ("oom_init", oom_init),
    ("file_table", file_table),
]

if __name__ == "__main__":
    sys.exit(suite_main("security/", CHECKS, env=ENV))
