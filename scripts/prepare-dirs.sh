#!/bin/sh
# Creates the runtime folders with the ownership privilege separation needs:
# root keeps var/ and var/run/ (the sandbox daemon's socket, nginx's pid);
# the service user owns only var/web/ (database, FastCGI socket, agent logs)
# and artifacts/. Usage: prepare-dirs.sh USER
#
# Logs are not for everyone: a log line may hold a task's prompt, a path of
# its output or (nginx's error log) a preview link's key. var/log is
# root's, 0750; each log in it 0640, made here before nginx or the shell
# opens it (nginx creates its logs 0644 whatever it is told), and a log
# left world-readable by an older install is tightened. The agents' logs
# (var/web/log) are the service user's, 0750 and 0640 (spawn.c).
set -eu
user="${1:-llmbox}"
umask 027
install -d -m 0755 var var/run var/nginx
install -d -m 0750 var/log
for f in nginx-access.log nginx-error.log web.log sandboxd.log; do
    [ -e "var/log/$f" ] || : > "var/log/$f"
done
find var/log -maxdepth 1 -type f -perm /o=rwx -exec chmod o-rwx {} +
install -d -m 0750 -o "$user" -g "$user" var/web var/web/log
find var/web/log -maxdepth 1 -type f -perm /o=rwx -exec chmod o-rwx {} +
install -d -m 0755 -o "$user" -g "$user" artifacts
# the key of signed download links, for the backend and for nginx
"$(dirname "$0")/nginx-local.sh" "$user"
