#!/bin/sh
# Creates the runtime folders with the ownership privilege separation needs:
# root keeps var/ and var/run/ (the sandbox daemon's socket, nginx's pid);
# the service user owns only var/web/ (database, FastCGI socket, agent logs)
# and artifacts/. Usage: prepare-dirs.sh USER
set -eu
user="${1:-llmbox}"
install -d -m 0755 var var/run var/log var/nginx
install -d -m 0750 -o "$user" -g "$user" var/web var/web/log
install -d -m 0755 -o "$user" -g "$user" artifacts
# the key of signed download links, for the backend and for nginx
"$(dirname "$0")/nginx-local.sh" "$user"
