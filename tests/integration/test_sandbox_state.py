#!/usr/bin/env python3
"""A sandbox's state in sandboxd (follow-ups; include/llmbox/sandbox.h:
freeze, thaw, save, create's restore, state_list, state_delete), over the
RPC (python3 stdlib only, run as root):

  - save -> restore keeps a file, an installed "package" (/usr/local/bin),
    the deletion of an image file, a folder that replaces an image folder
    (opaque), a symlink, the shell's cwd and an exported variable;
  - freeze stops CPU (a busy loop's CPU time does not advance), exec is
    "busy" with "sandbox is frozen", the memory stays; thaw resumes it; a
    frozen sandbox saves without being thawed and stays frozen; the same
    without cgroups (the SIGSTOP fallback, logged);
  - the cap: a save over max_mib is "toobig" naming the cap, and nothing
    is kept (no state, no temporary file); a restore into a sandbox whose
    disk is too small is refused and leaves no sandbox;
  - state_list / state_delete / a restore of a missing state ("notfound");
    the sweep removes states older than sandbox_state_max_age_s and the
    start removes saves cut short;
  - kill -9 of sandboxd during a save (replacing an older state of the same
    name) and during a restore: the older state is intact and restores,
    nothing partial is left, and no sandbox survives.

The hostile states are tests/security/test_state_hostile.py.

    python3 tests/integration/test_sandbox_state.py   (from the repo root)
"""
import glob
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import (Daemon, Reporter, init_hostpid, pidns_of, procs_in, proc_status,  # noqa: E402
                         skip_reason)


def states_dir(d):
    return os.path.join(d.var, "sandboxd", "states", "u%d" % os.getuid())


def ok(r):
    assert r.get("ok") is True, r
    return r


def sh(c, sid, cmd, timeout_ms=60000):
    r = c.exec(sid, cmd, timeout_ms)
    assert r.get("ok") and r.get("state") == "exited" and r.get("exit_code") == 0, (cmd, r)
    return r["stdout"]


def check_roundtrip(d):
    c = d.connect()
    sid = c.create()
    sh(c, sid, "mkdir -p /testbed/work/deep && echo round1 > /testbed/work/deep/data.txt && "
               "printf '#!/bin/sh\\necho installed-ok\\n' > /usr/local/bin/mypkg && chmod 755 /usr/local/bin/mypkg && "
               "rm /etc/issue && rm -rf /etc/apt && mkdir /etc/apt && echo mine > /etc/apt/only && "
               "ln -s /testbed/work/deep/data.txt /root/link && chown 1000:1000 /testbed/work/deep/data.txt && "
               # an image file only chmod'ed (metacopy, where on), an image folder renamed
               "chmod 600 /etc/hostname && mv /etc/skel /etc/skel-moved")
    sh(c, sid, "cd /testbed/work/deep && export ROUND_VAR='a b \"c\" $x' && export OTHER=2")
    r = ok(c.call({"op": "save", "id": sid, "state": "rt"}))
    assert r.get("state") == "rt" and r.get("bytes", 0) > 0 and r.get("files", 0) >= 5, r
    # the sandbox saved goes on (it was frozen only for the save)
    assert sh(c, sid, "echo alive").strip() == "alive"
    c.destroy(sid)
    r = ok(c.call({"op": "create", "restore": "rt"}))
    s2 = r["id"]
    moved = sh(c, s2, "stat -c %a /etc/hostname; test -e /etc/skel && echo skel-there; ls -A /etc/skel-moved | wc -l")
    assert moved.split()[0] == "600" and "skel-there" not in moved and int(moved.split()[-1]) > 0, moved
    out = sh(c, s2, "pwd; echo \"$ROUND_VAR|$OTHER\"; cat /testbed/work/deep/data.txt; mypkg; "
                    "test -e /etc/issue && echo issue-there || echo issue-gone; ls /etc/apt; readlink /root/link; "
                    "stat -c %u:%g /testbed/work/deep/data.txt; cat /etc/hostname >/dev/null && echo image-ok")
    assert out.split("\n")[:10] == ["/testbed/work/deep", 'a b "c" $x|2', "round1", "installed-ok", "issue-gone",
                                    "only", "/testbed/work/deep/data.txt", "1000:1000", "image-ok", ""], out
    # a second round on the restored one, saved again and restored again
    sh(c, s2, "echo round2 >> /testbed/work/deep/data.txt; cd /; export OTHER=3")
    ok(c.call({"op": "save", "id": s2, "state": "rt"}))
    s3 = ok(c.call({"op": "create", "restore": "rt"}))["id"]
    assert sh(c, s3, "pwd; echo $OTHER; cat /testbed/work/deep/data.txt") == "/\n3\nround1\nround2\n"
    for s in (s2, s3):
        c.destroy(s)
    c.close()


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def busy_pid(ns):
    for pid in procs_in(ns):
        st = proc_status(pid)
        if st.get("Name") == "busyloop":
            return pid
    return 0


