#!/usr/bin/env python3
"""Security: E2B's network rules through E2B's own SDK (tests/e2b/
sdk_network.mjs, sdk_network_rules.mjs, sdk_network_narrow.mjs): a sandbox
created with allowInternetAccess false and network {allowOut, denyOut}
reaches only what they allow, an allowOut entry wins over denyOut as in
E2B, sbx.updateNetwork (PUT /e2b/sandboxes/{id}/network) changes that
while it runs ({} clears it back to E2B's default within the ceiling),
refused with 403 and the rule's name beyond the operator's ceiling, and
maskRequestHost is the Host a request to the sandbox's port carries.

It runs in test_egress.py's world (two network namespaces, the fake
internet's servers at 45.1.1.x and its DNS; nothing leaves the machine):
test_egress.outer makes it and runs this file again inside. Run as root:

    python3 tests/security/test_egress_e2b.py
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
E2B_DIR = os.path.join(HERE, "..", "e2b")


def outer():
    import test_egress
    if os.geteuid() == 0 and not os.path.isdir(os.path.join(E2B_DIR, "node_modules", "e2b")):
        # from the registry before the world: inside it nothing is reachable
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=E2B_DIR, check=True,
                       stdout=sys.stderr)
    return test_egress.outer(__file__)


def inner():
    from stack import Stack, image_ready
    if not image_ready():
        print("SKIP security/test_egress_e2b: the sandbox image is not built (make image)")
        return 0
    tok = "egress-e2b-" + os.urandom(12).hex()
    # sdk_network_narrow.mjs: a ceiling without "*" (E2B's default is then
    # a gateway that allows nothing yet), and e2b_ports_public on
    runs = [("*", ["sdk_network.mjs", "sdk_network_rules.mjs"]),
            ("allowed.test later.test", ["sdk_network_narrow.mjs"])]
    failed = []
    for ceiling, scripts in runs:
        env = {"LLMBOX_NETWORK_EGRESS_MAX": ceiling, "LLMBOX_SANDBOX_API_TOKEN": tok,
               "LLMBOX_E2B_DOMAIN": "e2b.test", "LLMBOX_E2B_PORTS_PUBLIC": "0" if ceiling == "*" else "1"}
        with Stack(model=False, env=env, web_env=env) as st:
            senv = dict(os.environ, E2B_API_URL="http://127.0.0.1:%d/e2b" % st.port,
                        E2B_SANDBOX_URL="http://127.0.0.1:%d/e2b/sandbox" % st.port, E2B_API_KEY=tok,
                        TEST_E2B_DOMAIN="e2b.test")
            for script in scripts:
                p = subprocess.run(["node", script], cwd=E2B_DIR, env=senv, capture_output=True, text=True,
                                   timeout=600)
                sys.stdout.write(p.stdout)
                if p.returncode:
                    sys.stdout.write(p.stderr[-3000:])
                    failed.append("%s exited %d" % (script, p.returncode))
    if failed:
        print("FAIL security/test_egress_e2b: " + ", ".join(failed))
        return 1
    print("PASS security/test_egress_e2b")
    return 0


if __name__ == "__main__":
    sys.exit(inner() if "--inner" in sys.argv else outer())
