#!/usr/bin/env python3
"""A small MCP server over stdio for tests/mcp/test_mcp_client.py, run by
llmbox INSIDE the task's sandbox (the task's input file; [mcp "NAME"]'s
command is `python3 /testbed/input/mcp_stdio_server.py MODE`). Standard
library only: the sandbox image has python3.

Modes (argv[1]):
  box    tools whoami (the hostname, /proc/1/cgroup's first line, and a file
         written to /testbed/output/from_mcp.txt, so the test can see where it
         ran), fail (isError: true), image (a 1x1 PNG), echo {text}
  hang   lists tool wait; never answers tools/call
  flood  lists tool spam; answers tools/call with 5000 notifications and
         no response
  huge   lists a tool whose inputSchema nests 40 levels deep (20 objects)
"""
import json
import os
import socket
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "box"
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def schema(props=None):
    return {"type": "object", "properties": props or {}}


def tools():
    if MODE == "box":
        return [{"name": "whoami", "description": "Where this server runs.", "inputSchema": schema()},
                {"name": "fail", "description": "Always fails.", "inputSchema": schema()},
                {"name": "image", "description": "A tiny picture.", "inputSchema": schema()},
                {"name": "echo", "description": "Says the text back.",
                 "inputSchema": schema({"text": {"type": "string"}})}]
    if MODE == "hang":
        return [{"name": "wait", "description": "Never answers.", "inputSchema": schema()}]
    if MODE == "flood":
        return [{"name": "spam", "description": "Floods.", "inputSchema": schema()}]
    deep = {"type": "string"}
    for _ in range(20):
        deep = {"type": "object", "properties": {"x": deep}}
    return [{"name": "deep", "description": "Too deep.", "inputSchema": deep}]


def call(name, args):
    if name == "whoami":
        with open("/proc/1/cgroup") as f:
            cg = f.readline().strip()
        os.makedirs("/testbed/output", exist_ok=True)
        with open("/testbed/output/from_mcp.txt", "w") as f:
            f.write("written by the MCP server\n")
        text = "hostname=%s cgroup=%s testbed=%s" % (socket.gethostname(), cg, os.path.isdir("/testbed"))
        return {"content": [{"type": "text", "text": text}]}
    if name == "fail":
        return {"content": [{"type": "text", "text": "the widget is broken"}], "isError": True}
    if name == "image":
        return {"content": [{"type": "text", "text": "a picture follows"},
                            {"type": "image", "data": PNG, "mimeType": "image/png"}]}
    if name == "echo":
        return {"content": [{"type": "text", "text": "echo: " + str(args.get("text"))}]}
    return None


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        continue  # notifications/initialized
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "test-" + MODE, "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools()}})
        if MODE == "box":  # a list change mid-task: logged, the offer stays as it was
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif method == "tools/call":
        if MODE == "hang":
            continue
        if MODE == "flood":
            for i in range(5000):
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "spam %d" % i}})
            continue
        res = call(msg["params"]["name"], msg["params"].get("arguments") or {})
        # an answer to an id nobody asked first: matched by id, this one is dropped
        send({"jsonrpc": "2.0", "id": 999999, "result": {"content": [{"type": "text", "text": "WRONG"}]}})
        if res is None:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown tool"}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": res})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no such method"}})