def check_freeze_stops_cpu(d):
    c = d.connect()
    sid = c.create()
    ns = pidns_of(c, sid)
    sh(c, sid, "cp /bin/sh /tmp/busyloop && (nohup /tmp/busyloop -c 'while :; do :; done' >/dev/null 2>&1 &)")
    time.sleep(0.3)
    pid = busy_pid(ns)
    assert pid, "no busy loop found in %s" % ns
    t0 = cpu_ticks(pid)
    time.sleep(0.5)
    assert cpu_ticks(pid) > t0, "the busy loop does not run before the freeze"
    ok(c.call({"op": "freeze", "id": sid}))
    ok(c.call({"op": "freeze", "id": sid}))  # a no-op
    time.sleep(0.2)
    t1 = cpu_ticks(pid)
    time.sleep(1.0)
    t2 = cpu_ticks(pid)
    assert t2 == t1, "a frozen sandbox's busy loop got CPU: %d -> %d ticks" % (t1, t2)
    for req, data in (({"op": "exec", "id": sid, "command": "true"}, None),
                      ({"op": "stat", "id": sid, "path": "/"}, None),
                      ({"op": "read", "id": sid, "path": "/etc/hostname"}, None),
                      ({"op": "list", "id": sid, "path": "/testbed"}, None),
                      ({"op": "write", "id": sid, "path": "/testbed/x"}, b"x")):
        r = c.call(req, data)
        assert r.get("error") == "busy" and "sandbox is frozen" in r.get("message", ""), r
    # a frozen sandbox saves as it is, and stays frozen
    ok(c.call({"op": "save", "id": sid, "state": "frozen"}))
    time.sleep(0.3)
    assert cpu_ticks(pid) == t2, "the save thawed the sandbox"
    assert os.path.exists(init_hostpid(ns) and "/proc/%d" % pid)
    ok(c.call({"op": "thaw", "id": sid}))
    time.sleep(0.5)
    assert cpu_ticks(pid) > t2, "thaw did not resume the busy loop"
    assert sh(c, sid, "echo back").strip() == "back"
    # freeze then destroy: nothing is left
    ok(c.call({"op": "freeze", "id": sid}))
    c.destroy(sid)
    deadline = time.time() + 5
    while procs_in(ns) and time.time() < deadline:
        time.sleep(0.1)
    assert not procs_in(ns), "a destroyed frozen sandbox left processes"
    c.close()


def check_sigstop_logged(d):
    assert "freeze stops a sandbox's processes with SIGSTOP" in open(d.log_path).read(), d.log_tail(5)


def check_cap(d):
    c = d.connect()
    sid = c.create()
    sh(c, sid, "head -c 20000000 /dev/urandom > /testbed/random.bin")
    r = c.call({"op": "save", "id": sid, "state": "big", "max_mib": 1})
    assert r.get("error") == "toobig" and "1 MiB" in r.get("message", "") and "nothing was kept" in r["message"], r
    assert not os.path.exists(os.path.join(states_dir(d), "big.state"))
    assert not glob.glob(os.path.join(states_dir(d), ".tmp-*")), os.listdir(states_dir(d))
    names = [s["state"] for s in ok(c.call({"op": "state_list"}))["states"]]
    assert "big" not in names, names
    # it fits without the cap; a restore into a disk too small is refused
    ok(c.call({"op": "save", "id": sid, "state": "big"}))
    before = ok(c.call({"op": "ping"}))["sandboxes"]
    r = c.call({"op": "create", "restore": "big", "disk_mib": 16, "memory_mib": 256})
    assert r.get("ok") is False and r.get("error") in ("invalid", "toobig"), r
    assert "disk" in r.get("message", ""), r
    assert ok(c.call({"op": "ping"}))["sandboxes"] == before
    c.destroy(sid)
    c.close()


