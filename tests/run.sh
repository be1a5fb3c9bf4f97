#!/bin/bash
# Runs every test suite and ends with one line: "N passed, N failed".
# Each suite prints "PASS name", "FAIL name: why" or "SKIP name: why" lines;
# a suite that exits non-zero without printing a FAIL counts as one failure.
set -u
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build}"
passed=0
failed=0
skipped=0
failures=()
# what failed, repeated above the last line: a CI log shown only by its
# head and tail still names each failed check and its reason
digest=()

# make check-asan sets SANITIZER_REPORTS: every sanitized process writes its
# report there (ASAN_OPTIONS / UBSAN_OPTIONS log_path), also the ones no
# suite looks at: an agent that leaks after it has finished its task, the
# web or sandboxd at exit. A report fails the suite that was running; the
# one a suite provokes on purpose (the crashfix fixture's NULL store in
# test_agent_web) does not.
sanitizer_reports() {
    local name="$1" dir="${SANITIZER_REPORTS:-}" r n=0
    [ -n "$dir" ] && [ -d "$dir" ] || return 0
    mkdir -p "$dir/seen"
    for r in "$dir"/*.[0-9]*; do
        [ -f "$r" ] || continue
        if grep -q 'SEGV on unknown address' "$r" && grep -q ' in crash_invoke ' "$r"; then
            mv "$r" "$dir/seen/expected-${r##*/}"
            continue
        fi
        n=$((n + 1))
        echo "   FAIL $name: sanitizer report $dir/seen/${r##*/}"
        grep -m1 -E 'ERROR|runtime error' "$r" | sed 's/^/   | /'
        grep -m8 -E '^ +#[0-9]+ ' "$r" | sed 's/^/   | /'
        mv "$r" "$dir/seen/"
    done
    return "$n"
}

run_suite() {
    local name="$1"; shift
    local out rc
    echo "== $name"
    out=$(timeout "${SUITE_TIMEOUT:-900}" "$@" 2>"/tmp/llmbox-suite-$$.err")
    rc=$?
    printf '%s\n' "$out" | grep -E '^(PASS|FAIL|SKIP) ' | sed 's/^/   /'
    local p f s
    p=$(printf '%s\n' "$out" | grep -c '^PASS ' || true)
    f=$(printf '%s\n' "$out" | grep -c '^FAIL ' || true)
    s=$(printf '%s\n' "$out" | grep -c '^SKIP ' || true)
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
        f=1
        echo "   FAIL $name: exited with status $rc"
    fi
    sanitizer_reports "$name"
    f=$((f + $?))
    if [ "$f" != 0 ]; then
        failures+=("$name")
        echo "   --- stderr of $name (last 30 lines) ---"
        tail -n 30 "/tmp/llmbox-suite-$$.err" | sed 's/^/   | /'
        local line
        while IFS= read -r line; do
            digest+=("$name: ${line:0:400}")
        done < <(printf '%s\n' "$out" | grep -E '^FAIL ' | head -n 5)
        [ "$rc" != 0 ] && [ "$(printf '%s\n' "$out" | grep -c '^FAIL ' || true)" = 0 ] &&
            digest+=("$name: exited with status $rc")
        while IFS= read -r line; do
            digest+=("$name:   | ${line:0:300}")
        done < <(grep -v '^[[:space:]]*$' "/tmp/llmbox-suite-$$.err" | tail -n 6)
    fi
    rm -f "/tmp/llmbox-suite-$$.err"
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
}

# the written rules of docs/STYLE.md that a script can check (banned
# functions, dropped statuses, unused includes, whitespace), and the
# checker's own self-test; under two seconds
run_suite "checksrc" scripts/checksrc-test
# every relative link of the docs resolves; no doc cites an issue number
run_suite "checkdocs" scripts/checkdocs --suite
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    run_suite "unit/$(basename "$t")" "$t"
done
for t in tests/integration/test_*.py; do
    [ -f "$t" ] || continue
    run_suite "integration/$(basename "$t" .py)" python3 "$t"
done
# MCP servers' tools for the agent: stdio inside the sandbox, Streamable HTTP
# (server-everything from tests/mcp's pinned npm packages; over stdio in a
# sandbox of an image the suite builds with node, about 30 s more) (about 45 s)
run_suite "mcp/test_mcp_client" python3 tests/mcp/test_mcp_client.py
# every parser's libFuzzer target, a few seconds each (make fuzz: longer)
run_suite "fuzz" env FUZZ_SECONDS="${FUZZ_SECONDS:-4}" tests/fuzz/run.sh
# many tasks, event streams and wrk at once, scaled down (make load: full size)
for t in tests/load/test_*.py; do
    [ -f "$t" ] || continue
    run_suite "load/$(basename "$t" .py)" python3 "$t"
done
for t in tests/security/test_*.py; do
    [ -f "$t" ] || continue
    run_suite "security/$(basename "$t" .py)" python3 "$t"
done
# faults: a misbehaving model, kill -9 and restarts, nginx restarts under
# event streams, a full disk, concurrent database writers (about a minute)
for t in tests/faults/test_*.py; do
    [ -f "$t" ] || continue
    run_suite "faults/$(basename "$t" .py)" python3 "$t"
done
# a full task with the web and its agent under valgrind, and `llmbox run`
# (about 20 s; skipped on a sanitizer build: make check-valgrind alone)
for t in tests/leaks/test_*.py; do
    [ -f "$t" ] || continue
    run_suite "leaks/$(basename "$t" .py)" python3 "$t"
done
if [ -f tests/browser/run.sh ] && [ -z "${LLMBOX_SKIP_BROWSER:-}" ]; then
    run_suite "browser" tests/browser/run.sh
fi

echo
if [ ${#digest[@]} -gt 0 ]; then
    echo "what failed (each suite's FAIL lines, then the end of its stderr):"
    printf '  %s\n' "${digest[@]}" | head -n 60
fi
[ ${#failures[@]} -gt 0 ] && echo "failed suites: ${failures[*]}"
[ "$skipped" != 0 ] && echo "$skipped skipped"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
