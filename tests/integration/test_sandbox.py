#!/usr/bin/env python3
"""Integration test of `llmbox sandboxd` (python3 stdlib only, run as root).

Starts its own sandboxd on a temporary socket, with LLMBOX_VAR in a temp dir
and LLMBOX_IMAGE_STORE at <repo>/var/images, and talks the framing protocol
of include/llmbox/sandbox.h directly. Prints "PASS name" / "FAIL name: why"
per check, or "SKIP ..." when the image is not built.

    python3 tests/integration/test_sandbox.py      (from the repo root)

LLMBOX_BIN overrides the binary (default $BUILD/llmbox, BUILD=build).
"""
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import (BIN, IMAGES, Conn, Daemon, pidns_of, wait_gone)  # noqa: E402

failed = 0


def report(name, ok, why=""):
    global failed
    if ok:
        print("PASS %s" % name, flush=True)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why), flush=True)


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

    try:
        d = Daemon().start()
    except RuntimeError as e:
        report("sandboxd_starts", False, str(e))
        return 1
    try:
        try:
            run(d.tmp, d.var, d.sock)
        except Exception as e:  # noqa: BLE001 - a crash of the test is one failure
            report("run", False, "%s: %s" % (type(e).__name__, e))
        # SIGTERM: exits 0, removes its socket
        rc = d.terminate()
        report("sigterm_exits_cleanly", rc == 0 and not os.path.exists(d.sock),
               "rc=%r socket_left=%r" % (rc, os.path.exists(d.sock)))
    finally:
        d.stop(dump_log=bool(failed))
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
    # 0.5 s timeout + 0.5 s of SIGINT to the foreground group + 1 s of SIGKILL
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


if __name__ == "__main__":
    sys.exit(main())
