#!/usr/bin/env python3
"""Processes of sandboxd's own (E2B's protocol: proc_start, proc_attach,
proc_input, proc_signal, proc_list; include/llmbox/sandbox.h), at the RPC
level against a real sandboxd (python3 stdlib only, run as root):

  - output of stdout and stderr apart, exit codes, a signal's end; the
    confinement and the OOM score are the shell's;
  - stdin, and its eof;
  - a signal reaches the process's whole group;
  - list with tag and meta; attach by tag from a second connection of the
    same uid; every refusal answers a clear error and runs nothing;
  - a flood to a client that never reads: sandboxd's memory stays bounded
    (backpressure), others are served; once it leaves, the output is
    dropped and counted and the process runs on until killed;
  - 1,000 starts one after another, and 200 at once;
  - the pids limit refuses a start with a sentence;
  - the sandbox destroyed, or expired, while a process streams: "gone";
  - the spawner killed from inside the sandbox: "gone", then a new one;
  - sandboxd's end: the stream sees EOF and nothing survives on the host;
  - port_connect: a socket into the sandbox's loopback, over SCM_RIGHTS.

    python3 tests/integration/test_sandboxd_proc.py   (from the repo root)
"""
import array
import glob
import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import Daemon, Reporter, skip_reason  # noqa: E402


def events(c, until=("exit", "gone"), limit=100000):
    """The events of an attached connection up to its end."""
    out = []
    for _ in range(limit):
        e = c.recv()
        assert "event" in e, ("an event, not an answer", e)
        out.append(e)
        if e["event"] in until:
            return out
    raise AssertionError("no end after %d events" % limit)


def joined(evs, fd):
    return b"".join(e.get("_data", b"") for e in evs if e["event"] == "out" and e["fd"] == fd)


def start(c, sid, argv, **kw):
    r = c.call(dict(kw, op="proc_start", id=sid, argv=argv))
    assert r.get("ok") and r["pid"] > 1, r
    return r["pid"]


def check_streams_and_exits(d):
    c = d.connect()
    sid = c.create()
    pid = start(c, sid, ["/bin/bash", "-c", "echo out; echo err >&2; printf 'x%.0s' {1..100000}; exit 3"],
                attach=True)
    evs = events(c)
    assert joined(evs, 1) == b"out\n" + b"x" * 100000, joined(evs, 1)[:100]
    assert joined(evs, 2) == b"err\n"
    assert evs[-1] == {"ok": True, "event": "exit", "pid": pid, "exit_code": 3}, evs[-1]
    start(c, sid, ["bash", "-c", "kill -9 $$"], attach=True)  # PATH lookup too
    assert events(c)[-1]["signal"] == 9
    start(c, sid, ["pwd"], attach=True, cwd="/tmp", env={"A": "1"})
    assert joined(events(c), 1) == b"/tmp\n"
    start(c, sid, ["/bin/sh", "-c", "echo $A:$PATH:$HOME"], attach=True, env={"A": "b c", "HOME": "/h"})
    assert joined(events(c), 1) == b"b c:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/h\n"
    # the process is confined as the shell is: same pid namespace, same user, no_new_privs, seccomp
    start(c, sid, ["/bin/sh", "-c", "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; id -u; cat /proc/1/comm"],
          attach=True)
    got = joined(events(c), 1).decode()
    assert "NoNewPrivs:\t1" in got and "Seccomp:\t2" in got and "\n0\n" in got, got
    ex = c.exec(sid, "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; id -u; cat /proc/1/comm")
    assert ex["stdout"] == got, (ex["stdout"], got)
    # the OOM score is the shell's, set from the host: neither may lower it
    line = "cat /proc/self/oom_score_adj; (echo -1000 >/proc/self/oom_score_adj) 2>/dev/null && echo lowered || echo refused"
    start(c, sid, ["/bin/sh", "-c", line], attach=True)
    got = joined(events(c), 1).decode()
    assert got == c.exec(sid, line)["stdout"] and got.endswith("refused\n"), (got, c.exec(sid, line)["stdout"])


