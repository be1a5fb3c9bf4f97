#!/usr/bin/env python3
"""sandboxd at scale, scaled down (python3 stdlib only, run as root):

  - zygote: every sandbox's init is cloned by the zygote (its parent is
    sandboxd, CLONE_PARENT), not by sandboxd; sandboxd's other children
    are none; the zygote's memory and descriptors do not change with the
    number of sandboxes;
  - 500 idle sandboxes: the anonymous memory (Pss_Anon) of the last 100
    inits is no larger than that of the first 100 (within 64 KiB each:
    an init's memory no longer depends on how many sandboxes sandboxd
    holds), and after their connections close nothing is left: no process
    but the zygote, no cgroup, no scratch dir, no uid slot, and sandboxd's
    descriptor count is back where it started (but for the slots' cached
    idmap namespaces, kept on purpose);
  - parking: with an open-file limit of 400, 120 idle sandboxes hand
    their shells' pipes to their inits (ping's "parked"), sandboxd holds
    fewer than 3 descriptors per sandbox, and every one of them still runs
    a command in the same shell (a variable set before the park is still
    set) and reads a file through its root afterwards.

    python3 tests/integration/test_sandboxd_scale.py   (from the repo root)
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import Daemon, Reporter, proc_cmdline, skip_reason  # noqa: E402

PER_CONN = 32


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def nfds(pid):
    """Descriptors, less the uid slots' cached idmap namespaces (uidslot.h:
    one per slot ever used, up to LBSD_SLOT_NS_CACHED, kept on purpose)."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += not os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("user:")
        except OSError:
            pass
    return n


def rollup(pid, field):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for ln in f:
                if ln.startswith(field):
                    return int(ln.split()[1])
    except OSError:
        pass
    return 0


def zygote_of(d):
    end = time.time() + 5
    while True:  # its exec may still be under way
        zs = [p for p in children(d.proc.pid) if proc_cmdline(p) == "llmbox-sandboxd zygote"]
        if zs or time.time() > end:
            break
        time.sleep(0.05)
    assert len(zs) == 1, "sandboxd has %d zygote children: %r" % (len(zs), zs)
    return zs[0]


def create_many(d, n, conns):
    sids = []
    while len(sids) < n:
        if len(sids) % PER_CONN == 0:
            conns.append(d.connect(timeout=120))
        sids.append((conns[-1], conns[-1].create()))
    return sids


def init_pids(d, zy):
    return [p for p in children(d.proc.pid) if p != zy]


def wait_empty(d, zy, base_fds, secs=120):
    end = time.time() + secs
    while time.time() < end:
        ping = d.connect().call({"op": "ping"})
        if not ping.get("sandboxes") and not init_pids(d, zy) and not ping.get("uid_slots_used") \
                and nfds(d.proc.pid) <= base_fds:
            return None
        time.sleep(0.2)
    return "sandboxes %s, inits %d, slots %s, fds %d (at start %d)" % (
        ping.get("sandboxes"), len(init_pids(d, zy)), ping.get("uid_slots_used"),
        nfds(d.proc.pid), base_fds)


