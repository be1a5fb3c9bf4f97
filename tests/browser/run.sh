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
exec python3 test_page.py
