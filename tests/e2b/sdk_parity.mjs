// Where E2B's own SDK tests found llmbox differing from E2B, each checked
// through the real e2b SDK against E2B's documented behaviour: the list's
// order and filters, a paused sandbox's health, connect's timeout, gzip on
// /files, symlink targets, removing a missing path, watchDir and
// files.write, signed file URLs, a sandbox killed under a command, and what
// E2B's base template has (sudo, python).
import { Sandbox, FilesystemEventType, FileType, InvalidArgumentError, TimeoutError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

const sleep = ms => new Promise(r => setTimeout(r, ms))
const tag = 'parity-' + Math.random().toString(16).slice(2)
let sbx

check('list_newest_first_order_and_filters', async () => {
  const made = []
  for (let i = 0; i < 3; i++) {
    made.push(await Sandbox.create({ metadata: { t: tag } }))
    await sleep(20) // distinct start times
  }
  const ids = made.map(s => s.sandboxId)
  const query = { metadata: { t: tag } }
  const all = async opts => {
    const p = Sandbox.list({ query, ...opts })
    const out = []
    while (p.hasNext) out.push(...(await p.nextItems()))
    return out.map(x => x.sandboxId)
  }
  eq(await all({}), [...ids].reverse(), 'newest first by default')
  eq(await all({ order: 'desc' }), [...ids].reverse(), 'order desc')
  eq(await all({ order: 'asc' }), ids, 'order asc')
  eq(await all({ order: 'desc', limit: 1 }), [...ids].reverse(), 'pages of one keep the order')
  eq(await all({ order: 'asc', limit: 2 }), ids, 'pages of two keep the order')
  const future = new Date(Date.now() + 3600e3)
  eq(await all({ query: { ...query, startedAfter: future } }), [], 'an hour-ahead startedAfter finds none')
  const info = await Sandbox.getInfo(ids[1])
  eq(await all({ order: 'asc', query: { ...query, startedAfter: info.startedAt } }), ids.slice(1),
    'startedAfter is "at or after"')
  eq(await all({ query: { ...query, template: 'no-such-template' } }), [], 'an unknown template finds none')
  eq((await all({ query: { ...query, template: 'base' } })).length, 3, 'the base template finds them')
  // the SDK's default state filter is running and paused
  await made[0].pause()
  eq((await all({ order: 'asc' })), ids, 'paused ones are listed by default')
  for (const s of made) await Sandbox.kill(s.sandboxId)
})

check('paused_sandbox_is_not_running', async () => {
  sbx = await Sandbox.create({ timeoutMs: 300000 })
  eq(await sbx.isRunning(), true, 'running')
  await sbx.pause()
  eq(await sbx.isRunning(), false, 'a paused sandbox is not running')
  const back = await Sandbox.connect(sbx.sandboxId)
  eq(await back.isRunning(), true, 'running again after connect')
})

check('connect_timeout_only_extends', async () => {
  const before = (await sbx.getInfo()).endAt.getTime()
  await Sandbox.connect(sbx.sandboxId, { timeoutMs: 10000 })
  const after = (await sbx.getInfo()).endAt.getTime()
  assert(after >= before, `connect with a shorter timeout must not move the end earlier: ${before} -> ${after}`)
  await sbx.setTimeout(20000) // setTimeout does set it earlier
  const set = (await sbx.getInfo()).endAt.getTime()
  assert(set < before, 'setTimeout shortens')
  await Sandbox.connect(sbx.sandboxId, { timeoutMs: 120000 })
  const ext = (await sbx.getInfo()).endAt.getTime()
  assert(ext > set + 60000, 'connect with a longer timeout extends: ' + (ext - set))
})

check('gzip_write_and_read', async () => {
  const text = 'gzip me '.repeat(1000)
  await sbx.files.write('/tmp/gz.txt', text, { gzip: true })
  eq((await sbx.commands.run('head -c 8 /tmp/gz.txt')).stdout, 'gzip me ', 'stored unpacked')
  eq(await sbx.files.read('/tmp/gz.txt'), text, 'read back')
  eq(await sbx.files.read('/tmp/gz.txt', { gzip: true }), text, 'read with Accept-Encoding: gzip')
})

check('symlink_target_is_absolute', async () => {
  await sbx.files.write('/tmp/ln/test_file.txt', 'x')
  await sbx.commands.run('cd /tmp/ln && ln -s test_file.txt link && ln -s ../ln/./test_file.txt up')
  eq((await sbx.files.getInfo('/tmp/ln/link')).symlinkTarget, '/tmp/ln/test_file.txt')
  eq((await sbx.files.getInfo('/tmp/ln/up')).symlinkTarget, '/tmp/ln/test_file.txt')
  const l = (await sbx.files.list('/tmp/ln')).find(e => e.name === 'link')
  eq(l.symlinkTarget, '/tmp/ln/test_file.txt', 'in a list too')
})

check('remove_missing_path_succeeds', async () => {
  await sbx.files.remove('/tmp/there-is-nothing-here')
  eq(await sbx.files.exists('/tmp/there-is-nothing-here'), false)
})

check('watch_sees_files_write_as_write', async () => {
  await sbx.files.makeDir('/tmp/wp')
  await sbx.files.write('/tmp/wp/f.txt', 'one')
  const evs = []
  const h = await sbx.files.watchDir('/tmp/wp', e => evs.push([e.type, e.name]))
  await sbx.files.write('/tmp/wp/f.txt', 'two')
  const t0 = Date.now()
  while (!evs.some(([t, n]) => t === FilesystemEventType.WRITE && n === 'f.txt')) {
    assert(Date.now() - t0 < 10000, 'no write of f.txt: ' + JSON.stringify(evs))
    await sleep(50)
  }
  await h.stop()
  assert(!evs.some(([, n]) => n.includes('lbsd')), 'no temporary names: ' + JSON.stringify(evs))
})

check('signed_urls', async () => {
  await sbx.files.write('/tmp/signed.txt', 'signed content')
  const url = await sbx.downloadUrl('/tmp/signed.txt')
  assert(url.includes('signature=v1_'), url)
  let res = await fetch(url) // no token, no sandbox header: the signature is the key
  eq(res.status, 200, 'download by signature')
  eq(await res.text(), 'signed content')
  // another path with the same signature
  res = await fetch(url.replace('signed.txt', 'other.txt'))
  eq(res.status, 401, 'a signature opens its own path only')
  // upload
  const up = await sbx.uploadUrl('/tmp/up.txt')
  const form = new FormData()
  form.append('file', new Blob(['uploaded']), 'up.txt')
  res = await fetch(up, { method: 'POST', body: form })
  eq(res.status, 200, 'upload by signature: ' + await res.clone().text())
  eq(await sbx.files.read('/tmp/up.txt'), 'uploaded')
  // a read signature does not write
  res = await fetch(url, { method: 'POST', body: form })
  eq(res.status, 401, 'a read signature does not write')
  // expiry
  const short = await sbx.downloadUrl('/tmp/signed.txt', { useSignatureExpiration: 1 })
  eq((await fetch(short)).status, 200, 'before its expiry')
  await sleep(2100)
  eq((await fetch(short)).status, 401, 'after its expiry')
})

check('killed_during_command_says_killed', async () => {
  const s = await Sandbox.create()
  const p = raises(() => s.commands.run('sleep 60'))
  await sleep(1000)
  await Sandbox.kill(s.sandboxId)
  const e = await p
  assert(e instanceof TimeoutError, 'TimeoutError: ' + e)
  assert(/killed/.test(e.message), 'the SDK says it was killed: ' + e.message)
})

check('envd_0_6_3_watch_include_entry', async () => {
  eq((await sbx.getInfo()).envdVersion, '0.6.4', 'the envd version answered')
  await sbx.files.makeDir('/tmp/ie')
  const evs = []
  const h = await sbx.files.watchDir('/tmp/ie', e => evs.push(e), { includeEntry: true })
  await sbx.files.write('/tmp/ie/a.txt', 'hello')
  await sbx.commands.run('rm /tmp/ie/a.txt')
  const t0 = Date.now()
  while (!evs.some(e => e.type === FilesystemEventType.REMOVE)) {
    assert(Date.now() - t0 < 10000, 'events: ' + JSON.stringify(evs))
    await sleep(50)
  }
  await h.stop()
  const w = evs.find(e => e.type === FilesystemEventType.WRITE && e.name === 'a.txt')
  assert(w && w.entry, 'a write carries its entry: ' + JSON.stringify(evs))
  eq([w.entry.name, w.entry.path, w.entry.type], ['a.txt', '/tmp/ie/a.txt', FileType.FILE])
  eq(evs.find(e => e.type === FilesystemEventType.REMOVE).entry, undefined, 'a remove carries none (as envd)')
  // without includeEntry: none
  const plain = []
  const h2 = await sbx.files.watchDir('/tmp/ie', e => plain.push(e))
  await sbx.files.write('/tmp/ie/b.txt', 'x')
  while (!plain.some(e => e.type === FilesystemEventType.WRITE)) {
    assert(Date.now() - t0 < 20000, 'events: ' + JSON.stringify(plain))
    await sleep(50)
  }
  await h2.stop()
  assert(plain.every(e => e.entry === undefined), 'no entry unless asked')
})

check('file_metadata_is_kept', async () => {
  // envd 0.6.2's metadata (tests/e2b/sdk_file_metadata.mjs has the rest)
  const w = await sbx.files.write('/tmp/md.txt', 'x', { metadata: { k: 'v' } })
  eq(w.metadata, { k: 'v' }, 'the write answers it')
  eq((await sbx.files.getInfo('/tmp/md.txt')).metadata, { k: 'v' }, 'getInfo')
})

check('create_snapshot_and_start_from_it', async () => {
  await sbx.files.write('/home/user/kept.txt', 'from the snapshot')
  const snap = await sbx.createSnapshot()
  assert(/^[0-9a-f]{32}$/.test(snap.snapshotId), 'a snapshot id: ' + JSON.stringify(snap))
  const b = await Sandbox.create(snap.snapshotId)
  eq(await b.files.read('/home/user/kept.txt'), 'from the snapshot', 'its files')
  eq((await b.commands.run('echo runs')).stdout, 'runs\n')
  await b.kill()
  const snap2 = await sbx.createSnapshot()
  const listed = []
  const p = Sandbox.listSnapshots({ limit: 1 })
  while (p.hasNext) listed.push(...(await p.nextItems()).map(x => x.snapshotId))
  assert(listed.includes(snap.snapshotId) && listed.includes(snap2.snapshotId),
    'both listed, in pages of one: ' + JSON.stringify(listed))
  eq(new Set(listed).size, listed.length, 'no snapshot twice across the pages')
  eq(await Sandbox.deleteSnapshot(snap2.snapshotId), true)
  eq(await Sandbox.deleteSnapshot(snap.snapshotId), true, 'deleted')
  eq(await Sandbox.deleteSnapshot(snap.snapshotId), false, 'a second delete finds none')
  await raises(() => Sandbox.create(snap.snapshotId), 'a deleted snapshot starts nothing')
})

check('auto_pause_at_timeout_and_connect_resumes', async () => {
  const a = await Sandbox.create({ timeoutMs: 2000, lifecycle: { onTimeout: 'pause' } })
  await a.files.write('/tmp/ap.txt', 'kept')
  await a.commands.run('(while :; do date +%s%N >/tmp/tick; sleep 0.05; done) >/dev/null 2>&1 &')
  await sleep(4000)
  const info = await Sandbox.getInfo(a.sandboxId)
  eq(info.state, 'paused', 'paused at its timeout, not killed')
  assert(info.endAt.getTime() > Date.now() + 3600e3, 'kept past its timeout: ' + info.endAt.toISOString())
  eq(await a.isRunning(), false)
  const b = await Sandbox.connect(a.sandboxId)
  eq((await b.getInfo()).state, 'running', 'connect resumed it')
  eq(await b.files.read('/tmp/ap.txt'), 'kept', 'its files')
  const t1 = (await b.commands.run('cat /tmp/tick')).stdout
  await sleep(300)
  assert((await b.commands.run('cat /tmp/tick')).stdout !== t1, 'its processes run on')
  const left = (await b.getInfo()).endAt.getTime() - Date.now()
  assert(left > 200e3 && left < 310e3, "a timeout again, E2B's default 300 s: " + left)
  await b.kill()
})

check('base_template_has_sudo_and_python', async () => {
  eq((await sbx.commands.run('python -c "print(6*7)"')).stdout, '42\n', 'python')
  eq((await sbx.commands.run('python3 -c "print(6*7)"')).stdout, '42\n', 'python3')
  eq((await sbx.commands.run('sudo -n true && echo ok')).stdout, 'ok\n', 'sudo')
  await sbx.kill()
})

await runChecks()