def check_stdin(d):
    c = d.connect()
    sid = c.create()
    pid = start(c, sid, ["cat"], stdin=True)
    w = d.connect()
    assert w.call({"op": "proc_attach", "id": sid, "pid": pid})["ok"]
    assert c.call({"op": "proc_input", "id": sid, "pid": pid}, data=b"hello\n")["ok"]
    e = w.recv()
    assert e["event"] == "out" and e["_data"] == b"hello\n", e
    assert c.call({"op": "proc_input", "id": sid, "pid": pid, "eof": True})["ok"]
    assert events(w)[-1]["exit_code"] == 0
    r = c.call({"op": "proc_input", "id": sid, "pid": pid}, data=b"late")
    assert r["error"] == "notfound", ("it has ended", r)
    pid = start(c, sid, ["sleep", "30"])
    r = c.call({"op": "proc_input", "id": sid, "pid": pid}, data=b"x")
    assert r["error"] == "invalid" and "without stdin" in r["message"], r
    c.call({"op": "proc_signal", "id": sid, "pid": pid, "signal": 9})


def nprocs(c, sid, name):
    r = c.exec(sid, "n=0; for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = %s ] && n=$((n+1)); done;"
               " echo $n" % name)
    return int(r["stdout"])


def check_signal_group(d):
    c = d.connect()
    sid = c.create()
    pid = start(c, sid, ["/bin/bash", "-c", "sleep 300 & sleep 301 & wait"], attach=True)
    end = time.time() + 5
    while nprocs(c, sid, "sleep") < 2:
        assert time.time() < end, "the two sleeps started"
        time.sleep(0.05)
    w = d.connect()
    assert w.call({"op": "proc_signal", "id": sid, "pid": pid, "signal": 15})["ok"]
    assert events(c)[-1]["signal"] == 15
    end = time.time() + 5
    while nprocs(c, sid, "sleep"):
        assert time.time() < end, "the group's sleeps died too"
        time.sleep(0.05)


