#!/bin/bash
# The agent loop end to end through `llmbox run`, without root: a scripted
# fake model (tests/fake_model.py) and a fake sandbox daemon
# (tests/fake_sandboxd.py, which runs commands on the host: not a sandbox).
# Prints PASS/FAIL lines like the unit tests.
# Usage: tests/integration/agent_run.sh [path/to/llmbox]   (test_agent_run.py runs it)
set -u
cd "$(dirname "$0")/../.."
LLMBOX=${1:-${LLMBOX:-${BUILD:-build}/llmbox}}
if [ ! -x "$LLMBOX" ]; then
    echo "FAIL agent_run_setup: no llmbox binary at $LLMBOX (run make first)"
    exit 1
fi
LLMBOX=$(realpath "$LLMBOX")
T=$(mktemp -d /tmp/llmbox-agent-test.XXXXXX)
FAILED=0
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    # KEEP=1 leaves the outputs and logs for a look
    if [ -n "${KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; FAILED=1; }

export LLMBOX_HOME=$PWD
export LLMBOX_SANDBOXD_SOCKET=$T/sandboxd.sock
export LLMBOX_LLM_KEY=sk-test-secret
export NO_COLOR=1
python3 tests/fake_sandboxd.py --socket "$LLMBOX_SANDBOXD_SOCKET" --root "$T/sandboxes" > "$T/sbd.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$LLMBOX_SANDBOXD_SOCKET" ] && break; sleep 0.1; done

# start_model NAME SCENARIO_JSON: starts a fake model, sets LLMBOX_LLM_URL
start_model() {
    echo "$2" > "$T/$1.json"
    mkdir -p "$T/$1.log"
    python3 tests/fake_model.py --scenario "$T/$1.json" --log-dir "$T/$1.log" > "$T/$1.port" 2>"$T/$1.err" &
    PIDS+=($!)
    for _ in $(seq 50); do grep -q PORT "$T/$1.port" 2>/dev/null && break; sleep 0.1; done
    export LLMBOX_LLM_URL="http://127.0.0.1:$(awk '{print $2}' "$T/$1.port")/v1"
}

# ---- a full task: outputs, answer, observations, corrective message ----
start_model full '[
 {"content":"Looking.","reasoning_content":"I should run a command.",
  "tool_calls":[{"name":"bash","arguments":{"command":"echo hello; echo oops >&2; ls input; exit 3"}}]},
 {"content":"I think the answer is 42."},
 {"tool_calls":[
   {"name":"file_editor","arguments":{"command":"create","path":"/testbed/output/report.md","file_text":"# Report\n\tTabbed $(x)\n"}},
   {"name":"bash","arguments":{"command":"mkdir -p output/sub && printf data > output/sub/d.csv && ln -s /etc/passwd output/link"}},
   {"name":"file_editor","arguments":{"command":"view"}}]},
 {"tool_calls":[{"name":"finish","arguments":{"answer":"42"}}]}
]'
echo "a,b" > "$T/data.csv"
OUT=$T/out1
"$LLMBOX" run -i "$T/data.csv" -o "$OUT" --max-turns 10 "Compute the answer" > "$T/run1.txt" 2> "$T/run1.err"
RC=$?
[ $RC -eq 0 ] && pass run_succeeds || fail run_succeeds "exit $RC: $(tail -3 "$T/run1.txt") $(tail -3 "$T/run1.err")"
[ "$(cat "$OUT/answer.txt" 2>/dev/null)" = "42" ] && pass finish_answer_written || fail finish_answer_written "answer.txt: $(cat "$OUT/answer.txt" 2>&1)"
[ "$(cat "$OUT/report.md" 2>/dev/null)" = "$(printf '# Report\n\tTabbed $(x)')" ] && pass file_editor_content_exact || fail file_editor_content_exact "$(cat -A "$OUT/report.md" 2>&1)"
[ "$(cat "$OUT/sub/d.csv" 2>/dev/null)" = "data" ] && pass nested_output_copied || fail nested_output_copied "missing sub/d.csv"
[ ! -e "$OUT/link" ] && pass symlink_not_copied || fail symlink_not_copied "link was copied"
python3 - "$OUT/trajectory.json" <<'PY' && pass trajectory_written || fail trajectory_written "see above"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["status"] == "succeeded", t["status"]
assert t["answer"] == "42"
assert t["usage"]["turns"] == 4, t["usage"]
assert t["turns"][0]["reasoning"] == "I should run a command."
assert [m["role"] for m in t["messages"]][:4] == ["system", "user", "assistant", "tool"]
assert t["turns"][2]["tool_results"][0]["status"] == "ok"
PY
R2=$T/full.log/request-0002.json
python3 - "$R2" "$T/full.log/request-0003.json" "$T/full.log/request-0004.json" "$T/full.log/request-0001.json" <<'PY' && pass observations_sent_to_model || fail observations_sent_to_model "see above"
import json, sys
r2, r3, r4, r1 = (json.load(open(p)) for p in sys.argv[1:5])
sysmsg = r1["messages"][0]["content"]
assert "/testbed/output/answer.txt" in sysmsg and "{output_dir}" not in sysmsg
assert "Compute the answer" in r1["messages"][1]["content"]
assert {t["function"]["name"] for t in r1["tools"]} >= {"bash", "file_editor", "finish"}
obs = r2["messages"][-1]
assert obs["role"] == "tool" and obs["tool_call_id"] == "call_1_0", obs
c = obs["content"]
assert "[stdout]\nhello\ndata.csv\n" in c, c
assert "[stderr]\noops\n" in c, c
assert "[status: exit 3]" in c, c
assert c.endswith("[9 turns left]"), c
nudge = r3["messages"][-1]
assert nudge["role"] == "user" and "You must call a tool" in nudge["content"], nudge
tools = [m for m in r4["messages"] if m["role"] == "tool"][-3:]
assert "File created successfully at: /testbed/output/report.md" in tools[0]["content"]
assert "[status: ok]" in tools[1]["content"] or "(no output)" in tools[1]["content"], tools[1]
assert "Invalid arguments for file_editor: missing required parameter 'path'" in tools[2]["content"], tools[2]
assert "[7 turns left]" in tools[2]["content"]
PY
grep -q "sk-test-secret" "$T/run1.txt" "$T/run1.err" "$OUT/trajectory.json" && fail key_never_shown "key in output" || pass key_never_shown

