"""Shared helpers of the fault suites (tests/faults/): scripted steps, the
agent process of a task, leftovers of sandboxes on the host, and an event
stream client that resumes with Last-Event-ID the way EventSource does.
Python stdlib only."""
import glob
import http.client
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))

from stack import LLMBOX, Reporter, Skip, Stack, image_ready  # noqa: E402,F401


def step(*calls, **kw):
    """One scripted reply: step(("bash", {"command": "ls"}), delay_ms=100)."""
    s = {"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}
    s.update(kw)
    return s


def finish(answer="done", **kw):
    return step(("finish", {"answer": answer}), **kw)


def bash(cmd, **kw):
    return step(("bash", {"command": cmd}), **kw)


def skip_reason():
    if os.geteuid() != 0:
        return "needs root (sandboxd)"
    if not os.access(LLMBOX, os.X_OK):
        return "no llmbox binary at %s (run make)" % LLMBOX
    if not image_ready():
        return "no sandbox image (make image)"
    return None


def wait_until(fn, timeout, what, interval=0.05):
    """fn()'s first truthy value; AssertionError naming what after timeout."""
    end = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.time() > end:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(interval)


# ---- processes ----------------------------------------------------------

def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def agent_pid(task_id):
    """The pid of the live `llmbox agent --task ID` process, or None."""
    want = task_id.encode()
    for d in glob.glob("/proc/[0-9]*"):
        pid = int(d[6:])
        a = cmdline(pid)
        if b"agent" in a and want in a and b"--task" in a:
            return pid
    return None


def proc_starttime(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def procs_with(needle, fname="mountinfo"):
    """{pid: starttime} of processes whose /proc/PID/<fname> contains needle."""
    out = {}
    for d in glob.glob("/proc/[0-9]*"):
        pid = int(d[6:])
        if pid == os.getpid():
            continue
        try:
            with open(d + "/" + fname, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if needle.encode() in data:
            st = proc_starttime(pid)
            if st:
                out[pid] = st
    return out


def still_alive(pids):
    """The processes of {pid: starttime} that still exist (not reused pids, not zombies)."""
    left = []
    for pid, st in pids.items():
        if proc_starttime(pid) != st:
            continue
        try:
            with open("/proc/%d/status" % pid) as f:
                if "\nState:\tZ" in f.read():
                    continue
        except OSError:
            continue
        left.append(pid)
    return left


def children(ppid):
    """Pids whose parent is ppid (nginx workers of a master)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == ppid:
                    out.append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    return out


def pid_gone(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return "\nState:\tZ" in f.read()
    except OSError:
        return True


def install_tag(var):
    """The tag sandboxd puts on its cgroups and helpers: FNV-1a of the var dir."""
    h = 2166136261
    for b in var.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return "llmbox-%08x" % h


def cgroups_of(var, ids):
    tag = install_tag(var)
    found = []
    for sid in ids:
        found += glob.glob("/sys/fs/cgroup/*/%s/%s" % (tag, sid))
        found += glob.glob("/sys/fs/cgroup/%s/%s" % (tag, sid))
    return found


def host_mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [l for l in f if path in l]


class Snapshot:
    """What the sandboxes of a stack hold on the host now: processes with a
    sandbox root of this installation, slirp4netns helpers, scratch dirs
    and their cgroups. After a kill -9 and a restart, none of it may live."""

    def __init__(self, s):
        self.var = os.path.join(s.prefix, "var")
        # the overlay of a sandbox of this installation (its source is the
        # install tag; the layer paths are relative, see sandbox_init.c)
        self.procs = procs_with(" - overlay %s " % install_tag(self.var))
        self.slirps = procs_with("slirp4netns:" + install_tag(self.var), "cmdline")
        d = os.path.join(self.var, "sandboxes")
        self.dirs = set(os.listdir(d)) if os.path.isdir(d) else set()

    def leftovers(self):
        """What of this snapshot is still there (a list of sentences)."""
        out = []
        p = still_alive(self.procs)
        if p:
            out.append("sandbox processes alive: %r" % p[:8])
        sl = still_alive(self.slirps)
        if sl:
            out.append("slirp4netns alive: %r" % sl)
        d = os.path.join(self.var, "sandboxes")
        now = set(os.listdir(d)) if os.path.isdir(d) else set()
        if self.dirs & now:
            out.append("scratch dirs left: %r" % sorted(self.dirs & now)[:8])
        cg = cgroups_of(self.var, self.dirs)
        if cg:
            out.append("cgroups left: %r" % cg[:8])
        m = host_mounts_under(self.var + "/sandboxes")
        if m:
            out.append("host mounts left: %r" % m[:3])
        return out


# ---- tasks --------------------------------------------------------------

def create(s, prompt, **fields):
    st, t = s.create_task(prompt, **fields)
    assert st == 201, (st, t)
    return t["id"]


def wait_final(s, tid, timeout=60):
    return s.wait_task(tid, timeout=timeout)


def check_sequence(evs, what="events"):
    """ids 1..N exactly once, in order, ending with done."""
    ids = [e[0] for e in evs]
    assert ids == list(range(1, len(ids) + 1)), "%s: ids not 1..N once each: %r" % (what, ids)
    assert evs and evs[-1][1] == "done", "%s: does not end with done: %r" % (what, evs[-1:])


class SSEClient:
    """Reads one task's stream like EventSource: an event counts only once
    its blank line has arrived; on any disconnect it reconnects (every
    0.1 s, for up to `patience` s) with Last-Event-ID = the last event it
    dispatched. Stops after "done". Records every dispatched event and
    every reconnect."""

    def __init__(self, port_fn, task_id, patience=30):
        self.port_fn = port_fn
        self.task_id = task_id
        self.patience = patience
        self.events = []        # (id, type, data)
        self.connects = 0
        self.errors = []
        self.done = False

    def run(self):
        last = None
        gave_up = time.time() + self.patience
        while not self.done and time.time() < gave_up:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port_fn(), timeout=20)
                h = {"Accept": "text/event-stream"}
                if last is not None:
                    h["Last-Event-ID"] = str(last)
                c.request("GET", "/api/tasks/%s/events" % self.task_id, headers=h)
                r = c.getresponse()
                if r.status != 200:
                    self.errors.append("HTTP %d" % r.status)
                    r.read()
                    c.close()
                    time.sleep(0.1)
                    continue
                self.connects += 1
                gave_up = time.time() + self.patience
                cur = {}
                while True:
                    line = r.readline()
                    if not line:
                        break  # disconnected: an unfinished event is dropped
                    line = line.decode().rstrip("\r\n")
                    if line == "":
                        if "data" in cur or "event" in cur:
                            eid = int(cur["id"]) if "id" in cur else None
                            self.events.append((eid, cur.get("event", "message"), json.loads(cur.get("data", "null"))))
                            if eid is not None:
                                last = eid
                            if cur.get("event") == "done":
                                self.done = True
                                break
                        cur = {}
                    elif line.startswith(":"):
                        continue
                    else:
                        k, _, v = line.partition(":")
                        v = v[1:] if v.startswith(" ") else v
                        cur[k] = cur[k] + "\n" + v if k == "data" and k in cur else v
                c.close()
            except (OSError, http.client.HTTPException) as e:
                self.errors.append(type(e).__name__)
                time.sleep(0.1)
        return self