def check_list_attach_refusals(d):
    c = d.connect()
    sid = c.create()
    pid = start(c, sid, ["/bin/sh", "-c", "while :; do echo tick; sleep 0.05; done"], tag="ticker",
                meta='{"cmd":"x"}')
    lst = c.call({"op": "proc_list", "id": sid})["procs"]
    assert len(lst) == 1 and lst[0]["pid"] == pid and lst[0]["tag"] == "ticker" and lst[0]["meta"] == '{"cmd":"x"}', lst
    w = d.connect()
    r = w.call({"op": "proc_attach", "id": sid, "tag": "ticker"})
    assert r["ok"] and r["pid"] == pid, r
    e = w.recv()
    assert e["event"] == "out" and b"tick" in e["_data"], e
    bad = [
        ({"argv": []}, "invalid"), ({"argv": [""]}, "invalid"), ({"argv": "ls"}, "invalid"),
        ({"argv": ["ls"], "env": {"1X": "y"}}, "invalid"), ({"argv": ["ls"], "env": {"A": 1}}, "invalid"),
        ({"argv": ["ls"], "cwd": "tmp"}, "invalid"), ({"argv": ["ls"], "tag": "t" * 257}, "invalid"),
        ({"argv": ["ls"], "meta": "m" * 20000}, "invalid"), ({"argv": ["x" * 130000]}, "toobig"),
        ({"argv": ["/no/such/program"]}, "notfound"), ({"argv": ["ls"], "cwd": "/no/such/dir"}, "notfound"),
        ({"argv": ["/etc/passwd"]}, "invalid"),
    ]
    for spec, code in bad:
        r = c.call(dict(spec, op="proc_start", id=sid))
        assert r.get("error") == code and r.get("message"), (spec, r)
    for req, code in [({"op": "proc_attach", "pid": 99999}, "notfound"), ({"op": "proc_attach", "tag": "nope"}, "notfound"),
                      ({"op": "proc_signal", "pid": pid, "signal": 0}, "invalid"),
                      ({"op": "proc_signal", "pid": pid, "signal": 65}, "invalid"),
                      ({"op": "proc_list", "id": "0" * 32}, "notfound")]:
        r = c.call(dict({"id": sid}, **req))
        assert r.get("error") == code and r.get("message"), (req, r)
    assert len(c.call({"op": "proc_list", "id": sid})["procs"]) == 1, "no refused start left a process"
    assert c.call({"op": "proc_signal", "id": sid, "tag": "ticker", "signal": 9})["ok"]
    assert events(w)[-1]["signal"] == 9
    assert c.call({"op": "proc_list", "id": sid})["procs"] == []


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def check_flood_never_read(d):
    c = d.connect()
    sid = c.create()
    lazy = d.connect()
    lazy.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    pid = start(lazy, sid, ["yes", "0123456789abcdef0123456789abcdef"], attach=True)
    before = rss_kib(d.proc.pid)
    time.sleep(3)
    grown = rss_kib(d.proc.pid) - before
    assert grown < 8 * 1024, "sandboxd grew %d KiB under a flood nobody reads" % grown
    t0 = time.time()
    assert c.exec(sid, "echo served")["stdout"] == "served\n" and time.time() - t0 < 2, "others served meanwhile"
    lst = c.call({"op": "proc_list", "id": sid})["procs"]
    assert lst[0]["attached"] == 1 and lst[0]["dropped"] == 0, ("backpressure, not loss, while attached", lst)
    lazy.close()
    end = time.time() + 5
    while True:
        lst = c.call({"op": "proc_list", "id": sid})["procs"]
        if lst[0]["attached"] == 0 and lst[0]["dropped"] > 1 << 20:
            break
        assert time.time() < end, ("nobody attached: read, dropped, counted", lst)
        time.sleep(0.1)
    assert rss_kib(d.proc.pid) - before < 8 * 1024, "still bounded"
    assert c.call({"op": "proc_signal", "id": sid, "pid": pid, "signal": 9})["ok"]
    end = time.time() + 5
    while c.call({"op": "proc_list", "id": sid})["procs"]:
        assert time.time() < end, "killed, it leaves the list"
        time.sleep(0.05)


def check_thousand(d):
    c = d.connect()
    sid = c.create(pids=1024)
    t0 = time.time()
    for i in range(1000):
        start(c, sid, ["/bin/echo", str(i)], attach=True)
        evs = events(c)
        assert joined(evs, 1) == b"%d\n" % i and evs[-1]["exit_code"] == 0, evs
    seq = time.time() - t0
    t0 = time.time()
    # sent by a thread while this one reads the answers: a client that only
    # writes would fill both directions' socket buffers
    sender = threading.Thread(target=lambda: [
        c.send({"op": "proc_start", "id": sid, "argv": ["/bin/sh", "-c", "exit %d" % (i % 7)]}) for i in range(200)])
    sender.start()
    pids = [c.recv() for _ in range(200)]
    sender.join()
    assert all(r.get("ok") for r in pids), [r for r in pids if not r.get("ok")][:3]
    end = time.time() + 30
    while c.call({"op": "proc_list", "id": sid})["procs"]:
        assert time.time() < end, "the 200 ended and left the list"
        time.sleep(0.05)
    print("1000 starts one after another: %.2f ms each; 200 at once: %.2f s" % (seq, time.time() - t0),
          file=sys.stderr)
    assert c.exec(sid, "echo still")["stdout"] == "still\n"


def check_pids_limit(d):
    c = d.connect()
    sid = c.create(pids=16)
    refused = None
    for _ in range(40):
        r = c.call({"op": "proc_start", "id": sid, "argv": ["sleep", "100"]})
        if not r.get("ok"):
            refused = r
            break
    assert refused and refused["error"] in ("busy", "invalid") and "cannot start" in refused["message"], refused
    assert c.destroy(sid)["ok"]


