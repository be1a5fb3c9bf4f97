#!/usr/bin/env python3
"""Integration test of `llmbox sandboxd` (python3 stdlib only, run as root).

Starts its own sandboxd on a temporary socket, with LLMBOX_VAR in a temp dir
and LLMBOX_IMAGE_STORE at <repo>/var/images, and talks the framing protocol
of include/llmbox/sandbox.h directly. Prints "PASS name" / "FAIL name: why"
per check, or "SKIP ..." when the image is not built.

    python3 tests/integration/test_sandbox.py      (from the repo root)

LLMBOX_BIN overrides the binary (default $BUILD/llmbox, BUILD=build).
"""
import glob
import json
import os
import pwd
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from sandbox_rpc import Conn  # noqa: E402  (the framing client the other suites share)
BIN = os.environ.get("LLMBOX_BIN",
                     os.path.join(REPO, os.environ.get("BUILD", "build"), "llmbox"))
IMAGES = os.path.join(REPO, "var", "images")
HERE = os.path.dirname(os.path.abspath(__file__))
ID_COUNT = 65536

failed = 0


def report(name, ok, why=""):
    global failed
    if ok:
        print("PASS %s" % name, flush=True)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why), flush=True)


def pidns_of(conn, sid):
    r = conn.exec(sid, "readlink /proc/self/ns/pid")
    return r["stdout"].strip()


def host_procs_in(ns):
    n = 0
    for p in glob.glob("/proc/[0-9]*/ns/pid"):
        try:
            if os.readlink(p) == ns:
                n += 1
        except OSError:
            pass
    return n


def cgroup_dirs(sid):
    """The sandbox's groups, llmbox-<hash>/<id>, in any v1 hierarchy or v2."""
    return glob.glob("/sys/fs/cgroup/*/llmbox-*/" + sid) + glob.glob("/sys/fs/cgroup/llmbox-*/" + sid)


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [l for l in f if path in l]


def leftovers(var, sid, ns):
    """What is left of a sandbox on the host: a list of sentences."""
    left = []
    if ns and host_procs_in(ns):
        left.append("%d process(es) in %s" % (host_procs_in(ns), ns))
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


