#!/bin/sh
# The key of signed download links (docs/ARCHITECTURE.md "Signed download
# links"). The backend signs each artifact's download link with it; nginx
# checks the signature (secure_link) and serves the file without asking the
# backend. One key, two readers:
#   var/web/download.key       the service user only (0600): `llmbox web`
#   var/run/download-key.conf  root only (0600): included by nginx.conf,
#                              read by the nginx master as it loads its config
# The key is made once and kept, so the links a page holds survive restarts.
# To revoke every link handed out: delete var/web/download.key, run this
# (or restart the service) and reload nginx.
# Run from the llmbox home directory by prepare-dirs.sh. Usage: download-key.sh USER
set -eu
user="${1:-llmbox}"
key=var/web/download.key
valid() { [ "$(wc -c < "$1")" = 65 ] && head -n1 "$1" | grep -qxE '[0-9a-f]{64}'; }
if ! [ -f "$key" ] || ! valid "$key"; then
    tmp=$(mktemp var/web/.download.key.XXXXXX)     # mktemp: mode 0600
    od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > "$tmp"
    echo >> "$tmp"
    valid "$tmp" || { rm -f "$tmp"; echo "download-key.sh: could not make a key" >&2; exit 1; }
    chown "$user" "$tmp"
    mv -f "$tmp" "$key"                            # atomic: never half a key
fi
tmp=$(mktemp var/run/.download-key.conf.XXXXXX)
printf '# Written by scripts/download-key.sh from %s: do not edit.\nmap $host $llmbox_download_key { default "%s"; }\n' \
    "$key" "$(head -n1 "$key")" > "$tmp"
mv -f "$tmp" var/run/download-key.conf