def check_gone_while_streaming(d):
    owner = d.connect()
    sid = owner.create()
    w = d.connect()
    start(w, sid, ["/bin/sh", "-c", "while :; do echo x; sleep 0.01; done"], attach=True)
    assert w.recv()["event"] == "out"
    assert owner.destroy(sid)["ok"]
    evs = events(w)
    assert evs[-1]["event"] == "gone" and "destroyed" in evs[-1]["message"], evs[-1]
    r = w.call({"op": "proc_list", "id": sid})
    assert r["error"] == "notfound", r
    sid = owner.create(ttl_s=2)
    start(w, sid, ["sleep", "100"], attach=True)
    t0 = time.time()
    e = events(w)[-1]
    assert e["event"] == "gone" and "time to live" in e["message"] and time.time() - t0 < 10, e


def check_sandboxd_end(tmp):
    d = Daemon(env={"LLMBOX_POOL_SIZE": "0"})
    d.start()
    try:
        c = d.connect()
        sid = c.create()
        start(c, sid, ["sleep", "4242"], attach=True)
        d.terminate()
        try:
            e = c.recv()
            assert e.get("event") == "gone", e
        except (EOFError, ConnectionError, OSError):
            pass  # killed before it could say: EOF is the end too
    finally:
        d.stop()
    end = time.time() + 5
    while True:
        left = [p for p in glob.glob("/proc/[0-9]*/cmdline") if open_read(p) == b"sleep\x004242\x00"]
        if not left:
            break
        assert time.time() < end, "a process outlived sandboxd: %r" % left
        time.sleep(0.1)


def check_spawner_killed(d):
    """The sandbox's code kills the spawner: the streams hear why, the next
    start makes a new one."""
    c = d.connect()
    sid = c.create()
    w = d.connect()
    start(w, sid, ["sleep", "300"], attach=True)
    r = c.exec(sid, "for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = llmbox-spawner ] && "
                    "kill -9 ${p#/proc/} && echo killed; done")
    assert r["stdout"] == "killed\n", r
    e = events(w)[-1]
    assert e["event"] == "gone" and "spawner" in e["message"], e
    start(c, sid, ["/bin/echo", "again"], attach=True)
    assert joined(events(c), 1) == b"again\n"


def check_port_connect(d):
    """port_connect: a socket connected to 127.0.0.1:port inside the
    sandbox, over SCM_RIGHTS; refusals with a sentence."""
    c = d.connect()
    sid = c.create()
    start(c, sid, ["python3", "-c", "import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 7777))\n"
                   "s.listen()\nwhile True:\n    a, _ = s.accept()\n    a.sendall(b'inside ' + a.recv(100))\n"
                   "    a.close()"])
    w = d.connect()
    end = time.time() + 10
    while True:
        w.send({"op": "port_connect", "id": sid, "port": 7777})
        msg, anc, _, _ = w.s.recvmsg(4096, socket.CMSG_SPACE(4 * 4))
        (n,) = struct.unpack(">I", msg[:4])
        r = json.loads(msg[4:4 + n])
        if r.get("ok") or time.time() > end:
            break
        assert r["error"] == "notfound" and "nothing listens" in r["message"], r
        time.sleep(0.1)
    assert r.get("ok") and len(anc) == 1, (r, anc)
    fds = array.array("i")
    fds.frombytes(anc[0][2][:4])
    s = socket.socket(fileno=fds[0])
    s.sendall(b"hello")
    assert s.recv(100) == b"inside hello"
    s.close()
    # the sandbox's server stays in its namespace: the host's 127.0.0.1:7777 is not it
    try:
        with socket.create_connection(("127.0.0.1", 7777), timeout=2) as h:
            h.sendall(b"hello")
            assert not h.recv(100).startswith(b"inside"), "the sandbox's port reached from the host"
    except (ConnectionRefusedError, socket.timeout):
        pass
    for req, code in [({"port": 0}, "invalid"), ({"port": 70000}, "invalid"), ({"port": "80"}, "invalid"),
                      ({"port": 7778}, "notfound"), ({"port": 7777, "id": "0" * 32}, "notfound")]:
        r = w.call(dict({"op": "port_connect", "id": sid}, **req))
        assert r.get("error") == code and r.get("message"), (req, r)