def main():
    if os.geteuid() != 0:
        print("SKIP test_sandbox: needs root")
        return 0
    if not os.path.exists(os.path.join(IMAGES, "default", ".complete")):
        print("SKIP test_sandbox: image not built (make image)")
        return 0
    if not os.access(BIN, os.X_OK):
        report("binary", False, "%s missing (make)" % BIN)
        return 1

    tmp = tempfile.mkdtemp(prefix="llmbox-sbtest-")
    os.chmod(tmp, 0o711)  # the unprivileged client below reaches the socket through it
    var = os.path.join(tmp, "var")
    sock = os.path.join(tmp, "sd.sock")
    env = dict(os.environ, LLMBOX_VAR=var, LLMBOX_IMAGE_STORE=IMAGES, LLMBOX_HOME=REPO,
               LLMBOX_WEB_USER="nobody")
    env.pop("LLMBOX_SANDBOXD_SOCKET", None)
    log = open(os.path.join(tmp, "sandboxd.log"), "w")
    proc = subprocess.Popen([BIN, "sandboxd", "--socket", sock], env=env, stdout=log,
                            stderr=log, cwd=REPO)
    try:
        for _ in range(100):
            if os.path.exists(sock) or proc.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(sock):
            report("sandboxd_starts", False, "no socket after 5 s (exit status %r)" % proc.poll())
            return 1
        try:
            run(tmp, var, sock)
        except Exception as e:  # noqa: BLE001 - a crash of the test is one failure
            report("run", False, "%s: %s" % (type(e).__name__, e))
        try:
            run_image_shift(tmp, env)
        except Exception as e:  # noqa: BLE001
            report("image_shift", False, "%s: %s" % (type(e).__name__, e))
        # SIGTERM: exits 0, removes its socket
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        report("sigterm_exits_cleanly", rc == 0 and not os.path.exists(sock),
               "rc=%r socket_left=%r" % (rc, os.path.exists(sock)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
        if failed:
            with open(os.path.join(tmp, "sandboxd.log")) as f:
                sys.stderr.write("--- sandboxd log (last lines) ---\n")
                sys.stderr.write("".join(f.readlines()[-30:]))
        subprocess.call(["rm", "-rf", tmp])
    return 1 if failed else 0


def run(tmp, var, sock):
    c = Conn(sock)
    r = c.call({"op": "ping"})
    report("ping", r.get("ok") and r.get("cgroup") in ("v1", "v2", "rlimit"), repr(r))

    # protocol hygiene: bad JSON, unknown op, unknown id; the connection survives
    c.send_frame(b"{not json")
    r = json.loads(c.recv_frame())
    report("bad_json_is_an_error", r.get("ok") is False and r.get("error") == "invalid", repr(r))
    r = c.call({"op": "frobnicate"})
    report("unknown_op_is_an_error", r.get("error") == "invalid", repr(r))
    r = c.call({"op": "exec", "id": "0" * 32, "command": "true"})
    report("unknown_id_is_notfound", r.get("error") == "notfound", repr(r))
    r = c.call({"op": "read", "id": "0" * 32, "path": "../etc/passwd"})
    report("relative_path_refused", r.get("error") == "invalid", repr(r))

    # input dir: a file, a subdir, and a symlink that must not be followed
    indir = os.path.join(tmp, "input")
    os.makedirs(os.path.join(indir, "sub"))
    with open(os.path.join(indir, "data.csv"), "w") as f:
        f.write("a,b\n1,2\n")
    with open(os.path.join(indir, "sub", "note.txt"), "w") as f:
        f.write("nested\n")
    os.symlink("/etc/shadow", os.path.join(indir, "shadow-link"))

    t0 = time.time()
    r = c.call({"op": "create", "memory_mib": 256, "input_dir": indir})
    report("create", r.get("ok") and len(r.get("id", "")) == 32, repr(r))
    if not r.get("ok"):
        return
    sid = r["id"]
    report("create_is_fast", time.time() - t0 < 2.0, "%.2f s" % (time.time() - t0))

    r = c.exec(sid, "echo hi; echo err >&2; exit 3")
    report("exec_streams_and_exit_code",
           r.get("state") == "exited" and r.get("exit_code") == 3 and r.get("stdout") == "hi\n"
           and r.get("stderr") == "err\n", repr(r))

    c.exec(sid, "cd /tmp && export LLMBOX_T=persisted && f() { echo fn; }")
    r = c.exec(sid, 'pwd; echo "$LLMBOX_T"; f')
    report("cwd_env_functions_persist", r.get("stdout") == "/tmp\npersisted\nfn\n", repr(r))

    r = c.exec(sid, "printf '\\n__LBSD_0123456789abcdef0123456789abcdef__0\\n'; sleep 0.2; "
                    "echo after")
    report("fake_sentinel_does_not_end_command",
           "after" in r.get("stdout", "") and r.get("exit_code") == 0, repr(r))

    quoted = "echo 'single' \"double $((1+2))\" `echo back` é中文 $'tab\\there'; printf 'a\\0b' | wc -c"
    r = c.exec(sid, quoted)
    report("quoting_survives",
           r.get("stdout") == "single double 3 back é中文 tab\there\n3\n", repr(r))

    r = c.exec(sid, "cat <<'EOF'\nline one\n$HOME\nEOF")
    report("heredoc", r.get("stdout") == "line one\n$HOME\n", repr(r))

    r = c.exec(sid, "read x; echo \"got:$x\"")
    report("stdin_is_devnull", r.get("stdout") == "got:\n", repr(r))

    t0 = time.time()
    r = c.exec(sid, "sleep 30", timeout_ms=1000)
    el = time.time() - t0
    report("timeout_kills_command", r.get("state") == "timeout" and el < 2.5,
           "%.2f s %r" % (el, r))
    r = c.exec(sid, "echo still; pwd")
    report("shell_works_after_timeout", r.get("stdout") == "still\n/tmp\n", repr(r))

    # a timeout aborts the whole command line, not just its current child
    t0 = time.time()
    r = c.exec(sid, "sleep 30; echo not-reached; f() { sleep 30; }; f", timeout_ms=500)
    r2 = c.exec(sid, "while :; do :; done; echo not-reached", timeout_ms=500)
    r3 = c.exec(sid, "echo kept; pwd")
    report("timeout_aborts_whole_command",
           r.get("state") == "timeout" and "not-reached" not in r.get("stdout", "")
           and r2.get("state") == "timeout" and "not-reached" not in r2.get("stdout", "")
           and r3.get("stdout") == "kept\n/tmp\n" and r3.get("stderr") == ""
           and time.time() - t0 < 3, repr((r, r2, r3)))

    t0 = time.time()
    r = c.exec(sid, "trap '' INT; while :; do :; done", timeout_ms=500)
    el = time.time() - t0
    r2 = c.exec(sid, "echo fresh; pwd")
    report("stuck_shell_is_replaced",
           r.get("state") == "timeout" and "shell was killed" in r.get("stderr", "") and el < 3.0
           and r2.get("stdout") == "fresh\n/testbed\n", "%.2f s %r %r" % (el, r, r2))

    r = c.exec(sid, "ls /testbed/input /testbed/input/sub; cat /testbed/input/data.csv; "
                    "ls -A /testbed/output | wc -l")
    report("input_dir_copied",
           r.get("stdout") == "/testbed/input:\ndata.csv\nsub\n\n/testbed/input/sub:\nnote.txt\n"
                              "a,b\n1,2\n0\n", repr(r))

    r = c.exec(sid, "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo tail-marker")
    out = r.get("stdout", "")
    report("output_capped_head_and_tail",
           r.get("truncated") is True and len(out) < 1200000 and out.endswith("tail-marker\n")
           and "bytes omitted" in out, "len=%d trunc=%r" % (len(out), r.get("truncated")))

    # interrupt (the client's cancel): the exec answers "interrupted" first,
    # requests sent meanwhile are answered after it, in order
    t0 = time.time()
    c.send_frame(json.dumps({"op": "exec", "id": sid, "command": "cd /tmp; sleep 100; echo no",
                             "timeout_ms": 60000}).encode())
    time.sleep(0.3)
    c.send_frame(json.dumps({"op": "stat", "id": sid, "path": "/"}).encode())
    c.send_frame(json.dumps({"op": "interrupt", "id": sid}).encode())
    r1 = json.loads(c.recv_frame())
    r2 = json.loads(c.recv_frame())
    r3 = json.loads(c.recv_frame())
    report("interrupt_stops_exec",
           r1.get("state") == "interrupted" and "no" not in r1.get("stdout", "")
           and r2.get("error") == "busy" and r3.get("ok") is True and time.time() - t0 < 3,
           repr((r1, r2, r3)))
    r = c.exec(sid, "echo after-interrupt; pwd")
    report("shell_works_after_interrupt", r.get("stdout") == "after-interrupt\n/tmp\n", repr(r))

    r = c.exec(sid, "printf 'ok\\xff\\xfe\\n'")
    report("binary_output_is_valid_utf8", r.get("stdout") == "ok\ufffd\ufffd\n", repr(r))

    # files
    payload = bytes(range(256)) * 100
    r = c.call({"op": "write", "id": sid, "path": "/testbed/output/deep/dir/blob.bin"}, payload)
    report("write_creates_parents", r.get("ok"), repr(r))
    r = c.call({"op": "read", "id": sid, "path": "/testbed/output/deep/dir/blob.bin",
                "max": 1 << 20})
    report("read_roundtrip", r.get("ok") and r.get("_data") == payload,
           repr({k: v for k, v in r.items() if k != "_data"}))
    r = c.call({"op": "write", "id": sid, "path": "not/absolute"}, b"data frame")
    r2 = c.call({"op": "ping"})
    report("refused_write_keeps_stream_in_step",
           r.get("error") == "invalid" and r2.get("ok") is True and "version" in r2, repr((r, r2)))
    r = c.call({"op": "read", "id": sid, "path": "/testbed/output/deep/dir/blob.bin", "max": 10})
    report("read_respects_max", r.get("error") == "toobig", repr(r))
    # ranges: any part of a file of any size, never past its end
    parts = []
    for off in (0, 10000, 20000):
        r = c.call({"op": "read", "id": sid, "path": "/testbed/output/deep/dir/blob.bin", "offset": off,
                    "max": 10000})
        parts.append((r.get("ok"), r.get("file_size"), r.get("_data")))
    report("read_ranges", all(ok and fs == len(payload) for ok, fs, _ in parts)
           and b"".join(d for _, _, d in parts) == payload[:20000] + payload[20000:30000],
           repr([(ok, fs, len(d or b"")) for ok, fs, d in parts]))
    r = c.call({"op": "read", "id": sid, "path": "/testbed/output/deep/dir/blob.bin", "offset": 1 << 40,
                "max": 100})
    report("read_range_past_end_is_empty", r.get("ok") and r.get("_data") == b"" and
           r.get("file_size") == len(payload), repr({k: v for k, v in r.items() if k != "_data"}))
    r = c.call({"op": "read", "id": sid, "path": "/testbed/output/deep/dir/blob.bin", "offset": -1})
    report("read_range_negative_refused", r.get("error") == "invalid", repr(r))
    r = c.call({"op": "write", "id": sid, "path": "/testbed/output/deep/dir/blob.bin",
                "excl": True}, b"x")
    report("write_excl", r.get("error") == "exists", repr(r))
    r = c.exec(sid, "md5sum < /testbed/output/deep/dir/blob.bin")
    import hashlib
    report("written_file_visible_inside",
           r.get("stdout", "").startswith(hashlib.md5(payload).hexdigest()), repr(r))
    r = c.call({"op": "list", "id": sid, "path": "/testbed/output", "max_depth": 5})
    ents = [(e["path"], e["type"]) for e in r.get("entries", [])]
    report("list", ents == [("deep", "dir"), ("deep/dir", "dir"), ("deep/dir/blob.bin", "file")],
           repr(r))
    r = c.call({"op": "stat", "id": sid, "path": "/testbed/output/deep/dir/blob.bin"})
    report("stat_file", r.get("type") == "file" and r.get("size") == len(payload), repr(r))
    r1 = c.call({"op": "list", "id": sid, "path": "/", "max_depth": 1})
    r2 = c.call({"op": "list", "id": sid, "path": "/", "max_depth": 1})
    names = [e["path"] for e in r1.get("entries", [])]
    report("list_root_twice", "testbed" in names and "proc" in names
           and r1.get("entries") == r2.get("entries"), repr(names))
    r = c.call({"op": "list", "id": sid, "path": "/", "max_depth": 2, "max_entries": 5})
    report("list_caps_entries", len(r.get("entries", [])) == 5 and r.get("truncated") is True,
           repr(r))
    r = c.call({"op": "stat", "id": sid, "path": "/testbed/output/nope"})
    report("stat_missing", r.get("type") == "missing", repr(r))

    # hostile symlinks: never followed by sandboxd
    c.exec(sid, "ln -s /etc/shadow /testbed/output/evil; ln -s / /testbed/output/rootlink")
    r = c.call({"op": "list", "id": sid, "path": "/testbed/output", "max_depth": 3})
    types = {e["path"]: e["type"] for e in r.get("entries", [])}
    report("symlink_listed_as_other",
           types.get("evil") == "other" and types.get("rootlink") == "other"
           and not any(p.startswith("rootlink/") for p in types), repr(types))
    r = c.call({"op": "read", "id": sid, "path": "/testbed/output/evil"})
    report("read_refuses_symlink", r.get("ok") is False and "_data" not in r, repr(r))
    r = c.call({"op": "read", "id": sid, "path": "/testbed/output/rootlink/etc/shadow"})
    report("read_refuses_symlinked_dir", r.get("ok") is False, repr(r))
    r = c.call({"op": "write", "id": sid, "path": "/testbed/output/rootlink/tmp/pwned"}, b"x")
    report("write_refuses_symlinked_dir", r.get("ok") is False and not os.path.exists("/tmp/pwned"),
           repr(r))
    r = c.call({"op": "write", "id": sid, "path": "/testbed/output/evil"}, b"replaced")
    r2 = c.exec(sid, "test -L /testbed/output/evil && echo link || cat /testbed/output/evil")
    report("write_replaces_symlink_not_target",
           r.get("ok") and r2.get("stdout") == "replaced", repr((r, r2)))
    r = c.call({"op": "read", "id": sid, "path": "/proc/1/environ"})
    report("proc_not_reachable_from_host_side", r.get("ok") is False, repr(r))
    r = c.call({"op": "read", "id": sid, "path": "/testbed/input/shadow-link"})
    report("input_symlink_not_copied", r.get("error") == "notfound", repr(r))

    # isolation
    r = c.exec(sid, "python3 -c 'import socket; print(sorted(n for _, n in socket.if_nameindex()))'; "
                    "hostname; echo x > /proc/sys/kernel/core_pattern 2>/dev/null || echo ro; "
                    "mount -t tmpfs t /mnt 2>/dev/null || echo nomount; "
                    "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\\t' ' '")
    report("network_only_lo_and_hardening",
           r.get("stdout") == "['lo']\nsandbox\nro\nnomount\nNoNewPrivs: 1\nSeccomp: 2\n", repr(r))
    r = c.exec(sid, "cat /proc/1/cmdline | tr '\\0' ' '; echo; cat /proc/1/environ 2>&1 | head -c 80")
    report("init_leaks_nothing",
           "sandboxd" not in r.get("stdout", "") and "LLMBOX" not in r.get("stdout", ""), repr(r))

    run_isolation(c, var, tmp, sock, sid)

    # memory limit
    t0 = time.time()
    r = c.exec(sid, "python3 -c 'a = bytearray(3 << 30); print(len(a))'", timeout_ms=30000)
    report("memory_limit_oom", r.get("state") == "oom" or (r.get("exit_code") in (137, 1)
           and "3221225472" not in r.get("stdout", "")), "%.1f s %r" % (time.time() - t0, r))
    r = c.exec(sid, "echo alive")
    report("alive_after_oom", r.get("stdout") == "alive\n", repr(r))

    # destroy leaves nothing
    ns = pidns_of(c, sid)
    # background jobs, and a tree deeper than PATH_MAX, must not survive
    c.exec(sid, "sleep 1000 & sleep 1000 & true")
    r = c.exec(sid, "cd /testbed/output && for i in $(seq 200); do mkdir " + "d" * 60 +
               " && cd " + "d" * 60 + " || break; done; pwd | wc -c")
    report("deep_tree_made", int(r.get("stdout", "0").strip() or 0) > 12000, repr(r))
    if c.call({"op": "ping"}).get("cgroup") != "rlimit":
        # the leftover check below finds the groups while they exist
        report("cgroups_found_while_alive", bool(cgroup_dirs(sid)), "no llmbox-*/%s group" % sid)
    r = c.call({"op": "destroy", "id": sid})
    left = wait_gone(var, sid, ns)
    report("destroy_leaves_nothing", r.get("ok") and ns.startswith("pid:[") and not left,
           "%r %r" % (r, left))
    r = c.call({"op": "destroy", "id": sid})
    report("destroy_is_idempotent", r.get("ok") is True, repr(r))

    # a second connection's sandbox is not visible here, and dies with it
    c2 = Conn(sock)
    sid2 = c2.call({"op": "create", "memory_mib": 128})["id"]
    r = c.exec(sid2, "true")
    report("sandboxes_are_per_connection", r.get("error") == "notfound", repr(r))
    ns2 = pidns_of(c2, sid2)
    c2.exec(sid2, "sleep 1000 &")
    c2.close()
    left = wait_gone(var, sid2, ns2)
    report("close_connection_destroys", not left, repr(left))

    # a closing connection in the middle of a command is fine too
    c3 = Conn(sock)
    sid3 = c3.call({"op": "create"})["id"]
    ns3 = pidns_of(c3, sid3)
    c3.send_frame(json.dumps({"op": "exec", "id": sid3, "command": "sleep 100",
                              "timeout_ms": 60000}).encode())
    time.sleep(0.2)
    c3.close()
    left = wait_gone(var, sid3, ns3)
    report("close_during_exec_destroys", not left, repr(left))

    # oversized frame: an error, then the connection is closed
    c4 = Conn(sock)
    c4.s.sendall(struct.pack(">I", 0xFFFFFFF0))
    try:
        r = json.loads(c4.recv_frame())
        closed = False
        try:
            c4.recv_frame()
        except (EOFError, ConnectionError):
            closed = True
        report("oversized_frame_refused", r.get("ok") is False and closed, repr(r))
    except Exception as e:  # noqa: BLE001
        report("oversized_frame_refused", False, repr(e))
    c4.close()

    r = c.call({"op": "ping"})
    report("daemon_still_serving", r.get("ok") and r.get("sandboxes") == 0, repr(r))
    c.close()


# ---- isolation: user namespace, ownership, quota, cgroups, seccomp ----------

UID_BASE = None  # learnt from ping, used by run_image_shift


def procs_in(ns):
    """Host view (/proc/<pid>/status) of every process in a pid namespace."""
    out = []
    for p in glob.glob("/proc/[0-9]*/ns/pid"):
        try:
            if os.readlink(p) != ns:
                continue
            d = os.path.dirname(os.path.dirname(p))
            with open(d + "/status") as f:
                st = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
            out.append({"pid": int(os.path.basename(d)), "name": st["Name"].strip(),
                        "uid": [int(x) for x in st["Uid"].split()],
                        "gid": [int(x) for x in st["Gid"].split()],
                        "nspid": int(st["NSpid"].split()[-1])})
        except (OSError, KeyError, ValueError, IndexError):
            pass
    return out


def init_root(ns):
    """/proc/<init>/root of a sandbox: its "/" as the host sees it."""
    for p in procs_in(ns):
        if p["nspid"] == 1:
            return "/proc/%d/root" % p["pid"]
    return None


def cgroup_file(sid, name):
    """Contents of a cgroup file of a sandbox (v2 or any v1 hierarchy), or None."""
    for f in glob.glob("/sys/fs/cgroup/*/llmbox-*/%s/%s" % (sid, name)) + \
            glob.glob("/sys/fs/cgroup/llmbox-*/%s/%s" % (sid, name)):
        with open(f) as fh:
            return fh.read().strip()
    return None


def as_user(user, fn):
    """Runs fn() in a child process with user's uid/gid; returns its JSON result."""
    pw = pwd.getpwnam(user)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            res = fn()
        except Exception as e:  # noqa: BLE001 - reported by the parent
            res = {"crash": "%s: %s" % (type(e).__name__, e)}
        os.write(wfd, json.dumps(res).encode())
        os._exit(0)
    os.close(wfd)
    data = b""
    while True:
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        data += chunk
    os.close(rfd)
    os.waitpid(pid, 0)
    return json.loads(data or b"{}")


SECCOMP_EXPECT = dict(
    {k: "EPERM" for k in (
        "mount umount2 pivot_root chroot open_tree move_mount fsopen fsconfig fsmount fspick "
        "mount_setattr open_tree_attr unshare setns ptrace process_vm_readv process_vm_writev "
        "kcmp pidfd_getfd bpf perf_event_open keyctl add_key request_key userfaultfd "
        "io_uring_setup io_uring_enter io_uring_register kexec_load kexec_file_load init_module "
        "finit_module delete_module settimeofday clock_settime clock_adjtime adjtimex reboot "
        "swapon swapoff acct quotactl lookup_dcookie name_to_handle_at open_by_handle_at "
        "personality_no_aslr personality_high_bits tiocsti tiocsti_high_bit tioclinux "
        "tioclinux_high_bit clone_newns clone_newcgroup clone_newuts clone_newipc clone_newuser "
        "clone_newpid clone_newnet").split()},
    clone3="ENOSYS", personality_query="ok", personality_linux32="ok", x32=-31, i386=-31)


def host_has_int80():
    """Whether this kernel runs i386 syscalls (int 0x80) from a 64-bit
    process at all, outside any sandbox. Some (a VM whose kernel takes
    #GP there, ia32_emulation=0) kill it with SIGSEGV before seccomp sees
    the call: then SIGSEGV inside the sandbox is the same refusal."""
    code = ("import ctypes, mmap; m = mmap.mmap(-1, 4096, prot=7); "
            "m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3])); "  # mov eax,20 (getpid); int 0x80; ret
            "f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m))); "
            "print(f())")
    return subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL).returncode == 0

# capabilities no sandbox process may ever hold
FORBIDDEN_CAPS = {"DAC_READ_SEARCH": 2, "NET_RAW": 13, "SYS_MODULE": 16, "SYS_RAWIO": 17,
                  "SYS_CHROOT": 18, "SYS_PTRACE": 19, "SYS_ADMIN": 21, "SYS_BOOT": 22,
                  "SYS_RESOURCE": 24, "SYS_TIME": 25, "MKNOD": 27, "BPF": 39}


def run_isolation(c, var, tmp, sock, sid):
    global UID_BASE
    base = c.call({"op": "ping"}).get("uid_base")
    report("ping_reports_uid_base", isinstance(base, int) and base >= ID_COUNT, repr(base))
    if not isinstance(base, int):
        return
    UID_BASE = base

    # user namespace: root inside, the first host uid of the sandbox's own
    # range outside (a slot above the images' range at BASE, or BASE itself
    # when the daemon has no slots), for every process
    slots = c.call({"op": "ping"}).get("uid_slots")
    r = c.exec(sid, "cat /proc/self/uid_map /proc/self/gid_map; id -u; sleep 100 & "
                    "(setsid sh -c 'sleep 300' </dev/null >/dev/null 2>&1 &); sleep 0.2")
    lines = r.get("stdout", "").splitlines()
    maps = [l.split() for l in lines[:2]]
    sbroot = int(maps[0][1]) if maps and len(maps[0]) == 3 and maps[0][1].isdigit() else -1
    in_slot = (sbroot == base) if slots == 0 else (
        sbroot >= base + ID_COUNT and (sbroot - base) % ID_COUNT == 0 and
        sbroot < base + (slots + 1) * ID_COUNT)
    report("userns_maps_root_to_own_range",
           isinstance(slots, int) and in_slot and maps == [["0", str(sbroot), str(ID_COUNT)]] * 2
           and lines[2:3] == ["0"], "slots %r: %r" % (slots, r))
    ns = pidns_of(c, sid)
    ps = procs_in(ns)
    bad = [p for p in ps if set(p["uid"]) != {sbroot} or set(p["gid"]) != {sbroot}]
    report("host_uid_of_sandbox_processes_is_its_root",
           len(ps) >= 4 and not bad and any(p["name"] == "sleep" for p in ps),
           "%d processes, not at %d: %r" % (len(ps), sbroot, bad))

    # root in the sandbox owns its system: writes to /usr and /etc (overlay
    # copy-up of BASE-owned image files), chown, and users of its own
    site = "/usr/local/lib/python3.11/dist-packages"
    r = c.exec(sid, "printf '#!/bin/sh\\necho tool-ok\\n' > /usr/bin/lbtool && chmod 755 /usr/bin/lbtool"
                    " && lbtool && echo 'lbgroup:x:4242:' >> /etc/group && grep -c '^lbgroup:' /etc/group"
                    " && sed -i 's/^/#/' /etc/hostname && chown 4242:4242 /etc/hostname"
                    " && stat -c %u:%g /etc/hostname && mkdir -p " + site +
                    " && echo 'V = 7' > " + site + "/lbpkg.py && python3 -c 'import lbpkg; print(lbpkg.V)'"
                    " && useradd -m -u 1234 lbuser && su -s /bin/sh lbuser -c 'touch ~/mine; id -u'")
    report("root_writes_usr_and_etc",
           r.get("stdout") == "tool-ok\n1\n4242:4242\n7\n1234\n" and r.get("exit_code") == 0,
           repr(r))
    root = init_root(ns)
    try:
        st = os.lstat(root + "/home/lbuser/mine")
        seen = (st.st_uid, st.st_gid)
    except (OSError, TypeError) as e:
        seen = repr(e)
    # (uid 1234: the image's own `user` is 1000)
    report("sandbox_user_1234_is_host_root_plus_1234", seen == (sbroot + 1234, sbroot + 1234),
           "%r (want %d)" % (seen, sbroot + 1234))

    # files sandboxd made (input copy, write RPC) belong to the sandbox's root
    r = c.exec(sid, "stat -c %u:%g:%a /testbed/input/data.csv /testbed/input/sub && "
                    "echo 3,4 >> /testbed/input/data.csv && rm -r /testbed/input/sub && echo edited")
    report("input_files_owned_and_editable",
           r.get("stdout") == "0:0:644\n0:0:755\nedited\n", repr(r))
    w = c.call({"op": "write", "id": sid, "path": "/testbed/output/new/dir/w.txt"}, b"written\n")
    r = c.exec(sid, "stat -c %u:%g /testbed/output/new /testbed/output/new/dir/w.txt && "
                    "echo more >> /testbed/output/new/dir/w.txt && rm -r /testbed/output/new && echo ok")
    report("written_files_owned_and_editable",
           w.get("ok") and r.get("stdout") == "0:0\n0:0\nok\n", repr((w, r)))

    # an unprivileged client: input read with its rights, copies owned by sandbox root
    if pwd.getpwnam("nobody"):
        mine = os.path.join(tmp, "nobody-input")
        os.makedirs(os.path.join(mine, "d"))
        with open(os.path.join(mine, "d", "f.txt"), "w") as f:
            f.write("from nobody\n")
        secret = os.path.join(tmp, "root-only")
        os.makedirs(secret)
        os.chmod(secret, 0o700)
        with open(os.path.join(secret, "s.txt"), "w") as f:
            f.write("secret\n")

        def client():
            cc = Conn(sock)
            res = {"denied": cc.call({"op": "create", "input_dir": secret})}
            r1 = cc.call({"op": "create", "input_dir": mine})
            res["create"] = r1
            if r1.get("ok"):
                res["exec"] = cc.exec(r1["id"], "stat -c %u:%g /testbed/input/d /testbed/input/d/f.txt"
                                                " && echo x >> /testbed/input/d/f.txt && echo ok")
            cc.close()
            return res

        res = as_user("nobody", client)
        report("unprivileged_client_input_copy",
               res.get("denied", {}).get("ok") is False and res.get("create", {}).get("ok")
               and res.get("exec", {}).get("stdout") == "0:0\n0:0\nok\n", repr(res))

    # mounts: every writable one nosuid+nodev (devpts holds only ptys), but
    # the root overlay, which is nodev and not nosuid (E2B's sudo:
    # docs/SANDBOX.md, "Privileges inside the sandbox"), no /sys, /proc's
    # host-wide files masked or read-only
    r = c.exec(sid, "cat /proc/self/mountinfo")
    bad, fstypes = [], []
    for line in r.get("stdout", "").splitlines():
        f = line.split()
        if " - " not in line or len(f) < 6:
            continue
        opts, fstype = f[5].split(","), line.split(" - ")[1].split()[0]
        fstypes.append(fstype)
        suid_ok = f[4] == "/" and fstype == "overlay"
        if "rw" in opts and not ((suid_ok or "nosuid" in opts) and ("nodev" in opts or fstype == "devpts")):
            bad.append(f[4] + " " + f[5])
    report("writable_mounts_nosuid_nodev", fstypes and not bad, repr(bad))
    r = c.exec(sid, "ls -A /sys | wc -l; for f in kcore kallsyms keys timer_list sched_debug kmsg "
                    "kpageflags; do [ -e /proc/$f ] && printf '%s=%s ' $f $(head -c 64 /proc/$f "
                    "2>/dev/null | wc -c); done; echo; (echo h > /proc/sysrq-trigger) 2>/dev/null "
                    "&& echo sysrq-writable; (echo 1 > /proc/sys/vm/drop_caches) 2>/dev/null && "
                    "echo sys-writable; echo end")
    out = r.get("stdout", "").splitlines()
    report("sys_absent", "sysfs" not in fstypes and out[:1] == ["0"], repr(r))
    report("proc_masked_and_readonly",
           len(out) == 3 and all(x.endswith("=0") for x in out[1].split()) and out[2] == "end",
           repr(r))

    # privileges: capability set, rlimits, sessions, fds
    r = c.exec(sid, "grep -E '^Cap(Eff|Bnd):' /proc/self/status | cut -f2; ulimit -c; "
                    "cut -d' ' -f6 /proc/$$/stat; echo $$; cut -d' ' -f6 /proc/1/stat; "
                    "for f in /proc/$$/fd/*; do readlink $f; done | grep -c socket")
    out = r.get("stdout", "").split()
    held = []
    if len(out) >= 2:
        for name, bit in FORBIDDEN_CAPS.items():
            if (int(out[0], 16) | int(out[1], 16)) >> bit & 1:
                held.append(name)
    report("no_dangerous_capabilities", len(out) == 7 and not held, "%r held=%r" % (r, held))
    report("core_dumps_off", out[2:3] == ["0"], repr(out))
    report("shell_and_init_lead_own_sessions", len(out) == 7 and out[3] == out[4] and out[5] == "1",
           repr(out))
    report("shell_has_no_socket_fds", out[6:7] == ["0"], repr(out))

    # networking inside its own namespace: low ports and ICMP echo sockets
    r = c.exec(sid, "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 80)); "
                    "socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP); print(1)'")
    report("low_ports_and_ping_sockets", r.get("stdout") == "1\n", repr(r))

    # seccomp: each denied syscall answers as designed
    w = c.call({"op": "write", "id": sid, "path": "/tmp/seccomp_probe.py"},
               open(os.path.join(HERE, "seccomp_probe.py"), "rb").read())
    r = c.exec(sid, "python3 /tmp/seccomp_probe.py", timeout_ms=30000)
    try:
        got = json.loads(r.get("stdout", "").strip().splitlines()[-1])
    except (ValueError, IndexError):
        got = {}
    report("seccomp_probe_ran", w.get("ok") and bool(got), repr(r))
    expect = dict(SECCOMP_EXPECT)
    if not host_has_int80():
        expect["i386"] = -int(signal.SIGSEGV)  # no i386 entry on this kernel: nothing to reach
    for name, want in sorted(expect.items()):
        if got:
            report("seccomp_" + name, got.get(name) == want, "got %r, want %r" % (got.get(name), want))

    # disk quota: one tmpfs for the writable layer and /tmp, ENOSPC at the quota
    q = c.call({"op": "create", "disk_mib": 32, "memory_mib": 512})
    qid = q.get("id")
    r = c.exec(qid, "df -m / /tmp | awk 'NR > 1 {print $2}'; ulimit -f; "
                    "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1 | grep -c 'No space left'; "
                    "rm /tmp/fill; python3 -c 'import errno\ntry:\n    open(\"/usr/big\", \"wb\")"
                    ".write(bytes(40 << 20))\nexcept OSError as e:\n    print(errno.errorcode[e.errno])'; "
                    "rm -f /usr/big; echo fine > /usr/after && cat /usr/after")
    report("disk_quota_enospc", r.get("stdout") == "32\n32\n33792\n1\nENOSPC\nfine\n", repr(r))
    w = c.call({"op": "write", "id": qid, "path": "/testbed/output/big.bin"}, bytes(40 << 20))
    report("write_rpc_hits_disk_quota", w.get("error") == "toobig" and "space" in w.get("message", ""),
           repr(w))
    c.call({"op": "destroy", "id": qid})

    # cgroups: cpu quota, swap off
    mode = c.call({"op": "ping"}).get("cgroup")
    if mode == "rlimit":
        print("SKIP cpu_limit: no writable cgroups (rlimit mode)")
    else:
        cp = c.call({"op": "create", "cpu_milli": 250, "memory_mib": 256})
        cid = cp.get("id")
        v1 = (cgroup_file(cid, "cpu.cfs_quota_us"), cgroup_file(cid, "cpu.cfs_period_us"))
        v2 = cgroup_file(cid, "cpu.max")
        if v1 == (None, None) and v2 is None:
            print("SKIP cpu_limit: no cpu controller")
        else:
            report("cpu_limit_in_cgroup", v1 == ("25000", "100000") or v2 == "25000 100000",
                   repr((v1, v2)))
            r = c.exec(cid, "python3 -c 'import time\nt, c = time.time(), time.process_time()\n"
                            "while time.time() - t < 1.5: pass\n"
                            "print(round((time.process_time() - c) / 1.5, 2))'")
            try:
                frac = float(r.get("stdout", "x"))
            except ValueError:
                frac = None
            report("cpu_limit_enforced", frac is not None and frac < 0.5,
                   "a busy loop got %r of a core at cpu_milli 250" % frac)
        lim, memsw = cgroup_file(cid, "memory.limit_in_bytes"), cgroup_file(cid, "memory.memsw.limit_in_bytes")
        swapmax = cgroup_file(cid, "memory.swap.max")
        if memsw is None and swapmax is None:
            print("SKIP swap_off: no swap accounting in this kernel")
        else:
            report("swap_off", swapmax == "0" or (memsw is not None and memsw == lim),
                   repr((lim, memsw, swapmax)))
        c.call({"op": "destroy", "id": cid})

    # destroy kills a double-forked, session-leading daemon through the cgroup
    d = c.call({"op": "create"})
    did = d.get("id")
    dns = pidns_of(c, did)
    c.exec(did, "(setsid sh -c 'trap \"\" HUP INT TERM; while :; do sleep 1; done' "
                "</dev/null >/dev/null 2>&1 &); sleep 0.3")
    daemon = [p["pid"] for p in procs_in(dns) if p["name"] == "sh"]
    if mode == "v2":
        mech = bool(glob.glob("/sys/fs/cgroup/llmbox-*/%s/cgroup.kill" % did))
    elif mode == "v1":
        mech = bool(glob.glob("/sys/fs/cgroup/freezer/llmbox-*/%s/freezer.state" % did))
    else:
        mech = None
    if mech is not None:
        report("cgroup_kill_mechanism", mech, "no freezer group / cgroup.kill for %s" % did)
    r = c.call({"op": "destroy", "id": did})
    left = wait_gone(var, did, dns)
    report("destroy_kills_setsid_daemon",
           r.get("ok") and daemon and not left and not any(os.path.exists("/proc/%d" % p) and
                                                            os.readlink("/proc/%d/ns/pid" % p) == dns
                                                            for p in daemon),
           "daemon %r left %r" % (daemon, left))


def run_image_shift(tmp, env):
    """Image ownership shift at sandboxd start, on a synthetic image store."""
    base = UID_BASE
    if base is None:
        print("SKIP image_shift: no uid base from ping")
        return
    store = os.path.join(tmp, "images")

    def mkimage(name, complete=True, stamp=None):
        root = os.path.join(store, name, "rootfs")
        os.makedirs(root)
        if complete:
            open(os.path.join(store, name, ".complete"), "w").close()
        if stamp is not None:
            with open(os.path.join(store, name, ".idmap"), "w") as f:
                f.write("base %d count %d\n" % (stamp, ID_COUNT))
        return root

    def mkfile(path, uid, gid, mode=0o644):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("x\n")
        os.chown(path, uid, gid)
        os.chmod(path, mode)

    t = mkimage("tiny")
    outside = os.path.join(tmp, "outside")
    mkfile(outside, 0, 0)
    mkfile(t + "/a", 0, 0)
    mkfile(t + "/b", 42, 42)
    os.link(t + "/b", t + "/h")
    mkfile(t + "/home/u/f", 1000, 1000)
    os.chown(t + "/home/u", 1000, 1000)
    mkfile(t + "/s", 0, 0, 0o4755)
    mkfile(t + "/g", 0, 42, 0o2755)
    mkfile(t + "/far", 70000, 70000)
    os.symlink(outside, t + "/link")
    has_setcap = subprocess.call(["setcap", "cap_net_bind_service+ep", t + "/a"],
                                 stderr=subprocess.DEVNULL) == 0 if os.path.exists(
                                     "/usr/sbin/setcap") else False
    old = base - 10 * ID_COUNT
    o = mkimage("old", stamp=old)
    mkfile(o + "/f", old + 7, old + 7)
    mkfile(o + "/u", 3, 3)
    cl = mkimage("clash", stamp=base + 100)
    mkfile(cl + "/f", 0, 0)
    bl = mkimage("building", complete=False)
    mkfile(bl + "/f", 0, 0)

    sock2 = os.path.join(tmp, "sd2.sock")
    env2 = dict(env, LLMBOX_IMAGE_STORE=store, LLMBOX_VAR=os.path.join(tmp, "var2"))
    log2 = open(os.path.join(tmp, "sandboxd2.log"), "w")
    proc = subprocess.Popen([BIN, "sandboxd", "--socket", sock2], env=env2, stdout=log2,
                            stderr=log2, cwd=REPO)
    try:
        for _ in range(200):
            if os.path.exists(sock2) or proc.poll() is not None:
                break
            time.sleep(0.05)
        # the socket is there before the images are shifted (lock and socket
        # first); sandboxd answers only once that is done
        with Conn(sock2) as cc:
            cc.call({"op": "ping"})

        def own(p):
            st = os.lstat(p)
            return (st.st_uid, st.st_gid)

        with open(os.path.join(store, "tiny", ".idmap")) as f:
            stamp = f.read()
        report("image_shift_stamp", stamp == "base %d count %d\n" % (base, ID_COUNT), repr(stamp))
        want = {"rootfs": (base, base), "a": (base, base), "b": (base + 42, base + 42),
                "h": (base + 42, base + 42), "home/u": (base + 1000, base + 1000),
                "home/u/f": (base + 1000, base + 1000), "s": (base, base),
                "g": (base, base + 42), "far": (70000, 70000), "link": (base, base)}
        got = {k: own(os.path.join(t, k) if k != "rootfs" else t) for k in want}
        report("image_shift_owners", got == want, "got %r" % got)
        report("image_shift_hardlink_once", os.lstat(t + "/h").st_ino == os.lstat(t + "/b").st_ino
               and own(t + "/h") == (base + 42, base + 42), repr(own(t + "/h")))
        report("image_shift_keeps_setuid_setgid",
               os.lstat(t + "/s").st_mode & 0o7777 == 0o4755 and os.lstat(t + "/g").st_mode & 0o7777 == 0o2755,
               "%o %o" % (os.lstat(t + "/s").st_mode, os.lstat(t + "/g").st_mode))
        report("image_shift_never_follows_symlinks", own(outside) == (0, 0), repr(own(outside)))
        report("image_dir_root_only", os.stat(os.path.join(store, "tiny")).st_mode & 0o777 == 0o700,
               "%o" % os.stat(os.path.join(store, "tiny")).st_mode)
        if has_setcap:
            cap = os.getxattr(t + "/a", "security.capability", follow_symlinks=False)
            report("image_shift_keeps_file_caps_rooted_at_base",
                   len(cap) == 24 and int.from_bytes(cap[20:24], "little") == base, cap.hex())
        report("image_shift_from_older_base",
               own(o + "/f") == (base + 7, base + 7) and own(o + "/u") == (base + 3, base + 3),
               repr((own(o + "/f"), own(o + "/u"))))
        report("image_shift_overlapping_base_refused", own(cl + "/f") == (0, 0), repr(own(cl + "/f")))
        report("image_being_built_untouched", own(bl + "/f") == (0, 0), repr(own(bl + "/f")))
        cc = Conn(sock2)
        r = cc.call({"op": "create", "image": "clash"})
        report("unshifted_image_never_used",
               r.get("ok") is False and "uid range" in r.get("message", ""), repr(r))
        cc.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log2.close()



if __name__ == "__main__":
    sys.exit(main())
