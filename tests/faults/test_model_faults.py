"""A model endpoint that misbehaves, through the whole stack (nginx, web,
agent, sandboxd) with the scripted fake model's fault modes.

What a user relies on: a 5xx is retried with growing waits and then ends
the task with a reason naming the status; a 429's Retry-After is waited
out (measured); a body that is not JSON, JSON cut short, a body of 50 MB
(the client stops at its 16 MiB cap, with bounded memory), a request that
hangs (the model's timeout_s ends it) and a connection dropped in the middle
of the answer each end the task with a sentence that says what happened, or
succeed when a retry gets a good answer. Every task ends; none is left
running. (tests/integration/test_models.py covers the same client through
`llmbox run` for context-length errors, refused keys and budgets.)

All tasks run at once against one fake model: each prompt carries a tag
that picks its scenario."""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from faultlib import Reporter, Stack, agent_pid, bash, create, finish, skip_reason, wait_final  # noqa: E402

CONF = """
[model "default"]
base_url = {model_url}
retries = 2

[model "quick"]
base_url = {model_url}
timeout_s = 2
retries = 1

[model "once"]
base_url = {model_url}
retries = 0
"""

SCENARIOS = {"scenarios": [
    {"match": "[f-500]", "steps": [{"status": 500, "error": "upstream exploded"}]},
    {"match": "[f-503-once]", "steps": [dict(finish("recovered"), status=503, error="warming up", times=1)]},
    {"match": "[f-429]", "steps": [dict(finish("waited"), status=429, error="slow down", retry_after=2, times=1)]},
    {"match": "[f-garbage]", "steps": [{"fault": "garbage"}]},
    {"match": "[f-truncated]", "steps": [{"fault": "truncated", "content": "x" * 200,
                                          "tool_calls": [{"name": "finish", "arguments": {}}]}]},
    {"match": "[f-drop-once]", "steps": [bash("echo kept > /testbed/output/kept.txt"),
                                         dict(finish("after a drop"), fault="drop", times=1)]},
    {"match": "[f-drop-always]", "steps": [dict(finish("never"), fault="drop")]},
    {"match": "[f-huge-chunked]", "steps": [{"fault": "huge", "huge_mb": 50, "chunked": True}]},
    {"match": "[f-huge-length]", "steps": [{"fault": "huge", "huge_mb": 50}]},
    {"match": "[f-hang]", "steps": [{"fault": "hang"}]},
]}


def log_lines(s, name):
    p = os.path.join(s.model_log, name)
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [json.loads(l) for l in f if l.strip()]


def requests_of(s, tag):
    return [r for r in log_lines(s, "requests.jsonl") if r["match"] == tag]


def faults_of(s, tag):
    ns = {r["n"] for r in requests_of(s, tag)}
    return [f for f in log_lines(s, "faults.jsonl") if f["n"] in ns]


class PeakRSS(threading.Thread):
    """Samples the agent of a task until it exits: its peak VmHWM in KiB."""

    def __init__(self, task_id):
        super().__init__(daemon=True)
        self.task_id, self.peak_kib, self.seen = task_id, 0, False

    def run(self):
        end = time.time() + 60
        pid = None
        while time.time() < end and pid is None:
            pid = agent_pid(self.task_id)
            time.sleep(0.005)
        while pid and time.time() < end:
            try:
                with open("/proc/%d/status" % pid) as f:
                    st = f.read()
            except OSError:
                break
            if "\nState:\tZ" in st:
                break
            for line in st.splitlines():
                if line.startswith("VmHWM:"):
                    self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                    self.seen = True
            time.sleep(0.01)


