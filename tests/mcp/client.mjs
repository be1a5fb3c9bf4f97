// The official MCP TypeScript SDK's Client, over its StreamableHTTPClientTransport,
// against llmbox's /mcp. tests/integration/test_mcp.py starts the stack and runs
// this with MCP_URL, SBX_TOKEN (the sandbox API token), ALICE_TOKEN and BOB_TOKEN
// (two users' tokens). Prints one "PASS name" or "FAIL name: why" line per check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const URL_ = new URL(process.env.MCP_URL);
let failed = 0;

async function connect(token) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(URL_, { requestInit: { headers } });
  const client = new Client({ name: "llmbox-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

function assert(cond, why) {
  if (!cond) throw new Error(why);
}

function text(res) {
  return (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

// An error result: isError, one sentence a model can read.
function assertToolError(res, want) {
  assert(res.isError === true, `expected isError, got ${JSON.stringify(res).slice(0, 300)}`);
  const t = text(res);
  assert(/^[A-Z"].*\.$/s.test(t.trim()), `not a sentence: ${t}`);
  if (want) assert(want.test(t), `error ${JSON.stringify(t)} does not match ${want}`);
}

async function check(name, fn) {
  try {
    await fn();
    console.log(`PASS ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${String(e && e.stack ? e.stack : e).split("\n").slice(0, 3).join(" | ")}`);
  }
}

const sbx = await connect(process.env.SBX_TOKEN);
const alice = await connect(process.env.ALICE_TOKEN);
const bob = await connect(process.env.BOB_TOKEN);
let sandboxId = null;
let aliceTask = null;

await check("initialize_and_tools_list", async () => {
  const v = sbx.client.getServerVersion();
  assert(v && v.name === "llmbox", `server info ${JSON.stringify(v)}`);
  assert(sbx.transport.sessionId && /^[0-9a-f]{32}$/.test(sbx.transport.sessionId), "no session id");
  assert(sbx.client.getServerCapabilities().tools, "no tools capability");
  const { tools } = await sbx.client.listTools();
  const names = tools.map((t) => t.name).sort();
  const want = ["sandbox_create", "sandbox_destroy", "sandbox_exec", "sandbox_list", "sandbox_read_file",
    "sandbox_write_file", "task_cancel", "task_run", "task_status"];
  assert(JSON.stringify(names) === JSON.stringify(want), `tools ${names}`);
  for (const t of tools) {
    assert(t.inputSchema && t.inputSchema.type === "object" && t.description.length > 20, `schema of ${t.name}`);
  }
  const exec = tools.find((t) => t.name === "sandbox_exec");
  assert(JSON.stringify(exec.inputSchema.required) === '["sandbox_id","command"]', "sandbox_exec's required");
  await sbx.client.ping();
});

await check("sandbox_create_write_read_exec_list", async () => {
  const c = await sbx.client.callTool({ name: "sandbox_create", arguments: { ttl_s: 600, network: "none" } });
  assert(!c.isError, `create: ${text(c)}`);
  sandboxId = c.structuredContent.id;
  assert(sandboxId && c.structuredContent.status === "running", `created ${JSON.stringify(c.structuredContent)}`);
  const w = await sbx.client.callTool({ name: "sandbox_write_file",
    arguments: { sandbox_id: sandboxId, path: "/tmp/hello.txt", content: "hi from mcp\n" } });
  assert(!w.isError && w.structuredContent.size === 12, `write: ${text(w)}`);
  const wb = await sbx.client.callTool({ name: "sandbox_write_file",
    arguments: { sandbox_id: sandboxId, path: "/tmp/bin.dat", content: Buffer.from([0, 1, 2, 255]).toString("base64"),
      encoding: "base64" } });
  assert(!wb.isError && wb.structuredContent.size === 4, `write base64: ${text(wb)}`);
  const r = await sbx.client.callTool({ name: "sandbox_read_file", arguments: { sandbox_id: sandboxId, path: "/tmp/hello.txt" } });
  assert(!r.isError && text(r) === "hi from mcp\n", `read: ${JSON.stringify(r)}`);
  const rb = await sbx.client.callTool({ name: "sandbox_read_file", arguments: { sandbox_id: sandboxId, path: "/tmp/bin.dat" } });
  const blob = rb.content[0].resource && rb.content[0].resource.blob;
  assert(blob && Buffer.from(blob, "base64").equals(Buffer.from([0, 1, 2, 255])), `read binary: ${JSON.stringify(rb)}`);
  const e = await sbx.client.callTool({ name: "sandbox_exec",
    arguments: { sandbox_id: sandboxId, command: "cat /tmp/hello.txt; echo oops >&2; exit 3" } });
  assert(!e.isError, `exec: ${text(e)}`);
  assert(e.structuredContent.return_code === 3 && e.structuredContent.stdout === "hi from mcp\n" &&
    e.structuredContent.stderr === "oops\n", `exec result ${JSON.stringify(e.structuredContent)}`);
  assert(text(e).startsWith("exit code 3"), `exec text ${text(e)}`);
  const l = await sbx.client.callTool({ name: "sandbox_list", arguments: {} });
  assert(l.structuredContent.sandboxes.some((s) => s.id === sandboxId), `list ${text(l)}`);
});

await check("sandbox_exec_progress", async () => {
  const notes = [];
  const e = await sbx.client.callTool({ name: "sandbox_exec",
    arguments: { sandbox_id: sandboxId, command: "for i in 1 2 3; do echo $i; sleep 1; done" } },
  undefined, { onprogress: (p) => notes.push(p) });
  assert(!e.isError && e.structuredContent.stdout === "1\n2\n3\n", `exec ${text(e)}`);
  assert(notes.length >= 2, `progress notifications: ${JSON.stringify(notes)}`);
  for (let i = 1; i < notes.length; i++) assert(notes[i].progress > notes[i - 1].progress, "progress must grow");
  assert(/the command runs/.test(notes[0].message), `note ${notes[0].message}`);
});

await check("sandbox_exec_cancelled_stops_command", async () => {
  // the SDK sends notifications/cancelled when a call is aborted: the command is interrupted,
  // so what it would do after its sleep never happens and no sleep is left (the old server ran
  // it on to its end, holding the sandbox, so the next exec saw /tmp/x)
  const ac = new AbortController();
  let noted;
  const firstNote = new Promise((r) => { noted = r; });
  const p = sbx.client.callTool({ name: "sandbox_exec",
    arguments: { sandbox_id: sandboxId, command: "rm -f /tmp/x; sleep 30; touch /tmp/x" } }, undefined,
  { signal: ac.signal, onprogress: () => noted(), timeout: 120000 });
  await firstNote;
  ac.abort();
  let threw = null;
  try { await p; } catch (e) { threw = e; }
  assert(threw, "the aborted call did not end");
  await new Promise((r) => setTimeout(r, 2000));
  const e = await sbx.client.callTool({ name: "sandbox_exec",
    arguments: { sandbox_id: sandboxId, command: "test -e /tmp/x && echo exists; pgrep -x sleep; echo end" } });
  assert(!e.isError && e.structuredContent.stdout === "end\n", `after the cancel: ${text(e)}`);
});

await check("tool_error_keeps_session", async () => {
  const bad = await sbx.client.callTool({ name: "sandbox_exec", arguments: { sandbox_id: "f".repeat(32), command: "true" } });
  assertToolError(bad, /sandbox/i);
  const missing = await sbx.client.callTool({ name: "sandbox_exec", arguments: { sandbox_id: sandboxId } });
  assertToolError(missing, /command/);
  const gone = await sbx.client.callTool({ name: "sandbox_read_file", arguments: { sandbox_id: sandboxId, path: "/nope/x" } });
  assertToolError(gone);
  // the same session goes on
  await sbx.client.ping();
  const again = await sbx.client.callTool({ name: "sandbox_exec", arguments: { sandbox_id: sandboxId, command: "echo still" } });
  assert(again.structuredContent.stdout === "still\n", "the session did not go on");
  // an unknown tool is a JSON-RPC error (invalid params), the session stays
  let threw = null;
  try { await sbx.client.callTool({ name: "no_such_tool", arguments: {} }); } catch (e) { threw = e; }
  assert(threw && threw.code === -32602, `unknown tool: ${threw}`);
  await sbx.client.ping();
});

await check("task_run_end_to_end", async () => {
  const notes = [];
  const res = await alice.client.callTool({ name: "task_run", arguments: {
    prompt: "[mcp] shout the input", files: [{ path: "in.txt", content: "hello mcp" }] } },
  undefined, { onprogress: (p) => notes.push(p), timeout: 300000, resetTimeoutOnProgress: true });
  assert(!res.isError, `task_run: ${JSON.stringify(res).slice(0, 500)}`);
  aliceTask = res.structuredContent.id;
  assert(res.structuredContent.status === "succeeded", `status ${JSON.stringify(res.structuredContent)}`);
  assert(text(res).includes("shouted it"), `answer ${text(res)}`);
  assert(notes.length >= 2 && notes.some((n) => /tool|model|step/.test(n.message)), `steps ${JSON.stringify(notes).slice(0, 400)}`);
  const emb = res.content.find((c) => c.type === "resource" && c.resource.uri.endsWith("/artifacts/shout.txt"));
  assert(emb && emb.resource.text === "HELLO MCP\n" && emb.resource.mimeType.startsWith("text/plain"),
    `embedded output ${JSON.stringify(res.content).slice(0, 600)}`);
  const link = res.content.find((c) => c.type === "resource_link" && c.uri.endsWith("/artifacts/big.txt"));
  assert(link && link.size > 16384, `resource link ${JSON.stringify(res.content).slice(0, 600)}`);
  const rr = await alice.client.readResource({ uri: link.uri });
  assert(rr.contents[0].text.length === link.size, "the linked resource reads whole");
  const tr = await alice.client.readResource({ uri: `llmbox://tasks/${aliceTask}/trajectory` });
  assert(tr.contents[0].mimeType === "application/json" && JSON.parse(tr.contents[0].text), "trajectory");
  const list = await alice.client.listResources();
  assert(list.resources.some((r) => r.uri === link.uri), "resources/list has the output");
  const st = await alice.client.callTool({ name: "task_status", arguments: { task_id: aliceTask } });
  assert(st.structuredContent.status === "succeeded", "task_status");
  let threw = null;
  try { await alice.client.readResource({ uri: `llmbox://tasks/${aliceTask}/artifacts/none.txt` }); } catch (e) { threw = e; }
  assert(threw && threw.code === -32002, `missing resource: ${threw}`);
});

await check("task_cancel", async () => {
  const res = await alice.client.callTool({ name: "task_run", arguments: { prompt: "[long] take your time", wait: false } });
  const id = res.structuredContent.id;
  assert(id && !res.isError, `started ${text(res)}`);
  const c = await alice.client.callTool({ name: "task_cancel", arguments: { task_id: id } });
  assert(!c.isError, `cancel ${text(c)}`);
  for (let i = 0; i < 100; i++) {
    const st = await alice.client.callTool({ name: "task_status", arguments: { task_id: id } });
    if (st.structuredContent.status === "cancelled") {
      assertToolError(st);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("the task was not cancelled");
});

await check("task_run_waits_within_the_stream_limit", async () => {
  // a waiting task_run holds a worker thread as an event stream does, and counts as one
  // (LLMBOX_SSE_MAX_PER_CLIENT=1 in this stack): a second one of alice returns at once
  const first = alice.client.callTool({ name: "task_run", arguments: { prompt: "[long] hold the place" } },
    undefined, { timeout: 300000 });
  let second = null;
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 200));
    second = await alice.client.callTool({ name: "task_run", arguments: { prompt: "[mcp] shout again",
      files: [{ path: "in.txt", content: "again" }] } });
    if (/as many clients waiting/.test(text(second))) break;
  }
  assert(second && /as many clients waiting/.test(text(second)) && !second.isError, `second ${text(second)}`);
  // find the held task and cancel it: the first call then ends with it
  const { resources } = await alice.client.listResources();
  const ids = [...new Set(resources.map((r) => r.uri.split("/")[3]))];
  for (const id of ids) {
    const st = await alice.client.callTool({ name: "task_status", arguments: { task_id: id } });
    if (["queued", "running"].includes(st.structuredContent.status) && id !== second.structuredContent.id)
      await alice.client.callTool({ name: "task_cancel", arguments: { task_id: id } });
  }
  const r = await first;
  assertToolError(r);
  assert(r.structuredContent.status === "cancelled", `first ${JSON.stringify(r.structuredContent)}`);
});

await check("task_run_cancelled_stops_waiting", async () => {
  // the SDK sends notifications/cancelled when a call is aborted: the server stops waiting,
  // so alice's one waiting place (LLMBOX_SSE_MAX_PER_CLIENT=1) is free again at once
  const ac = new AbortController();
  const p = alice.client.callTool({ name: "task_run", arguments: { prompt: "[long] cancel me" } }, undefined,
    { signal: ac.signal, onprogress: () => {}, timeout: 300000 });
  await new Promise((r) => setTimeout(r, 1500));
  ac.abort();
  let threw = null;
  try { await p; } catch (e) { threw = e; }
  assert(threw, "the aborted call did not end");
  let r = null;
  for (let i = 0; i < 25; i++) {
    await new Promise((res) => setTimeout(res, 200));
    r = await alice.client.callTool({ name: "task_run", arguments: { prompt: "[mcp] after the cancel",
      files: [{ path: "in.txt", content: "x" }] } });
    if (!/as many clients waiting/.test(text(r))) break;
  }
  assert(r && r.structuredContent.status === "succeeded", `after the cancel: ${text(r)}`);
  const { resources } = await alice.client.listResources();
  for (const id of new Set(resources.map((x) => x.uri.split("/")[3]))) {
    const st = await alice.client.callTool({ name: "task_status", arguments: { task_id: id } });
    if (["queued", "running"].includes(st.structuredContent.status))
      await alice.client.callTool({ name: "task_cancel", arguments: { task_id: id } });
  }
});

await check("other_users_refused", async () => {
  // a user's token reaches only that user's sandboxes: one made with the shared
  // sandbox token is as unknown to alice as one that does not exist, as on /api/sandboxes
  const e = await alice.client.callTool({ name: "sandbox_exec", arguments: { sandbox_id: sandboxId, command: "id" } });
  assertToolError(e, /There is no sandbox with id/);
  // another user's task is as unknown as a task that does not exist
  const st = await bob.client.callTool({ name: "task_status", arguments: { task_id: aliceTask } });
  assertToolError(st, /no task/i);
  const c = await bob.client.callTool({ name: "task_cancel", arguments: { task_id: aliceTask } });
  assertToolError(c, /no task/i);
  let threw = null;
  try { await bob.client.readResource({ uri: `llmbox://tasks/${aliceTask}/trajectory` }); } catch (err) { threw = err; }
  assert(threw && threw.code === -32002, `bob read alice's trajectory: ${threw}`);
  const list = await bob.client.listResources();
  assert(!list.resources.some((r) => r.uri.includes(aliceTask)), "bob lists alice's files");
  // alice's session id is not bob's to use
  const r = await fetch(URL_, { method: "POST", headers: { "Content-Type": "application/json",
    Accept: "application/json, text/event-stream", Authorization: `Bearer ${process.env.BOB_TOKEN}`,
    "Mcp-Session-Id": alice.transport.sessionId }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) });
  assert(r.status === 404, `bob used alice's session: ${r.status}`);
});

await check("user_limits_apply", async () => {
  // bob may have one task queued or running (max_tasks = 1 in llmbox.conf): the API's limit, said as an error result
  const first = await bob.client.callTool({ name: "task_run", arguments: { prompt: "[long] one", wait: false } });
  assert(!first.isError && first.structuredContent.id, `first ${text(first)}`);
  const second = await bob.client.callTool({ name: "task_run", arguments: { prompt: "[long] two", wait: false } });
  assertToolError(second, /limit/);
  const c = await bob.client.callTool({ name: "task_cancel", arguments: { task_id: first.structuredContent.id } });
  assert(!c.isError, `cancel ${text(c)}`);
});

await check("session_resumed", async () => {
  // a client that kept its session id goes on without a new initialize
  const transport = new StreamableHTTPClientTransport(URL_, { sessionId: alice.transport.sessionId,
    requestInit: { headers: { Authorization: `Bearer ${process.env.ALICE_TOKEN}` } } });
  const client = new Client({ name: "llmbox-test-resumed", version: "1.0.0" });
  await client.connect(transport);
  assert(transport.sessionId === alice.transport.sessionId, "the session id changed");
  const st = await client.callTool({ name: "task_status", arguments: { task_id: aliceTask } });
  assert(st.structuredContent.status === "succeeded", `resumed: ${text(st)}`);
  await client.close();
});

await check("no_token_refused", async () => {
  let threw = null;
  try { await connect(null); } catch (e) { threw = e; }
  assert(threw && threw.code === 401 && /token/.test(threw.message), `no token: ${threw}`);
  threw = null;
  try { await connect("lbx_wrong"); } catch (e) { threw = e; }
  assert(threw && threw.code === 401, `wrong token: ${threw}`);
});

await check("sandbox_destroy_and_session_end", async () => {
  const d = await sbx.client.callTool({ name: "sandbox_destroy", arguments: { sandbox_id: sandboxId } });
  assert(!d.isError && d.structuredContent.deleted === true, `destroy ${text(d)}`);
  const e = await sbx.client.callTool({ name: "sandbox_exec", arguments: { sandbox_id: sandboxId, command: "true" } });
  assertToolError(e, /deleted|no sandbox/i);
  const sid = sbx.transport.sessionId;
  await sbx.transport.terminateSession();
  const r = await fetch(URL_, { method: "POST", headers: { "Content-Type": "application/json",
    Accept: "application/json, text/event-stream", Authorization: `Bearer ${process.env.SBX_TOKEN}`,
    "Mcp-Session-Id": sid }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) });
  assert(r.status === 404, `an ended session answered ${r.status}`);
});

for (const c of [alice, bob, sbx]) await c.client.close().catch(() => {});
process.exit(failed ? 1 : 0);
