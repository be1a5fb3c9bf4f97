"""The task form's MCP servers in headless Chromium against the real stack
(web, nginx, sandboxd, the fake model): with two `[mcp "NAME"]` sections
configured, the form shows one tick box per name (and neither server's
command nor url), and a ticked name is sent as the task's `mcp` field
(mcp_e2e.mjs). Without the boxes (the form before MCP servers could be
chosen) the first check fails."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from stack import Stack  # noqa: E402

CONF = '[mcp "github"]\ncommand = python3 /opt/gh_server.py\n\n[mcp "docs"]\nurl = http://127.0.0.1:9/mcp\n'


def main():
    with Stack(conf=CONF) as st:
        r = subprocess.run(["node", os.path.join(HERE, "mcp_e2e.mjs"), "http://127.0.0.1:%d/" % st.port],
                           cwd=HERE, timeout=180)
        return r.returncode


if __name__ == "__main__":
    sys.exit(main())
