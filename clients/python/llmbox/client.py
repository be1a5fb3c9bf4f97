"""The synchronous client: sandboxes, tool calls, tasks, rollout groups,
evaluations (docs/API.md). Thread-safe: each thread uses its own keep-alive
connection, so one Client can serve a trainer's worker threads."""
import json
import os
import time
import urllib.parse
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._http import Transport
from .errors import APIError, LlmboxError, Timeout
from .sandbox import PathLike, Sandbox, SandboxSpec, ToolResult

FINAL_TASK = ("succeeded", "failed", "cancelled")
FINAL_EVAL = ("succeeded", "failed", "cancelled")
# a file for submit_task / start_eval: a local path, or (name, bytes)
FileArg = Union[PathLike, Tuple[str, bytes]]


@dataclass(frozen=True)
class Event:
    """One server-sent event of a task: id (1, 2, 3 ... without holes),
    event (status, model, tool, answer, artifacts, error, done), data."""

    id: Optional[int]
    event: str
    data: Any


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def multipart(fields: Mapping[str, Any], files: Sequence[Tuple[str, str, bytes]]) -> Tuple[str, bytes]:
    """fields {name: value}, files [(field, filename, bytes)] -> (Content-Type, body)."""
    boundary = "llmbox-" + uuid.uuid4().hex
    out = bytearray()
    for k, v in fields.items():
        if v is None:
            continue
        out += ('--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n' % (boundary, k)).encode()
        out += str(v).encode("utf-8") + b"\r\n"
    for field_name, name, data in files:
        # the server reads `\"` and `\\` as escapes in filename (docs/API.md)
        qn = name.replace("\\", "\\\\").replace('"', '\\"')
        out += ('--%s\r\nContent-Disposition: form-data; name="%s"; filename="%s"\r\n'
                'Content-Type: application/octet-stream\r\n\r\n' % (boundary, field_name, qn)).encode("utf-8")
        out += data + b"\r\n"
    out += ("--%s--\r\n" % boundary).encode()
    return "multipart/form-data; boundary=" + boundary, bytes(out)


def _file_arg(f: FileArg) -> Tuple[str, bytes]:
    if isinstance(f, tuple):
        name, data = f
        return name, bytes(data)
    p = Path(f)
    return p.name, p.read_bytes()


def parse_sse(lines: Iterable[bytes]) -> Iterator[Event]:
    """Server-sent events from lines (comments and keepalives skipped)."""
    eid: Optional[int] = None
    ev = "message"
    data: List[str] = []
    for raw in lines:
        line = raw.decode("utf-8", "replace")
        if not line:
            if data:
                text = "\n".join(data)
                try:
                    obj: Any = json.loads(text)
                except ValueError:
                    obj = text
                yield Event(eid, ev, obj)
            eid, ev, data = None, "message", []
            continue
        if line.startswith(":"):
            continue
        k, _, v = line.partition(":")
        v = v[1:] if v.startswith(" ") else v
        if k == "id":
            eid = int(v) if v.isdigit() else None
        elif k == "event":
            ev = v
        elif k == "data":
            data.append(v)


