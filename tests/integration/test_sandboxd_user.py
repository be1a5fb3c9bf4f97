#!/usr/bin/env python3
"""A named user of proc_start and write (E2B's `user`; sandboxd/image_user.h),
at the RPC level against a real sandboxd (python3 stdlib only, run as root):

  - "user" runs as uid 1000 with its groups from the sandbox's /etc/group,
    its HOME, USER and LOGNAME, without no_new_privs, under the seccomp
    filter; sudo raises to the sandbox's root, still under the filter;
  - no user: the image's own (root), with no_new_privs, as before;
  - write with "user": the file and the folders it makes are uid 1000's;
  - refusals that run nothing and write nothing, each with a sentence: a
    user that is not a string, a name that is no name, a user the sandbox
    does not have, an /etc/passwd that is a symlink, a fifo or over 256 KiB;
  - "root" works whatever the sandbox did to its /etc/passwd;
  - write's "meta" (E2B's file metadata): malformed ones refused, nothing
    written; a good one comes back in stat;
  - read, write, list and stat with "user" have that user's permissions
    ("denied" where it may not), symlinks still refused; root's after;
  - fs_change (E2B's makeDir, rename, remove) the same, with no tool of the
    image: a refused one changes nothing.

    python3 tests/integration/test_sandboxd_user.py   (from the repo root)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import Daemon, Reporter, skip_reason  # noqa: E402


def run(c, sid, argv, **kw):
    """Starts argv attached; returns (stdout, exit code)."""
    r = c.call(dict(kw, op="proc_start", id=sid, argv=argv, attach=True))
    assert r.get("ok"), r
    out, code = b"", None
    while True:
        e = c.recv()
        if e.get("event") == "out" and e.get("fd") == 1:
            out += e.get("_data", b"")
        if e.get("event") in ("exit", "gone"):
            code = e.get("exit_code")
            break
    return out.decode(), code


def status_flags(text):
    return dict(l.split(":\t") for l in text.splitlines() if l.startswith(("NoNewPrivs:", "Seccomp:")))


def check_user_and_sudo(d):
    c = d.connect()
    sid = c.create()
    out, code = run(c, sid, ["sh", "-c", "id -u; id -g; id -G; echo $HOME $USER $LOGNAME"], user="user")
    lines = out.splitlines()
    assert code == 0 and lines[0:2] == ["1000", "1000"], out
    assert "27" in lines[2].split(), ("the sudo group from /etc/group", out)
    assert lines[3] == "/home/user user user", out
    out, _ = run(c, sid, ["cat", "/proc/self/status"], user="user")
    assert status_flags(out) == {"NoNewPrivs": "0", "Seccomp": "2"}, status_flags(out)
    out, code = run(c, sid, ["sudo", "-n", "sh", "-c", "id -u; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; "
                             "unshare -U true 2>/dev/null && echo unshared || echo refused"], user="user")
    assert code == 0 and out.split("\n")[0] == "0" and "Seccomp:\t2" in out and out.endswith("refused\n"), out
    # no user: the image's own, with no_new_privs (the shell's confinement)
    out, _ = run(c, sid, ["sh", "-c", "id -u; cat /proc/self/status"])
    assert out.startswith("0\n") and status_flags(out) == {"NoNewPrivs": "1", "Seccomp": "2"}, out
    c.destroy(sid)


def check_write_owner(d):
    c = d.connect()
    sid = c.create()
    r = c.call({"op": "write", "id": sid, "path": "/tmp/w/deep/f.txt", "user": "user"}, b"x")
    assert r.get("ok"), r
    r = c.call({"op": "write", "id": sid, "path": "/tmp/r.txt"}, b"x")
    assert r.get("ok"), r
    out = c.exec(sid, "stat -c '%u:%g' /tmp/w /tmp/w/deep /tmp/w/deep/f.txt /tmp/r.txt")["stdout"]
    assert out == "1000:1000\n1000:1000\n1000:1000\n0:0\n", out
    c.destroy(sid)


def check_owner_only(d):
    """owner_only (E2B's envd: file calls made as root, what they make the
    user's): a write and a mkdir into root's /etc as `user` are made and are
    user's, a rename and remove of root's files are made; without it, the
    same calls are refused (the user's permissions)."""
    c = d.connect()
    sid = c.create()
    r = c.call({"op": "write", "id": sid, "path": "/etc/o/deep.txt", "user": "user"}, b"x")
    assert not r.get("ok") and r.get("error") == "denied", r
    r = c.call({"op": "write", "id": sid, "path": "/etc/o/deep.txt", "user": "user", "owner_only": True}, b"x")
    assert r.get("ok"), r
    r = c.call({"op": "fs_change", "id": sid, "action": "mkdir", "path": "/etc/od/sub", "user": "user",
                "owner_only": True})
    assert r.get("ok"), r
    c.exec(sid, "echo r > /etc/rf1; echo r > /etc/rf2")
    for req in ({"action": "rename", "path": "/etc/rf1", "dest": "/etc/rf3"}, {"action": "remove", "path": "/etc/rf2"}):
        r = c.call(dict(req, op="fs_change", id=sid, user="user", owner_only=True))
        assert r.get("ok"), (req, r)
    out = c.exec(sid, "stat -c '%u:%g' /etc/o /etc/o/deep.txt /etc/od /etc/od/sub; "
                 "test -e /etc/rf3 && test ! -e /etc/rf1 && test ! -e /etc/rf2 && echo moved")["stdout"]
    assert out == "1000:1000\n1000:1000\n1000:1000\n1000:1000\nmoved\n", out
    r = c.call({"op": "write", "id": sid, "path": "/tmp/x", "user": "user", "owner_only": "yes"}, b"x")
    assert not r.get("ok") and r.get("error") == "invalid" and "owner_only" in r.get("message", ""), r
    c.destroy(sid)


def check_refusals(d):
    c = d.connect()
    sid = c.create()
    for user, want in [(7, "user"), ("a b", "name"), ("", "name"), ("x" * 40, "name"), ("ghost", "ghost")]:
        r = c.call({"op": "proc_start", "id": sid, "argv": ["touch", "/tmp/ran"], "user": user})
        assert not r.get("ok") and want in r.get("message", ""), (user, r)
        r = c.call({"op": "write", "id": sid, "path": "/tmp/written", "user": user}, b"x")
        assert not r.get("ok") and want in r.get("message", ""), (user, r)
    assert c.exec(sid, "ls /tmp/ran /tmp/written 2>&1 | grep -c 'No such'")["stdout"] == "2\n", "nothing ran or was written"
    # the sandbox's own /etc/passwd, made hostile: never followed or read past the cap
    for setup, want in [("ln -sf /tmp/pw /etc/passwd", "symlinks"), ("mkfifo /etc/passwd", "not a regular file"),
                        ("head -c 300000 /dev/zero > /etc/passwd", "over")]:
        c.exec(sid, "cp -n /etc/passwd /tmp/pw; rm -f /etc/passwd; " + setup)
        r = c.call({"op": "proc_start", "id": sid, "argv": ["true"], "user": "user"})
        assert not r.get("ok") and want in r.get("message", ""), (setup, r)
        out, code = run(c, sid, ["id", "-u"], user="root")
        assert (out, code) == ("0\n", 0), ("root works whatever the files say", setup, out, code)
    c.exec(sid, "rm -f /etc/passwd; cp /tmp/pw /etc/passwd")
    assert run(c, sid, ["id", "-un"], user="user") == ("user\n", 0)
    c.destroy(sid)


def check_meta_refusals(d):
    """E2B's file metadata on write: anything but an object of at most 32 token
    keys with short printable values is refused, nothing written."""
    c = d.connect()
    sid = c.create()
    bad = ["v", {"k": 1}, {"a b": "v"}, {"k": "a\x01"}, {"k": "v" * 1025}, {"k" * 65: "v"},
           {"k%d" % i: "v" for i in range(33)}]
    for meta in bad:
        r = c.call({"op": "write", "id": sid, "path": "/tmp/m.txt", "meta": meta}, b"x")
        assert not r.get("ok") and "meta" in r.get("message", ""), (meta, r)
    assert c.exec(sid, "test -e /tmp/m.txt && echo yes || echo no")["stdout"] == "no\n"
    r = c.call({"op": "write", "id": sid, "path": "/tmp/m.txt", "meta": {"k": "v", "x-y": "z w"}}, b"x")
    assert r.get("ok"), r
    r = c.call({"op": "stat", "id": sid, "path": "/tmp/m.txt"})
    assert r.get("meta") == {"k": "v", "x-y": "z w"}, r
    c.destroy(sid)


def check_file_calls_as_the_user(d):
    """read, write, list and stat with "user" have that user's permissions
    (the loop thread takes its filesystem ids and groups), answered "denied";
    root's calls, and another sandbox's, right after have root's again; a
    symlink in the path is still refused, not followed, as the user."""
    c = d.connect()
    sid, other = c.create(), c.create()
    c.exec(sid, "echo s3 > /tmp/secret && chmod 600 /tmp/secret && mkdir -m 700 /srv/closed && "
                "mkdir -m 711 /srv/pass && echo hi > /srv/pass/f && chmod 644 /srv/pass/f && "
                "groupadd -g 2345 devs && usermod -aG devs user && mkdir -m 770 /srv/team && chgrp devs /srv/team && "
                "ln -s /etc /home/user/etclink")
    for req, data in [({"op": "write", "path": "/etc/x"}, b"no"), ({"op": "write", "path": "/etc/newdir/x"}, b"no"),
                      ({"op": "read", "path": "/tmp/secret", "max": 100}, None),
                      ({"op": "list", "path": "/srv/closed", "max_depth": 1, "max_entries": 10}, None),
                      ({"op": "stat", "path": "/srv/closed/x"}, None)]:
        r = c.call(dict(req, id=sid, user="user"), data)
        assert not r.get("ok") and r.get("error") == "denied" and "ermission denied" in r.get("message", ""), (req, r)
    assert c.exec(sid, "ls -d /etc/x /etc/newdir 2>&1 | grep -c 'No such'")["stdout"] == "2\n", "nothing written"
    # through a folder it may only search (0711): as any path the user opens
    r = c.call({"op": "read", "id": sid, "path": "/srv/pass/f", "max": 100, "user": "user"})
    assert r.get("ok") and r.get("_data") == b"hi\n", r
    # a group of /etc/group (devs) opens the group's folder
    r = c.call({"op": "write", "id": sid, "path": "/srv/team/t.txt", "user": "user"}, b"t")
    assert r.get("ok"), r
    # a symlink on the way is refused as ever, never followed to /etc
    r = c.call({"op": "write", "id": sid, "path": "/home/user/etclink/y", "user": "user"}, b"no")
    assert not r.get("ok") and "symlinks" in r.get("message", ""), r
    # right after, root's calls (this sandbox's and another's) are root's
    for s in (sid, other):
        r = c.call({"op": "write", "id": s, "path": "/etc/rootwrite"}, b"ok")
        assert r.get("ok"), r
    r = c.call({"op": "read", "id": sid, "path": "/tmp/secret", "max": 100, "user": "root"})
    assert r.get("ok") and r.get("_data") == b"s3\n", r
    r = c.call({"op": "list", "id": sid, "path": "/srv/closed", "max_depth": 1, "max_entries": 10})
    assert r.get("ok"), r
    out = c.exec(sid, "stat -c '%u:%g' /srv/team/t.txt /etc/rootwrite")["stdout"]
    assert out == "1000:1000\n0:0\n", out
    c.destroy(sid)
    c.destroy(other)


def check_fs_change_as_the_user(d):
    """fs_change as "user": refused ("denied") in /etc and a 0700 root folder
    with nothing changed, even with setpriv gone from the image; done in
    its home (what it makes is its own), a file moved to /tmp by a copy;
    a symlink on the way refused; root does what user may not."""
    c = d.connect()
    sid = c.create()
    c.exec(sid, "rm -f /usr/bin/setpriv /bin/setpriv; mkdir -m 700 /srv/closed && echo x > /srv/closed/f && "
                "mkdir /etc/rootdir && ln -s /etc /home/user/etclink")

    def fs(action, path, dest=None, user="user"):
        req = {"op": "fs_change", "id": sid, "action": action, "path": path}
        if dest:
            req["dest"] = dest
        if user:
            req["user"] = user
        return c.call(req)

    for args in [("mkdir", "/etc/newd"), ("mkdir", "/srv/closed/sub"), ("rename", "/etc/hostname", "/etc/h2"),
                 ("rename", "/etc/hostname", "/home/user/h"), ("rename", "/srv/closed/f", "/tmp/f"),
                 ("remove", "/etc/hostname"), ("remove", "/etc/rootdir"), ("remove", "/srv/closed")]:
        r = fs(*args)
        assert not r.get("ok") and r.get("error") == "denied" and "ermission denied" in r.get("message", ""), (args, r)
    out = c.exec(sid, "ls -d /etc/newd /etc/h2 /home/user/h /tmp/f /srv/closed/sub 2>&1 | grep -c 'No such'; "
                      "cat /srv/closed/f; test -d /etc/rootdir && test -f /etc/hostname && echo kept")["stdout"]
    assert out == "5\nx\nkept\n", out
    r = fs("mkdir", "/home/user/etclink/newd")
    assert not r.get("ok") and "symlinks" in r.get("message", ""), r
    # its own home: made, moved (to /tmp: another filesystem, copied), removed
    for args in [("mkdir", "/home/user/w/a/b"), ("mkdir", "/home/user/w/a/b"), ("rename", "/home/user/w/a", "/home/user/w/c")]:
        r = fs(*args)
        assert r.get("ok"), (args, r)
    c.exec(sid, "echo f > /home/user/w/c/f.txt && chown user:user /home/user/w/c/f.txt && chmod 640 /home/user/w/c/f.txt")
    r = fs("rename", "/home/user/w/c/f.txt", "/tmp/f.txt")
    assert r.get("ok"), r
    out = c.exec(sid, "stat -c '%u:%g:%a' /home/user/w /home/user/w/c/b /tmp/f.txt; cat /tmp/f.txt; "
                      "test -e /home/user/w/c/f.txt || echo moved")["stdout"]
    assert out == "1000:1000:755\n1000:1000:755\n1000:1000:640\nf\nmoved\n", out
    for args in [("remove", "/home/user/w"), ("remove", "/home/user/none")]:
        r = fs(*args)
        assert r.get("ok"), (args, r)
    assert c.exec(sid, "test -e /home/user/w || echo gone")["stdout"] == "gone\n"
    # malformed: refused with a sentence
    for args in [("chmod", "/tmp/x"), ("rename", "/tmp/f.txt"), ("remove", "/"), ("rename", "/tmp/f.txt", "/")]:
        r = fs(*args)
        assert not r.get("ok") and r.get("error") == "invalid" and r.get("message"), (args, r)
    # never into another filesystem, not even as root: proc, a mount point
    # (the web runs root's in the sandbox's shell), a root file to /tmp
    c.exec(sid, "echo r > /home/user/r.txt")
    for args in [("remove", "/proc/sys"), ("remove", "/dev/pts"), ("rename", "/home/user/r.txt", "/tmp/r.txt")]:
        r = fs(*args, user=None)
        assert not r.get("ok") and r.get("error") == "invalid" and r.get("message"), (args, r)
    assert c.exec(sid, "test -f /home/user/r.txt && test -d /dev/pts && test ! -e /tmp/r.txt && echo kept")["stdout"] == "kept\n"
    # root: all of it
    for args in [("mkdir", "/etc/newd"), ("rename", "/etc/rootdir", "/etc/rootdir2"), ("remove", "/srv/closed")]:
        r = fs(*args, user=None)
        assert r.get("ok"), (args, r)
    out = c.exec(sid, "stat -c %u:%g /etc/newd; test -d /etc/rootdir2 && test ! -e /srv/closed && echo done")["stdout"]
    assert out == "0:0\ndone\n", out
    c.destroy(sid)


def main():
    p = Reporter("sandboxd_user/")
    why = skip_reason()
    if why:
        print("SKIP sandboxd_user: %s" % why)
        return 0
    with Daemon(env={"LLMBOX_POOL_SIZE": "0"}) as d:
        for name, fn in [("user_groups_env_and_sudo", check_user_and_sudo), ("write_owner", check_write_owner),
                         ("refusals_run_and_write_nothing", check_refusals),
                         ("file_metadata_refusals", check_meta_refusals),
                         ("file_calls_as_the_user", check_file_calls_as_the_user),
                         ("fs_change_as_the_user", check_fs_change_as_the_user),
                         ("owner_only", check_owner_only)]:
            p.run(name, fn, d)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
