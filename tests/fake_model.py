#!/usr/bin/env python3
"""A scripted fake model server for llmbox tests (OpenAI and Anthropic APIs).

Usage:
    python3 tests/fake_model.py --scenario FILE [--port N] [--log-dir DIR]
                                [--delay-ms MS] [--timing-log FILE]

--port 0 (the default) picks a free port; the first line on stdout is then
"PORT <n>" so a test can read it. The server listens on 127.0.0.1 only.
Point llmbox at it with LLMBOX_LLM_URL=http://127.0.0.1:<n>/v1.

Endpoints:
    POST /v1/chat/completions   answers with the next step of the scenario
    POST /v1/messages           the same steps in the Anthropic Messages API
                                shape: tool_calls become tool_use blocks with
                                input objects, reasoning_content a thinking
                                block (with a fake signature), usage
                                input_tokens/output_tokens, errors
                                {"type":"error","error":{"type","message"}}
    GET  /v1/models             {"object":"list","data":[{"id":"fake-model"}]}
    GET  /health                "ok"

Scenario file: JSON, one of
  - a list of steps, or {"steps": [...]}: each request takes the next step
    in order, whatever the request says (a global counter, so an error step
    followed by a good one tests the client's retry);
  - {"scenarios": [{"match": "[plot-csv]", "steps": [...]}, ...],
     "steps": [...]}: for tasks running at once. A request follows the first
    scenario whose "match" string occurs in one of its user messages, or
    the top-level "steps" when none matches; the step is chosen by the
    number of assistant messages already in the request, so each
    conversation walks its own steps and a repeated request gets the same
    answer.
A step:

    {
      "content": "text",                 # optional assistant text
      "reasoning_content": "thinking",   # optional, sent as reasoning_content
      "tool_calls": [                    # optional
        {"name": "bash", "arguments": {"command": "ls"}, "id": "call_1"}
        # "arguments" may be an object (serialized for you) or a string
        # (sent verbatim, e.g. to test invalid JSON); "id" is optional
      ],
      "delay_ms": 0,                     # optional: wait before answering
      "usage": {"prompt_tokens": 10, "completion_tokens": 5},  # optional
      "usage": null,                     # or: no usage in the answer at all
      "status": 200,                     # optional HTTP status (e.g. 500, 401)
      "error": "message",                # optional: body {"error":{"message":...}}
      "code": "context_length_exceeded", # optional: with "error", OpenAI's error code
      "retry_after": 1,                  # optional: a Retry-After header (seconds)
      "raw": "text",                     # optional: this exact body instead
      "ctype": "text/html",              # optional: Content-Type of "raw"
      "fault": "drop",                   # optional: misbehave, see below
      "times": 2                         # optional: status/error/raw/fault/delay_ms
                                         # apply to the first 2 requests that reach
                                         # this step; later ones get its normal answer
    }

Faults ("fault"), for tests of the client's robustness:
    "drop"       200 with the Content-Length of a whole answer, half of it,
                 then the connection is closed (dropped mid-response)
    "hang"       reads the request and never answers; the connection is held
                 until the client closes it (at most 300 s)
    "huge"       200 with a body of "huge_mb" MiB (default 50) that starts
                 like a chat completion and never ends in time; with
                 "chunked": true no Content-Length is sent (chunked), so
                 the client cannot refuse it up front
    "garbage"    200 text/html "<html>...Bad Gateway...</html>" (not JSON)
    "truncated"  200 application/json: the first half of a real answer,
                 correctly framed (the JSON ends early)

A context-length error as vLLM says it:
    {"status": 400, "error": "This model's maximum context length is 4096 tokens. However, you
     requested 5000 tokens (3000 in the messages, 2000 in the completion). ..."}

When the steps run out, the server answers with a call of the finish
tool (arguments {}), so a run always ends.

Eval behaviour ({"eval": true} as the scenario): no steps; each answer is
computed from the request, for the evaluation harness's tests (the evaluation harness):
  - a request without tools (llm mode) is answered with text: "The answer
    is X." for a marker LLM-ANSWER[X] in its last user message, else "I do
    not know.". CTX-ERROR-ONCE in that message: the first such request of
    that message gets vLLM's context-length error (HTTP 400, "maximum
    context length is 4096 tokens ... (3000 in the messages, 2000 in the
    completion)"), the next one the answer; CTX-ERROR-ALWAYS: every one
    gets the error.
  - a request with tools (sandbox mode) calls the tools offered, under the
    names offered (bash or execute_bash, finish or submit). Turn 1: one
    bash call that writes the answer file the prompt names
    (/testbed/answer.txt or /testbed/output/answer.txt, the first the user
    messages mention): SANDBOX-ANSWER[X] writes X; ANSWER-FROM-INPUT[NAME]
    copies NAME from the input folder the prompt names (/testbed/documents
    or /testbed/input), so the answer proves the inputs were there;
    BIG-ANSWER[N] writes N bytes "x"; with none of them, "true" (nothing
    written). Turn 2: finish/submit, with {"answer": Y} for a marker
    FINISH-ANSWER[Y], else {}.
  - usage, exact and deterministic: a message's tokens are
    ceil(chars / 4) of its text (content, plus each tool call's name and
    arguments); prompt_tokens is the sum over the request's messages
    (system included, tool definitions not), completion_tokens the tokens
    of the reply as a message. So in llm mode prompt_tokens =
    ceil(len(prompt) / 4) and completion_tokens = ceil(len(reply) / 4), and
    in sandbox mode each turn's prompt grows by exactly the previous reply's
    completion_tokens plus the observations' tokens.

Exact tokens (RL rollouts): "tokens" in a step, or at the top of the scenario
object for every step (with "eval" too), answers as an inference server
that returns token ids does, when the request asks (return_token_ids for
ids, logprobs for log-probabilities; the OpenAI API only):
    "vllm"      vLLM 0.10.2+: top-level prompt_token_ids, choices[0].token_ids,
                choices[0].logprobs.content[i] {token, logprob, bytes,
                top_logprobs}; token is "token_id:N" when the request says
                return_tokens_as_token_ids
    "sglang"    SGLang's return_token_ids: choices[0].prompt_token_ids and
                choices[0].token_ids; logprobs entries carry "token_id"
    "sglext"    SGLang's extension: sglext.input_ids and sglext.output_ids
                ([[...]] per choice); logprobs entries carry "token_id"
    "none"      a server that ignores the ask: no ids, no logprobs
    "mismatch"  the vLLM shape with one log-probability fewer than ids
    "logprobs_only"  an older vLLM: no id arrays, logprobs tokens
                "token_id:N", no prompt ids
The ids and log-probabilities are deterministic (token_arrays(n, turn,
...)); the log-probabilities need all 17 significant digits to read back
as the same doubles, and two are special (-9999.0, vLLM's stand-in for
-inf, and one in exponent form). "prompt_len": N and "gen_len": N in a step
set the lengths (else a step's own usage counts do, else small defaults);
usage then counts exactly those ids. With --log-dir,
each such answer is also kept as sent, response-NNNN.json, so a test can
compare what llmbox stored with what the server said.

--delay-ms MS: every chat request (both APIs) waits MS milliseconds before
its answer, as a model that takes that long per turn; a step's own
"delay_ms" replaces it for that step. The load tests and benchmarks use it
(200 ms per turn) instead of writing a delay into every step.

--timing-log FILE: one line per chat request, "<n> <received> <answered>
<delay_ms>" (times in ms of CLOCK_MONOTONIC, which the agent's own timers
also use), so a benchmark can tell the model's time from the client's.

--log-dir DIR: each request body is written to DIR/request-0001.json,
request-0002.json ... (pretty-printed), so tests can assert what the agent
sent: the messages, tool observations, "[N turns left]" notes, the tools.
The request headers go next to it as headers-0001.json (so a test
can check that a key was sent, and then that it shows up nowhere else), for
both APIs. Every request also adds one line to DIR/requests.jsonl:
{"n", "t" (time.time() when it arrived), "match" (the scenario's match
string or null), "turn", "fault"}; a faulty answer adds one line to
DIR/faults.jsonl when it is over: {"n", "fault", "bytes_sent" (body bytes
written before the client went away or the fault ended), "client_closed",
"held_ms"}.
"""
import argparse
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def user_text(req):
    """All user message text of a request (content strings or parts)."""
    out = []
    for m in req.get("messages") or []:
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out.extend(p.get("text", "") for p in c if isinstance(p, dict))
    return "\n".join(out)


