#!/bin/bash
# `make load`: the load suites at full size, with their figures. `make test`
# runs the same suites scaled down (64 tasks, 300 streams, 3 s of wrk)
# through tests/run.sh, which shows only their PASS/FAIL lines.
#
#   LLMBOX_LOAD_TASKS     tasks at once                 (here 256)
#   LLMBOX_LOAD_SSE       event-stream clients at once  (here 1000)
#   LLMBOX_LOAD_WRK_S     seconds per wrk run           (here 10)
set -u
cd "$(dirname "$0")/../.."
export LLMBOX_LOAD_TASKS="${LLMBOX_LOAD_TASKS:-256}"
export LLMBOX_LOAD_SSE="${LLMBOX_LOAD_SSE:-1000}"
export LLMBOX_LOAD_WRK_S="${LLMBOX_LOAD_WRK_S:-10}"
# 1000 streams: one socket each here, two in nginx, one in the web
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "load: $LLMBOX_LOAD_TASKS tasks, $LLMBOX_LOAD_SSE event streams, wrk ${LLMBOX_LOAD_WRK_S}s;" \
     "load average $(cut -d' ' -f1-3 /proc/loadavg)"
failed=0
for t in tests/load/test_*.py; do
    echo "== load/$(basename "$t" .py)"
    python3 "$t" || failed=1
done
exit $failed
