// sbx.pty through the real e2b SDK (E2B's protocol): a terminal of the sandbox's
// own devpts, through sandboxd's pty relay (server/insandbox/sandbox_pty.h).
import { Sandbox, CommandExitError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

const sleep = ms => new Promise(r => setTimeout(r, ms))
const enc = s => new TextEncoder().encode(s)
let sbx

async function until(pred, what, ms = 15000) {
  const t0 = Date.now()
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error('no ' + what)
    await sleep(50)
  }
}

check('pty_size_input_resize_kill', async () => {
  sbx = await Sandbox.create()
  let out = ''
  const dec = new TextDecoder()
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: d => { out += dec.decode(d, { stream: true }) } })
  assert(h.pid > 0, 'a pid')
  await sbx.pty.sendInput(h.pid, enc('stty size; tty\n'))
  await until(() => /24 80/.test(out) && /\/dev\/pts\/\d+/.test(out), 'stty size 24 80: ' + JSON.stringify(out))
  await sbx.pty.resize(h.pid, { cols: 132, rows: 50 })
  await sbx.pty.sendInput(h.pid, enc('stty size\n'))
  await until(() => /50 132/.test(out), 'stty size after the resize: ' + JSON.stringify(out.slice(-200)))
  await sbx.pty.sendInput(h.pid, enc('echo h""i\n'))
  await until(() => /\bhi\r?\n/.test(out), 'hi: ' + JSON.stringify(out.slice(-200)))
  const listed = (await sbx.commands.list()).find(p => p.pid === h.pid)
  assert(listed && listed.cmd === '/bin/bash' && listed.tag === undefined, 'listed as the SDK started it: ' +
    JSON.stringify(listed))
  eq(await sbx.pty.kill(h.pid), true)
  const e = await raises(() => h.wait())
  assert(e instanceof CommandExitError || /signal|killed/i.test(String(e)), 'ended by the kill: ' + e)
  await sleep(300)
  eq((await sbx.commands.list()).filter(p => p.pid === h.pid).length, 0, 'gone after the kill')
})

check('pty_connect_from_another_handle', async () => {
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {}, timeoutMs: 0 })
  await h.disconnect()
  let out = ''
  const dec = new TextDecoder()
  const h2 = await sbx.pty.connect(h.pid, { onData: d => { out += dec.decode(d, { stream: true }) } })
  await sbx.pty.sendInput(h.pid, enc('echo con""nected\n'))
  await until(() => /connected\r?\n/.test(out), 'output on the second handle: ' + JSON.stringify(out))
  eq(await sbx.pty.kill(h.pid), true)
  await raises(() => h2.wait())
})

check('pty_exit_code_and_input_to_a_plain_command', async () => {
  const h = await sbx.pty.create({ cols: 40, rows: 10, onData: () => {} })
  await sbx.pty.sendInput(h.pid, enc('exit 3\n'))
  const e = await raises(() => h.wait())
  assert(e instanceof CommandExitError && e.exitCode === 3, 'exit 3: ' + e)
  // resize of a command that has no pty: an error that says so
  const c = await sbx.commands.run('sleep 30', { background: true })
  const e2 = await raises(() => sbx.pty.resize(c.pid, { cols: 10, rows: 10 }))
  assert(/not on a pty/.test(e2.message), e2.message)
  await c.kill()
  await sbx.kill()
})

await runChecks()