# ---- the turn limit ----
start_model limit '[{"tool_calls":[{"name":"bash","arguments":{"command":"true"}}]},
                    {"tool_calls":[{"name":"bash","arguments":{"command":"true"}}]},
                    {"tool_calls":[{"name":"bash","arguments":{"command":"true"}}]}]'
"$LLMBOX" run -o "$T/out2" --max-turns 2 "loop" > "$T/run2.txt" 2>&1
RC=$?
[ $RC -eq 1 ] && grep -q "reached the turn limit (2)" "$T/run2.txt" && pass turn_limit || fail turn_limit "exit $RC $(tail -2 "$T/run2.txt")"
grep -q '\[1 turn left' "$T/limit.log/request-0002.json" && pass last_turn_warned || fail last_turn_warned "no last-turn note"

# ---- the token budget (fake usage: prompt 100*n + completion 10) ----
start_model budget '[{"tool_calls":[{"name":"bash","arguments":{"command":"true"}}]},
                     {"tool_calls":[{"name":"bash","arguments":{"command":"true"}}]},
                     {"tool_calls":[{"name":"bash","arguments":{"command":"true"}}]}]'
LLMBOX_TOKEN_BUDGET=250 "$LLMBOX" run -o "$T/out2b" "budget" > "$T/run2b.txt" 2>&1
RC=$?
[ $RC -eq 1 ] && grep -q "reached the token budget (250 tokens; the last turn used 310)" "$T/run2b.txt" && grep -q "\[turn 3\]" "$T/run2b.txt" \
    && pass token_budget || fail token_budget "exit $RC $(tail -2 "$T/run2b.txt")"

# ---- two replies in a row without a tool call ----
start_model notool '[{"content":"hello"},{"content":"still talking"}]'
"$LLMBOX" run -o "$T/out3" "chat" > "$T/run3.txt" 2>&1
RC=$?
[ $RC -eq 1 ] && grep -q "twice in a row without calling a tool" "$T/run3.txt" && pass no_tool_twice_fails || fail no_tool_twice_fails "exit $RC"

# ---- plugins: a crash, a configured tool that did not load, a second example ----
P=$T/plugins
mkdir -p "$P"
ln -s "$PWD/plugins/bash.so" "$PWD/plugins/finish.so" "$PWD/tests/plugins/crashfix.so" "$P/"
start_model crash '[{"tool_calls":[{"name":"bash","arguments":{"command":"echo kept > output/before.txt"}}]},
                    {"tool_calls":[{"name":"crashfix","arguments":{}}]}]'
LLMBOX_PLUGINS=$P LLMBOX_TOOLS=all "$LLMBOX" run -o "$T/out8" "crash" > "$T/run8.txt" 2>&1
RC=$?
[ $RC -eq 1 ] && grep -q "the tool crashfix crashed (SIGSEGV); the task was stopped" "$T/run8.txt" \
    && grep -q "the tool crashfix crashed (SIGSEGV) at plugins/crashfix.so+0x" "$T/run8.txt" \
    && pass run_names_crashed_tool || fail run_names_crashed_tool "exit $RC: $(tail -4 "$T/run8.txt")"
[ "$(cat "$T/out8/before.txt" 2>/dev/null)" = kept ] && python3 - "$T/out8/trajectory.json" <<'PY' \
    && pass run_crash_keeps_outputs || fail run_crash_keeps_outputs "$(ls "$T/out8" 2>&1)"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["status"] == "failed", t["status"]
PY

