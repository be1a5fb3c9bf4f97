"""A real `llmbox sandboxd` for tests, and a client of its RPC (stdlib only).

    from sandbox_rpc import Daemon, Conn
    with Daemon(env={"X": "y"}) as d:
        c = d.connect()
        sid = c.create(memory_mib=256)
        r = c.exec(sid, "echo hi")

Daemon starts sandboxd on a socket in a fresh temporary directory, with its
own LLMBOX_VAR (so it never touches another installation's sandboxes or
cgroups) and the repository's image store (var/images). Conn speaks the
framing of include/llmbox/sandbox.h: a 4-byte big-endian length, a JSON
frame, and a binary frame after it when the JSON says "data": true.

The rest are host-side probes used to check what a sandbox left behind or
what it really is on the host: its pid namespace, its host processes, their
host uids, its cgroup files.
"""
import glob
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("LLMBOX_BIN",
                     os.path.join(REPO, os.environ.get("BUILD", "build"), "llmbox"))
IMAGES = os.path.join(REPO, "var", "images")

# Every sandbox id this process created, with its pid namespace once known
# (pidns_of): what a test must have cleaned up, even with a warm pool whose
# own sandboxes come and go.
CREATED = {}


def image_ready(name="default"):
    return os.path.exists(os.path.join(IMAGES, name, ".complete"))


def skip_reason():
    """Why a suite that needs a real sandbox cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root"
    if not image_ready():
        return "image not built (make image)"
    return None  # a missing binary is not a skip: Daemon.start() fails on it


class RpcError(Exception):
    """A request sandboxd answered with ok:false."""

    def __init__(self, resp):
        Exception.__init__(self, "%s: %s" % (resp.get("error"), resp.get("message")))
        self.resp = resp


class Conn:
    def __init__(self, path, timeout=60):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send_frame(self, b):
        self.s.sendall(struct.pack(">I", len(b)) + b)

    def _recvn(self, n):
        out = bytearray()
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise EOFError("sandboxd closed the connection")
            out += chunk
        return bytes(out)

    def recv_frame(self):
        (n,) = struct.unpack(">I", self._recvn(4))
        return self._recvn(n)

    def send(self, obj, data=None):
        """Sends a request without waiting for its answer (see recv)."""
        if data is not None:
            obj = dict(obj, data=True)
        self.send_frame(json.dumps(obj).encode())
        if data is not None:
            self.send_frame(data)

    def recv(self):
        r = json.loads(self.recv_frame())
        if r.get("data"):
            r["_data"] = self.recv_frame()
        return r

    def call(self, obj, data=None):
        self.send(obj, data)
        return self.recv()

    def exec(self, sid, cmd, timeout_ms=20000):
        return self.call({"op": "exec", "id": sid, "command": cmd, "timeout_ms": timeout_ms})

    def create(self, **spec):
        """Creates a sandbox; returns its id or raises RpcError."""
        r = self.call(dict(spec, op="create"))
        if not r.get("ok"):
            raise RpcError(r)
        CREATED.setdefault(r["id"], None)
        return r["id"]

    def destroy(self, sid):
        return self.call({"op": "destroy", "id": sid})


class Daemon:
    """sandboxd in a temporary directory. env: extra environment variables."""

    def __init__(self, env=None, nofile=None):
        self.extra_env = env or {}
        self.nofile = nofile  # RLIMIT_NOFILE (soft and hard) of sandboxd, or inherit ours
        self.proc = None
        self.tmp = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *a):
        self.stop()

    def start(self):
        self.tmp = tempfile.mkdtemp(prefix="llmbox-sbtest-")
        self.var = os.path.join(self.tmp, "var")
        self.sock = os.path.join(self.tmp, "sd.sock")
        self.log_path = os.path.join(self.tmp, "sandboxd.log")
        env = dict(os.environ, LLMBOX_VAR=self.var, LLMBOX_IMAGE_STORE=IMAGES, LLMBOX_HOME=REPO)
        env.pop("LLMBOX_SANDBOXD_SOCKET", None)
        env.update(self.extra_env)
        self.log = open(self.log_path, "w")
        if not os.access(BIN, os.X_OK):
            raise RuntimeError("%s missing (make)" % BIN)
        lim = self.nofile

        def limit():
            if lim:
                import resource
                resource.setrlimit(resource.RLIMIT_NOFILE, (lim, lim))
        self.proc = subprocess.Popen([BIN, "sandboxd", "--socket", self.sock], env=env,
                                     stdout=self.log, stderr=self.log, cwd=REPO,
                                     preexec_fn=limit if lim else None)
        for _ in range(200):
            if os.path.exists(self.sock) or self.proc.poll() is not None:
                break
            time.sleep(0.025)
        if not os.path.exists(self.sock):
            rc = self.proc.poll()
            self.stop()
            raise RuntimeError("sandboxd made no socket in 5 s (exit status %r)" % rc)
        return self

    def connect(self, timeout=60):
        return Conn(self.sock, timeout)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=30):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def terminate(self, timeout=10):
        """SIGTERM, then wait; returns the exit status (None if it hung)."""
        if not self.alive():
            return self.proc.poll() if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, dump_log=False):
        if self.proc is not None:
            if self.terminate() is None:
                self.proc.kill()
                self.proc.wait()
        if dump_log:
            sys.stderr.write("--- sandboxd log (last lines) ---\n" + self.log_tail())
        if getattr(self, "log", None):
            self.log.close()
            self.log = None
        if self.tmp:
            subprocess.call(["rm", "-rf", self.tmp])
            self.tmp = None
        self.proc = None


# ---- host-side probes --------------------------------------------------------

def pidns_of(conn, sid):
    """The sandbox's pid namespace ("pid:[N]"), as seen from inside."""
    r = conn.exec(sid, "readlink /proc/self/ns/pid")
    ns = r.get("stdout", "").strip()
    if ns.startswith("pid:["):
        CREATED[sid] = ns
    return ns


