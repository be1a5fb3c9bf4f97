"""The asyncio facade: every call of Client and Sandbox, run in a thread
pool (the standard library has no async HTTP client), so a trainer's event
loop can drive hundreds of sandboxes at once. Each pool thread keeps its
own keep-alive connection."""
import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Optional, TypeVar

from .client import Client, Event
from .sandbox import ExecResult, PathLike, Sandbox, SandboxSpec, ToolResult

T = TypeVar("T")
_END = object()


class AsyncClient:
    """AsyncClient(url, token, sandbox_token, max_workers=64, **Client options).

    max_workers bounds the calls in flight at once (each holds a thread
    and, on the server, one web worker thread while it runs)."""

    def __init__(self, url: str, token: Optional[str] = None, sandbox_token: Optional[str] = None,
                 max_workers: int = 64, **kw: Any):
        self.sync = Client(url, token, sandbox_token, **kw)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="llmbox")

    async def _run(self, fn: Callable[..., T], *a: Any, **kw: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *a, **kw))

    async def _iter(self, it: Iterator[T]) -> AsyncIterator[T]:
        while True:
            x = await self._run(next, it, _END)
            if x is _END:
                return
            yield x  # type: ignore[misc]

    async def aclose(self) -> None:
        self._pool.shutdown(wait=False)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # sandboxes and tools
    def sandbox(self, spec: Optional[SandboxSpec] = None, **fields: Any) -> "AsyncSandbox":
        return AsyncSandbox(self, self.sync.sandbox(spec, **fields))

    async def start_sandbox(self, spec: Optional[SandboxSpec] = None, **fields: Any) -> "AsyncSandbox":
        return await self.sandbox(spec, **fields).start()

    async def attach_sandbox(self, sandbox_id: str) -> "AsyncSandbox":
        return AsyncSandbox(self, await self._run(self.sync.attach_sandbox, sandbox_id))

    async def call(self, method: str, path: str, obj: Any = None, **kw: Any) -> Any:
        return await self._run(self.sync.call, method, path, obj, **kw)

    async def get_json(self, path: str, **kw: Any) -> Any:
        return await self._run(self.sync.get_json, path, **kw)

    async def health(self) -> Dict[str, Any]:
        return await self._run(self.sync.health)

    async def list_snapshots(self) -> List[Dict[str, Any]]:
        return await self._run(self.sync.list_snapshots)

    async def delete_snapshot(self, snapshot_id: str) -> Dict[str, Any]:
        return await self._run(self.sync.delete_snapshot, snapshot_id)

    async def list_sandboxes(self) -> Dict[str, Any]:
        return await self._run(self.sync.list_sandboxes)

    async def list_tools(self) -> Any:
        return await self._run(self.sync.list_tools)

    async def call_tool(self, sandbox_id: str, name: str, arguments: Any = None, **kw: Any) -> ToolResult:
        return await self._run(self.sync.call_tool, sandbox_id, name, arguments, **kw)

    # tasks
    async def submit_task(self, prompt: str, files: Any = (), **kw: Any) -> Dict[str, Any]:
        return await self._run(self.sync.submit_task, prompt, files, **kw)

    async def get_task(self, task_id: str) -> Dict[str, Any]:
        return await self._run(self.sync.get_task, task_id)

    def task_events(self, task_id: str, last_event_id: Optional[int] = None) -> AsyncIterator[Event]:
        return self._iter(self.sync.task_events(task_id, last_event_id))

    async def wait_task(self, task_id: str, timeout: float = 3600.0) -> Dict[str, Any]:
        return await self._run(self.sync.wait_task, task_id, timeout)

    async def run_task(self, prompt: str, files: Any = (), **kw: Any) -> Dict[str, Any]:
        return await self._run(self.sync.run_task, prompt, files, **kw)

    async def cancel_task(self, task_id: str) -> Dict[str, Any]:
        return await self._run(self.sync.cancel_task, task_id)

    async def delete_task(self, task_id: str) -> Dict[str, Any]:
        return await self._run(self.sync.delete_task, task_id)

    async def read_artifact(self, task_id: str, path: str) -> bytes:
        return await self._run(self.sync.read_artifact, task_id, path)

    async def task_tokens(self, task_id: str) -> List[Dict[str, Any]]:
        return await self._run(self.sync.task_tokens, task_id)

    async def artifacts(self, task_id: str) -> List[Dict[str, Any]]:
        return await self._run(self.sync.artifacts, task_id)

    async def download_artifacts(self, task_id: str, dest: PathLike) -> List[Any]:
        return await self._run(self.sync.download_artifacts, task_id, dest)

    async def trajectory(self, task_id: str) -> Dict[str, Any]:
        return await self._run(self.sync.trajectory, task_id)

    # rollout groups
    async def create_rollout(self, prompt: str, n: int = 1, **kw: Any) -> Dict[str, Any]:
        return await self._run(self.sync.create_rollout, prompt, n, **kw)

    async def create_rollouts(self, groups: Any) -> List[Dict[str, Any]]:
        return await self._run(self.sync.create_rollouts, groups)

    async def get_rollout(self, group_id: str, wait: Optional[float] = None) -> Dict[str, Any]:
        return await self._run(self.sync.get_rollout, group_id, wait)

    async def wait_rollout(self, group_id: str, timeout: float = 3600.0) -> Dict[str, Any]:
        return await self._run(self.sync.wait_rollout, group_id, timeout)

    def rollout_events(self, group_id: str) -> AsyncIterator[Dict[str, Any]]:
        return self._iter(self.sync.rollout_events(group_id))

    async def rollout_trajectory(self, group_id: str, index: int) -> Dict[str, Any]:
        return await self._run(self.sync.rollout_trajectory, group_id, index)

    async def cancel_rollout(self, group_id: str) -> Dict[str, Any]:
        return await self._run(self.sync.cancel_rollout, group_id)

    async def delete_rollout(self, group_id: str) -> Dict[str, Any]:
        return await self._run(self.sync.delete_rollout, group_id)

    # evaluations
    async def start_eval(self, dataset: Any, **kw: Any) -> Dict[str, Any]:
        return await self._run(self.sync.start_eval, dataset, **kw)

    async def get_eval(self, eval_id: str) -> Dict[str, Any]:
        return await self._run(self.sync.get_eval, eval_id)

    def follow_eval(self, eval_id: str, poll_s: float = 1.0) -> AsyncIterator[Dict[str, Any]]:
        return self._iter(self.sync.follow_eval(eval_id, poll_s))

    async def wait_eval(self, eval_id: str, poll_s: float = 1.0) -> Dict[str, Any]:
        return await self._run(self.sync.wait_eval, eval_id, poll_s)

    async def eval_results(self, eval_id: str) -> List[Dict[str, Any]]:
        return await self._run(self.sync.eval_results, eval_id)

    async def eval_summary_md(self, eval_id: str) -> str:
        return await self._run(self.sync.eval_summary_md, eval_id)

    async def cancel_eval(self, eval_id: str) -> Dict[str, Any]:
        return await self._run(self.sync.cancel_eval, eval_id)

    async def delete_eval(self, eval_id: str) -> Dict[str, Any]:
        return await self._run(self.sync.delete_eval, eval_id)