def main():
    rep = Reporter()
    why = skip_reason()
    if why:
        print("SKIP model_faults: %s" % why)
        return 0
    with Stack(scenario=SCENARIOS, conf=CONF, env={"LLMBOX_POOL_SIZE": "2"}) as s:
        t0 = time.time()
        ids = {}
        rss = {}
        for tag, model in [("[f-500]", None), ("[f-503-once]", None), ("[f-429]", None),
                           ("[f-garbage]", None), ("[f-truncated]", None), ("[f-drop-once]", None),
                           ("[f-drop-always]", "once"), ("[f-huge-chunked]", "once"),
                           ("[f-huge-length]", "once"), ("[f-hang]", "quick")]:
            fields = {"model": model} if model else {}
            ids[tag] = create(s, "model fault %s: do it" % tag, **fields)
            if tag.startswith("[f-huge"):
                rss[tag] = PeakRSS(ids[tag])
                rss[tag].start()
        final = {}
        for tag, tid in ids.items():
            final[tag] = wait_final(s, tid, timeout=60)
        took = time.time() - t0

        def ended(tag):
            t = final[tag]
            return t["status"], t["reason"] or ""

        def five_hundreds():
            st, why = ended("[f-500]")
            assert st == "failed", (st, why)
            assert "HTTP 500" in why and "upstream exploded" in why, why
            assert "3 attempts" in why, "the reason should say it was retried: %r" % why
            reqs = requests_of(s, "[f-500]")
            assert len(reqs) == 3, "expected 1 request + 2 retries, got %d" % len(reqs)
            gaps = [b["t"] - a["t"] for a, b in zip(reqs, reqs[1:])]
            # exponential backoff with jitter: 0.5-1 s, then 1-2 s
            assert gaps[0] >= 0.45 and gaps[1] >= 0.95 and gaps[1] >= gaps[0] * 0.99, gaps
        rep.run("http_500_retried_with_backoff_then_fails_naming_status", five_hundreds)

        def one_503():
            st, why = ended("[f-503-once]")
            assert st == "succeeded" and final["[f-503-once]"]["answer"] == "recovered", (st, why)
            assert len(requests_of(s, "[f-503-once]")) == 2
        rep.run("http_503_once_retried_then_succeeds", one_503)

        def retry_after():
            st, why = ended("[f-429]")
            assert st == "succeeded", (st, why)
            reqs = requests_of(s, "[f-429]")
            assert len(reqs) == 2, len(reqs)
            gap = reqs[1]["t"] - reqs[0]["t"]
            assert 1.95 <= gap < 4.0, "Retry-After: 2 was not honoured: retried after %.2f s" % gap
        rep.run("http_429_retry_after_honoured_measured", retry_after)

        def garbage():
            st, why = ended("[f-garbage]")
            assert st == "failed", (st, why)
            assert "not JSON" in why and "502 Bad Gateway" in why, why
            assert len(requests_of(s, "[f-garbage]")) == 1, "a 200 with garbage is not retried"
        rep.run("garbage_body_fails_with_sentence", garbage)

        def truncated():
            st, why = ended("[f-truncated]")
            assert st == "failed", (st, why)
            assert "cut off" in why or "ends early" in why, why
        rep.run("truncated_json_fails_with_sentence", truncated)

        def drop_once():
            st, why = ended("[f-drop-once]")
            assert st == "succeeded" and final["[f-drop-once]"]["answer"] == "after a drop", (st, why)
            f = faults_of(s, "[f-drop-once]")
            assert len(f) == 1 and f[0]["fault"] == "drop", f
            arts = [a["path"] for a in final["[f-drop-once]"]["artifacts"]]
            assert sorted(arts) == ["answer.txt", "kept.txt"], arts
        rep.run("connection_dropped_mid_response_retried", drop_once)

        def drop_always():
            st, why = ended("[f-drop-always]")
            assert st == "failed", (st, why)
            assert "closed the connection" in why and "of" in why, why
        rep.run("connection_dropped_every_time_fails_with_sentence", drop_always)

        def huge(tag, chunked):
            st, why = ended(tag)
            assert st == "failed", (st, why)
            assert "over 16 MiB" in why, why
            f = faults_of(s, tag)
            assert len(f) == 1, f
            # the client stopped reading at its cap: the server could not
            # hand over the 50 MiB (socket buffers hold a few MiB at most)
            assert f[0]["client_closed"] and f[0]["bytes_sent"] < (24 << 20), f
            if not chunked:
                # the Content-Length alone is enough to refuse it
                assert f[0]["bytes_sent"] < (12 << 20), f
            rss[tag].join(5)
            if not rss[tag].seen and not chunked:
                # refused on its Content-Length alone, the agent can end
                # before the sampler finds it on a loaded machine; the bytes
                # it took (above) already show it read no body
                return
            assert rss[tag].seen, "the agent's memory could not be sampled"
            # a sanitizer build (make check-asan) keeps shadow memory and
            # quarantine: its RSS says nothing about the cap
            limit = (48 if "asan" not in os.environ.get("BUILD", "") else 256) * 1024
            assert rss[tag].peak_kib < limit, "agent peak RSS %d KiB" % rss[tag].peak_kib
            print("INFO %s: agent peak RSS %d KiB, %d bytes sent before the client closed" % (tag, rss[tag].peak_kib, f[0]["bytes_sent"]), flush=True)
        rep.run("huge_body_chunked_capped_memory_bounded", huge, "[f-huge-chunked]", True)
        rep.run("huge_body_content_length_refused", huge, "[f-huge-length]", False)

        def hang():
            st, why = ended("[f-hang]")
            assert st == "failed", (st, why)
            assert "did not answer within 2 s" in why, why
            f = faults_of(s, "[f-hang]")
            assert len(f) == 2 and all(x["client_closed"] for x in f), f
            assert all(1800 <= x["held_ms"] <= 4000 for x in f), [x["held_ms"] for x in f]
            t = final["[f-hang]"]
            dur = (t["finished_ms"] - t["started_ms"]) / 1000.0
            assert dur < 10, "a 2 s timeout with one retry took %.1f s" % dur
        rep.run("hung_request_ended_by_timeout_s", hang)

        def all_final():
            assert all(t["status"] in ("succeeded", "failed") for t in final.values())
            assert took < 60, took
            # a task's end is recorded before its agent destroys the sandbox
            # (and sandboxd's worker removes its dir): wait, as the others do
            deadline = time.time() + 10
            left = s.sandbox_leftovers()
            while left and time.time() < deadline:
                time.sleep(0.2)
                left = s.sandbox_leftovers()
            assert not left, left
        rep.run("model_faults_every_task_ends_nothing_left", all_final)
    return rep.failed


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
