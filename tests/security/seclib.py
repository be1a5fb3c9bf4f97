"""Shared plumbing of the security suites (tests/security/test_*.py).

Each suite is a list of checks (name, fn(daemon)); suite_main() starts one
sandboxd for the suite (with a secret marker in its environment, which no
sandbox may ever see), runs the checks, then asserts that the daemon is
alive and left nothing behind. A check raises AssertionError with a short
reason to fail; `python3 tests/security/test_x.py NAME...` runs only the
named checks.

Attacks run as code inside a real sandbox; most use python3 (the image is
Debian bookworm with python3), through py(), which prepends a ctypes
syscall() helper and parses the JSON the code prints last.
"""
import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from sandbox_rpc import (BIN, CREATED, REPO, Conn, Daemon, Reporter, RpcError, Skip,  # noqa: E402,F401
                         cgroup_dirs, cgroup_file, cgroup_paths, host_procs_in, init_hostpid, leftovers,
                         mounts_under, pidns_of, proc_cmdline, proc_status, procs_in, read_text,
                         skip_reason, wait_gone)

# Put into sandboxd's environment by suite_main; a sandbox must never see it.
SECRET = "sectest-" + uuid.uuid4().hex
SECRET_ENV = {"LLMBOX_SECTEST_SECRET": SECRET, "SECTEST_API_KEY": SECRET}


def hidden(s):
    """Python source for the string s that does not contain s itself (the
    searching process's own command line must not match what it seeks)."""
    return "%r[::-1]" % s[::-1]


PRELUDE = r'''
import ctypes, errno, json, os, sys
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
def sc(nr, *args):
    """raw syscall: (return value, errno)"""
    conv = []
    for a in args:
        if isinstance(a, int):
            conv.append(ctypes.c_long(a))
        elif isinstance(a, (bytes, str)):
            conv.append(ctypes.c_char_p(a.encode() if isinstance(a, str) else a))
        elif a is None:
            conv.append(ctypes.c_void_p(0))
        else:
            conv.append(a)
    ctypes.set_errno(0)
    r = _libc.syscall(ctypes.c_long(nr), *conv)
    return r, (ctypes.get_errno() if r == -1 else 0)
def ename(e):
    return errno.errorcode.get(e, str(e)) if e else "ok"
def out(obj):
    sys.stdout.flush()
    print("\n@@JSON@@" + json.dumps(obj))
'''


def py(conn, sid, code, timeout_ms=20000):
    """Runs python3 code in the sandbox; returns what it passed to out()."""
    script = PRELUDE + "\n" + code
    assert "LLMBOX_PY_EOF" not in script
    r = conn.exec(sid, "python3 - <<'LLMBOX_PY_EOF'\n%s\nLLMBOX_PY_EOF" % script,
                  timeout_ms=timeout_ms)
    so = r.get("stdout", "")
    i = so.rfind("@@JSON@@")
    if i < 0:
        raise AssertionError("the probe inside the sandbox printed no result: state=%s code=%s "
                             "stdout=%r stderr=%r" % (r.get("state"), r.get("exit_code"),
                                                      so[-300:], r.get("stderr", "")[-500:]))
    return json.loads(so[i + 8:].splitlines()[0])


def sh(conn, sid, cmd, timeout_ms=20000):
    """Runs a shell command; returns its stdout (raises on a non-exec answer)."""
    r = conn.exec(sid, cmd, timeout_ms=timeout_ms)
    if "state" not in r:
        raise AssertionError("exec failed: %r" % r)
    return r.get("stdout", "")


class Problems(list):
    """Collects what went wrong in a check; raise_if() fails it with all of it."""

    def expect(self, cond, why):
        if not cond:
            self.append(why)
        return cond

    def raise_if(self):
        if self:
            raise AssertionError("; ".join(self))


def daemon_rss_kib(d):
    st = proc_status(d.proc.pid)
    return int(st.get("VmRSS", "0 kB").split()[0]), int(st.get("VmHWM", "0 kB").split()[0])


def suite_main(prefix, checks, env=None):
    """Runs checks [(name, fn)] against one sandboxd; returns the exit code."""
    rep = Reporter(prefix)
    suite = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    why = skip_reason()
    if why:
        print("SKIP %s%s: %s" % (prefix, suite, why), flush=True)
        return 0
    want = set(sys.argv[1:])
    env = dict(SECRET_ENV, **(env or {}))
    try:
        d = Daemon(env=env).start()
    except Exception as e:  # noqa: BLE001
        print("FAIL %s%s_daemon_starts: %s" % (prefix, suite, e), flush=True)
        return 1
    try:
        for name, fn in checks:
            if want and name not in want:
                continue
            if not d.alive():
                rep.run(name, _dead, d)
                continue
            rep.run(name, fn, d)
        rep.run(suite + "_leaves_nothing", _nothing_left, d)
    finally:
        d.stop(dump_log=rep.failed > 0)
    return rep.exit_code()


def _dead(d):
    raise AssertionError("sandboxd died earlier in this suite (exit status %r)" % d.proc.poll())


def _nothing_left(d):
    """After every check: sandboxd alive and answering, nothing left of any
    sandbox the suite made; then sandboxd shuts down cleanly (SIGTERM, exit
    0) leaving no process, mount or sandbox dir. Pool-agnostic: a warm pool's
    ready sandboxes are not the suite's, but must go at shutdown too."""
    p = Problems()
    p.expect(d.alive(), "sandboxd died (exit status %r)" % (d.proc.poll(),))
    if d.alive():
        with d.connect(timeout=20) as c:
            r = c.call({"op": "ping"})
            p.expect(r.get("ok"), "ping: %r" % r)
    end = time.time() + 5
    while True:
        left = []
        # (pid namespace numbers are recycled by the kernel, so processes are
        # checked below, as sandboxd's descendants, not by namespace)
        for sid in CREATED:
            left += ["%s: %s" % (sid[:8], x) for x in leftovers(d.var, sid, None)
                     if not x.startswith("mounts ")]
        if not left or time.time() > end:
            break
        time.sleep(0.1)
    p.expect(not left, "left of the suite's sandboxes: %s" % left[:6])
    kids = descendants(d.proc.pid) if d.alive() else []
    rc = d.terminate()
    p.expect(rc == 0, "sandboxd exit status after SIGTERM: %r" % rc)
    end = time.time() + 5
    while True:
        alive = ["%d %s" % (k, proc_cmdline(k)[:50]) for k in kids if os.path.exists("/proc/%d" % k)]
        sbdir = os.path.join(d.var, "sandboxes")
        dirs = os.listdir(sbdir) if os.path.isdir(sbdir) else []
        mnts = mounts_under(d.var)
        if (not alive and not dirs and not mnts) or time.time() > end:
            break
        time.sleep(0.1)
    p.expect(not alive, "processes of sandboxd left after it stopped: %s" % alive[:6])
    p.expect(not dirs, "sandbox dirs left after sandboxd stopped: %s" % dirs[:6])
    p.expect(not mnts, "mounts left after sandboxd stopped: %s" % mnts[:3])
    p.raise_if()


def descendants(ppid):
    """Every live descendant of ppid (helpers may be grandchildren)."""
    parent = {}
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open("/proc/%s/stat" % e) as f:
                    parent[int(e)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [ppid]
    while todo:
        x = todo.pop()
        for pid, pp in parent.items():
            if pp == x:
                out.append(pid)
                todo.append(pid)
    return out