def open_read(p):
    try:
        with open(p, "rb") as f:
            return f.read()
    except OSError:
        return b""


def check_stat_list_metadata(d):
    """E2B's protocol: stat and list carry kind, mode, uid/gid as the sandbox sees
    them, mtime and a symlink's target (read, never followed); old fields
    as they were."""
    c = d.connect()
    sid = c.create()
    ex = c.exec(sid, "mkdir -p /tmp/m && cd /tmp/m && printf abcd > f && chown 1000:2000 f && chmod 2640 f && "
                "touch -d @1600000000.25 f && ln -s ../../etc/shadow l && mkdir d && echo ok")
    assert ex.get("stdout") == "ok\n", ex
    r = c.call({"op": "stat", "id": sid, "path": "/tmp/m/f"})
    assert (r["type"], r["size"], r["kind"], r["mode"], r["uid"], r["gid"], r["mtime"], r["mtime_ns"]) == \
        ("file", 4, "file", 0o2640, 1000, 2000, 1600000000, 250000000), r
    assert "target" not in r, r
    r = c.call({"op": "stat", "id": sid, "path": "/tmp/m/l"})
    assert (r["type"], r["kind"], r["target"], r["uid"]) == ("other", "symlink", "../../etc/shadow", 0), r
    r = c.call({"op": "stat", "id": sid, "path": "/"})
    assert (r["type"], r["kind"], r["uid"]) == ("dir", "dir", 0), r
    r = c.call({"op": "stat", "id": sid, "path": "/tmp/m/none"})
    assert r["type"] == "missing" and "kind" not in r, r
    r = c.call({"op": "list", "id": sid, "path": "/tmp/m", "max_depth": 1, "max_entries": 10})
    by = {e["path"]: e for e in r["entries"]}
    assert sorted(by) == ["d", "f", "l"], r
    assert (by["d"]["kind"], by["d"]["mode"], by["f"]["gid"]) == ("dir", 0o755, 2000), by
    assert by["l"]["target"] == "../../etc/shadow" and by["l"]["type"] == "other", by
    c.destroy(sid)
    c.close()


def watch_lines(c, until):
    """Lines of a watcher attached on c until one in until (or its exit)."""
    buf, lines = b"", []
    while True:
        e = c.recv()
        assert "event" in e, e
        if e["event"] in ("exit", "gone"):
            lines.append(e)
            return lines
        if e["event"] == "out" and e["fd"] == 1:
            buf += e.get("_data", b"")
            while b"\n" in buf:
                ln, buf = buf.split(b"\n", 1)
                lines.append(ln.decode())
                if ln.decode() in until:
                    return lines