def check_restore_with_input_dir(d):
    """create with input_dir and restore: the state's files, then the inputs."""
    import tempfile
    c = d.connect()
    sid = c.create()
    sh(c, sid, "mkdir -p /testbed/input && echo from-state > /testbed/input/old.txt && echo s > /testbed/s.txt")
    ok(c.call({"op": "save", "id": sid, "state": "with-input"}))
    c.destroy(sid)
    src = tempfile.mkdtemp(prefix="llmbox-state-in-")
    try:
        with open(os.path.join(src, "new.txt"), "w") as f:
            f.write("from-input\n")
        os.chmod(src, 0o755)
        s2 = ok(c.call({"op": "create", "restore": "with-input", "input_dir": src}))["id"]
        out = sh(c, s2, "cat /testbed/s.txt /testbed/input/old.txt /testbed/input/new.txt")
        assert out == "s\nfrom-state\nfrom-input\n", out
        c.destroy(s2)
    finally:
        import shutil
        shutil.rmtree(src)
    c.close()


def check_store_ops(d):
    c = d.connect()
    r = c.call({"op": "create", "restore": "nope"})
    assert r.get("error") == "notfound" and "nope" in r.get("message", ""), r
    sid = c.create()
    ok(c.call({"op": "save", "id": sid, "state": "del-me"}))
    st = {s["state"]: s for s in ok(c.call({"op": "state_list"}))["states"]}
    assert "del-me" in st and st["del-me"]["bytes"] > 0 and abs(st["del-me"]["mtime"] - time.time()) < 60, st
    ok(c.call({"op": "state_delete", "state": "del-me"}))
    r = c.call({"op": "state_delete", "state": "del-me"})
    assert r.get("error") == "notfound", r
    r = c.call({"op": "save", "id": sid, "state": "../x"})
    assert r.get("error") == "invalid", r
    r = c.call({"op": "save", "id": "0" * 32, "state": "x"})
    assert r.get("error") == "notfound", r
    c.destroy(sid)
    c.close()


