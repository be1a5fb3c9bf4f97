#!/bin/sh
# What nginx needs to know of this install, for the signed download links
# (docs/ARCHITECTURE.md "Signed download links"), in var/run/nginx-local.conf
# (root only, 0600; nginx.conf includes it, the nginx master reads it with
# its config):
#   $llmbox_download_key  the key: the backend signs each artifact's link
#                         with it, nginx checks the signature (secure_link)
#                         and serves the file without asking the backend.
#                         The backend reads it from var/web/download.key
#                         (the service user only, 0600).
#   $llmbox_artifacts     the artifacts folder, absolute: links are served
#                         from it, and symlinks are refused below it
#                         (disable_symlinks from=, which needs the path).
# The key is made once and kept, so the links a page holds survive restarts.
# To revoke every link handed out: delete var/web/download.key, run this
# (or restart the service) and reload nginx.
# Run from the llmbox home directory by prepare-dirs.sh. Usage: nginx-local.sh USER
set -eu
user="${1:-llmbox}"
key=var/web/download.key
valid() { [ "$(wc -c < "$1")" = 65 ] && head -n1 "$1" | grep -qxE '[0-9a-f]{64}'; }
if ! [ -f "$key" ] || ! valid "$key"; then
    tmp=$(mktemp var/web/.download.key.XXXXXX)     # mktemp: mode 0600
    od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > "$tmp"
    echo >> "$tmp"
    valid "$tmp" || { rm -f "$tmp"; echo "nginx-local.sh: could not make a key" >&2; exit 1; }
    chown "$user" "$tmp"
    mv -f "$tmp" "$key"                            # atomic: never half a key
fi
case "$PWD" in
    *[!A-Za-z0-9/._+-]*) echo "nginx-local.sh: the llmbox home $PWD has characters nginx.conf cannot quote" >&2; exit 1 ;;
esac
tmp=$(mktemp var/run/.nginx-local.conf.XXXXXX)        # mktemp: mode 0600
{
    echo "# Written by scripts/nginx-local.sh: do not edit."
    printf 'map $host $llmbox_download_key { default "%s"; }\n' "$(head -n1 "$key")"
    printf 'map $host $llmbox_artifacts { default "%s/artifacts"; }\n' "$PWD"
} > "$tmp"
mv -f "$tmp" var/run/nginx-local.conf