class State:
    def __init__(self, scenario, log_dir, delay_ms=0, timing_log=None):
        if isinstance(scenario, list):
            scenario = {"steps": scenario}
        self.steps = scenario.get("steps") or []
        self.scenarios = scenario.get("scenarios")
        self.log_dir = log_dir
        self.delay_ms = delay_ms
        self.timing = open(timing_log, "a", buffering=1) if timing_log else None
        self.lock = threading.Lock()
        self.count = 0
        self.hits = {}  # id(step) -> requests that reached it (for "times")
        self.eval = bool(scenario.get("eval"))
        self.tokens = scenario.get("tokens")  # every step's token shape (see "Exact tokens")
        self.ctx_seen = set()  # eval: the llm-mode prompts already refused once

    def pick(self, n, body):
        """(step, match, turn) for request number n (1-based) with this body."""
        if self.scenarios is None:
            return (self.steps[n - 1] if n - 1 < len(self.steps) else None), None, n - 1
        try:
            req = json.loads(body)
        except ValueError:
            req = {}
        text = user_text(req)
        steps, match = self.steps, None
        for sc in self.scenarios:
            if sc.get("match") and sc["match"] in text:
                steps, match = sc.get("steps") or [], sc["match"]
                break
        turn = sum(1 for m in req.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant")
        return (steps[turn] if turn < len(steps) else None), match, turn

    def log(self, name, record):
        if self.log_dir:
            with self.lock, open(os.path.join(self.log_dir, name), "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")

    def next(self, body, headers=None):
        with self.lock:
            self.count += 1
            n = self.count
            if self.log_dir:
                path = os.path.join(self.log_dir, "request-%04d.json" % n)
                try:
                    parsed = json.loads(body)
                    text = json.dumps(parsed, indent=2, ensure_ascii=False)
                except ValueError:
                    text = body.decode("utf-8", "replace")
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(path + ".tmp", path)
                if headers is not None:
                    hpath = os.path.join(self.log_dir, "headers-%04d.json" % n)
                    with open(hpath, "w", encoding="utf-8") as f:
                        json.dump({k.lower(): v for k, v in headers.items()}, f, indent=2)
            if self.eval:
                step, match, turn = eval_step(self, body)
            else:
                step, match, turn = self.pick(n, body)
            if step and "times" in step:
                k = id(step)
                self.hits[k] = self.hits.get(k, 0) + 1
                if self.hits[k] > step["times"]:
                    # spent: the step's normal answer from now on
                    step = {k2: v for k2, v in step.items() if k2 not in FAULT_KEYS}
            if self.log_dir:
                with open(os.path.join(self.log_dir, "requests.jsonl"), "a", encoding="utf-8") as f:
                    f.write(json.dumps({"n": n, "t": time.time(), "match": match, "turn": turn,
                                        "fault": (step or {}).get("fault") or (step or {}).get("status")}) + "\n")
            return n, step


# ---- the eval behaviour (scenario {"eval": true}) ----------------------------

def eval_text(c):
    """The text of one message's content (a string, or OpenAI/Anthropic parts)."""
    if isinstance(c, str):
        return c
    out = []
    for p in c if isinstance(c, list) else []:
        if not isinstance(p, dict):
            continue
        if isinstance(p.get("text"), str):
            out.append(p["text"])
        elif p.get("type") == "tool_use":
            out.append(str(p.get("name", "")) + json.dumps(p.get("input", {})))
        elif p.get("type") == "tool_result":
            out.append(eval_text(p.get("content")))
    return "".join(out)


def eval_msg_tokens(m):
    """ceil(chars / 4) of one message: its text and its tool calls."""
    n = len(eval_text(m.get("content")))
    for c in m.get("tool_calls") or []:
        f = c.get("function") or {}
        n += len(f.get("name") or "") + len(f.get("arguments") or "")
    return (n + 3) // 4


def eval_marker(name, text):
    """The value of the last NAME[...] in text, or None."""
    import re
    found = re.findall(re.escape(name) + r"\[([^\]]*)\]", text)
    return found[-1] if found else None


def eval_step(state, body):
    """(step, match, turn) of the eval behaviour for this request."""
    import re
    import shlex
    try:
        req = json.loads(body)
    except ValueError:
        req = {}
    msgs = [m for m in req.get("messages") or [] if isinstance(m, dict)]
    prompt_tokens = sum(eval_msg_tokens(m) for m in msgs)
    if isinstance(req.get("system"), str):  # Anthropic: the system prompt is apart
        prompt_tokens += (len(req["system"]) + 3) // 4
    users = [eval_text(m.get("content")) for m in msgs if m.get("role") == "user"]
    last = users[-1] if users else ""
    turn = sum(1 for m in msgs if m.get("role") == "assistant")
    tools = req.get("tools") or []
    if not tools:
        if "CTX-ERROR-ALWAYS" in last or ("CTX-ERROR-ONCE" in last and last not in state.ctx_seen):
            state.ctx_seen.add(last)
            return {"status": 400, "error": "This model's maximum context length is 4096 tokens. However, you "
                    "requested 5000 tokens (3000 in the messages, 2000 in the completion). Please reduce the "
                    "length of the messages or completion."}, "eval-llm", turn
        v = eval_marker("LLM-ANSWER", last)
        reply = "The answer is %s." % v if v is not None else "I do not know."
        return {"content": reply, "usage": {"prompt_tokens": prompt_tokens,
                                            "completion_tokens": (len(reply) + 3) // 4}}, "eval-llm", turn
    names = set()
    for t in tools:
        if isinstance(t, dict):
            names.add((t.get("function") or {}).get("name") or t.get("name"))
    bash = "execute_bash" if "execute_bash" in names else "bash"
    finish = "submit" if "submit" in names else "finish"
    text = "\n".join(users)
    if turn == 0:
        m = re.search(r"/testbed/(?:output/)?answer\.txt", text)
        answer = m.group(0) if m else "/testbed/output/answer.txt"
        m = re.search(r"/testbed/(?:documents|input)\b", text)
        inputs = m.group(0) if m else "/testbed/input"
        v, src, big = (eval_marker("SANDBOX-ANSWER", text), eval_marker("ANSWER-FROM-INPUT", text),
                       eval_marker("BIG-ANSWER", text))
        if v is not None:
            cmd = "printf '%%s\\n' %s > %s" % (shlex.quote(v), answer)
        elif src is not None:
            cmd = "cat %s > %s" % (shlex.quote(inputs + "/" + src), answer)
        elif big is not None and big.isdigit():
            cmd = "head -c %d /dev/zero | tr '\\0' x > %s" % (int(big), answer)
        else:
            cmd = "true"
        call = {"name": bash, "arguments": json.dumps({"command": cmd}), "id": "call_eval_1"}
    else:
        v = eval_marker("FINISH-ANSWER", text)
        call = {"name": finish, "arguments": json.dumps({"answer": v} if v is not None else {}),
                "id": "call_eval_%d" % (turn + 1)}
    completion_tokens = (len(call["name"]) + len(call["arguments"]) + 3) // 4
    return {"tool_calls": [call], "usage": {"prompt_tokens": prompt_tokens,
                                            "completion_tokens": completion_tokens}}, "eval-sandbox", turn


# ---- exact tokens (a step's or the scenario's "tokens") -----------------------

TOKEN_MODES = ("vllm", "sglang", "sglext", "none", "mismatch", "logprobs_only")


def seventeen(x):
    """x nudged (by ulps) until its shortest repr needs 17 significant digits."""
    import math
    for _ in range(64):
        digits = repr(x).lstrip("-").split("e")[0].replace(".", "").lstrip("0")
        if len(digits) == 17:
            return x
        x = math.nextafter(x, -math.inf)
    return x


def token_arrays(n, turn, prompt_len, gen_len):
    """(prompt ids, generated ids, log-probabilities) of request n."""
    prompt = [(i * 7919 + n * 104729) % 151643 for i in range(prompt_len)]
    gen = [(j * 31337 + n * 17 + 3) % 151643 for j in range(gen_len)]
    lps = []
    for j in range(gen_len):
        if j == 1:
            lps.append(-9999.0)  # vLLM's stand-in for -inf
        elif j == 2:
            lps.append(seventeen(-1.2345678901234567e-05 * (n + 1)))
        else:
            lps.append(seventeen(-((j + 1) * 0.1 + n * 0.013) / 3.0))
    return prompt, gen, lps


def add_tokens(answer, n, step, body, mode):
    """Adds the token fields of mode to an OpenAI answer (in place), as
    asked by the request body."""
    if mode not in TOKEN_MODES or mode == "none":
        return
    try:
        req = json.loads(body)
    except ValueError:
        req = {}
    msgs = [m for m in req.get("messages") or [] if isinstance(m, dict)]
    turn = sum(1 for m in msgs if m.get("role") == "assistant")
    step = step or {}
    # a step that counts its usage (the eval behaviour) gets arrays of
    # those lengths, so the counts and the ids agree as a real server's do
    usage = step.get("usage") if isinstance(step.get("usage"), dict) else {}
    prompt, gen, lps = token_arrays(n, turn,
                                    int(step.get("prompt_len", usage.get("prompt_tokens", 20 + 7 * len(msgs)))),
                                    int(step.get("gen_len", usage.get("completion_tokens", 5 + n % 4))))
    choice = answer["choices"][0]
    want_ids, want_lp = req.get("return_token_ids") is True, req.get("logprobs") is True
    as_ids = req.get("return_tokens_as_token_ids") is True or mode == "logprobs_only"
    if want_ids and mode in ("vllm", "mismatch"):
        answer["prompt_token_ids"] = prompt
        choice["token_ids"] = gen
    elif want_ids and mode == "sglang":
        choice["prompt_token_ids"] = prompt
        choice["token_ids"] = gen
    elif want_ids and mode == "sglext":
        answer["sglext"] = {"input_ids": prompt, "output_ids": [gen]}
    if want_lp:
        content = []
        for tid, lp in zip(gen, lps):
            e = {"token": ("token_id:%d" % tid) if as_ids else "t%d" % tid, "logprob": lp,
                 "bytes": list(("t%d" % tid).encode()), "top_logprobs": []}
            if mode in ("sglang", "sglext"):
                e["token_id"] = tid
            content.append(e)
        if mode == "mismatch":
            content = content[:-1]
        choice["logprobs"] = {"content": content}
    if "usage" not in step:
        answer["usage"] = {"prompt_tokens": len(prompt), "completion_tokens": len(gen),
                           "total_tokens": len(prompt) + len(gen)}


FAULT_KEYS = ("status", "error", "code", "retry_after", "raw", "ctype", "fault", "delay_ms", "times")


def completion(n, step):
    msg = {"role": "assistant", "content": None}
    if step is None:
        step = {"tool_calls": [{"name": "finish", "arguments": {}}]}
    if "content" in step:
        msg["content"] = step["content"]
    if "reasoning_content" in step:
        msg["reasoning_content"] = step["reasoning_content"]
    calls = []
    for i, c in enumerate(step.get("tool_calls") or []):
        args = c.get("arguments", {})
        if not isinstance(args, str):
            args = json.dumps(args)
        calls.append({
            "id": c.get("id", "call_%d_%d" % (n, i)),
            "type": "function",
            "function": {"name": c.get("name", ""), "arguments": args},
        })
    if calls:
        msg["tool_calls"] = calls
    out = {
        "id": "chatcmpl-fake-%d" % n,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake-model",
        "choices": [{
            "index": 0,
            "message": msg,
            "finish_reason": "tool_calls" if calls else "stop",
        }],
    }
    usage = step.get("usage", {"prompt_tokens": 100 * n, "completion_tokens": 10})
    if usage is not None:  # "usage": null: a server that does not count
        usage = dict(usage)
        usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
        out["usage"] = usage
    return out


def message(n, step):
    """The Anthropic Messages API answer for step (None: call finish)."""
    if step is None:
        step = {"tool_calls": [{"name": "finish", "arguments": {}}]}
    content = []
    if "reasoning_content" in step:
        content.append({"type": "thinking", "thinking": step["reasoning_content"],
                        "signature": "fake-signature-%d" % n})
    if step.get("content"):
        content.append({"type": "text", "text": step["content"]})
    for i, c in enumerate(step.get("tool_calls") or []):
        args = c.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass  # sent as it is, to test the client
        content.append({"type": "tool_use", "id": c.get("id", "toolu_%d_%d" % (n, i)),
                        "name": c.get("name", ""), "input": args})
    usage = step.get("usage", {"prompt_tokens": 100 * n, "completion_tokens": 10}) or {}
    return {
        "id": "msg_fake_%d" % n,
        "type": "message",
        "role": "assistant",
        "model": "fake-model",
        "content": content,
        "stop_reason": "tool_use" if step.get("tool_calls") else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": usage.get("prompt_tokens", 0),
                  "output_tokens": usage.get("completion_tokens", 0)},
    }


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY, as real model servers (uvicorn, vLLM) set it: the
        # headers and the body go out in two writes, and with Nagle on the
        # body waits for the client's delayed ACK of the headers, 40 ms on
        # every reused connection (every turn but the first)
        disable_nagle_algorithm = True

        def log_message(self, fmt, *args):  # quiet: tests read stdout
            pass

        def send(self, status, body, ctype="application/json", headers=None):
            data = body if isinstance(body, bytes) else body.encode("utf-8")
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def fault(self, n, step, answer):
            kind = step["fault"]
            rec = {"n": n, "fault": kind, "bytes_sent": 0, "client_closed": False, "held_ms": 0}
            t0 = time.time()
            try:
                if kind == "garbage":
                    self.send(200, "<html><body><h1>502 Bad Gateway</h1>nginx</body></html>\n", "text/html")
                elif kind == "truncated":
                    data = json.dumps(answer).encode()
                    self.send(200, data[: len(data) // 2])
                elif kind == "drop":
                    data = json.dumps(answer).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    rec["bytes_sent"] = len(data) // 2
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif kind == "hang":
                    # nothing is sent; wait for the client to give up
                    self.connection.settimeout(0.2)
                    while time.time() - t0 < 300:
                        try:
                            if not self.connection.recv(1):
                                rec["client_closed"] = True
                                break
                        except socket.timeout:
                            continue
                        except OSError:
                            rec["client_closed"] = True
                            break
                    self.close_connection = True
                elif kind == "huge":
                    total = int(step.get("huge_mb", 50)) << 20
                    head = b'{"id":"chatcmpl-huge","object":"chat.completion","choices":[{"index":0,' \
                           b'"message":{"role":"assistant","content":"'
                    chunked = bool(step.get("chunked"))
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if chunked:
                        self.send_header("Transfer-Encoding", "chunked")
                    else:
                        self.send_header("Content-Length", str(total))
                    self.end_headers()
                    block = b"A" * 65536
                    sent = 0
                    try:
                        while sent < total:
                            part = head if sent == 0 else block[: min(len(block), total - sent)]
                            if chunked:
                                self.wfile.write(b"%x\r\n" % len(part) + part + b"\r\n")
                            else:
                                self.wfile.write(part)
                            sent += len(part)
                        if chunked:
                            self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                    except OSError:
                        rec["client_closed"] = True
                    rec["bytes_sent"] = sent
                    self.close_connection = True
                else:
                    self.send(500, json.dumps({"error": {"message": "fake_model: unknown fault " + kind}}))
            except OSError:
                rec["client_closed"] = True
            rec["held_ms"] = int((time.time() - t0) * 1000)
            state.log("faults.jsonl", rec)

        def do_GET(self):
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self.send(200, json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}))
            elif self.path == "/health":
                self.send(200, "ok", "text/plain")
            else:
                self.send(404, json.dumps({"error": {"message": "not found"}}))

        def parse_request(self):
            # the request line has arrived: from here on the time is the model's
            self.t_recv = time.monotonic()
            return super().parse_request()

        def do_POST(self):
            t_recv = self.t_recv
            n, delay = self.post()
            if state.timing and n:
                with state.lock:
                    state.timing.write("%d %.3f %.3f %d\n" % (n, t_recv * 1000, time.monotonic() * 1000, delay))

        def post(self):
            """Answers one POST; returns (request number or 0, delay in ms)."""
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            path = self.path.rstrip("/")
            anthropic = path in ("/v1/messages", "/messages")
            if not anthropic and path not in ("/v1/chat/completions", "/chat/completions"):
                self.send(404, json.dumps({"error": {"message": "no such endpoint: " + self.path}}))
                return 0, 0
            n, step = state.next(body, dict(self.headers))
            step = step or None
            delay = step.get("delay_ms", state.delay_ms) if step else state.delay_ms
            if delay:
                time.sleep(delay / 1000.0)
            if step and step.get("fault"):
                answer = message(n, step) if anthropic else completion(n, step)
                self.fault(n, step, answer)
                return n, delay
            if step and "raw" in step:
                self.send(step.get("status", 200), step["raw"], step.get("ctype", "application/json"))
                return n, delay
            if step and "error" in step:
                if anthropic:
                    err = {"type": "error", "error": {"type": "fake_error", "message": step["error"]}}
                else:
                    err = {"error": {"message": step["error"], "type": "fake"}}
                    if "code" in step:
                        err["error"]["code"] = step["code"]
                extra = {"Retry-After": str(step["retry_after"])} if "retry_after" in step else None
                self.send(step.get("status", 500), json.dumps(err), headers=extra)
                return n, delay
            answer = message(n, step) if anthropic else completion(n, step)
            mode = (step or {}).get("tokens", state.tokens)
            if mode and not anthropic:
                add_tokens(answer, n, step, body, mode)
            data = json.dumps(answer)
            if mode and not anthropic and state.log_dir:
                with open(os.path.join(state.log_dir, "response-%04d.json" % n), "w", encoding="utf-8") as f:
                    f.write(data)
            self.send(step.get("status", 200) if step else 200, data)
            return n, delay

    return Handler


class Server(ThreadingHTTPServer):
    # hundreds of agents connect at once in the load tests: a listen
    # backlog of 5 (the default) would drop SYNs and add 1 s retries
    request_queue_size = 1024
    daemon_threads = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--port", type=int, default=0)
    # the cluster (scripts/cluster.sh): its bridge address, which the nodes'
    # network namespaces reach; loopback otherwise
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--log-dir")
    ap.add_argument("--delay-ms", type=int, default=0)
    ap.add_argument("--timing-log")
    a = ap.parse_args()
    with open(a.scenario, encoding="utf-8") as f:
        sc = json.load(f)
    if not isinstance(sc, (list, dict)):
        sys.exit("fake_model: the scenario must be a list of steps or an object")
    if a.log_dir:
        os.makedirs(a.log_dir, exist_ok=True)
    srv = Server((a.host, a.port), make_handler(State(sc, a.log_dir, a.delay_ms, a.timing_log)))
    print("PORT %d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
