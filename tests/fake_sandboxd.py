#!/usr/bin/env python3
"""A stand-in for `llmbox sandboxd` to test the agent loop without root.

NOT a sandbox: commands run on the host as the calling user. It speaks the
wire protocol of include/llmbox/sandbox.h (4-byte big-endian length frames,
JSON requests, a data frame for write/read) on a unix socket, and maps the
sandbox's /testbed to <root>/<id>/testbed on the host. Commands run with
bash in that directory, so scenarios should use relative paths in bash
(e.g. `echo hi > output/x.txt`); file operations (read/write/list/stat)
take absolute sandbox paths under /testbed as usual. The shell is not
persistent (each exec is a new bash).

Usage: python3 tests/fake_sandboxd.py --socket PATH --root DIR
Prints "READY" on stdout once listening.
"""
import argparse
import json
import os
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time


def recv_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def recv_frame(conn):
    (n,) = struct.unpack(">I", recv_exact(conn, 4))
    return recv_exact(conn, n)


def send_frame(conn, data):
    conn.sendall(struct.pack(">I", len(data)) + data)


class Sandboxes:
    def __init__(self, root):
        self.root = root
        self.lock = threading.Lock()
        self.boxes = {}

    def host_path(self, sid, path):
        if not path.startswith("/"):
            raise ValueError("invalid")
        base = os.path.join(self.root, sid)
        full = os.path.normpath(os.path.join(base, path.lstrip("/")))
        if not (full == base or full.startswith(base + "/")):
            raise ValueError("invalid")
        return full


def handle(conn, sb):
    mine = []

    def reply(obj, data=None):
        if data is not None:
            obj["data"] = True
        send_frame(conn, json.dumps(obj).encode())
        if data is not None:
            send_frame(conn, data)

    def err(code, msg):
        reply({"ok": False, "error": code, "message": msg})

    try:
        while True:
            req = json.loads(recv_frame(conn))
            data = recv_frame(conn) if req.get("data") else None
            op = req.get("op")
            sid = req.get("id")
            if op == "ping":
                reply({"ok": True, "version": "fake", "sandboxes": len(sb.boxes), "cgroup": "rlimit"})
                continue
            if op == "create":
                sid = secrets.token_hex(16)
                tb = os.path.join(sb.root, sid, "testbed")
                os.makedirs(os.path.join(tb, "output"))
                if req.get("input_dir"):
                    shutil.copytree(req["input_dir"], os.path.join(tb, "input"))
                else:
                    os.makedirs(os.path.join(tb, "input"))
                sb.boxes[sid] = True
                mine.append(sid)
                reply({"ok": True, "id": sid})
                continue
            if sid not in sb.boxes:
                err("notfound", "no such sandbox")
                continue
            try:
                if op == "exec":
                    t0 = time.time()
                    tb = os.path.join(sb.root, sid, "testbed")
                    tmo = (req.get("timeout_ms") or 120000) / 1000.0
                    try:
                        p = subprocess.run(["bash", "-c", req["command"]], cwd=tb, capture_output=True,
                                           timeout=tmo)
                        st, code, out, er = "exited", p.returncode, p.stdout, p.stderr
                    except subprocess.TimeoutExpired as e:
                        st, code, out, er = "timeout", -1, e.stdout or b"", e.stderr or b""
                    reply({"ok": True, "state": st, "exit_code": code,
                           "stdout": out.decode("utf-8", "replace"), "stderr": er.decode("utf-8", "replace"),
                           "truncated": False, "duration_ms": int((time.time() - t0) * 1000)})
                elif op == "write":
                    hp = sb.host_path(sid, req["path"])
                    if req.get("excl") and os.path.lexists(hp):
                        err("exists", "file exists")
                        continue
                    os.makedirs(os.path.dirname(hp), exist_ok=True)
                    with open(hp, "wb") as f:
                        f.write(data or b"")
                    reply({"ok": True})
                elif op == "read":
                    hp = sb.host_path(sid, req["path"])
                    if not os.path.exists(hp):
                        err("notfound", "no such file")
                        continue
                    if os.path.isdir(hp):
                        err("isdir", "is a directory")
                        continue
                    if os.path.getsize(hp) > req.get("max", 1 << 30):
                        err("toobig", "file too big")
                        continue
                    with open(hp, "rb") as f:
                        d = f.read()
                    reply({"ok": True, "size": len(d)}, d)
                elif op == "stat":
                    hp = sb.host_path(sid, req["path"])
                    if os.path.islink(hp):
                        t = "other"
                    elif os.path.isfile(hp):
                        t = "file"
                    elif os.path.isdir(hp):
                        t = "dir"
                    elif os.path.lexists(hp):
                        t = "other"
                    else:
                        t = "missing"
                    reply({"ok": True, "type": t, "size": os.path.getsize(hp) if t == "file" else 0})
                elif op == "list":
                    hp = sb.host_path(sid, req["path"])
                    if not os.path.isdir(hp):
                        err("notfound", "no such directory")
                        continue
                    depth = req.get("max_depth", 1)
                    ents = []
                    for dirpath, dirs, files in os.walk(hp):
                        rel = os.path.relpath(dirpath, hp)
                        level = 0 if rel == "." else rel.count("/") + 1
                        for name in sorted(dirs + files):
                            full = os.path.join(dirpath, name)
                            r = name if rel == "." else rel + "/" + name
                            if os.path.islink(full):
                                t = "other"
                            elif os.path.isdir(full):
                                t = "dir"
                            elif os.path.isfile(full):
                                t = "file"
                            else:
                                t = "other"
                            ents.append({"path": r, "type": t,
                                         "size": os.path.getsize(full) if t == "file" else 0})
                        if level + 1 >= depth:
                            dirs[:] = []
                    ents.sort(key=lambda e: e["path"])
                    reply({"ok": True, "entries": ents[: req.get("max_entries", 100000)]})
                elif op == "destroy":
                    shutil.rmtree(os.path.join(sb.root, sid), ignore_errors=True)
                    sb.boxes.pop(sid, None)
                    reply({"ok": True})
                else:
                    err("invalid", "unknown op")
            except ValueError:
                err("invalid", "bad path")
    except (EOFError, ConnectionError):
        pass
    finally:
        for sid in mine:
            shutil.rmtree(os.path.join(sb.root, sid), ignore_errors=True)
            sb.boxes.pop(sid, None)
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    os.makedirs(a.root, exist_ok=True)
    if os.path.exists(a.socket):
        os.unlink(a.socket)
    os.makedirs(os.path.dirname(os.path.abspath(a.socket)), exist_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(a.socket)
    s.listen(16)
    sb = Sandboxes(a.root)
    print("READY", flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c, sb), daemon=True).start()


if __name__ == "__main__":
    main()
