#!/usr/bin/env python3
"""The Python client's pause, resume and snapshots (clients/python:
Sandbox.pause, resume, snapshot; SandboxSpec.snapshot; Client.list_snapshots,
delete_snapshot), from the repository's copy of the package against the
real stack (sandboxd, web, nginx). Follow-ups.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
from stack import Reporter, Stack, image_ready  # noqa: E402

import llmbox  # noqa: E402
from llmbox.errors import APIError, SandboxCreateError  # noqa: E402

TOKEN = "pypause-" + os.urandom(16).hex()


def t_pause_resume_snapshot(st):
    c = llmbox.Client("http://127.0.0.1:%d" % st.port, sandbox_token=TOKEN)
    with c.sandbox(ttl_s=300) as sb:
        sb.write_file("/testbed/keep.txt", "kept\n")
        assert sb.pause() == {"id": sb.id, "paused": True}
        try:
            sb.exec("true")
            raise AssertionError("an exec of a paused sandbox answered")
        except APIError as e:
            assert e.status == 409 and "frozen" in str(e), e
        assert sb.resume()["paused"] is False
        assert sb.exec("echo ok").stdout == "ok\n"
        snap = sb.snapshot()
    assert snap in [s["snapshot_id"] for s in c.list_snapshots()]
    with c.sandbox(snapshot=snap) as sb2:
        assert sb2.read_file("/testbed/keep.txt") == b"kept\n"
    assert c.delete_snapshot(snap)["deleted"] is True
    assert snap not in [s["snapshot_id"] for s in c.list_snapshots()]
    try:
        c.start_sandbox(snapshot=snap)
        raise AssertionError("a sandbox started from a deleted snapshot")
    except SandboxCreateError as e:
        assert e.status == 404 and "no snapshot" in str(e), e
    c.close()


def t_async(st):
    import asyncio
    from llmbox.aio import AsyncClient

    async def go():
        async with AsyncClient("http://127.0.0.1:%d" % st.port, sandbox_token=TOKEN) as c:
            async with c.sandbox(ttl_s=300) as sb:
                await sb.write_file("/testbed/a.txt", "async\n")
                assert (await sb.pause())["paused"] is True
                assert (await sb.resume())["paused"] is False
                snap = await sb.snapshot()
            assert snap in [x["snapshot_id"] for x in await c.list_snapshots()]
            async with c.sandbox(snapshot=snap) as sb2:
                assert await sb2.read_file("/testbed/a.txt") == b"async\n"
            assert (await c.delete_snapshot(snap))["deleted"] is True

    asyncio.run(go())


def main():
    r = Reporter()
    if not image_ready() or os.geteuid() != 0:
        print("SKIP python_client_pause: needs root and the built image")
        return
    with Stack(model=False, web_env={"LLMBOX_SANDBOX_API_TOKEN": TOKEN}) as st:
        r.run("python_client_pause_resume_snapshot", t_pause_resume_snapshot, st)
        r.run("python_client_async_pause_resume_snapshot", t_async, st)
    r.done()


if __name__ == "__main__":
    main()