def procs_in(ns):
    """Host pids of every process in the pid namespace ns ("pid:[N]")."""
    out = []
    if not ns:
        return out
    for p in glob.glob("/proc/[0-9]*/ns/pid"):
        try:
            if os.readlink(p) == ns:
                out.append(int(p.split("/")[2]))
        except (OSError, ValueError):
            pass
    return out


def host_procs_in(ns):
    return len(procs_in(ns))


def proc_status(pid):
    """/proc/<pid>/status as a dict ({} if the process is gone)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return dict(l.rstrip("\n").split(":\t", 1) for l in f if ":\t" in l)
    except OSError:
        return {}


def proc_cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def init_hostpid(ns):
    """Host pid of the sandbox's pid 1 (its innermost NSpid is 1)."""
    for pid in procs_in(ns):
        nspid = proc_status(pid).get("NSpid", "").split()
        if nspid and nspid[-1] == "1":
            return pid
    return 0


def cgroup_paths(hostpid, controller):
    """Host directories of the cgroups of process hostpid for `controller`
    (its v1 hierarchy, else v2), from its own cgroup up to the root."""
    try:
        with open("/proc/%d/cgroup" % hostpid) as f:
            lines = [l.rstrip("\n").split(":", 2) for l in f]
    except OSError:
        return []
    bases = []
    for hid, ctrls, path in lines:
        if controller in ctrls.split(","):
            bases.append(("/sys/fs/cgroup/" + controller, path))
    for hid, ctrls, path in lines:
        if hid == "0" and ctrls == "":
            bases += [("/sys/fs/cgroup", path), ("/sys/fs/cgroup/unified", path)]
    out = []
    for base, path in bases:
        parts = [x for x in path.split("/") if x]
        for i in range(len(parts), -1, -1):
            d = base + "/" + "/".join(parts[:i]) if i else base
            if os.path.isdir(d) and d not in out:
                out.append(d)
    return out


def cgroup_file(hostpid, controller, name):
    """Host path of the cgroup file `name` nearest to process hostpid (its
    own cgroup first, then its parents), or None."""
    for d in cgroup_paths(hostpid, controller):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def read_text(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except (OSError, TypeError):
        return default


def cgroup_dirs(sid):
    return (glob.glob("/sys/fs/cgroup/*/llmbox*/" + sid) + glob.glob("/sys/fs/cgroup/llmbox*/" + sid))


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [l for l in f if path in l]


def leftovers(var, sid, ns):
    """What is left of a sandbox on the host: a list of sentences."""
    left = []
    n = host_procs_in(ns)
    if ns and n:
        left.append("%d process(es) in %s" % (n, ns))
    if cgroup_dirs(sid):
        left.append("cgroups %s" % cgroup_dirs(sid))
    if mounts_under(var):
        left.append("mounts %s" % mounts_under(var))
    if os.path.exists(os.path.join(var, "sandboxes", sid)):
        left.append("dir var/sandboxes/%s" % sid)
    return left


def wait_gone(var, sid, ns, secs=3.0):
    end = time.time() + secs
    while True:
        left = leftovers(var, sid, ns)
        if not left or time.time() > end:
            return left
        time.sleep(0.05)


# ---- reporting -----------------------------------------------------------------

class Reporter:
    """Runs named checks; prints PASS/FAIL/SKIP lines for tests/run.sh.

    A check is a function that returns None (pass) or raises: Skip for
    SKIP, AssertionError (or anything else) for FAIL. The reason is the
    exception's text."""

    def __init__(self, prefix=""):
        self.prefix = prefix
        self.failed = 0
        self.results = []

    def run(self, name, fn, *args):
        full = self.prefix + name
        t0 = time.time()
        try:
            fn(*args)
            print("PASS %s (%.1fs)" % (full, time.time() - t0), flush=True)
            self.results.append((full, "PASS"))
        except Skip as e:
            print("SKIP %s: %s" % (full, e), flush=True)
            self.results.append((full, "SKIP"))
        except Exception as e:  # noqa: BLE001 - any crash of a check is its failure
            self.failed += 1
            why = str(e) if isinstance(e, AssertionError) else "%s: %s" % (type(e).__name__, e)
            print("FAIL %s: %s" % (full, " ".join(why.split())[:600]), flush=True)
            self.results.append((full, "FAIL"))
            import traceback
            traceback.print_exc(file=sys.stderr)

    def exit_code(self):
        return 1 if self.failed else 0


class Skip(Exception):
    pass