# a configured tool that did not load is said on the task (an error event), which goes on
start_model missing '[{"tool_calls":[{"name":"finish","arguments":{"answer":"ok"}}]}]'
LLMBOX_PLUGINS=$P LLMBOX_TOOLS="bash, python" "$LLMBOX" run -o "$T/out9" "x" > "$T/run9.txt" 2>&1
RC=$?
[ $RC -eq 0 ] && grep -q "^error: The tools = setting names python, which no loaded plugin provides: the model was not offered it" "$T/run9.txt" \
    && pass missing_tool_event || fail missing_tool_event "exit $RC: $(grep error "$T/run9.txt")"

# the second example: folder wordcount/, tool count_words, through a real run
ln -s "$PWD/plugins/wordcount.so" "$P/"
start_model wc '[{"tool_calls":[{"name":"bash","arguments":{"command":"printf \"one two\\nthree\\n\" > output/n.txt"}}]},
                 {"tool_calls":[{"name":"count_words","arguments":{"path":"/testbed/output/n.txt"}}]},
                 {"tool_calls":[{"name":"finish","arguments":{}}]}]'
LLMBOX_PLUGINS=$P LLMBOX_TOOLS="bash, count_words" "$LLMBOX" run -o "$T/out10" "count" > "$T/run10.txt" 2>&1
RC=$?
[ $RC -eq 0 ] && grep -q "2 lines, 3 words, 14 characters, 14 bytes" "$T/run10.txt" \
    && pass count_words_example || fail count_words_example "exit $RC: $(tail -5 "$T/run10.txt")"

# `llmbox plugin check`: the tools and schema, or the one error
"$LLMBOX" plugin check plugins/wordcount.so > "$T/check1.txt" 2>&1 && grep -q '^tool count_words (plugins/wordcount.so)' "$T/check1.txt" \
    && grep -q '"path":' "$T/check1.txt" && pass plugin_check_ok || fail plugin_check_ok "$(cat "$T/check1.txt")"
"$LLMBOX" plugin check tests/plugins/hidden_entry.so > "$T/check2.txt" 2>/dev/null
RC=$?
[ $RC -eq 1 ] && [ "$(cat "$T/check2.txt")" = "refused: plugins/hidden_entry.so: llmbox_tool_plugin_v1 is defined but not exported (plugins build with -fvisibility=hidden: mark it LLMBOX_PLUGIN_EXPORT, or use LLMBOX_PLUGIN_DEFINE)" ] \
    && pass plugin_check_refused || fail plugin_check_refused "exit $RC: $(cat "$T/check2.txt")"

# ---- model endpoint down: fails within seconds with a plain sentence ----
export LLMBOX_LLM_URL=http://127.0.0.1:9/v1
S=$(date +%s%N)
"$LLMBOX" run -o "$T/out4" "anything" > "$T/run4.txt" 2>&1
RC=$?
MS=$(( ($(date +%s%N) - S) / 1000000 ))
[ $RC -eq 1 ] && grep -q "The model endpoint http://127.0.0.1:9/v1/chat/completions is not reachable" "$T/run4.txt" && [ $MS -lt 5000 ] \
    && pass model_down_fails_fast || fail model_down_fails_fast "exit $RC in $MS ms: $(tail -2 "$T/run4.txt")"

# ---- a refused key: the task ends at once, saying where the key came from ----
start_model http401 '[{"status":401,"error":"invalid api key"},{"content":"never asked"}]'
"$LLMBOX" run -o "$T/out5" "x" > "$T/run5.txt" 2>&1
grep -qF 'refused the API key from $LLMBOX_LLM_KEY (HTTP 401: invalid api key)' "$T/run5.txt" \
    && [ "$(ls "$T/http401.log"/request-[0-9][0-9][0-9][0-9].json | wc -l)" = 1 ] \
    && pass http_error_reported || fail http_error_reported "$(tail -2 "$T/run5.txt")"

# ---- cancel while the model thinks ----
start_model slow '[{"delay_ms":20000,"content":"late"}]'
"$LLMBOX" run -o "$T/out6" "slow" > "$T/run6.txt" 2>&1 &
RP=$!
sleep 1
S=$(date +%s%N)
kill -TERM $RP
wait $RP
RC=$?
MS=$(( ($(date +%s%N) - S) / 1000000 ))
[ $RC -eq 130 ] && grep -q "cancelled" "$T/run6.txt" && [ $MS -lt 3000 ] && pass cancel_stops_quickly || fail cancel_stops_quickly "exit $RC in $MS ms"
[ -f "$T/out6/trajectory.json" ] && pass cancel_keeps_trajectory || fail cancel_keeps_trajectory "no trajectory"

# ---- no sandbox daemon: says how to start it ----
LLMBOX_SANDBOXD_SOCKET=$T/none.sock "$LLMBOX" run "x" > "$T/run7.txt" 2>&1
RC=$?
[ $RC -ne 0 ] && grep -q "sandboxd" "$T/run7.txt" && grep -q "make run" "$T/run7.txt" && pass sandboxd_missing_explained || fail sandboxd_missing_explained "exit $RC"

exit $FAILED