def check_watcher(d):
    """E2B's protocol: the watcher of E2B's watchDir (sandbox_watch.h) runs in the
    sandbox as one of sandboxd's processes: armed, then create, write,
    rename, chmod, remove in order, recursive into a new directory, a
    newline in a name escaped; it ends when the watched dir goes, refuses
    a missing dir, and ends with the sandbox."""
    c = d.connect()
    sid = c.create()
    assert c.exec(sid, "mkdir -p /tmp/w/sub")["exit_code"] == 0
    w = d.connect()
    start(w, sid, ["llmbox:watch", "/tmp/w", "1"], attach=True)
    assert watch_lines(w, ("R",)) == ["R"]
    ex = c.exec(sid, "cd /tmp/w && echo a > f && mv f g && chmod 600 g && rm g && mkdir -p n && sleep 0.2 && "
                     "echo x > n/y && touch sub/z && touch \"$(printf 'q\\nr')\" && echo ok")
    assert ex["stdout"] == "ok\n", ex
    got = watch_lines(w, ("C q\\nr",))
    want = ["C f", "W f", "N f", "C g", "M g", "D g", "C n", "C n/y", "W n/y", "C sub/z", "M sub/z", "C q\\nr"]
    seen = [x for x in got if x in want]
    assert seen == want, got
    # the watched dir removed: "X" and a clean exit
    assert c.exec(sid, "cd / && rm -rf /tmp/w")["exit_code"] == 0  # no cwd holds it
    got = watch_lines(w, ("X",))
    assert got[-1] == "X", got
    assert watch_lines(w, ())[-1]["event"] == "exit"
    # a missing dir: exit 2, the reason on stderr
    start(w, sid, ["llmbox:watch", "/tmp/none", "0"], attach=True)
    evs = events(w)
    assert evs[-1]["exit_code"] == 2 and b"cannot watch /tmp/none" in joined(evs, 2), evs
    # a client that does not read: the watcher blocks on its pipe, the
    # kernel's queue overflows, and the client then sees "O", never silence
    assert c.exec(sid, "mkdir -p /tmp/o")["exit_code"] == 0
    start(w, sid, ["llmbox:watch", "/tmp/o", "0"], attach=True)
    assert watch_lines(w, ("R",)) == ["R"]
    q = int(open("/proc/sys/fs/inotify/max_queued_events").read())
    n = q + 10000  # past the queue, the pipe, sandboxd's 256 KiB backlog and the socket (200-byte names)
    ex = c.exec(sid, "cd /tmp/o && for ((i = 0; i < %d; i++)); do : > $(printf %%0200d $i); done; echo ok" % n,
                timeout_ms=120000)
    assert ex["stdout"] == "ok\n", ex
    got = watch_lines(w, ("O",))
    assert got[-1] == "O" and len(got) < n, (len(got), got[-3:])
    assert watch_lines(w, ())[-1]["event"] == "exit"
    # deeper than the levels' cap: "L" (before it is armed), and the end
    assert c.exec(sid, "mkdir -p /tmp/deep/$(printf 'd/%.0s' $(seq 130))")["exit_code"] == 0
    start(w, sid, ["llmbox:watch", "/tmp/deep", "1"], attach=True)
    got = watch_lines(w, ("L",))
    assert got[-1] == "L", got
    assert watch_lines(w, ())[-1]["event"] == "exit"
    # the sandbox destroyed: the watcher's stream ends "gone"
    assert c.exec(sid, "mkdir -p /tmp/w2")["exit_code"] == 0
    start(w, sid, ["llmbox:watch", "/tmp/w2", "0"], attach=True)
    assert watch_lines(w, ("R",)) == ["R"]
    c.destroy(sid)
    assert watch_lines(w, ())[-1]["event"] == "gone"
    w.close()
    c.close()


def pty_out_until(c, needle, limit=2000):
    """The terminal's output on c until needle shows (or the end)."""
    out = b""
    for _ in range(limit):
        e = c.recv()
        assert "event" in e, e
        if e["event"] in ("exit", "gone"):
            return out, e
        out += e.get("_data", b"") if e["event"] == "out" else b""
        if needle in out:
            return out, None
    raise AssertionError("no %r in %r" % (needle, out[-300:]))


