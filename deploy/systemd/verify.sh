#!/bin/sh
# Checks the unit files offline: `systemd-analyze verify` (syntax, paths,
# dependencies) and `systemd-analyze security --offline` (the exposure
# score of each service). The units name /opt/llmbox; HOME (default: this
# checkout) is put in its place in a temporary copy, so the binaries they
# name must exist there (make all).
#   deploy/systemd/verify.sh [HOME]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
home=${1:-$(cd "$here/../.." && pwd)}
command -v systemd-analyze >/dev/null || { echo "systemd-analyze is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for u in "$here"/*.service "$here"/*.target; do
    sed "s#/opt/llmbox#$home#g" "$u" >"$tmp/$(basename "$u")"
done
cd "$tmp"
echo "== systemd-analyze verify"
systemd-analyze verify ./*.service ./*.target
echo "ok"
for u in ./*.service; do
    echo "== systemd-analyze security $(basename "$u")"
    systemd-analyze security --offline=yes --no-pager "$u" | tail -n 1
done
