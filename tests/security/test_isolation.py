#!/usr/bin/env python3
"""Security: what one sandbox can see of another, of an earlier one, and of
the host's identity.

Two live sandboxes must not see each other's files, processes, SysV IPC or
abstract sockets; a sandbox created after another was destroyed (with a
warm pool: possibly a pooled one) must find no trace of it; sandboxd's
environment (the suite puts a secret marker in it) and the host's hostname
must not be visible inside. Run as root:

    python3 tests/security/test_isolation.py [CHECK...]
"""
import os
import socket
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seclib import (SECRET, Problems, hidden, pidns_of, py, sh,  # noqa: E402
                    suite_main, wait_gone)

# Leaves marks everywhere a sandbox can write, and a few live ones: a
# process, a SysV shared memory segment, an abstract unix socket.
PLANT = r'''
import socket, subprocess, time
M = MARK
dirs = ["/tmp", "/testbed", "/testbed/input", "/testbed/output", "/root", "/etc", "/var/tmp",
        "/dev/shm", "/usr/local/bin", "/home", "/run", "/opt", "/"]
planted = []
for d in dirs:
    try:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, M), "w") as f:
            f.write(M + "\n")
        planted.append(d)
    except OSError:
        pass
with open("/etc/hosts", "a") as f:
    f.write("127.0.0.9 " + M + "\n")
libc = ctypes.CDLL(None, use_errno=True)
shmid = libc.shmget(KEY, 4096, 0o1000 | 0o666)                 # IPC_CREAT
# a process that holds an abstract socket and names the mark in its argv
subprocess.Popen(["python3", "-c", "import socket, time; s = socket.socket(socket.AF_UNIX); "
                  "s.bind('\\0' + %r); s.listen(1); time.sleep(300)" % M, M],
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                 start_new_session=True)
time.sleep(0.3)
out({"planted": planted, "shmid": shmid})
'''

# Looks for the mark everywhere a sandbox can look.
SEEK = r'''
import socket
M = MARK
found = []
dirs = ["/tmp", "/testbed", "/testbed/input", "/testbed/output", "/root", "/etc", "/var/tmp",
        "/dev/shm", "/usr/local/bin", "/home", "/run", "/opt", "/"]
for d in dirs:
    if os.path.exists(os.path.join(d, M)):
        found.append("file " + os.path.join(d, M))
for top in ("/tmp", "/testbed", "/root", "/var/tmp", "/dev/shm", "/run"):
    for dp, dn, fn in os.walk(top):
        for n in dn + fn:
            if M in n:
                found.append("name " + os.path.join(dp, n))
if M in open("/etc/hosts").read():
    found.append("/etc/hosts")
for e in os.listdir("/proc"):
    if e.isdigit():
        try:
            if M.encode() in open("/proc/%s/cmdline" % e, "rb").read():
                found.append("process %s" % e)
        except OSError:
            pass
if M in os.environ.get("LLMBOX_MARK_ENV", ""):
    found.append("environment")
libc = ctypes.CDLL(None, use_errno=True)
if libc.shmget(KEY, 0, 0) >= 0:
    found.append("SysV shm key")
u = socket.socket(socket.AF_UNIX)
try:
    u.connect("\0" + M)
    found.append("abstract socket")
except OSError:
    pass
for ent in open("/proc/net/unix").read().split("\n"):
    if M in ent:
        found.append("/proc/net/unix")
out({"found": found, "nprocs": sum(1 for e in os.listdir("/proc") if e.isdigit())})
'''


def _code(template, mark, key):
    return template.replace("MARK", hidden(mark)).replace("KEY", str(key))


def _plant(c, sid, mark, key):
    sh(c, sid, "export LLMBOX_MARK_ENV=%s; cd /tmp" % mark)
    return py(c, sid, _code(PLANT, mark, key))


