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
  - file calls are the sandbox's root's (E2B's envd's way): write and
    fs_change (E2B's makeDir, rename, remove) naming a user hand what they
    make to it, with no tool of the image; read, list and stat take no
    user; owner_only false refused;
  - in_root: symlinked folders followed inside the sandbox's root only
    (a link to / or /etc is the sandbox's, the host untouched), /proc's
    magic links refused; without it any symlink is refused.

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
    """E2B's envd's way, the only one: a write or fs_change naming a user is
    made as the sandbox's root and what it makes is the user's, with or
    without owner_only (true); owner_only false (the user's own
    permissions, which no caller uses any more) or not a bool is refused,
    nothing written."""
    c = d.connect()
    sid = c.create()
    for oo in (False, "yes", 1):
        r = c.call({"op": "write", "id": sid, "path": "/etc/o/deep.txt", "user": "user", "owner_only": oo}, b"x")
        assert not r.get("ok") and r.get("error") == "invalid" and "owner_only" in r.get("message", ""), (oo, r)
        r = c.call({"op": "fs_change", "id": sid, "action": "mkdir", "path": "/etc/od", "user": "user",
                    "owner_only": oo})
        assert not r.get("ok") and r.get("error") == "invalid" and "owner_only" in r.get("message", ""), (oo, r)
    assert c.exec(sid, "ls -d /etc/o /etc/od 2>&1 | grep -c 'No such'")["stdout"] == "2\n", "nothing made"
    r = c.call({"op": "write", "id": sid, "path": "/etc/o/deep.txt", "user": "user"}, b"x")
    assert r.get("ok"), r
    r = c.call({"op": "fs_change", "id": sid, "action": "mkdir", "path": "/etc/od/sub", "user": "user",
                "owner_only": True})
    assert r.get("ok"), r
    c.exec(sid, "echo r > /etc/rf1; echo r > /etc/rf2")
    for req in ({"action": "rename", "path": "/etc/rf1", "dest": "/etc/rf3"}, {"action": "remove", "path": "/etc/rf2"}):
        r = c.call(dict(req, op="fs_change", id=sid, user="user"))
        assert r.get("ok"), (req, r)
    out = c.exec(sid, "stat -c '%u:%g' /etc/o /etc/o/deep.txt /etc/od /etc/od/sub /etc/rf3; "
                 "test ! -e /etc/rf1 && test ! -e /etc/rf2 && echo moved")["stdout"]
    assert out == "1000:1000\n1000:1000\n1000:1000\n1000:1000\n0:0\nmoved\n", out
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


def check_file_calls_are_roots(d):
    """read, list and stat take no "user" (they make nothing; E2B's are
    root's); a write naming one is root's, anywhere (a 0600 root file
    replaced, /etc written), and the user owns what it makes; root's and
    another sandbox's calls right after own what they make as root."""
    c = d.connect()
    sid, other = c.create(), c.create()
    c.exec(sid, "echo s3 > /tmp/secret && chmod 600 /tmp/secret && mkdir -m 700 /srv/closed")
    for req in [{"op": "read", "path": "/tmp/secret", "max": 100},
                {"op": "list", "path": "/srv/closed", "max_depth": 1, "max_entries": 10},
                {"op": "stat", "path": "/srv/closed/x"}]:
        for user in ("user", "root"):
            r = c.call(dict(req, id=sid, user=user))
            assert not r.get("ok") and r.get("error") == "invalid" and '"user"' in r.get("message", ""), (req, r)
    for path in ("/etc/x", "/srv/closed/new/x", "/tmp/secret"):
        r = c.call({"op": "write", "id": sid, "path": path, "user": "user"}, b"mine")
        assert r.get("ok"), (path, r)
    for s in (sid, other):
        r = c.call({"op": "write", "id": s, "path": "/etc/rootwrite"}, b"ok")
        assert r.get("ok"), r
    out = c.exec(sid, "stat -c '%u:%g' /etc/x /srv/closed/new /srv/closed/new/x /tmp/secret /etc/rootwrite; "
                      "cat /tmp/secret")["stdout"]
    assert out == "1000:1000\n1000:1000\n1000:1000\n1000:1000\n0:0\nmine", out
    c.destroy(sid)
    c.destroy(other)


def check_in_root(d):
    """in_root (E2B's calls): a symlink among the folders is followed inside
    the sandbox's root, never the host's: a link to /, to /../../.. and to
    /etc are the sandbox's; /proc's magic links and folders on /proc are
    refused; without in_root (the native API) any symlink is refused."""
    c = d.connect()
    sid = c.create()
    tag = "lbsd-inroot-" + os.urandom(6).hex()
    c.exec(sid, "mkdir -p /tmp/real && ln -s /tmp/real /home/user/ln && ln -s / /home/user/top && "
                "ln -s /../../.. /home/user/up && ln -s /etc /home/user/etclink && ln -s /proc/1/root /home/user/magic "
                "&& ln -s /proc/sys/kernel /home/user/pk && ln -s loop /home/user/loop")
    r = c.call({"op": "write", "id": sid, "path": "/home/user/ln/a/f", "user": "user"}, b"no")
    assert not r.get("ok") and "symlinks" in r.get("message", ""), r
    for req in [{"op": "read", "path": "/home/user/etclink/hostname", "max": 100},
                {"op": "stat", "path": "/home/user/ln/x"},
                {"op": "list", "path": "/home/user/ln", "max_depth": 1, "max_entries": 10},
                {"op": "fs_change", "action": "mkdir", "path": "/home/user/ln/d"}]:
        r = c.call(dict(req, id=sid, in_root="yes"))
        assert not r.get("ok") and "in_root" in r.get("message", ""), (req, r)
    ok = [({"op": "fs_change", "action": "mkdir", "path": "/home/user/ln/a/b", "user": "user"}, None),
          ({"op": "write", "path": "/home/user/ln/a/f", "user": "user"}, b"through"),
          ({"op": "fs_change", "action": "mkdir", "path": "/home/user/top/%s/x" % tag, "user": "user"}, None),
          ({"op": "write", "path": "/home/user/up/%s/f" % tag}, b"top"),
          ({"op": "write", "path": "/home/user/etclink/%s" % tag}, b"etc")]
    for req, data in ok:
        r = c.call(dict(req, id=sid, in_root=True), data)
        assert r.get("ok"), (req, r)
    out = c.exec(sid, "stat -c '%%u:%%g' /tmp/real /tmp/real/a /tmp/real/a/b /tmp/real/a/f /%s/x; "
                      "cat /tmp/real/a/f /%s/f /etc/%s" % (tag, tag, tag))["stdout"]
    assert out == "0:0\n1000:1000\n1000:1000\n1000:1000\n1000:1000\nthroughtopetc", out
    for p in ("/" + tag, "/etc/" + tag):
        assert not os.path.lexists(p), "the host's %s was made through a link" % p
    r = c.call({"op": "read", "id": sid, "path": "/home/user/etclink/%s" % tag, "max": 100, "in_root": True})
    assert r.get("ok") and r.get("_data") == b"etc", r
    r = c.call({"op": "list", "id": sid, "path": "/home/user/ln/a", "max_depth": 1, "max_entries": 10, "in_root": True})
    assert r.get("ok") and sorted(e["path"] for e in r["entries"]) == ["b", "f"], r
    r = c.call({"op": "stat", "id": sid, "path": "/home/user/ln/a/f", "in_root": True})
    assert r.get("ok") and r.get("type") == "file" and r.get("uid") == 1000, r
    for path in ("/home/user/magic/tmp/x", "/home/user/pk/x", "/home/user/loop/x"):
        r = c.call({"op": "write", "id": sid, "path": path, "in_root": True}, b"no")
        assert not r.get("ok") and r.get("error") in ("invalid", "notfound"), (path, r)
        r = c.call({"op": "fs_change", "id": sid, "action": "mkdir", "path": path, "in_root": True})
        assert not r.get("ok") and r.get("error") in ("invalid", "notfound"), (path, r)
    assert c.exec(sid, "ls /tmp | grep -cx x || true")["stdout"] == "0\n", "nothing made through /proc/1/root"
    c.destroy(sid)


def check_fs_change_as_the_user(d):
    """fs_change naming "user": made as the sandbox's root (in /etc, in a
    0700 root folder), with no tool of the image (setpriv gone), what mkdir
    makes the user's; a symlink on the way refused without in_root;
    malformed requests refused; never into another filesystem (proc,
    devpts, a file to /tmp: the web runs that in the sandbox's shell)."""
    c = d.connect()
    sid = c.create()
    c.exec(sid, "rm -f /usr/bin/setpriv /bin/setpriv; mkdir -m 700 /srv/closed && echo x > /srv/closed/f && "
                "mkdir /etc/rootdir && echo h > /etc/h1 && ln -s /etc /home/user/etclink")

    def fs(action, path, dest=None, user="user"):
        req = {"op": "fs_change", "id": sid, "action": action, "path": path}
        if dest:
            req["dest"] = dest
        if user:
            req["user"] = user
        return c.call(req)

    for args in [("mkdir", "/etc/newd/a"), ("mkdir", "/srv/closed/sub"), ("rename", "/etc/h1", "/etc/h2"),
                 ("rename", "/srv/closed/f", "/srv/closed/g"), ("remove", "/etc/rootdir"), ("mkdir", "/etc/newd/a")]:
        r = fs(*args)
        assert r.get("ok"), (args, r)
    out = c.exec(sid, "stat -c '%u:%g' /etc/newd /etc/newd/a /srv/closed/sub /srv/closed/g /etc/h2; "
                      "test ! -e /etc/rootdir && test ! -e /etc/h1 && echo done")["stdout"]
    assert out == "1000:1000\n1000:1000\n1000:1000\n0:0\n0:0\ndone\n", out
    r = fs("mkdir", "/home/user/etclink/newd")
    assert not r.get("ok") and "symlinks" in r.get("message", ""), r
    for args in [("remove", "/srv/closed"), ("remove", "/home/user/none")]:
        r = fs(*args)
        assert r.get("ok"), (args, r)
    assert c.exec(sid, "test -e /srv/closed || echo gone")["stdout"] == "gone\n"
    # malformed: refused with a sentence
    for args in [("chmod", "/tmp/x"), ("rename", "/tmp/f.txt"), ("remove", "/"), ("rename", "/tmp/f.txt", "/")]:
        r = fs(*args)
        assert not r.get("ok") and r.get("error") == "invalid" and r.get("message"), (args, r)
    # never into another filesystem, as root or a user: proc, a mount point,
    # a file to /tmp (the web runs these in the sandbox's shell)
    c.exec(sid, "echo r > /home/user/r.txt")
    for user in (None, "user"):
        for args in [("remove", "/proc/sys"), ("remove", "/dev/pts"), ("rename", "/home/user/r.txt", "/tmp/r.txt")]:
            r = fs(*args, user=user)
            assert not r.get("ok") and r.get("error") == "invalid" and r.get("message"), (args, r)
    assert c.exec(sid, "test -f /home/user/r.txt && test -d /dev/pts && test ! -e /tmp/r.txt && echo kept")["stdout"] == "kept\n"
    r = fs("mkdir", "/etc/rootd", user=None)
    assert r.get("ok"), r
    assert c.exec(sid, "stat -c %u:%g /etc/rootd")["stdout"] == "0:0\n"
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
                         ("file_calls_are_roots", check_file_calls_are_roots),
                         ("in_root", check_in_root),
                         ("fs_change_as_the_user", check_fs_change_as_the_user),
                         ("owner_only", check_owner_only)]:
            p.run(name, fn, d)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
