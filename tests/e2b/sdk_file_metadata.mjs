// File metadata (envd 0.6.2) through the real e2b SDK: files.write's
// `metadata` is kept with the file (its user.e2b.<key> extended attributes)
// and comes back on the write, in getInfo and in list; a rewrite replaces
// it. Keys are lowercased as envd does. What the sandbox's own code sets
// there is read with the same caps: a value that is not printable ASCII,
// or too long, is left out, never passed on.
import { Sandbox, InvalidArgumentError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

let sbx
// a map has no order (envd's is Go's): compared by sorted keys
const sorted = o => o && Object.fromEntries(Object.entries(o).sort())

check('write_getinfo_list', async () => {
  sbx = await Sandbox.create()
  const w = await sbx.files.write('/home/user/m.txt', 'hello', { metadata: { Author: 'mish', purpose: 'up load' } })
  eq(sorted(w.metadata), { author: 'mish', purpose: 'up load' }, 'the write answers it, keys lowercased as envd')
  const i = await sbx.files.getInfo('/home/user/m.txt')
  eq(sorted(i.metadata), { author: 'mish', purpose: 'up load' }, 'getInfo')
  const l = (await sbx.files.list('/home/user')).find(e => e.name === 'm.txt')
  eq(sorted(l.metadata), { author: 'mish', purpose: 'up load' }, 'list')
  eq((await sbx.commands.run("python3 -c \"import os; print(os.getxattr('/home/user/m.txt', 'user.e2b.author'))\""))
    .stdout, "b'mish'\n", 'kept as the file\'s user.e2b.* attribute, readable in the sandbox')
  const multi = await sbx.files.write([{ path: '/home/user/a.txt', data: 'a' }, { path: '/home/user/b.txt', data: 'b' }],
    { metadata: { 'two-part': 'yes' } })
  eq(multi.map(e => e.metadata), [{ 'two-part': 'yes' }, { 'two-part': 'yes' }], 'a multipart upload: each file')
  eq((await sbx.files.getInfo('/home/user/b.txt')).metadata, { 'two-part': 'yes' })
  await sbx.files.write('/home/user/m.txt', 'again')
  eq((await sbx.files.getInfo('/home/user/m.txt')).metadata, undefined, 'a rewrite without metadata has none')
  eq((await sbx.files.getInfo('/home/user/m.txt')).owner, 'user', 'and is still user\'s')
})

check('a_snapshot_of_a_file_with_metadata', async () => {
  // a snapshot (the saved state) carries no extended attributes: the file
  // comes back, its metadata does not (docs/E2B.md); the snapshot must not fail
  await sbx.files.write('/home/user/s.txt', 'snap', { metadata: { k: 'v' } })
  const snap = await sbx.createSnapshot()
  const t = await Sandbox.create(snap.snapshotId)
  eq(await t.files.read('/home/user/s.txt'), 'snap', 'the file')
  eq((await t.files.getInfo('/home/user/s.txt')).metadata, undefined, 'without its metadata')
  await t.kill()
})

check('caps_and_hostile_attributes', async () => {
  const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => ['k' + i, 'v']))
  const e = await raises(() => sbx.files.write('/tmp/many.txt', 'x', { metadata: many }))
  assert(e instanceof InvalidArgumentError && /metadata/i.test(e.message), 'over 32 keys: ' + e)
  eq(await sbx.files.exists('/tmp/many.txt'), false, 'nothing written')
  const e2 = await raises(() => sbx.files.write('/tmp/long.txt', 'x', { metadata: { k: 'v'.repeat(1025) } }))
  assert(/metadata/i.test(e2.message), 'a value over 1 KiB: ' + e2)
  // the sandbox's own code sets attributes: only the well-formed come back
  await sbx.commands.run('printf x > /tmp/h.txt && python3 -c "import os\n' +
    "os.setxattr('/tmp/h.txt', 'user.e2b.good', b'fine')\n" +
    "os.setxattr('/tmp/h.txt', 'user.e2b.ctl', b'a\\\\x01b')\n" +
    "os.setxattr('/tmp/h.txt', 'user.e2b.big', b'y' * 2000)\n" +
    "os.setxattr('/tmp/h.txt', 'user.e2b.bad key', b'v')\n" +
    "os.setxattr('/tmp/h.txt', 'user.other', b'not ours')\"")
  eq((await sbx.files.getInfo('/tmp/h.txt')).metadata, { good: 'fine' }, 'only the well-formed e2b ones')
  await sbx.kill()
})

await runChecks()