class Client:
    """llmbox at `url` (e.g. http://127.0.0.1:8080).

    token: a user's API token (where users are configured); sandbox_token:
    the sandbox API's token (LLMBOX_SANDBOX_API_TOKEN), used for
    /api/sandboxes, tool calls and rollouts; it defaults to token.
    timeout: seconds to wait for an answer (long calls add their own);
    max_retries: times a 429 or 503 is retried (Retry-After honoured, else
    exponential backoff from backoff_s)."""

    def __init__(self, url: str, token: Optional[str] = None, sandbox_token: Optional[str] = None,
                 timeout: float = 60.0, max_retries: int = 5, backoff_s: float = 0.5):
        self.url = url
        self.token = token
        self.sandbox_token = sandbox_token if sandbox_token is not None else token
        self._t = Transport(url, timeout=timeout, max_retries=max_retries, backoff_s=backoff_s)

    # ---- plumbing ----------------------------------------------------------------
    def _auth(self) -> Dict[str, str]:
        return {"Authorization": "Bearer " + self.token} if self.token else {}

    def _sb_auth(self) -> Dict[str, str]:
        return {"Authorization": "Bearer " + self.sandbox_token} if self.sandbox_token else {}

    def close(self) -> None:
        """Closes the calling thread's connection."""
        self._t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def connections_opened(self) -> int:
        """Connections opened so far (keep-alive: one per thread, plus one per stream)."""
        return self._t.connections_opened

    def call(self, method: str, path: str, obj: Any = None, *, sandbox_auth: bool = False, **kw: Any) -> Any:
        """Any API route: sends obj as JSON, returns the parsed answer
        (retries and errors as everywhere). sandbox_auth: send the sandbox
        token instead of the user token."""
        return self._t.json(method, path, obj, headers=self._sb_auth() if sandbox_auth else self._auth(), **kw)

    def get_json(self, path: str, **kw: Any) -> Any:
        """GET any API path (with the user token) and parse its JSON."""
        return self.call("GET", path, **kw)

    def health(self) -> Dict[str, Any]:
        return self._t.json("GET", "/api/health")

    # ---- sandboxes -----------------------------------------------------------------
    def sandbox(self, spec: Optional[SandboxSpec] = None, **fields: Any) -> Sandbox:
        """A Sandbox object (not yet created: call start(), or use `with`)."""
        if spec is None:
            spec = SandboxSpec(**fields)
        elif fields:
            raise TypeError("give a SandboxSpec or its fields, not both")
        return Sandbox(self, spec)

    def start_sandbox(self, spec: Optional[SandboxSpec] = None, **fields: Any) -> Sandbox:
        return self.sandbox(spec, **fields).start()

    def attach_sandbox(self, sandbox_id: str) -> Sandbox:
        """A Sandbox object for one that exists already (made by another
        process, or before a restart of this one): its status is read."""
        sb = Sandbox(self)
        sb.id = sandbox_id
        sb.info = self._t.json("GET", "/api/sandboxes/" + _q(sandbox_id), headers=self._sb_auth())
        return sb

    def list_sandboxes(self) -> Dict[str, Any]:
        return self._t.json("GET", "/api/sandboxes", headers=self._sb_auth())

    def list_snapshots(self) -> List[Dict[str, Any]]:
        """The sandbox API's snapshots: [{snapshot_id, bytes, created_at}]."""
        return list(self._t.json("GET", "/api/snapshots", headers=self._sb_auth())["snapshots"])

    def delete_snapshot(self, snapshot_id: str) -> Dict[str, Any]:
        return self._t.json("DELETE", "/api/snapshots/" + _q(snapshot_id), headers=self._sb_auth())

    # ---- tools ---------------------------------------------------------------------
    def list_tools(self) -> Any:
        """GET /api/tools: the tools' schemas, as offered to a model."""
        return self._t.json("GET", "/api/tools", headers=self._auth())

    def call_tool(self, sandbox_id: str, name: str, arguments: Optional[Mapping[str, Any]] = None,
                  timeout: Optional[float] = None, **kw: Any) -> ToolResult:
        """POST /api/sandboxes/{id}/tools/{name} with the arguments object."""
        args = dict(arguments or {})
        args.update(kw)
        wait = timeout if timeout is not None else max(self._t.timeout, 600.0)
        o = self._t.json("POST", "/api/sandboxes/%s/tools/%s" % (_q(sandbox_id), _q(name)), args,
                         headers=self._sb_auth(), timeout=wait)
        return ToolResult(observation=o.get("observation", ""), status=o.get("status"),
                          exit_code=o.get("exit_code"), truncated=bool(o.get("truncated")), raw=o)

    # ---- tasks ---------------------------------------------------------------------
    def submit_task(self, prompt: str, files: Sequence[FileArg] = (), *, model: Optional[str] = None,
                    max_turns: Optional[int] = None, token_budget: Optional[int] = None,
                    timeout_s: Optional[int] = None, network: Optional[str] = None,
                    image: Optional[str] = None, unpack: Optional[bool] = None) -> Dict[str, Any]:
        """POST /api/tasks: the task object (status "queued")."""
        fields: Dict[str, Any] = {"prompt": prompt, "model": model, "max_turns": max_turns,
                                  "token_budget": token_budget, "timeout_s": timeout_s, "network": network,
                                  "image": image, "unpack": None if unpack is None else int(bool(unpack))}
        parts = [("files",) + _file_arg(f) for f in files]
        ctype, body = multipart(fields, parts)  # type: ignore[arg-type]
        return self._t.request("POST", "/api/tasks", body, {**self._auth(), "Content-Type": ctype},
                               ok=(201,), timeout=max(self._t.timeout, 300)).json()

    def get_task(self, task_id: str) -> Dict[str, Any]:
        return self._t.json("GET", "/api/tasks/" + _q(task_id), headers=self._auth())

    def task_events(self, task_id: str, last_event_id: Optional[int] = None,
                    idle_timeout: float = 60.0) -> Iterator[Event]:
        """The task's events in order, ending after `done`. A stream that
        breaks is resumed from the last event seen (Last-Event-ID), so no
        event is lost or repeated. idle_timeout: the server sends a
        keepalive every 15 s, so silence this long is a dead stream."""
        last = last_event_id
        for _ in range(100):
            h = dict(self._auth())
            if last is not None:
                h["Last-Event-ID"] = str(last)
            try:
                for e in parse_sse(self._t.stream_lines("/api/tasks/%s/events" % _q(task_id), h,
                                                        timeout=idle_timeout)):
                    if e.id is not None:
                        last = e.id
                    yield e
                    if e.event == "done":
                        return
            except APIError:
                raise
            except LlmboxError:  # a broken or silent stream: resume from `last`
                time.sleep(0.5)
                continue
            # the stream ended without `done` (LLMBOX_SSE_MAX_S): resume from `last`
        raise LlmboxError("task %s: the event stream broke 100 times" % task_id)

    def wait_task(self, task_id: str, timeout: float = 3600.0, poll_s: float = 0.5) -> Dict[str, Any]:
        """Polls until the task has ended; returns the task object."""
        deadline = time.monotonic() + timeout
        while True:
            t = self.get_task(task_id)
            if t["status"] in FINAL_TASK:
                return t
            if time.monotonic() >= deadline:
                raise Timeout("task %s: still %s after %ss" % (task_id, t["status"], timeout))
            time.sleep(poll_s)

    def run_task(self, prompt: str, files: Sequence[FileArg] = (), **kw: Any) -> Dict[str, Any]:
        """submit_task, follow its events to `done`, return the final task."""
        t = self.submit_task(prompt, files, **kw)
        for _ in self.task_events(t["id"]):
            pass
        return self.get_task(t["id"])

    def cancel_task(self, task_id: str) -> Dict[str, Any]:
        return self._t.json("POST", "/api/tasks/%s/cancel" % _q(task_id), headers=self._auth())

    def delete_task(self, task_id: str) -> Dict[str, Any]:
        return self._t.json("DELETE", "/api/tasks/" + _q(task_id), headers=self._auth())

    def artifacts(self, task_id: str) -> List[Dict[str, Any]]:
        return self._t.json("GET", "/api/tasks/%s/artifacts" % _q(task_id), headers=self._auth())["artifacts"]

    def read_artifact(self, task_id: str, path: str) -> bytes:
        url = "/api/tasks/%s/artifacts/%s" % (_q(task_id), urllib.parse.quote(path, safe="/"))
        return self._t.request("GET", url, None, {**self._auth(), "Accept": "*/*"},
                               timeout=max(self._t.timeout, 300)).body

    def download_artifacts(self, task_id: str, dest: PathLike) -> List[Path]:
        """Every artifact of the task under dest/ (folders kept), each
        written to a temporary name and renamed. Paths are checked: a name
        that would leave dest is refused (a task's outputs are hostile)."""
        root = Path(dest).resolve()
        out: List[Path] = []
        for a in self.artifacts(task_id):
            rel = a["path"]
            target = (root / rel).resolve()
            if root not in target.parents:
                raise LlmboxError("artifact path %r would leave %s; not written" % (rel, root))
            data = self.read_artifact(task_id, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(".%s.part-%d" % (target.name, os.getpid()))
            tmp.write_bytes(data)
            os.replace(tmp, target)
            out.append(target)
        return out

    def trajectory(self, task_id: str) -> Dict[str, Any]:
        return self._t.json("GET", "/api/tasks/%s/trajectory" % _q(task_id), headers=self._auth())

    def task_tokens(self, task_id: str) -> List[Dict[str, Any]]:
        """GET /api/tasks/{id}/tokens.jsonl: one dict per turn (capture_tokens)."""
        body = self._t.request("GET", "/api/tasks/%s/tokens.jsonl" % _q(task_id), None,
                               {**self._auth(), "Accept": "*/*"}).body
        return [json.loads(line) for line in body.decode("utf-8").splitlines() if line.strip()]

    # ---- rollout groups ----------------------------------------------------------
    def create_rollout(self, prompt: str, n: int = 1, *, files: Sequence[Mapping[str, Any]] = (),
                       reward: Optional[Mapping[str, Any]] = None, **options: Any) -> Dict[str, Any]:
        """POST /api/rollouts: a group of n samples of one prompt. options:
        system_prompt, tools, model, sampling ({"max_tokens": N}), max_turns, timeout_s,
        token_budget, capture_tokens, metadata (docs/API.md, "Rollouts");
        passed through as given (the server refuses what it does not know)."""
        return self._t.json("POST", "/api/rollouts", self._rollout_body(prompt, n, files, reward, options),
                            headers=self._sb_auth(), ok=(200, 201))

    def create_rollouts(self, groups: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """The batch form: many groups in one request (each a body as for
        create_rollout, as a dict)."""
        o = self._t.json("POST", "/api/rollouts", {"groups": [dict(g) for g in groups]},
                         headers=self._sb_auth(), ok=(200, 201))
        return o["groups"]

    @staticmethod
    def _rollout_body(prompt: str, n: int, files: Sequence[Mapping[str, Any]],
                      reward: Optional[Mapping[str, Any]], options: Mapping[str, Any]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"prompt": prompt, "n": n}
        if files:
            body["files"] = [dict(f) for f in files]
        if reward is not None:
            body["reward"] = dict(reward)
        body.update({k: v for k, v in options.items() if v is not None})
        return body

    def get_rollout(self, group_id: str, wait: Optional[float] = None) -> Dict[str, Any]:
        """GET /api/rollouts/{id}; wait (<= 60 s): long-poll until done."""
        path = "/api/rollouts/" + _q(group_id)
        if wait is not None:
            path += "?wait=%d" % max(0, min(60, int(wait)))
        return self._t.json("GET", path, headers=self._sb_auth(),
                            timeout=self._t.timeout + (wait or 0))

    def wait_rollout(self, group_id: str, timeout: float = 3600.0) -> Dict[str, Any]:
        """Long-polls until the group is done or cancelled and every sample
        is done (a cancelled group's running samples take a moment to stop,
        and only then have their outcome)."""
        deadline = time.monotonic() + timeout
        while True:
            t0 = time.monotonic()
            g = self.get_rollout(group_id, wait=max(1, min(60, deadline - t0)))
            if g.get("status") in ("done", "cancelled") and \
                    all(x.get("status") == "done" for x in g.get("samples") or []):
                return g
            if time.monotonic() >= deadline:
                raise Timeout("rollout group %s: still %s after %ss" % (group_id, g.get("status"), timeout))
            # over the server's rollout_max_waiters a long-poll answers at
            # once: poll gently instead of spinning
            if time.monotonic() - t0 < 0.5:
                time.sleep(0.5)

    def rollout_events(self, group_id: str, idle_timeout: float = 120.0) -> Iterator[Dict[str, Any]]:
        """One dict per sample as it finishes (the stream's NDJSON lines, or
        SSE data), until the server's end line ({"done": true, "status"}),
        which is not yielded. A stream that ends early (the server ends
        streams after an hour) is opened again; samples already yielded are
        not yielded twice."""
        seen = set()
        for _ in range(1000):
            try:
                lines = self._t.stream_lines("/api/rollouts/%s/events" % _q(group_id), self._sb_auth(),
                                             timeout=idle_timeout)
                for raw in lines:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line or line.startswith((":", "event:", "id:")):
                        continue
                    if line.startswith("data:"):
                        line = line[5:].strip()
                    try:
                        obj = json.loads(line)
                    except ValueError:
                        raise LlmboxError("rollout %s: a stream line that is not JSON: %r" % (group_id, line[:200]))
                    if isinstance(obj, dict) and obj.get("done") is True and "index" not in obj:
                        return
                    key = obj.get("index") if isinstance(obj, dict) else None
                    if key is not None and key in seen:
                        continue
                    seen.add(key)
                    yield obj
            except APIError:
                raise
            except LlmboxError as e:
                if "not JSON" in str(e):
                    raise
                time.sleep(0.5)
        raise LlmboxError("rollout %s: the event stream ended 1000 times without its end line" % group_id)

    def rollout_trajectory(self, group_id: str, index: int) -> Dict[str, Any]:
        return self._t.json("GET", "/api/rollouts/%s/samples/%d/trajectory" % (_q(group_id), index),
                            headers=self._sb_auth())

    def cancel_rollout(self, group_id: str) -> Dict[str, Any]:
        return self._t.json("POST", "/api/rollouts/%s/cancel" % _q(group_id), headers=self._sb_auth())

    def delete_rollout(self, group_id: str) -> Dict[str, Any]:
        return self._t.json("DELETE", "/api/rollouts/" + _q(group_id), headers=self._sb_auth())

    # ---- evaluations -------------------------------------------------------------
    def start_eval(self, dataset: FileArg, *, mode: Optional[str] = None, model: Optional[str] = None,
                   repeats: Optional[int] = None, concurrency: Optional[int] = None,
                   limit: Optional[int] = None, layout: Optional[str] = None, name: Optional[str] = None,
                   resume: Optional[FileArg] = None, **fields: Any) -> Dict[str, Any]:
        """POST /api/evals with a dataset (a path, or (filename, bytes));
        fields: max_turns, timeout_s, token_budget, max_tokens, judge_model,
        judge_votes. A bad dataset is an APIError 400 `bad_dataset` whose
        body names the file, line and field."""
        f: Dict[str, Any] = {"mode": mode, "model": model, "repeats": repeats, "concurrency": concurrency,
                             "limit": limit, "layout": layout, "name": name}
        f.update(fields)
        parts = [("dataset",) + _file_arg(dataset)]
        if resume is not None:
            parts.append(("resume",) + _file_arg(resume))
        ctype, body = multipart(f, parts)  # type: ignore[arg-type]
        return self._t.request("POST", "/api/evals", body, {**self._auth(), "Content-Type": ctype},
                               ok=(201,), timeout=max(self._t.timeout, 300)).json()

    def get_eval(self, eval_id: str, offset: int = 0, limit: int = 200) -> Dict[str, Any]:
        return self._t.json("GET", "/api/evals/%s?offset=%d&limit=%d" % (_q(eval_id), offset, limit),
                            headers=self._auth())

    def follow_eval(self, eval_id: str, poll_s: float = 1.0, timeout: float = 86400.0) -> Iterator[Dict[str, Any]]:
        """The eval each time its progress changes, ending with the final one."""
        deadline = time.monotonic() + timeout
        seen = None
        while True:
            e = self.get_eval(eval_id, limit=1)
            key = (e.get("status"), json.dumps(e.get("progress"), sort_keys=True))
            if key != seen:
                seen = key
                yield e
            if e.get("status") in FINAL_EVAL and e.get("summary") is not None or e.get("status") == "failed":
                return
            if time.monotonic() >= deadline:
                raise Timeout("eval %s: still %s after %ss" % (eval_id, e.get("status"), timeout))
            time.sleep(poll_s)

    def wait_eval(self, eval_id: str, poll_s: float = 1.0, timeout: float = 86400.0) -> Dict[str, Any]:
        last: Dict[str, Any] = {}
        for last in self.follow_eval(eval_id, poll_s, timeout):
            pass
        return self.get_eval(eval_id, limit=1000) if last else last

    def eval_results(self, eval_id: str) -> List[Dict[str, Any]]:
        """results.jsonl: one dict per finished run."""
        body = self._t.request("GET", "/api/evals/%s/results.jsonl" % _q(eval_id), None,
                               {**self._auth(), "Accept": "*/*"}).body
        return [json.loads(line) for line in body.decode("utf-8").splitlines() if line.strip()]

    def eval_summary_md(self, eval_id: str) -> str:
        return self._t.request("GET", "/api/evals/%s/summary.md" % _q(eval_id), None,
                               {**self._auth(), "Accept": "*/*"}).body.decode("utf-8")

    def cancel_eval(self, eval_id: str) -> Dict[str, Any]:
        return self._t.json("POST", "/api/evals/%s/cancel" % _q(eval_id), headers=self._auth())

    def delete_eval(self, eval_id: str) -> Dict[str, Any]:
        return self._t.json("DELETE", "/api/evals/" + _q(eval_id), headers=self._auth())