def check_pty(d):
    """E2B's protocol: E2B's pty, a relay in the sandbox (sandbox_pty.h): the
    program runs on a terminal of the sandbox's own devpts with the size
    asked, input and resizes come as frames on stdin, it exits as the
    program did, a malformed frame ends it, a kill ends the program."""
    c = d.connect()
    sid = c.create()
    w = d.connect()
    pid = start(w, sid, ["llmbox:pty", "80", "24", "/bin/bash", "--norc", "-i"], attach=True, stdin=True,
                env={"PS1": "$ ", "TERM": "xterm"})

    def send(b, kind=b"d"):
        frame = kind + struct.pack(">I", len(b)) + b
        assert c.call({"op": "proc_input", "id": sid, "pid": pid}, data=frame)["ok"]

    send(b"stty size; tty\n")
    out, end = pty_out_until(w, b"/dev/pts/")
    assert b"24 80" in out and end is None, out
    send(struct.pack(">HH", 132, 50), b"r")
    send(b"stty size\n")
    out, end = pty_out_until(w, b"50 132")
    send(b"echo h\"\"i; exit 3\n")  # the echo of the input is not the output
    out, end = pty_out_until(w, b"never")
    assert b"hi" in out and end == {"ok": True, "event": "exit", "pid": pid, "exit_code": 3}, (out, end)
    # a malformed frame: the relay ends and takes the program with it
    pid = start(w, sid, ["llmbox:pty", "80", "24", "/bin/sleep", "60"], attach=True, stdin=True)
    assert c.call({"op": "proc_input", "id": sid, "pid": pid}, data=b"x\0\0\0\1y")["ok"]
    out, end = pty_out_until(w, b"never")
    assert end["event"] == "exit" and end["exit_code"] == 1, end
    # killed: the program goes too (nothing sleeps on in the sandbox)
    pid = start(w, sid, ["llmbox:pty", "80", "24", "/bin/sleep", "61"], attach=True, stdin=True)
    time.sleep(0.3)
    assert c.call({"op": "proc_signal", "id": sid, "pid": pid, "signal": 9})["ok"]
    out, end = pty_out_until(w, b"never")
    assert end["event"] == "exit" and end["signal"] == 9, end
    time.sleep(0.3)
    assert "sleep 61" not in c.exec(sid, "ps -eo args")["stdout"]
    # a program that prints while input waits for it: the output still flows
    # (the relay never blocks on the terminal's input), and it ends as the program did
    pid = start(w, sid, ["llmbox:pty", "80", "24", "/bin/bash", "--norc", "-c",
                         "sleep 1; head -c 300000 /dev/zero | tr '\\0' x; echo; echo E""ND; exit 4"],
                attach=True, stdin=True)
    send(b"y" * 200000)
    out, end = pty_out_until(w, b"never", limit=100000)
    assert b"END" in out and out.count(b"x") >= 300000 and end["exit_code"] == 4, (len(out), end)
    # bad sizes are refused
    start(w, sid, ["llmbox:pty", "0", "24", "/bin/true"], attach=True, stdin=True)
    evs = events(w)
    assert evs[-1]["exit_code"] == 2 and b"cols and rows" in joined(evs, 2), evs
    c.destroy(sid)
    w.close()
    c.close()


def main():
    p = Reporter("sandboxd_proc/")
    why = skip_reason()
    if why:
        print("SKIP sandboxd_proc: %s" % why)
        return 0
    with Daemon(env={"LLMBOX_POOL_SIZE": "0"}) as d:
        for name, fn in [("streams_and_exit_codes", check_streams_and_exits), ("stdin_and_eof", check_stdin),
                         ("signal_reaches_the_group", check_signal_group),
                         ("list_attach_and_refusals", check_list_attach_refusals),
                         ("flood_to_a_client_that_never_reads", check_flood_never_read),
                         ("thousand_starts", check_thousand), ("pids_limit_refuses_a_start", check_pids_limit),
                         ("sandbox_gone_while_streaming", check_gone_while_streaming),
                         ("spawner_killed_from_inside", check_spawner_killed),
                         ("port_connect_hands_over_a_socket", check_port_connect),
                         ("stat_list_metadata", check_stat_list_metadata),
                         ("watcher_in_the_sandbox", check_watcher), ("pty_relay", check_pty)]:
            p.run(name, fn, d)
    p.run("sandboxd_end_leaves_nothing", check_sandboxd_end, None)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
