#!/bin/bash
# Starts sandboxd (root), the FastCGI backend (as the llmbox user) and nginx,
# prints the URL, and stops all of it on Ctrl-C. Called by `make run`.
set -euo pipefail
cd "$(dirname "$0")/.."
export LLMBOX_HOME="$PWD"
export LLMBOX_WEB_USER="${LLMBOX_WEB_USER:-llmbox}"

# Where nginx listens: `listen` in llmbox.conf (LLMBOX_LISTEN), checked by
# llmbox itself (an address beyond loopback is refused without users);
# scripts/nginx-conf.sh writes var/run/nginx.conf with it.
if ! LISTEN=$(build/llmbox config listen); then
    exit 1
fi
case "$LISTEN" in
    0.0.0.0:*) HERE="127.0.0.1:${LISTEN##*:}" ;;   # every address: check through loopback
    "[::]:"*)  HERE="[::1]:${LISTEN##*:}" ;;
    *)         HERE="$LISTEN" ;;
esac
URL="http://$HERE/"

if [ "$(id -u)" != 0 ]; then
    echo "llmbox: make run needs root (the sandbox daemon creates namespaces and cgroups)" >&2
    exit 1
fi

scripts/prepare-dirs.sh "$LLMBOX_WEB_USER"

scripts/nginx-conf.sh >/dev/null

pids=()
# Waits up to $1 tenths of a second for the pids that follow to exit.
wait_gone() {
    local n=$1 p
    shift
    for _ in $(seq "$n"); do
        for p in "$@"; do
            kill -0 "$p" 2>/dev/null && break
            p=""
        done
        [ -z "$p" ] && return 0
        sleep 0.1
    done
    return 1
}
# Stops everything within about 20 s, whatever it is sent meanwhile: more
# signals are ignored (a second Ctrl-C, or a SIGTERM to the whole process
# group, used to kill this script half-way and leave the web and sandboxd
# running), nginx and the web stop together, then sandboxd, each with a
# bound and then SIGKILL.
stop() {
    trap '' INT TERM
    trap - EXIT
    echo
    echo "llmbox: stopping"
    local front=() p
    for p in "${pids[@]:0:2}"; do
        kill -TERM "$p" 2>/dev/null && front+=("$p")
    done
    if [ "${#front[@]}" -gt 0 ] && ! wait_gone 50 "${front[@]}"; then
        echo "llmbox: nginx or the web did not stop within 5 s; killing them" >&2
        kill -KILL "${front[@]}" 2>/dev/null || true
    fi
    # sandboxd last: it destroys the sandboxes that are left
    for p in "${pids[@]:2}"; do
        kill -TERM "$p" 2>/dev/null || continue
        if ! wait_gone 150 "$p"; then
            echo "llmbox: sandboxd did not stop within 15 s; killing it" >&2
            kill -KILL "$p" 2>/dev/null || true
        fi
    done
    wait_gone 20 "${pids[@]}" || true
    echo "llmbox: stopped"
    exit "${1:-0}"
}
trap 'stop 0' INT TERM
trap 'stop 1' EXIT

# An nginx left running by an earlier run would hold the port.
if [ -f var/run/nginx.pid ] && kill -0 "$(cat var/run/nginx.pid)" 2>/dev/null; then
    echo "llmbox: an earlier nginx (pid $(cat var/run/nginx.pid)) is still running; stopping it"
    kill -QUIT "$(cat var/run/nginx.pid)" || true
    sleep 1
fi

# Each in its own session: Ctrl-C reaches only this script, which then
# stops them front to back (nginx, web, sandboxd) so that sandboxd, last,
# destroys every sandbox that is left.
# sandboxd is its own executable (root-only code, few libraries)
setsid build/llmbox-sandboxd >>var/log/sandboxd.log 2>&1 &
sandboxd_pid=$!
setsid build/llmbox web >>var/log/web.log 2>&1 &
web_pid=$!
setsid nginx -p "$PWD/" -c "$PWD/var/run/nginx.conf" -e var/log/nginx-error.log &
nginx_pid=$!
pids=("$nginx_pid" "$web_pid" "$sandboxd_pid")

# Wait until the page answers (or a process died), showing progress.
for i in $(seq 100); do
    if curl -fsS -o /dev/null "${URL}api/health" 2>/dev/null; then break; fi
    for p in "${pids[@]}"; do
        if ! kill -0 "$p" 2>/dev/null; then
            echo "llmbox: a process exited during start; see var/log/*.log" >&2
            tail -n 5 var/log/sandboxd.log var/log/web.log var/log/nginx-error.log >&2 || true
            exit 1
        fi
    done
    sleep 0.1
done

echo
echo "llmbox is running: $URL"
[ "$HERE" != "$LISTEN" ] && echo "  listen  $LISTEN (every address of this machine; users log in, see README.md)"
curl -fsS "${URL}api/health" 2>/dev/null | python3 -c '
import json, sys
h = json.load(sys.stdin)
m = h.get("model", {})
# with users, an anonymous /api/health has no model name or URL
where = " %s at %s" % (m.get("model"), m.get("url")) if m.get("url") else ""
print("  model  %s: %s" % (where, "reachable" if m.get("reachable") else m.get("message", "not reachable")))
s = h.get("sandboxd", {})
print("  sandbox %s" % ("ready" if s.get("ok") else s.get("message", "not ready")))
' || true
echo "  logs    var/log/   (Ctrl-C stops everything)"
# Poll rather than `wait -n`: the children run in their own sessions.
while :; do
    for p in "${pids[@]}"; do
        if ! kill -0 "$p" 2>/dev/null; then
            echo "llmbox: a process (pid $p) exited unexpectedly; see var/log/*.log" >&2
            exit 1
        fi
    done
    sleep 1
done
