// E2B's volumes through the real e2b SDK (docs/E2B.md "Volumes"): the
// control plane (Volume.create, list, getInfo, connect, destroy), the
// content API (makeDir, writeFile, readFile, list, getInfo, exists,
// updateMetadata, remove) and volumeMounts at Sandbox.create, which binds
// the volume into the sandbox. tests/integration/test_e2b.py runs it with
// E2B_VOLUME_API_URL at llmbox's /e2b, the users' keys in E2B_KEY_*, and
// the caps volume_max_per_owner = 3, volume_max_mb_per_owner = 2; then
// (argv "after") once more after a restart of the web and sandboxd, with
// the id this run printed as PERSIST_VOLUME=<id>.
import fs from 'node:fs'
import { Sandbox, Volume, VolumeError, VolumeNotFoundError, VolumePathNotFoundError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

const alice = { apiKey: process.env.E2B_KEY_ALICE }
const bob = { apiKey: process.env.E2B_KEY_BOB }
const dave = { apiKey: process.env.E2B_KEY_DAVE }
const phase = process.argv[2] || 'main'

async function listIds(opts) {
  return (await Volume.list(opts)).map(v => v.volumeId)
}

if (phase === 'main') {
  check('volume_control_plane_and_content', async () => {
    const v = await Volume.create('vol-a')
    try {
      assert(/^[0-9a-f]{32}$/.test(v.volumeId), 'an id: ' + v.volumeId)
      eq(v.name, 'vol-a', 'its name')
      assert(v.token && v.token.length === 64, 'a content token')
      assert((await listIds()).includes(v.volumeId), 'listed')
      const info = await Volume.getInfo(v.volumeId)
      eq([info.volumeId, info.name, info.token], [v.volumeId, 'vol-a', v.token], 'getInfo')
      const c = await Volume.connect(v.volumeId)
      const d = await c.makeDir('/d')
      eq([d.type, d.path, d.name], ['directory', '/d', 'd'], 'makeDir entry')
      const w = await c.writeFile('/d/f.txt', 'hello volume')
      eq([w.type, w.size, w.uid, w.gid], ['file', 12, 1000, 1000], 'writeFile entry (E2B\'s user owns it)')
      eq(await c.readFile('/d/f.txt'), 'hello volume', 'readFile text')
      eq(Array.from(await c.readFile('d/f.txt', { format: 'bytes' })).length, 12, 'readFile bytes, relative path')
      // a stream each way (the SDK streams a ReadableStream body outside the browser)
      await c.writeFile('/d/s.txt', new Blob(['streamed ', 'in']).stream())
      const rs = await c.readFile('/d/s.txt', { format: 'stream' })
      eq(await new Response(rs).text(), 'streamed in', 'a stream written and read')
      await c.remove('/d/s.txt')
      const l = await c.list('/')
      eq(l.map(e => e.name), ['d'], 'list /')
      const deep = await c.list('/', { depth: 2 })
      eq(deep.map(e => e.path).sort(), ['/d', '/d/f.txt'], 'list depth 2')
      const st = await c.getInfo('/d/f.txt')
      assert(st.mtime instanceof Date && !isNaN(st.mtime), 'mtime is a date')
      eq(await c.exists('/d/f.txt'), true, 'exists')
      eq(await c.exists('/d/nope'), false, 'exists of nothing')
      const u = await c.updateMetadata('/d/f.txt', { mode: 0o600, uid: 0 })
      eq([u.mode, u.uid], [0o600, 0], 'updateMetadata')
      eq((await raises(() => c.readFile('/nope'))) instanceof VolumePathNotFoundError, true, 'missing file')
      await c.remove('/d')
      eq(await c.exists('/d/f.txt'), false, 'removed with its folder')
      const dup = await raises(() => Volume.create('vol-a'), 'a second volume of that name')
      assert(dup instanceof VolumeError && /already/.test(dup.message), 'duplicate name said: ' + dup.message)
      const bad = await raises(() => Volume.create('../x'), 'a name with a slash')
      assert(bad instanceof VolumeError, 'bad name refused: ' + bad)
    } finally {
      eq(await Volume.destroy(v.volumeId), true, 'destroyed')
    }
    eq(await Volume.destroy(v.volumeId), false, 'destroyed twice: false')
    const e = await raises(() => Volume.getInfo(v.volumeId))
    assert(e instanceof VolumeNotFoundError, 'gone: ' + e)
    assert(!(await listIds()).includes(v.volumeId), 'no longer listed')
  })

  check('volume_mounted_in_two_sandboxes', async () => {
    const v = await Volume.create('shared')
    let a, b
    try {
      await v.writeFile('/from-api.txt', 'written by the API\n')
      a = await Sandbox.create({ volumeMounts: { '/mnt/vol': v } })
      b = await Sandbox.create({ volumeMounts: { '/data/shared': 'shared' } })
      eq((await a.commands.run('cat /mnt/vol/from-api.txt')).stdout, 'written by the API\n', 'the sandbox sees the API\'s file')
      eq((await Sandbox.getInfo(b.sandboxId)).volumeMounts, [{ name: 'shared', path: '/data/shared' }], 'getInfo says the mount')
      await a.commands.run('echo from a > /mnt/vol/from-a.txt && mkdir -p /mnt/vol/sub && echo deep > /mnt/vol/sub/x')
      eq(await v.readFile('/from-a.txt'), 'from a\n', 'the API reads the sandbox\'s file')
      eq(await v.readFile('/sub/x'), 'deep\n', 'and its folders')
      const info = await v.getInfo('/from-a.txt')
      eq([info.uid, info.gid], [1000, 1000], 'owned by the sandbox\'s user, as the sandbox sees it')
      // the other sandbox, another uid range on the host, is the same user on the volume
      await b.commands.run('echo and b >> /data/shared/from-a.txt')
      eq((await a.commands.run('cat /mnt/vol/from-a.txt')).stdout, 'from a\nand b\n', 'two sandboxes share it')
      eq((await b.commands.run('stat -c %U /data/shared/from-a.txt')).stdout, 'user\n', 'b sees its own user')
    } finally {
      if (a) await a.kill()
      if (b) await b.kill()
      await Volume.destroy(v.volumeId)
    }
  })

  check('volume_links_planted_by_a_sandbox_are_not_followed', async () => {
    const v = await Volume.create('hostile')
    let s
    const before = fs.readFileSync('/etc/passwd', 'utf8')
    try {
      s = await Sandbox.create({ volumeMounts: { '/vol': 'hostile' } })
      await s.commands.run('ln -s /etc /vol/etc-link && ln -s /etc/passwd /vol/pw && ln -s / /vol/root', { user: 'root' })
      for (const [what, fn] of [
        ['readFile through a linked folder', () => v.readFile('/etc-link/passwd')],
        ['readFile of a link', () => v.readFile('/pw')],
        ['list of a linked folder', () => v.list('/etc-link')],
        ['list below a linked folder', () => v.list('/root/etc')],
        ['writeFile through a linked folder', () => v.writeFile('/etc-link/llmbox-volume-test', 'x')],
        ['makeDir through a linked folder', () => v.makeDir('/root/tmp/llmbox-volume-test')],
        ['updateMetadata of a link', () => v.updateMetadata('/pw', { mode: 0o777 })],
      ]) {
        const e = await raises(fn, what + ' must fail')
        assert(e instanceof VolumeError, what + ': a VolumeError, not ' + e)
      }
      const st = await v.getInfo('/pw')
      eq([st.type, st.target], ['symlink', '/etc/passwd'], 'a link is shown as itself')
      // writing over the link replaces the link, never what it names
      await v.writeFile('/pw', 'replaced')
      eq((await v.getInfo('/pw')).type, 'file', 'the link was replaced')
      await v.remove('/root')
      assert(fs.existsSync('/etc/passwd') && fs.readFileSync('/etc/passwd', 'utf8') === before, 'the host\'s /etc/passwd untouched')
      assert(!fs.existsSync('/etc/llmbox-volume-test') && !fs.existsSync('/tmp/llmbox-volume-test'), 'nothing written on the host')
    } finally {
      if (s) await s.kill()
      await Volume.destroy(v.volumeId)
    }
  })

  check('volume_mount_paths_checked', async () => {
    const v = await Volume.create('paths')
    try {
      for (const p of ['/proc/x', '/sys', '/dev/shm', '/', '/a/../etc', 'relative']) {
        const e = await raises(() => Sandbox.create({ volumeMounts: { [p]: 'paths' } }), 'mount at ' + p)
        assert(/mount/i.test(e.message), p + ': said why: ' + e.message)
      }
      const f = await raises(() => Sandbox.create({ volumeMounts: { '/etc/passwd/x': 'paths' } }), 'under a file')
      assert(/not a folder/.test(f.message), 'a mount under a file said: ' + f.message)
      const e = await raises(() => Sandbox.create({ volumeMounts: { '/x': 'no-such-volume' } }))
      assert(/no volume named/.test(e.message), 'an unknown volume said: ' + e.message)
    } finally {
      await Volume.destroy(v.volumeId)
    }
  })

  check('volume_of_another_user_is_absent', async () => {
    const v = await Volume.create('alice-vol', alice)
    try {
      assert((await listIds(alice)).includes(v.volumeId), 'alice lists hers')
      assert(!(await listIds(bob)).includes(v.volumeId), 'bob does not')
      assert((await listIds()).includes(v.volumeId), 'the shared token does')
      const e = await raises(() => Volume.getInfo(v.volumeId, bob))
      assert(e instanceof VolumeNotFoundError, 'bob gets not found: ' + e)
      eq(await Volume.destroy(v.volumeId, bob), false, 'bob cannot destroy it')
      const m = await raises(() => Sandbox.create({ ...bob, volumeMounts: { '/v': 'alice-vol' } }))
      assert(/no volume named/.test(m.message), 'bob cannot mount it: ' + m.message)
      // bob's own volume of the same name is his
      const bv = await Volume.create('alice-vol', bob)
      assert(bv.volumeId !== v.volumeId, 'names are per key')
      await Volume.destroy(bv.volumeId, bob)
      // a wrong token opens no content
      const forged = new Volume(v.volumeId, 'alice-vol', '0'.repeat(64), undefined, false)
      const f = await raises(() => forged.list('/'))
      assert(f instanceof Error && !(f instanceof VolumePathNotFoundError), 'a wrong token is refused: ' + f)
    } finally {
      await Volume.destroy(v.volumeId, alice)
    }
  })

  check('volume_caps_said', async () => {
    const made = []
    try {
      for (let i = 0; i < 3; i++) made.push(await Volume.create('cap-' + i, dave))
      const e = await raises(() => Volume.create('cap-3', dave), 'a fourth volume')
      assert(e instanceof VolumeError && /volume_max_per_owner/.test(e.message), 'the count cap said: ' + e.message)
      const v = made[0]
      await v.writeFile('/a.bin', new Uint8Array(1536 * 1024))
      const w = await raises(() => v.writeFile('/b.bin', new Uint8Array(1024 * 1024)), 'over 2 MiB')
      assert(/volume_max_mb_per_owner/.test(w.message), 'the bytes cap said: ' + w.message)
      eq(await v.exists('/b.bin'), false, 'nothing written past the cap')
      // the replaced file's bytes are given back
      await v.writeFile('/a.bin', new Uint8Array(1800 * 1024))
      // a sandbox filling the volume past the cap: its next mount is refused
      const s = await Sandbox.create({ volumeMounts: { '/v': 'cap-0' } })
      try {
        await s.commands.run('head -c 1048576 /dev/zero > /v/more.bin')
      } finally {
        await s.kill()
      }
      const m = await raises(() => Sandbox.create({ volumeMounts: { '/v': 'cap-0' } }), 'a mount over the cap')
      assert(/volume_max_mb_per_owner/.test(m.message), 'the mount said why: ' + m.message)
      await v.remove('/more.bin')
    } finally {
      for (const v of made) await Volume.destroy(v.volumeId, dave)
    }
  })

  check('volume_made_to_outlive_a_restart', async () => {
    const v = await Volume.create('persist')
    await v.makeDir('/kept')
    await v.writeFile('/kept/file.txt', 'kept across restarts')
    console.log('PERSIST_VOLUME=' + v.volumeId)
  })
} else {
  check('volume_after_restart', async () => {
    const id = process.env.PERSIST_VOLUME
    const v = await Volume.connect(id)
    eq(await v.readFile('/kept/file.txt'), 'kept across restarts', 'the content is kept')
    eq((await Volume.getInfo(id)).name, 'persist', 'and its record')
    const s = await Sandbox.create({ volumeMounts: { '/p': 'persist' } })
    try {
      eq((await s.commands.run('cat /p/kept/file.txt')).stdout, 'kept across restarts', 'mounted after the restart')
    } finally {
      await s.kill()
    }
    eq(await Volume.destroy(id), true, 'destroyed')
  })
}

await runChecks()