class AsyncSandbox:
    """A Sandbox whose calls are awaitables (NeMo Gym's AsyncSandbox names)."""

    def __init__(self, client: AsyncClient, sandbox: Sandbox):
        self._c = client
        self.sync = sandbox

    @property
    def id(self) -> Optional[str]:
        return self.sync.id

    async def start(self, spec: Optional[SandboxSpec] = None) -> "AsyncSandbox":
        await self._c._run(self.sync.start, spec)
        return self

    async def exec(self, command: str, **kw: Any) -> ExecResult:
        return await self._c._run(self.sync.exec, command, **kw)

    async def tool(self, name: str, arguments: Any = None, **kw: Any) -> ToolResult:
        return await self._c._run(self.sync.tool, name, arguments, **kw)

    async def upload(self, local_path: PathLike, remote_path: str) -> None:
        await self._c._run(self.sync.upload, local_path, remote_path)

    async def download(self, remote_path: str, local_path: PathLike) -> None:
        await self._c._run(self.sync.download, remote_path, local_path)

    async def write_file(self, remote_path: str, data: Any) -> Dict[str, Any]:
        return await self._c._run(self.sync.write_file, remote_path, data)

    async def read_file(self, remote_path: str) -> bytes:
        return await self._c._run(self.sync.read_file, remote_path)

    async def status(self) -> str:
        return await self._c._run(self.sync.status)

    async def stop(self) -> None:
        await self._c._run(self.sync.stop)

    async def pause(self) -> Dict[str, Any]:
        return await self._c._run(self.sync.pause)

    async def resume(self) -> Dict[str, Any]:
        return await self._c._run(self.sync.resume)

    async def snapshot(self) -> str:
        return await self._c._run(self.sync.snapshot)

    async def __aenter__(self) -> "AsyncSandbox":
        if self.sync.id is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
