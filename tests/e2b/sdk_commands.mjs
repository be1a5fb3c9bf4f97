// commands.run and the control plane through the real e2b SDK.
import { Sandbox, CommandExitError, TimeoutError, NotFoundError, SandboxError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

const tag = 'run-' + process.pid
let sbx

check('create_with_metadata_and_env', async () => {
  sbx = await Sandbox.create({ metadata: { suite: tag, role: 'main' }, envs: { GREETING: 'hi from env' } })
  assert(/^([a-z0-9][a-z0-9-]{0,62}\.)?[0-9a-f]{32}$/.test(sbx.sandboxId), sbx.sandboxId) // several nodes: n1.<hex> on a node
  const info = await sbx.getInfo()
  eq(info.metadata, { suite: tag, role: 'main' }, 'metadata')
  eq(info.state, 'running')
  const r = await sbx.commands.run('echo "$GREETING"')
  eq(r.stdout, 'hi from env\n', 'the sandbox env reaches commands')
})

check('run_foreground_with_callbacks', async () => {
  const out = [], err = []
  const r = await sbx.commands.run('echo one; echo two >&2; sleep 0.3; echo three', {
    onStdout: d => out.push(d), onStderr: d => err.push(d),
  })
  eq(r.exitCode, 0)
  eq(r.stdout, 'one\nthree\n')
  eq(r.stderr, 'two\n')
  eq(out.join(''), 'one\nthree\n', 'onStdout saw the stream')
  eq(err.join(''), 'two\n', 'onStderr saw the stream')
  // streamed, not collected at the end: "one" came in an earlier event than "three"
  assert(out.length >= 2, 'stdout arrived in pieces while the command ran: ' + JSON.stringify(out))
})

check('run_cwd_and_envs', async () => {
  await sbx.files.makeDir('/tmp/wd')
  const r = await sbx.commands.run('pwd; echo "$A-$B"', { cwd: '/tmp/wd', envs: { A: 'x y', B: "it's" } })
  eq(r.stdout, "/tmp/wd\nx y-it's\n")
})

check('nonzero_exit_raises_command_exit_error', async () => {
  const e = await raises(() => sbx.commands.run('echo partial; echo bad >&2; exit 7'))
  assert(e instanceof CommandExitError, 'CommandExitError: ' + e)
  eq(e.exitCode, 7)
  eq(e.stdout, 'partial\n')
  eq(e.stderr, 'bad\n')
})

check('timeout_raises_timeout_error', async () => {
  const t0 = Date.now()
  const e = await raises(() => sbx.commands.run('sleep 20', { timeoutMs: 1500 }))
  assert(e instanceof TimeoutError, 'TimeoutError: ' + e)
  assert(Date.now() - t0 < 8000, 'stopped near its timeout: ' + (Date.now() - t0) + ' ms')
  // the shell is free again
  eq((await sbx.commands.run('echo after')).stdout, 'after\n')
})

check('background_list_and_kill', async () => {
  const h = await sbx.commands.run('echo started; sleep 30', { background: true })
  assert(h.pid > 0, 'a pid')
  const procs = await sbx.commands.list()
  assert(procs.some(p => p.pid === h.pid && p.cmd === '/bin/bash'), 'listed: ' + JSON.stringify(procs))
  for (let i = 0; i < 100 && !h.stdout; i++) await new Promise(res => setTimeout(res, 20))
  const t0 = Date.now()
  eq(await sbx.commands.kill(h.pid), true, 'kill finds it')
  const e = await raises(() => h.wait())
  assert(e instanceof CommandExitError, 'a killed command ends with CommandExitError: ' + e)
  assert(Date.now() - t0 < 5000, 'killed promptly')
  eq(h.stdout, 'started\n')
  eq(await sbx.commands.kill(h.pid), false, 'a second kill finds nothing')
})

check('stdin_send_and_close', async () => {
  const h = await sbx.commands.run('cat; echo "<eof>"', { background: true, stdin: true })
  await h.sendStdin('hello\n')
  await h.sendStdin(new Uint8Array([0x77, 0x6f, 0x72, 0x6c, 0x64, 0x0a]))
  await h.closeStdin()
  const r = await h.wait()
  eq(r.stdout, 'hello\nworld\n<eof>\n', 'stdin reached the command, then its end')
  const e = await raises(async () => {
    const h2 = await sbx.commands.run('sleep 1', { background: true })
    try { await h2.sendStdin('x') } finally { await h2.wait() }
  })
  assert(e instanceof SandboxError && /without stdin/.test(e.message), 'stdin: false refuses input: ' + e)
})

check('processes_run_at_once', async () => {
  // a background "server" and foreground commands beside it, all at once
  const srv = await sbx.commands.run('for i in $(seq 1 50); do echo srv $i; sleep 0.1; done', { background: true })
  const t0 = Date.now()
  const rs = await Promise.all([1, 2, 3, 4, 5].map(i => sbx.commands.run(`sleep 1; echo job ${i}`)))
  eq(rs.map(r => r.stdout), [1, 2, 3, 4, 5].map(i => `job ${i}\n`))
  assert(Date.now() - t0 < 3000, 'five 1 s commands ran side by side: ' + (Date.now() - t0) + ' ms')
  await sbx.files.write('/tmp/during.txt', 'x')
  eq(await sbx.files.exists('/tmp/during.txt'), true, 'files work while commands run')
  const listed = (await sbx.commands.list()).map(p => p.pid)
  assert(listed.includes(srv.pid), 'the background one is listed')
  await srv.kill()
  await raises(() => srv.wait())
  assert(srv.stdout.startsWith('srv 1\n'), srv.stdout)
})

check('connect_to_running_process_from_second_client', async () => {
  const h = await sbx.commands.run('sleep 1; echo late; sleep 0.5; exit 3', { background: true })
  await h.disconnect()
  const other = await Sandbox.connect(sbx.sandboxId)
  const seen = []
  const h2 = await other.commands.connect(h.pid, { onStdout: d => seen.push(d) })
  const e = await raises(() => h2.wait())
  assert(e instanceof CommandExitError && e.exitCode === 3, 'its end reached the second client: ' + e)
  eq(seen.join(''), 'late\n')
})

check('sigterm_by_send_signal', async () => {
  const h = await sbx.commands.run("trap 'echo got term; exit 0' TERM; while :; do sleep 0.1; done", { background: true })
  await new Promise(res => setTimeout(res, 300))
  // the SDK's kill is SIGKILL; SIGTERM through the RPC the SDK exposes
  await sbx.commands.rpc.sendSignal({ process: { selector: { case: 'pid', value: h.pid } }, signal: 15 })
  const r = await h.wait().catch(e => e)
  assert(/got term/.test(h.stdout), 'the trap ran: ' + h.stdout + ' ' + r)
})

check('set_timeout_moves_end', async () => {
  const before = (await sbx.getInfo()).endAt.getTime()
  await sbx.setTimeout(1200 * 1000)
  const after = (await sbx.getInfo()).endAt.getTime()
  assert(after > before + 600 * 1000, `endAt moved later: ${before} -> ${after}`)
})

check('list_with_metadata_filter', async () => {
  const other = await Sandbox.create({ metadata: { suite: tag, role: 'other' } })
  try {
    const mine = await Sandbox.list({ query: { metadata: { suite: tag, role: 'main' } } }).nextItems()
    eq(mine.map(s => s.sandboxId), [sbx.sandboxId], 'only the matching sandbox')
    const both = await Sandbox.list({ query: { metadata: { suite: tag } } }).nextItems()
    eq(both.length, 2, 'both of this run')
    const none = await Sandbox.list({ query: { metadata: { suite: 'nobody' } } }).nextItems()
    eq(none.length, 0)
    // paging: one per page, the SDK follows x-next-token
    const p = Sandbox.list({ query: { metadata: { suite: tag } }, limit: 1 })
    const ids = []
    while (p.hasNext) ids.push(...(await p.nextItems()).map(s => s.sandboxId))
    eq(ids.sort(), [sbx.sandboxId, other.sandboxId].sort(), 'two pages')
  } finally {
    await other.kill()
  }
})

check('connect_from_second_client', async () => {
  const again = await Sandbox.connect(sbx.sandboxId)
  await again.files.write('/tmp/from-second.txt', 'second')
  eq(await sbx.files.read('/tmp/from-second.txt'), 'second', 'the first client sees it')
  eq((await again.commands.run('cat /tmp/from-second.txt')).stdout, 'second')
})

check('kill_then_not_found', async () => {
  const id = sbx.sandboxId
  await sbx.kill()
  eq(await Sandbox.kill(id), false, 'a second kill says it was not there')
  const e = await raises(() => Sandbox.getInfo(id))
  assert(e instanceof NotFoundError, 'getInfo of a killed sandbox: NotFoundError: ' + e)
  const e2 = await raises(() => sbx.commands.run('true'))
  assert(e2 instanceof SandboxError, 'envd of a killed sandbox: ' + e2)
})

check('expires_while_command_streams', async () => {
  const s = await Sandbox.create({ timeoutMs: 3000 })
  const t0 = Date.now()
  const seen = []
  const e = await raises(() => s.commands.run('for i in $(seq 1 60); do echo tick $i; sleep 0.5; done',
    { onStdout: d => seen.push(d) }))
  assert(e instanceof TimeoutError || e instanceof SandboxError, 'an SDK error: ' + e)
  assert(Date.now() - t0 < 10000, 'the stream ended at the expiry: ' + (Date.now() - t0) + ' ms')
  assert(seen.join('').includes('tick 1'), 'output streamed before: ' + seen.join(''))
  const e2 = await raises(() => Sandbox.getInfo(s.sandboxId))
  assert(e2 instanceof NotFoundError, 'gone after: ' + e2)
})

await runChecks()
