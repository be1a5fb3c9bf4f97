// What E2B's own SDK test suite (scripts/e2b_upstream_suite.py) found
// llmbox doing unlike envd and E2B's API, checked with the real e2b SDK:
// a create that says allowInternetAccess true where the operator allows
// no network rules (E2B's SDK sends it on every create since 2.45's
// source); signed URLs answering envd's own words for an expired and a
// wrong signature; an upload whose "file" field carries no file name
// (FormData.append('file', 'text')); relative paths of a root call from
// root's home, as envd's; watchDir's allowNetworkMounts (envd 0.6.4);
// a snapshot's name and the sandbox it was taken of, which
// listSnapshots({name, sandboxId}) filter by; Sandbox.create({mcp}),
// whose gateway the SDK starts itself in the sandbox.
import { Sandbox, FilesystemEventType, SandboxError } from 'e2b'
import { check, eq, raises, runChecks } from './lib.mjs'

let sbx
// each check stands alone: one whose create failed leaves the others theirs
const sandbox = async () => (sbx ??= await Sandbox.create())

check('create_with_allow_internet_access_true', async () => {
  // the test stack sets no network_egress_max: E2B's default (the
  // internet) is then this service's own (no network), not a 403
  sbx = await Sandbox.create({ allowInternetAccess: true })
  eq((await sbx.commands.run('echo up')).stdout, 'up\n')
})

check('signed_url_errors_in_envds_words', async () => {
  await sandbox()
  await sbx.files.write('s.txt', 'signed')
  const expired = await sbx.downloadUrl('s.txt', { useSignatureExpiration: -10_000 })
  let res = await fetch(expired)
  eq([res.status, await res.json()], [401, { code: 401, message: 'signature is already expired' }], 'expired')
  const good = await sbx.downloadUrl('s.txt', { useSignatureExpiration: 10_000 })
  res = await fetch(good)
  eq([res.status, await res.text()], [200, 'signed'], 'a good one reads')
  // the same signature for another path: envd's "invalid signature"
  // (the sandbox named by its header, as with E2B's host names)
  const u = new URL(good)
  u.searchParams.set('path', 'other.txt')
  res = await fetch(u, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId } })
  eq([res.status, await res.json()], [401, { code: 401, message: 'invalid signature' }], 'wrong path')
  const upExpired = await sbx.uploadUrl('s.txt', { useSignatureExpiration: -100_000 })
  const form = new FormData()
  form.append('file', 'x')
  res = await fetch(upExpired, { method: 'POST', body: form })
  eq([res.status, await res.json()], [401, { code: 401, message: 'signature is already expired' }], 'upload expired')
})

check('upload_field_file_without_file_name', async () => {
  await sandbox()
  const url = await sbx.uploadUrl('up.txt', { useSignatureExpiration: 10_000 })
  const form = new FormData()
  form.append('file', 'file content') // a field, not a file: no filename in its part
  const res = await fetch(url, { method: 'POST', body: form })
  eq([res.status, await res.json()], [200, [{ name: 'up.txt', type: 'file', path: '/home/user/up.txt' }]])
  eq(await sbx.files.read('/home/user/up.txt'), 'file content')
})

check('root_relative_paths_from_roots_home', async () => {
  await sandbox()
  const w = await sbx.files.write('r.txt', 'as root', { user: 'root' })
  eq(w.path, '/root/r.txt', 'envd resolves a relative path from the user\'s home')
  eq(await sbx.files.read('r.txt', { user: 'root' }), 'as root')
  eq(await sbx.files.exists('r.txt'), false, 'user\'s relative r.txt is /home/user/r.txt')
  const url = await sbx.uploadUrl('up2.txt', { user: 'root', useSignatureExpiration: 10_000 })
  const form = new FormData()
  form.append('file', 'root content')
  const res = await fetch(url, { method: 'POST', body: form })
  eq([res.status, await res.json()], [200, [{ name: 'up2.txt', type: 'file', path: '/root/up2.txt' }]])
  eq((await sbx.files.list('.', { user: 'root' })).some(e => e.path === '/root/up2.txt'), true, 'list from /root')
})

check('watch_dir_allow_network_mounts', async () => {
  await sandbox()
  eq((await sbx.getInfo()).envdVersion, '0.6.4', 'the SDK refuses the flag below envd 0.6.4')
  await sbx.files.makeDir('wd')
  let seen
  const got = new Promise(resolve => { seen = resolve })
  const h = await sbx.files.watchDir('wd', e => {
    if (e.type === FilesystemEventType.WRITE && e.name === 'w.txt') seen()
  }, { allowNetworkMounts: true })
  await sbx.files.write('wd/w.txt', 'x')
  await Promise.race([got, new Promise((_, no) => setTimeout(() => no(new Error('no write event in 20 s')), 20000))])
  await h.stop()
})

check('snapshot_names_and_sandbox_filters', async () => {
  await sandbox()
  const other = await Sandbox.create()
  const tag = Math.random().toString(36).slice(2, 10)
  const named = await sbx.createSnapshot({ name: `snap-${tag}` })
  const plain = await sbx.createSnapshot()
  const elsewhere = await other.createSnapshot({ name: `snap-${tag}-b` })
  try {
    eq(named.names, [`snap-${tag}`], 'createSnapshot answers its name')
    eq(plain.names, [], 'none without one')
    const ids = async opts => (await Sandbox.listSnapshots(opts).nextItems()).map(x => x.snapshotId).sort()
    eq(await ids({ name: `snap-${tag}` }), [named.snapshotId], 'by name')
    eq(await ids({ name: `snap-${tag}-none` }), [], 'an unknown name: none')
    eq(await ids({ sandboxId: sbx.sandboxId }), [named.snapshotId, plain.snapshotId].sort(), 'by sandbox')
    eq(await ids({ sandboxId: other.sandboxId }), [elsewhere.snapshotId], 'the other sandbox\'s')
    const all = await Sandbox.listSnapshots().nextItems()
    eq(all.find(x => x.snapshotId === named.snapshotId).names, [`snap-${tag}`], 'the list shows names')
    const bad = await raises(() => sbx.createSnapshot({ name: 'no/slash' }), 'a name with a slash is refused')
    eq(/name/.test(bad.message), true, 'the sentence says why: ' + bad.message)
  } finally {
    for (const x of [named, plain, elsewhere]) await Sandbox.deleteSnapshot(x.snapshotId)
    await other.kill()
  }
  eq(await (async () => (await Sandbox.listSnapshots({ name: `snap-${tag}` }).nextItems()).length)(), 0,
    'a deleted snapshot is gone from the filter')
  await sbx.kill()
})

check('create_with_mcp_runs_the_sdks_gateway_start', async () => {
  // the default image has no mcp-gateway: E2B's own answer for a template
  // without it is the SDK's "Failed to start MCP gateway", the sandbox killed
  const tag = Math.random().toString(36).slice(2, 10)
  const e = await raises(() => Sandbox.create('base', { mcp: { some_server: {} }, metadata: { mcpTag: tag } }))
  eq(e instanceof SandboxError && /Failed to start MCP gateway/.test(e.message), true, 'the SDK\'s error: ' + e)
  eq((await Sandbox.list({ query: { metadata: { mcpTag: tag } } }).nextItems()).length, 0, 'and the sandbox is gone')
})

await runChecks()
