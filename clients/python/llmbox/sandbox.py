"""Sandboxes under NeMo Gym's names (nemo_gym.sandbox: SandboxSpec, start,
exec, upload, download, status, stop) mapped onto llmbox's /api/sandboxes
(docs/API.md, "Sandboxes")."""
import base64
import os
import posixpath
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Union

from .errors import APIError, ConnectionFailed, SandboxCreateError, Timeout

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

PathLike = Union[str, "os.PathLike[str]"]
# exec waits this much longer than the command's own timeout_s for the
# answer: sandboxd stops the command at timeout_s and the web then answers
EXEC_MARGIN_S = 30.0


@dataclass
class SandboxSpec:
    """A provider-neutral sandbox spec, as NeMo Gym's, with llmbox's fields.

    files: {path: text or bytes} (NeMo Gym's form; bytes go as
    content_base64) or llmbox's list of {path, content | content_base64,
    mode}. resources: {cpu, memory_mib, disk_mib, pids}; NeMo Gym's
    disk_gib is turned into disk_mib. None fields take the server's
    defaults (docs/API.md, "POST /api/sandboxes")."""

    image: Optional[str] = None
    ttl_s: Optional[int] = None
    workdir: Optional[str] = None
    env: Dict[str, str] = field(default_factory=dict)
    files: Union[Mapping[str, Union[str, bytes]], List[Dict[str, Any]]] = field(default_factory=dict)
    resources: Mapping[str, Any] = field(default_factory=dict)
    metadata: Dict[str, Any] = field(default_factory=dict)
    network: Optional[str] = None
    snapshot: Optional[str] = None  # a snapshot_id (Sandbox.snapshot()) to start from

    def to_json(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {}
        if self.image is not None:
            body["image"] = self.image
        if self.ttl_s is not None:
            body["ttl_s"] = int(self.ttl_s)
        if self.workdir is not None:
            body["workdir"] = self.workdir
        if self.env:
            body["env"] = dict(self.env)
        files: List[Dict[str, Any]] = []
        if isinstance(self.files, Mapping):
            for p, c in self.files.items():
                if isinstance(c, (bytes, bytearray)):
                    files.append({"path": p, "content_base64": base64.b64encode(bytes(c)).decode("ascii")})
                else:
                    files.append({"path": p, "content": c})
        else:
            for f in self.files:
                f = dict(f)
                if isinstance(f.get("content"), (bytes, bytearray)):
                    f["content_base64"] = base64.b64encode(bytes(f.pop("content"))).decode("ascii")
                files.append(f)
        if files:
            body["files"] = files
        res = {k: v for k, v in dict(self.resources or {}).items() if v is not None}
        if "disk_gib" in res:
            res["disk_mib"] = int(float(res.pop("disk_gib")) * 1024)
        if res:
            body["resources"] = res
        if self.metadata:
            body["metadata"] = dict(self.metadata)
        if self.network is not None:
            body["network"] = self.network
        if self.snapshot is not None:
            body["snapshot"] = self.snapshot
        return body


@dataclass(frozen=True)
class ExecResult:
    """NeMo Gym's SandboxExecResult and llmbox's extras. A non-zero exit is
    a result (error_type None, return_code the status); error_type is
    "timeout", "oom", "interrupted" or "sandbox_error" when the command did
    not run to its end (return_code then None, except for oom)."""

    stdout: str
    stderr: str
    return_code: Optional[int]
    error_type: Optional[str] = None
    duration_ms: Optional[int] = None
    truncated: bool = False
    message: Optional[str] = None

    @classmethod
    def from_json(cls, o: Mapping[str, Any]) -> "ExecResult":
        return cls(stdout=o.get("stdout") or "", stderr=o.get("stderr") or "",
                   return_code=o.get("return_code"), error_type=o.get("error_type"),
                   duration_ms=o.get("duration_ms"), truncated=bool(o.get("truncated")),
                   message=o.get("message"))


@dataclass(frozen=True)
class ToolResult:
    """One tool call's answer (POST /api/sandboxes/{id}/tools/{name}):
    observation is the text the agent would put in the conversation."""

    observation: str
    status: Optional[str]
    exit_code: Optional[int]
    truncated: bool
    raw: Dict[str, Any]


def file_url(sandbox_id: str, remote_path: str) -> str:
    return "/api/sandboxes/%s/files%s" % (urllib.parse.quote(sandbox_id, safe=""),
                                         urllib.parse.quote(remote_path, safe="/"))


class Sandbox:
    """One llmbox API sandbox. `start()` creates it (SandboxCreateError when
    it cannot be), `stop()` destroys it and may be called any number of
    times. Also a context manager: `with client.sandbox(spec) as sb:`."""

    def __init__(self, client: "Client", spec: Optional[SandboxSpec] = None):
        self._client = client
        self.spec = spec or SandboxSpec()
        self.id: Optional[str] = None
        self.info: Dict[str, Any] = {}
        self._stopped = False

    # ---- life cycle --------------------------------------------------------
    def start(self, spec: Optional[SandboxSpec] = None, ready_timeout_s: float = 120.0) -> "Sandbox":
        if self.id is not None:
            raise RuntimeError("sandbox %s is already started" % self.id)
        if spec is not None:
            self.spec = spec
        t = self._client._t
        try:
            o = t.json("POST", "/api/sandboxes", self.spec.to_json(), headers=self._client._sb_auth(),
                       ok=(201,), timeout=max(t.timeout, ready_timeout_s))
        except APIError as e:
            raise SandboxCreateError("llmbox could not create the sandbox: %s" % e, e.status, e.code, e) from e
        except (ConnectionFailed, Timeout) as e:
            raise SandboxCreateError("llmbox could not create the sandbox: %s" % e, None, None, e) from e
        self.id = o["id"]
        self.info = o
        # a sandbox may answer "starting" (created, not yet ready): wait for
        # running; "error" is a failed create, and is cleaned up here
        deadline = time.monotonic() + ready_timeout_s
        while self.info.get("status") == "starting" and time.monotonic() < deadline:
            time.sleep(0.1)
            self.info = self._get()
        st = self.info.get("status")
        if st != "running":
            why = self.info.get("error") or ("still starting after %ss" % ready_timeout_s
                                             if st == "starting" else "status %s" % st)
            self.stop()
            raise SandboxCreateError("sandbox %s did not start: %s" % (self.id, why))
        return self

    def _get(self) -> Dict[str, Any]:
        return self._client._t.json("GET", "/api/sandboxes/" + self._need_id(), headers=self._client._sb_auth())

    def _need_id(self) -> str:
        if self.id is None:
            raise RuntimeError("the sandbox has not been started (call start())")
        if self._stopped:
            raise RuntimeError("sandbox %s has been stopped" % self.id)
        return self.id

    def status(self) -> str:
        """"starting", "running", "stopped", "error"; "stopped" also once
        stop() ran or the server says the sandbox is gone (deleted, expired);
        "unknown" before start()."""
        if self.id is None:
            return "unknown"
        if self._stopped:
            return "stopped"
        try:
            self.info = self._get()
        except APIError as e:
            if e.status == 404:
                return "stopped"
            raise
        return str(self.info.get("status"))

    def stop(self) -> None:
        """Destroys the sandbox; idempotent (the server's DELETE is too)."""
        if self.id is None or self._stopped:
            self._stopped = True
            return
        self._client._t.json("DELETE", "/api/sandboxes/" + self.id, headers=self._client._sb_auth())
        self._stopped = True

    # ---- pause, resume, snapshot (docs/API.md, "Pause, resume and snapshots") ----
    def pause(self) -> Dict[str, Any]:
        """Freezes the sandbox: no CPU, its memory kept; exec answers 409
        until resume()."""
        return self._client._t.json("POST", "/api/sandboxes/%s/pause" % self._need_id(),
                                    headers=self._client._sb_auth())

    def resume(self) -> Dict[str, Any]:
        return self._client._t.json("POST", "/api/sandboxes/%s/resume" % self._need_id(),
                                    headers=self._client._sb_auth())

    def snapshot(self) -> str:
        """Saves the sandbox's files (its writable layer) as a snapshot and
        returns its snapshot_id: start a sandbox from it with
        SandboxSpec(snapshot=...) or Client.start_sandbox(snapshot=...)."""
        o = self._client._t.json("POST", "/api/sandboxes/%s/snapshot" % self._need_id(),
                                 headers=self._client._sb_auth(), timeout=max(self._client._t.timeout, 900))
        return str(o["snapshot_id"])

    def __enter__(self) -> "Sandbox":
        if self.id is None:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- commands ------------------------------------------------------------
    def exec(self, command: str, *, cwd: Optional[str] = None, env: Optional[Dict[str, str]] = None,
             timeout_s: Optional[float] = 180, stdin: Optional[str] = None) -> ExecResult:
        """Runs a command in the sandbox's shell (NeMo Gym's default timeout,
        180 s). Returns the result also for a non-zero exit or a timeout."""
        body: Dict[str, Any] = {"command": command}
        if cwd is not None:
            body["cwd"] = cwd
        if env:
            body["env"] = dict(env)
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        if stdin is not None:
            body["stdin"] = stdin
        wait = (timeout_s if timeout_s is not None else 120) + EXEC_MARGIN_S
        o = self._client._t.json("POST", "/api/sandboxes/%s/exec" % self._need_id(), body,
                                 headers=self._client._sb_auth(), timeout=max(wait, self._client._t.timeout))
        return ExecResult.from_json(o)

    def tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None, **kw: Any) -> ToolResult:
        """One call of one of llmbox's tools (bash, file_editor, ...) with
        the arguments the model would send (GET /api/tools lists them)."""
        return self._client.call_tool(self._need_id(), name, arguments, **kw)

    # ---- files ---------------------------------------------------------------
    def _abs(self, remote_path: str) -> str:
        if remote_path.startswith("/"):
            return remote_path
        wd = (self.info.get("spec") or {}).get("workdir") or self.spec.workdir or "/testbed"
        return posixpath.join(wd, remote_path)

    def write_file(self, remote_path: str, data: Union[bytes, str]) -> Dict[str, Any]:
        """Puts bytes (or UTF-8 text) at remote_path (relative: to the workdir)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        r = self._client._t.request("PUT", file_url(self._need_id(), self._abs(remote_path)), bytes(data),
                                    {**self._client._sb_auth(), "Content-Type": "application/octet-stream"},
                                    timeout=max(self._client._t.timeout, 300))
        return r.json()

    def read_file(self, remote_path: str) -> bytes:
        r = self._client._t.request("GET", file_url(self._need_id(), self._abs(remote_path)), None,
                                    {**self._client._sb_auth(), "Accept": "*/*"},
                                    timeout=max(self._client._t.timeout, 300))
        return r.body

    def upload(self, local_path: PathLike, remote_path: str) -> None:
        """NeMo Gym's upload: one local file into the sandbox."""
        self.write_file(remote_path, Path(local_path).read_bytes())

    def download(self, remote_path: str, local_path: PathLike) -> None:
        """NeMo Gym's download: one sandbox file to a local path, written to
        a temporary name and renamed, so a failed download leaves nothing."""
        data = self.read_file(remote_path)
        dest = Path(local_path)
        if dest.parent and not dest.parent.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(".%s.part-%d" % (dest.name, os.getpid()))
        tmp.write_bytes(data)
        os.replace(tmp, dest)
