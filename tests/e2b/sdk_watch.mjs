// files.watchDir through the real e2b SDK (E2B's protocol): a watcher that
// sandboxd runs inside the sandbox (server/insandbox/sandbox_watch.h).
import { Sandbox, FilesystemEventType, NotFoundError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

const sleep = ms => new Promise(r => setTimeout(r, ms))
let sbx

// Waits until pred(events) holds, at most ms.
async function until(events, pred, ms = 10000) {
  const t0 = Date.now()
  while (!pred(events)) {
    if (Date.now() - t0 > ms) throw new Error('events so far: ' + JSON.stringify(events))
    await sleep(50)
  }
}

// the watchers that run in the sandbox (sandbox_watch.c names itself)
async function watchers() {
  const r = await sbx.commands.run('cat /proc/[0-9]*/comm | grep -c llmbox-watch || true')
  return Number(r.stdout.trim())
}

check('watch_create_write_rename_chmod_remove_in_order', async () => {
  sbx = await Sandbox.create()
  await sbx.files.makeDir('/tmp/wd')
  const evs = []
  const h = await sbx.files.watchDir('/tmp/wd', e => evs.push([e.type, e.name]))
  await sbx.commands.run('cd /tmp/wd && echo a > f && mv f g && chmod 600 g && rm g')
  const want = [[FilesystemEventType.CREATE, 'f'], [FilesystemEventType.WRITE, 'f'], [FilesystemEventType.RENAME, 'f'],
    [FilesystemEventType.CREATE, 'g'], [FilesystemEventType.CHMOD, 'g'], [FilesystemEventType.REMOVE, 'g']]
  await until(evs, e => e.length >= want.length)
  eq(evs, want)
  // files.write through the SDK is seen too (sandboxd writes a temporary, then renames it in place)
  await sbx.files.write('/tmp/wd/sdk.txt', 'x')
  await until(evs, e => e.some(([t, n]) => t === FilesystemEventType.CREATE && n === 'sdk.txt'))
  eq((await sbx.commands.list()).length, 0, 'the watcher is not one of the commands')
  eq(await watchers(), 1)
  await h.stop()
  // the web sees that the client left at its next write: a keepalive, within 10 s
  const t0 = Date.now()
  while (await watchers() !== 0) {
    assert(Date.now() - t0 < 20000, 'stop() ends the watcher in the sandbox')
    await sleep(500)
  }
})

check('watch_recursive_sees_new_subdirectories', async () => {
  const evs = []
  const flat = []
  const h = await sbx.files.watchDir('/tmp/wd', e => evs.push([e.type, e.name]), { recursive: true })
  const h2 = await sbx.files.watchDir('/tmp/wd', e => flat.push(e.name))
  await sbx.commands.run('mkdir -p /tmp/wd/a && sleep 0.3 && echo x > /tmp/wd/a/deep.txt')
  await until(evs, e => e.some(([t, n]) => t === FilesystemEventType.WRITE && n === 'a/deep.txt')).catch(e => { throw new Error(e.message + ' flat: ' + JSON.stringify(flat)) })
  assert(evs.some(([t, n]) => t === FilesystemEventType.CREATE && n === 'a'), JSON.stringify(evs))
  assert(!flat.includes('a/deep.txt'), 'not recursive: the subdirectory is not watched: ' + JSON.stringify(flat))
  await h.stop()
  await h2.stop()
})

check('watch_missing_dir_raises_not_found', async () => {
  const e = await raises(() => sbx.files.watchDir('/tmp/no/such', () => {}))
  assert(e instanceof NotFoundError, 'NotFoundError: ' + e)
  await sbx.files.write('/tmp/plain', 'p')
  const e2 = await raises(() => sbx.files.watchDir('/tmp/plain', () => {}))
  assert(/not a directory/.test(e2.message), e2.message)
})

check('watch_ends_when_the_dir_goes_or_the_sandbox_dies', async () => {
  await sbx.files.makeDir('/tmp/gone')
  let exit1
  await sbx.files.watchDir('/tmp/gone', () => {}, { onExit: err => { exit1 = err || 'clean' } })
  await sbx.commands.run('rm -rf /tmp/gone')
  await until([0], () => exit1 !== undefined)
  assert(/removed/.test(String(exit1)), 'says the directory went: ' + exit1)
  let exit2
  await sbx.files.makeDir('/tmp/w3')
  await sbx.files.watchDir('/tmp/w3', () => {}, { onExit: err => { exit2 = err || 'clean' }, timeoutMs: 0 })
  await sbx.kill()
  await until([0], () => exit2 !== undefined, 15000)
  assert(exit2 !== 'clean', 'an error end: ' + exit2)
})

await runChecks()