def check_sweep_and_startup(_):
    # an old state and a save cut short, there before sandboxd starts
    d = Daemon(env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_SANDBOX_STATE_MAX_AGE_S": "3600"})
    d.start()
    try:
        sd = states_dir(d)
        c = d.connect()
        sid = c.create()
        ok(c.call({"op": "save", "id": sid, "state": "young"}))
        c.destroy(sid)
        c.close()
        old = os.path.join(sd, "young.state")
        with open(os.path.join(sd, "old.state"), "wb") as f:
            f.write(open(old, "rb").read())
        os.utime(os.path.join(sd, "old.state"), (time.time() - 7200, time.time() - 7200))
        open(os.path.join(sd, ".tmp-cut-0123456789abcdef"), "wb").write(b"partial")
        var = d.var
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait()
        d2 = Daemon(env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_SANDBOX_STATE_MAX_AGE_S": "3600", "LLMBOX_VAR": var})
        d2.start()
        try:
            c2 = d2.connect()
            ok(c2.call({"op": "ping"}))  # served: the start's cleanup and sweep are done
            c2.close()
            left = sorted(os.listdir(sd))
            assert left == ["young.state"], left
        finally:
            d2.stop()
    finally:
        d.stop()


def read_bytes(p):
    try:
        with open(p, "rb") as f:
            return f.read()
    except OSError:
        return b""


def children(pid):
    out = []
    for t in glob.glob("/proc/%d/task/*/children" % pid):
        out += [int(x) for x in read_bytes(t).split()]
    return out


def stateio_helpers(daemon_pid, mode):
    """/proc/<pid>/cmdline of the state helpers sandboxd runs (its
    grandchildren: sandboxd > a clone that waits > llmbox-stateio)."""
    out = []
    for c in children(daemon_pid):
        for g in children(c):
            p = "/proc/%d/cmdline" % g
            if read_bytes(p).startswith(b"llmbox-stateio\0" + mode):
                out.append(p)
    return out


def check_kill9(_):
    """kill -9 of sandboxd during a save and during a restore."""
    env = {"LLMBOX_POOL_SIZE": "0"}
    d = Daemon(env=env)
    d.start()
    d2 = d3 = None
    try:
        var, sd = d.var, states_dir(d)
        c = d.connect()
        sid = c.create(memory_mib=1024, disk_mib=900)
        sh(c, sid, "echo old > /testbed/marker")
        ok(c.call({"op": "save", "id": sid, "state": "k"}))
        old_bytes = open(os.path.join(sd, "k.state"), "rb").read()
        sh(c, sid, "echo new > /testbed/marker; head -c 400000000 /dev/urandom > /testbed/big", 120000)
        c.send({"op": "save", "id": sid, "state": "k"})
        deadline = time.time() + 10
        while not glob.glob(os.path.join(sd, ".tmp-*")) and time.time() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)
        assert glob.glob(os.path.join(sd, ".tmp-*")), "the save never started"
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait()
        assert open(os.path.join(sd, "k.state"), "rb").read() == old_bytes, "the saved state changed"
        d2 = Daemon(env=dict(env, LLMBOX_VAR=var))
        d2.start()
        c2 = d2.connect()
        ok(c2.call({"op": "ping"}))  # served: the start's cleanup is done
        assert sorted(os.listdir(sd)) == ["k.state"], os.listdir(sd)
        s2 = ok(c2.call({"op": "create", "restore": "k"}))["id"]
        assert sh(c2, s2, "cat /testbed/marker; test -e /testbed/big || echo no-big") == "old\nno-big\n"
        # a big state, and kill -9 while it is being restored
        sh(c2, s2, "head -c 300000000 /dev/urandom > /testbed/big", 120000)
        ok(c2.call({"op": "save", "id": s2, "state": "k2"}))
        c2.destroy(s2)
        saved = open(os.path.join(sd, "k2.state"), "rb").read()
        c2.send({"op": "create", "restore": "k2", "memory_mib": 1024, "disk_mib": 900})
        helpers = []
        deadline = time.time() + 20
        while not helpers and time.time() < deadline:
            helpers = stateio_helpers(d2.proc.pid, b"restore")
        time.sleep(0.05)
        os.kill(d2.proc.pid, signal.SIGKILL)
        d2.proc.wait()
        assert helpers, "the restore was not under way at the kill"
        time.sleep(0.5)
        # dead (a zombie until this host's init reaps it) or gone
        gone = [p for p in helpers if proc_status(int(p.split("/")[2])).get("State", "Z").split()[0] != "Z"]
        assert not gone, "the helper outlived sandboxd: %s" % gone
        assert open(os.path.join(sd, "k2.state"), "rb").read() == saved, "the restore changed the state"
        d3 = Daemon(env=dict(env, LLMBOX_VAR=var))
        d3.start()
        c3 = d3.connect()
        assert ok(c3.call({"op": "ping"}))["sandboxes"] == 0
        s3 = ok(c3.call({"op": "create", "restore": "k2", "memory_mib": 1024, "disk_mib": 900}))["id"]
        assert sh(c3, s3, "stat -c %s /testbed/big").strip() == "300000000"
        c3.destroy(s3)
        assert not glob.glob(os.path.join(var, "sandboxes", "*")), os.listdir(os.path.join(var, "sandboxes"))
    finally:
        for x in (d3, d2, d):
            if x:
                x.stop()


def main():
    p = Reporter("sandbox_state/")
    why = skip_reason()
    if why:
        print("SKIP sandbox_state: %s" % why)
        return 0
    with Daemon() as d:
        p.run("save_restore_keeps_files_package_deletion_cwd_env", check_roundtrip, d)
        p.run("freeze_stops_cpu_thaw_resumes", check_freeze_stops_cpu, d)
        p.run("cap_toobig_keeps_nothing", check_cap, d)
        p.run("state_list_delete_notfound", check_store_ops, d)
        p.run("restore_with_input_dir", check_restore_with_input_dir, d)
    # without cgroups (LLMBOX_SANDBOX_NO_CGROUP): freeze falls back to SIGSTOP
    with Daemon(env={"LLMBOX_SANDBOX_NO_CGROUP": "1", "LLMBOX_POOL_SIZE": "0"}) as d:
        p.run("freeze_without_a_freezer_stops_every_process", check_freeze_stops_cpu, d)
        p.run("freeze_without_a_freezer_says_so", check_sigstop_logged, d)
    p.run("sweep_old_states_and_cut_saves_at_start", check_sweep_and_startup, None)
    p.run("kill9_during_save_and_restore_loses_nothing", check_kill9, None)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
