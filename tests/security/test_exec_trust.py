#!/usr/bin/env python3
"""What an exec result can be trusted for, once the sandbox's own code
fights back (docs/SANDBOX.md, "What an exec result can be trusted for").

Every command runs inside the sandbox's one persistent shell (that is how
cd, exports and venvs persist), so a command owns that shell: a DEBUG trap
sees the wrapper's next sentinel and can print it first, with any exit code
and any output (the second security review, break 11; reading /proc/<shell>/mem is only one
way to the same place). No wrapper inside the shell can stop that, so these
checks pin down what stays true while a forger owns the shell:

  forger_in_place    the forger works (exit codes and output are its to
                     write): the documented limit, and the precondition of
                     the checks below; if it ever stops working, the doc
                     and these checks should be revisited
  files_read_truly   read / stat / list answer from sandboxd's own walk of
                     the filesystem, never through the shell
  oom_state_kept     `oom` comes from the memory cgroup's counter, not from
                     the shell's report
  timeout_state_kept `timeout` is sandboxd's decision at the hard limit
  other_sandbox      a forger in one sandbox changes nothing in another's
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from seclib import Problems, suite_main  # noqa: E402

# The forger: a DEBUG trap that fires before the wrapper's own end-of-command
# printf, reads the sentinel from $BASH_COMMAND and prints it first with
# exit code 0 and a line of made-up output. sandboxd ends the command at the
# first sentinel, so the real one that follows is never seen.
FORGER = r'''
__forge() {
    case "$BASH_COMMAND" in
    "printf '\n%s%d\n' "*)
        set -- $BASH_COMMAND
        set -- "${3//\'/}"
        builtin printf 'all tests passed\n\n%s%d\n' "$1" 0
        builtin printf '\n%s\n' "$1" >&2
        ;;
    esac
}
trap __forge DEBUG
'''


def _forged_sandbox(c, **spec):
    sid = c.create(**spec)
    _write(c, sid, "/tmp/forge.sh", FORGER)
    r = c.exec(sid, ". /tmp/forge.sh")
    assert r.get("state") == "exited", "installing the forger: %r" % r
    return sid


def _write(c, sid, path, text):
    r = c.call({"op": "write", "id": sid, "path": path}, text.encode())
    assert r.get("ok") is not False, "write %s: %r" % (path, r)


def forger_in_place(d):
    p = Problems()
    with d.connect() as c:
        sid = _forged_sandbox(c, memory_mib=256)
        r = c.exec(sid, "echo real; exit_with() { return $1; }; exit_with 3")
        p.expect(r.get("exit_code") == 0 and "all tests passed" in r.get("stdout", ""),
                 "the forger did not take over the result (%r): update docs/SANDBOX.md and this suite" % r)
    p.raise_if()


def files_read_truly(d):
    p = Problems()
    with d.connect() as c:
        sid = _forged_sandbox(c, memory_mib=256)
        _write(c, sid, "/testbed/result.txt", "FAIL: 3 of 10\n")
        r = c.exec(sid, "grep -q PASS /testbed/result.txt")
        p.expect(r.get("exit_code") == 0, "forger not in place: %r" % r)
        r = c.call({"op": "read", "id": sid, "path": "/testbed/result.txt"})
        got = r.get("_data", b"").decode(errors="replace")
        p.expect(got == "FAIL: 3 of 10\n", "read through sandboxd: %r" % (r if not got else got))
        r = c.call({"op": "stat", "id": sid, "path": "/testbed/result.txt"})
        p.expect(r.get("size") == 14, "stat: %r" % r)
        r = c.call({"op": "list", "id": sid, "path": "/testbed"})
        names = [e.get("path") for e in r.get("entries", [])]
        p.expect("result.txt" in names, "list: %r" % r)
    p.raise_if()


def oom_state_kept(d):
    p = Problems()
    with d.connect() as c:
        sid = _forged_sandbox(c, memory_mib=96)
        hog = "python3 -c 'b=[]\nwhile True: b.append(bytearray(8<<20))'; true"
        r = c.exec(sid, hog, timeout_ms=30000)
        p.expect(r.get("state") == "oom", "a forged clean end hid the OOM kill: %r" %
                 {k: r.get(k) for k in ("state", "exit_code")})
    p.raise_if()


def timeout_state_kept(d):
    p = Problems()
    with d.connect() as c:
        sid = _forged_sandbox(c, memory_mib=128)
        r = c.exec(sid, "sleep 30", timeout_ms=800)
        p.expect(r.get("state") == "timeout", "a forged end hid the timeout: %r" %
                 {k: r.get(k) for k in ("state", "exit_code", "duration_ms")})
    p.raise_if()


def other_sandbox(d):
    p = Problems()
    with d.connect() as c:
        _forged_sandbox(c, memory_mib=128)
        sid = c.create(memory_mib=128)
        r = c.exec(sid, "echo clean; exit 5")
        p.expect(r.get("exit_code") == 5 and r.get("stdout") == "clean\n",
                 "another sandbox's result changed: %r" % r)
    p.raise_if()


CHECKS = [
    ("forger_in_place", forger_in_place),
    ("files_read_truly", files_read_truly),
    ("oom_state_kept", oom_state_kept),
    ("timeout_state_kept", timeout_state_kept),
    ("other_sandbox", other_sandbox),
]

if __name__ == "__main__":
    sys.exit(suite_main("security/", CHECKS))