def check_zygote_and_500(d):
    zy = zygote_of(d)
    time.sleep(0.3)
    base_fds = nfds(d.proc.pid)
    zy_fds, zy_anon = nfds(zy), rollup(zy, "Pss_Anon:")
    conns = []
    sids = create_many(d, 100, conns)
    time.sleep(1)
    first = init_pids(d, zy)
    assert len(first) == 100, "%d inits are sandboxd's children, not 100" % len(first)
    for p in first:
        with open("/proc/%d/status" % p) as f:
            ppid = [ln.split()[1] for ln in f if ln.startswith("PPid:")][0]
        assert int(ppid) == d.proc.pid, "init %d's parent is %s, not sandboxd" % (p, ppid)
    sids += create_many(d, 400, conns)
    time.sleep(2)  # shells started, lazy allocations done
    inits = init_pids(d, zy)
    assert len(inits) == 500, "%d inits for 500 sandboxes" % len(inits)
    last = [p for p in inits if p not in first]
    last.sort()
    last = last[-100:]
    a_first = sum(rollup(p, "Pss_Anon:") for p in first) / len(first)
    a_last = sum(rollup(p, "Pss_Anon:") for p in last) / len(last)
    assert a_last <= a_first + 64, \
        "an init's anonymous memory grows with the count: %.0f KiB each for the first 100, " \
        "%.0f KiB for the last 100" % (a_first, a_last)
    assert nfds(zy) == zy_fds, "the zygote's descriptors went from %d to %d" % (zy_fds, nfds(zy))
    assert rollup(zy, "Pss_Anon:") <= zy_anon + 64, "the zygote grew: %d -> %d KiB" % (
        zy_anon, rollup(zy, "Pss_Anon:"))
    # a command still runs in the first and the last
    for c, sid in (sids[0], sids[-1]):
        r = c.exec(sid, "echo ok")
        assert r.get("ok") and r.get("stdout") == "ok\n", r
    dirs = os.path.join(d.var, "sandboxes")
    for c in conns:
        c.close()  # closing a connection destroys its sandboxes
    why = wait_empty(d, zy, base_fds)
    assert why is None, "after 500 sandboxes went: " + why
    left = os.listdir(dirs) if os.path.isdir(dirs) else []
    assert not left, "%d scratch dirs left" % len(left)
    import glob
    cg = [p for p in glob.glob("/sys/fs/cgroup/*/llmbox*/*") + glob.glob("/sys/fs/cgroup/llmbox*/*")
          if os.path.basename(p) in {sid for _, sid in sids}]
    assert not cg, "cgroups left: %r" % cg[:3]


def check_parking(d):
    zy = zygote_of(d)
    time.sleep(0.3)
    base_fds = nfds(d.proc.pid)
    conns = []
    sids = create_many(d, 120, conns)
    for i, (c, sid) in enumerate(sids):
        r = c.exec(sid, "MARK=m%d; echo set" % i)
        assert r.get("ok"), r
    end = time.time() + 20
    ping = {}
    while time.time() < end:
        ping = d.connect().call({"op": "ping"})
        if ping.get("parked", 0) >= 60:
            break
        time.sleep(0.2)
    assert ping.get("parked", 0) >= 60, "only %r of 120 idle sandboxes parked" % ping.get("parked")
    held = nfds(d.proc.pid) - base_fds
    assert held < 3 * 120, "sandboxd holds %d descriptors for 120 sandboxes" % held
    assert "parked the descriptors of" in d.log_tail(400), "the park is not logged"
    for i, (c, sid) in enumerate(sids):
        r = c.exec(sid, "echo $MARK")
        assert r.get("ok") and r.get("stdout") == "m%d\n" % i, \
            "sandbox %d after parking: %r (the same shell should answer)" % (i, r)
        r = c.call({"op": "read", "id": sid, "path": "/etc/hostname"})
        assert r.get("ok") and r.get("_data") == b"sandbox\n", "read after parking: %r" % r
    for c in conns:
        c.close()
    why = wait_empty(d, zy, base_fds)
    assert why is None, "after the parked sandboxes went: " + why


def main():
    p = Reporter("sandboxd_scale/")
    why = skip_reason()
    if why:
        print("SKIP sandboxd_scale: %s" % why)
        return 0
    env = {"LLMBOX_POOL_SIZE": "0", "LLMBOX_SANDBOX_MAX": "600",
           "LLMBOX_SANDBOX_MAX_PER_CONN": str(PER_CONN)}
    with Daemon(env=env) as d:
        p.run("zygote_clones_and_500_idle_do_not_grow_or_leak", check_zygote_and_500, d)
    # budget: 400 - 16 connections - 4 workers x 16 - 64 = 256 descriptors
    env = dict(env, LLMBOX_SANDBOXD_MAX_CONNS="16", LLMBOX_SANDBOXD_WORKERS="4")
    with Daemon(env=env, nofile=400) as d:
        p.run("idle_sandboxes_park_their_descriptors_and_come_back", check_parking, d)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