def cross_sandbox(d):
    """Two sandboxes alive at once (same connection and another one) see
    none of each other's files, processes, IPC or sockets, and another
    connection cannot even name a sandbox that is not its own."""
    p = Problems()
    mark = "xsb" + uuid.uuid4().hex[:16]
    key = 0x5ec70000 + os.getpid() % 0xffff
    with d.connect() as c, d.connect() as c2:
        # default specs: with a warm pool, these come from it
        a = c.create()
        b = c.create()
        e = c2.create()
        res = _plant(c, a, mark, key)
        p.expect(len(res["planted"]) >= 8 and res["shmid"] >= 0, "planting failed: %s" % res)
        seen_a = py(c, a, _code(SEEK, mark, key))["found"]
        p.expect(len(seen_a) >= 8, "the seeker cannot find the marks in their own sandbox: %s"
                 % seen_a)
        for name, conn, sid in (("same connection", c, b), ("other connection", c2, e)):
            r = py(conn, sid, _code(SEEK, mark, key))
            p.expect(not r["found"], "%s sees: %s" % (name, r["found"]))
            p.expect(r["nprocs"] <= 4, "%s sees %d processes" % (name, r["nprocs"]))
        # the other connection cannot act on A at all
        for op in ({"op": "exec", "id": a, "command": "true"}, {"op": "read", "id": a, "path": "/etc/hosts"},
                   {"op": "destroy", "id": a}):
            r = c2.call(op)
            p.expect(r.get("error") == "notfound" or (op["op"] == "destroy" and r.get("ok")),
                     "%s from another connection: %r" % (op["op"], r))
        r = c.exec(a, "echo alive")
        p.expect(r.get("stdout") == "alive\n", "A after the other connection's destroy: %r" % r)
        # B knows A's upper dir path from its own mountinfo: it leads nowhere
        mi = sh(c, b, "cat /proc/self/mountinfo")
        upper = [t.split("=", 1)[1] for t in mi.replace(",", " ").split() if t.startswith("upperdir=")]
        if upper:
            guess = upper[0].replace("/" + b + "/", "/" + a + "/")
            r = sh(c, b, "ls %s 2>&1; cat %s/tmp/%s 2>&1; echo end" % (guess, guess, mark))
            p.expect(mark + "\n" not in r.replace("No such", ""), "B reads A's upper dir: %r" % r)
    p.raise_if()


def earlier_sandbox(d):
    """After a sandbox is destroyed, the sandboxes created next (fresh or
    from a warm pool) hold nothing of it: files, processes, environment,
    IPC, sockets, cwd. (The kernel recycles pid namespace numbers, so a
    new sandbox may show the old "pid:[N]": the old one is checked empty.)"""
    p = Problems()
    mark = "old" + uuid.uuid4().hex[:16]
    key = 0x5ec80000 + os.getpid() % 0xffff
    with d.connect() as c:
        first = c.create()
        ns1 = pidns_of(c, first)
        res = _plant(c, first, mark, key)
        p.expect(len(res["planted"]) >= 8 and res["shmid"] >= 0, "planting failed: %s" % res)
        c.destroy(first)
        left = wait_gone(d.var, first, ns1)
        p.expect(not left, "left of the destroyed sandbox: %s" % left)
        later = []
        for _ in range(4):
            sid = c.create()                  # default spec: from the pool, if any
            later.append(sid)
            p.expect(sid != first, "the destroyed sandbox's id came back")
            r = py(c, sid, _code(SEEK, mark, key))
            p.expect(not r["found"], "a later sandbox sees: %s" % r["found"])
            r = c.exec(sid, "pwd; echo \"env:$LLMBOX_MARK_ENV\"")
            p.expect(r.get("stdout") == "/testbed\nenv:\n", "a later shell: %r" % r)
        for sid in later:
            c.destroy(sid)
    p.raise_if()


def host_identity(d):
    """sandboxd's environment (holding a secret marker) is visible nowhere
    inside: not in env, /proc/1/environ, any /proc/*/environ or cmdline, nor
    the host's hostname in uname, /etc/hostname, /etc/hosts or /proc/sys."""
    p = Problems()
    host = socket.gethostname()
    code = r'''
import socket
S = SECRET
H = HOST
leaks = []
for k, v in os.environ.items():
    if S in v or k.startswith("LLMBOX") or k.startswith("SECTEST"):
        leaks.append("env " + k)
for e in os.listdir("/proc") + ["self", "thread-self"]:
    for what in ("environ", "cmdline"):
        try:
            data = open("/proc/%s/%s" % (e, what), "rb").read()
        except OSError:
            continue
        if S.encode() in data or b"LLMBOX_SECTEST" in data:
            leaks.append("/proc/%s/%s" % (e, what))
names = {"uname": os.uname().nodename, "gethostname": socket.gethostname()}
for path in ("/etc/hostname", "/proc/sys/kernel/hostname", "/proc/sys/kernel/domainname"):
    try:
        names[path] = open(path).read().strip()
    except OSError:
        pass
try:
    hosts = open("/etc/hosts").read().split()
except OSError:
    hosts = []
for k, v in names.items():
    if v == H:
        leaks.append("hostname in " + k)
if H in hosts:
    leaks.append("hostname in /etc/hosts")
out({"leaks": leaks, "names": names})
'''.replace("SECRET", hidden(SECRET)).replace("HOST", repr(host))
    with d.connect() as c:
        sid = c.create(memory_mib=128)
        res = py(c, sid, code)
        env_out = sh(c, sid, "env; cat /proc/1/environ /proc/1/cmdline 2>/dev/null | tr '\\0' '\\n'")
    p.expect(not res["leaks"], "visible inside: %s (names %s)" % (res["leaks"], res["names"]))
    p.expect(SECRET not in env_out, "env or /proc/1 shows the secret")
    p.raise_if()


CHECKS = [
    ("cross_sandbox", cross_sandbox),
    ("earlier_sandbox", earlier_sandbox),
    ("host_identity", host_identity),
]

if __name__ == "__main__":
    sys.exit(suite_main("security/", CHECKS))
