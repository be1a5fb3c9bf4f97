#!/usr/bin/env python3
"""sandboxd's cap on client connections, sandboxd_max_conns
(LLMBOX_SANDBOXD_MAX_CONNS; python3 stdlib only, run as root):

  - with the cap at 16, sixteen connections are served at once; the
    seventeenth is closed at once, unanswered, and the log says why and
    names the key;
  - once one of the sixteen closes, a new connection is served again.

    python3 tests/integration/test_sandboxd_conns.py   (from the repo root)
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import Daemon, Reporter, skip_reason  # noqa: E402

CAP = 16  # the smallest the key allows


def refused(d):
    """True if a new connection is closed without an answer to ping."""
    c = d.connect(timeout=10)
    try:
        r = c.call({"op": "ping"})
        return not r.get("ok")
    except (EOFError, ConnectionError, OSError):
        return True
    finally:
        c.close()


def check_cap(d):
    held = []
    try:
        for i in range(CAP):
            c = d.connect(timeout=10)
            held.append(c)
            r = c.call({"op": "ping"})
            assert r.get("ok"), "connection %d of %d not served: %r" % (i + 1, CAP, r)
        assert refused(d), "connection %d was served past sandboxd_max_conns=%d" % (CAP + 1, CAP)
        log = d.log_tail(50)
        assert "too many connections (%d)" % CAP in log and "LLMBOX_SANDBOXD_MAX_CONNS" in log, \
            "no sentence about the cap in the log:\n" + log
        held.pop().close()
        # the connection that gets the freed slot is kept: a probe closed and
        # another opened at once could race the loop's view of the probe's close
        end = time.time() + 5
        served = False
        while time.time() < end and not served:  # until the loop sees the close
            c = d.connect(timeout=10)
            try:
                served = bool(c.call({"op": "ping"}).get("ok"))
            except (EOFError, ConnectionError, OSError):
                served = False
            if served:
                held.append(c)
            else:
                c.close()
                time.sleep(0.05)
        assert served, "a slot freed by a close was not served again within 5 s"
    finally:
        for c in held:
            c.close()


def main():
    p = Reporter("sandboxd_conns/")
    why = skip_reason()
    if why:
        print("SKIP sandboxd_conns: %s" % why)
        return 0
    with Daemon(env={"LLMBOX_POOL_SIZE": "0", "LLMBOX_SANDBOXD_MAX_CONNS": str(CAP)}) as d:
        p.run("cap_refuses_past_it_and_serves_after_a_close", check_cap, d)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
