#!/bin/sh
# The `prepare` init container of the Kubernetes pods (deploy/k8s): what
# scripts/prepare-dirs.sh and scripts/nginx-conf.sh do on one machine, for
# a pod that runs as the service user (uid 101) on a read-only image, with
# var/ on a volume. Run from the llmbox home directory.
#
#   - makes var/web, var/web/log, var/log, var/nginx, var/run (and
#     artifacts/ if missing);
#   - installs the download-link key from the Secret (the file named by
#     LLMBOX_DOWNLOAD_KEY_FILE, 64 hex digits): every web pod's nginx must
#     check the links with the same key, so it is never made here;
#   - writes var/run/nginx-local.conf (scripts/nginx-local.sh) and
#     var/run/nginx.conf: nginx.conf listening on port 8080 of every
#     address, without `user` (nginx already runs as the service user),
#     logging to stderr and stdout for the cluster's log collector.
#
# Usage: deploy/k8s/prepare.sh   (tests/k8s/test_k8s.py runs it on a copy)
set -eu
umask 027
keyfile="${LLMBOX_DOWNLOAD_KEY_FILE:-/etc/llmbox/secret/download_key}"
install -d -m 0750 var/web var/web/log var/log
install -d -m 0755 var/run var/nginx
[ -d artifacts ] || install -d -m 0755 artifacts

if [ ! -r "$keyfile" ]; then
    echo "prepare.sh: the download key $keyfile cannot be read (the Secret llmbox-secrets, key download_key)" >&2
    exit 1
fi
key=$(head -c 65 "$keyfile" | head -n1)
if ! printf '%s\n' "$key" | grep -qxE '[0-9a-f]{64}'; then
    echo "prepare.sh: the download key in $keyfile is not 64 lowercase hex digits (openssl rand -hex 32)" >&2
    exit 1
fi
tmp=$(mktemp var/web/.download.key.XXXXXX)
printf '%s\n' "$key" > "$tmp"
mv -f "$tmp" var/web/download.key
"$(dirname "$0")/../../scripts/nginx-local.sh" "$(id -un)"

tmp=$(mktemp var/run/.nginx.conf.XXXXXX)
sed -e 's|^\( *\)listen 127\.0\.0\.1:8080;|\1listen 8080;|' \
    -e 's|^user llmbox;.*|# user: nginx runs as the service user already (deploy/k8s/prepare.sh)|' \
    -e 's|^error_log var/log/nginx-error\.log|error_log stderr|' \
    -e 's|access_log var/log/nginx-access\.log|access_log /dev/stdout|' \
    nginx.conf > "$tmp"
grep -q '^ *listen 8080;' "$tmp" || { rm -f "$tmp"; echo "prepare.sh: nginx.conf has no 'listen 127.0.0.1:8080;' line to replace" >&2; exit 1; }
chmod 0644 "$tmp"
mv -f "$tmp" var/run/nginx.conf
echo "prepare.sh: var/ is ready; nginx listens on 8080"
