#!/bin/sh
# Runs the benchmarks; each prints its figures, the machine and its load,
# and a ratio against a peer measured in the same run. Record results in
# bench/RESULTS.md. Not part of `make test`: timings are reported, never
# asserted.
#
#   bench/run.sh                      all of them (sandbox, web, overhead, bundle, sse_idle, exhaustion, eval, rollout, e2b, capacity)
#   bench/run.sh web overhead         some of them
#   bench/run.sh --n 100 ...          options starting with '-': bench/sandbox.py alone
set -eu
cd "$(dirname "$0")/.."
case "${1:-}" in
-*) exec python3 bench/sandbox.py "$@" ;;
esac
names="${*:-sandbox web overhead bundle sse_idle exhaustion eval rollout e2b capacity}"
for n in $names; do
    case "$n" in
    sandbox | web | overhead | bundle | sse_idle | exhaustion | eval | rollout | e2b | capacity) ;;
    *) echo "bench/run.sh: no benchmark \"$n\" (sandbox, web, overhead, bundle, sse_idle, exhaustion, eval, rollout, e2b, capacity)" >&2; exit 2 ;;
    esac
done
for n in $names; do
    echo "== bench/$n.py (load $(cut -d' ' -f1-3 /proc/loadavg))"
    python3 "bench/$n.py"
    echo
done
