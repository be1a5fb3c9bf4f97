#!/bin/bash
# Runs every libFuzzer target for FUZZ_SECONDS (default 5) on its seed corpus
# in tests/fuzz/corpus/<name>/ with its dictionary tests/fuzz/fuzz_<name>.dict
# (the tokens of its input format, h2o's way); new interesting inputs are kept in
# build-fuzz/corpus/<name>/ (not in the repository). Prints PASS/FAIL/SKIP
# lines like the other suites; a crash leaves its input in build-fuzz/crashes/.
set -u
cd "$(dirname "$0")/../.."
secs="${FUZZ_SECONDS:-5}"
if ! command -v "${FUZZ_CC:-clang}" >/dev/null 2>&1; then
    echo "SKIP fuzz: clang is not installed (apt install clang)"
    exit 0
fi
if ! make --no-print-directory -s fuzz-build >build-fuzz.log 2>&1; then
    echo "FAIL fuzz/build: see build-fuzz.log"; tail -20 build-fuzz.log >&2; exit 1
fi
rm -f build-fuzz.log
mkdir -p build-fuzz/crashes
for bin in build-fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    name="${bin##*/fuzz_}"
    mkdir -p "build-fuzz/corpus/$name" "tests/fuzz/corpus/$name"
    log="build-fuzz/$name.log"
    # every target has seeds and a dictionary (docs/STYLE.md, fuzz drivers)
    if [ ! -f "tests/fuzz/fuzz_$name.dict" ] || [ -z "$(ls -A "tests/fuzz/corpus/$name")" ]; then
        echo "FAIL fuzz/$name: needs tests/fuzz/fuzz_$name.dict and seeds in tests/fuzz/corpus/$name/"
        continue
    fi
    dict=(-dict="tests/fuzz/fuzz_$name.dict")
    if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        "${dict[@]}" -artifact_prefix="build-fuzz/crashes/$name-" \
        "build-fuzz/corpus/$name" "tests/fuzz/corpus/$name" >"$log" 2>&1; then
        runs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
        echo "PASS fuzz/$name (${runs:-?} runs in ${secs}s)"
    else
        echo "FAIL fuzz/$name: crash, input in build-fuzz/crashes/ (log $log)"
        grep -m5 -E 'ERROR|SUMMARY|runtime error' "$log" >&2
    fi
done
