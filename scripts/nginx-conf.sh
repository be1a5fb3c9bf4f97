#!/bin/bash
# Writes var/run/nginx.conf: nginx.conf as it is, but listening where the
# configuration says (`listen` in llmbox.conf / LLMBOX_LISTEN, checked by
# llmbox itself: an address beyond loopback is refused without users).
# Prints the listen address. Used by scripts/run.sh and by the systemd unit
# deploy/systemd/llmbox-nginx.service (ExecStartPre).
set -euo pipefail
cd "$(dirname "$0")/.."
export LLMBOX_HOME="${LLMBOX_HOME:-$PWD}"
LISTEN=$(build/llmbox config listen)
mkdir -p var/run
# nginx.conf includes the download-link key, which prepare-dirs.sh writes
if [ ! -s var/run/nginx-local.conf ]; then
    echo "nginx-conf.sh: var/run/nginx-local.conf is missing: run scripts/prepare-dirs.sh USER first" >&2
    exit 1
fi
tmp=$(mktemp var/run/nginx.conf.XXXXXX)
sed "s|listen 127.0.0.1:8080;|listen $LISTEN;|" nginx.conf > "$tmp"
chmod 0644 "$tmp"
mv -f "$tmp" var/run/nginx.conf   # atomic: a reload never reads half a file
echo "$LISTEN"
