#!/bin/sh
# Browser tests: installs playwright-core from npm on first use (it drives
# Debian's /usr/bin/chromium; no browser download), then runs them.
set -eu
cd "$(dirname "$0")"
if [ ! -x /usr/bin/chromium ] || ! command -v node >/dev/null; then
    echo "FAIL browser: chromium or node is missing (scripts/deps.sh installs them)"
    exit 1
fi
if [ ! -d node_modules/playwright-core ]; then
    npm install --no-audit --no-fund --silent >&2
fi
rc=0
python3 test_page.py || rc=1
# drive-by attacks on an install without users (another origin, DNS
# rebinding, generated html/svg): about 5 s
python3 test_origin.py || rc=1
# the Evaluations view: an eval from the form to its summary (about 20 s)
python3 test_evals_page.py || rc=1
# follow-ups: the message box, the thread of rounds and its marks (about 10 s)
python3 test_followups_page.py || rc=1
# the task view's network record: allowed and refused rows, hostile text
# as text (about 10 s; in the egress test's network namespaces)
python3 test_network_page.py || rc=1
# the task form's MCP servers: tick boxes by name, the ticked ones sent
# (about 5 s)
python3 test_mcp_page.py || rc=1
exit $rc
