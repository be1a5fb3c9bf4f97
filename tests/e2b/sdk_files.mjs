// files.* through the real e2b SDK.
import { Sandbox, FileType, NotFoundError } from 'e2b'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

let sbx

check('files_write_read_text', async () => {
  sbx = await Sandbox.create()
  const info = await sbx.files.write('/tmp/t/hello.txt', 'héllo\nwörld\n')
  eq(info.path, '/tmp/t/hello.txt')
  eq(await sbx.files.read('/tmp/t/hello.txt'), 'héllo\nwörld\n')
  eq((await sbx.commands.run('cat /tmp/t/hello.txt')).stdout, 'héllo\nwörld\n', 'the sandbox sees it')
})

check('files_write_read_bytes_10mib', async () => {
  const data = randomBytes(10 << 20)
  await sbx.files.write('/tmp/big.bin', data)
  const back = await sbx.files.read('/tmp/big.bin', { format: 'bytes' })
  eq(back.length, data.length, 'length')
  assert(Buffer.from(back).equals(data), 'same bytes')
  const r = await sbx.commands.run('stat -c %s /tmp/big.bin')
  eq(r.stdout, `${10 << 20}\n`)
})

check('files_write_several_at_once', async () => {
  const res = await sbx.files.write([{ path: '/tmp/m/a.txt', data: 'A' }, { path: '/tmp/m/b.txt', data: 'B' }])
  eq(res.map(f => f.path).sort(), ['/tmp/m/a.txt', '/tmp/m/b.txt'])
  eq(await sbx.files.read('/tmp/m/b.txt'), 'B')
})

check('files_list_exists_info', async () => {
  const names = (await sbx.files.list('/tmp/m')).map(e => e.name).sort()
  eq(names, ['a.txt', 'b.txt'])
  const e = (await sbx.files.list('/tmp')).find(x => x.name === 'm')
  eq(e.type, FileType.DIR)
  eq(await sbx.files.exists('/tmp/m/a.txt'), true)
  eq(await sbx.files.exists('/tmp/m/zzz'), false)
  const gi = await sbx.files.getInfo('/tmp/m/a.txt')
  eq([gi.type, gi.size, gi.path], [FileType.FILE, 1, '/tmp/m/a.txt'])
})

check('files_makedir_rename_remove', async () => {
  eq(await sbx.files.makeDir('/tmp/x/y/z'), true)
  eq(await sbx.files.makeDir('/tmp/x/y/z'), false, 'a second makeDir says it existed')
  await sbx.files.write('/tmp/x/y/z/f.txt', 'f')
  const moved = await sbx.files.rename('/tmp/x/y', '/tmp/x/w')
  eq(moved.path, '/tmp/x/w')
  eq(await sbx.files.read('/tmp/x/w/z/f.txt'), 'f')
  eq(await sbx.files.exists('/tmp/x/y'), false)
  await sbx.files.remove('/tmp/x')
  eq(await sbx.files.exists('/tmp/x'), false, 'removed with what it held')
})

check('files_missing_raises_not_found', async () => {
  const e = await raises(() => sbx.files.read('/tmp/none/such'))
  assert(e instanceof NotFoundError, 'FileNotFoundError: ' + e)
  const e2 = await raises(() => sbx.files.getInfo('/tmp/none/such'))
  assert(e2 instanceof NotFoundError, 'FileNotFoundError on stat: ' + e2)
})

check('files_metadata_getinfo_and_list', async () => {
  // what envd answers: mode (rwx bits), Go's permissions string, owner and
  // group as the sandbox names them, the modification time, a symlink's target
  // (1000 is E2B's `user` in the default image; 1234 has no name there)
  await sbx.commands.run('mkdir -p /tmp/meta && cd /tmp/meta && printf abc > f && chown 1000:1234 f && ' +
    'chmod 4750 f && touch -d "2021-02-03 04:05:06.5 UTC" f && ln -s /etc/shadow l && ' +
    'mkdir d && chmod 1777 d && chown user:user /tmp/meta', { user: 'root' })
  const f = await sbx.files.getInfo('/tmp/meta/f')
  eq([f.type, f.size, f.mode, f.permissions, f.owner, f.group],
    [FileType.FILE, 3, 0o750, 'urwxr-x---', 'user', '1234'])
  eq(f.modifiedTime.toISOString(), '2021-02-03T04:05:06.500Z')
  eq(f.symlinkTarget, undefined)
  const l = await sbx.files.getInfo('/tmp/meta/l')
  eq([l.type, l.permissions, l.symlinkTarget, l.owner], [FileType.SYMLINK, 'Lrwxrwxrwx', '/etc/shadow', 'root'])
  const list = await sbx.files.list('/tmp/meta')
  const by = Object.fromEntries(list.map(e => [e.name, e]))
  eq(Object.keys(by).sort(), ['d', 'f', 'l'])
  eq([by.d.type, by.d.permissions, by.d.mode], [FileType.DIR, 'dtrwxrwxrwx', 0o777])
  eq([by.l.type, by.l.symlinkTarget], [FileType.SYMLINK, '/etc/shadow'])
  eq(by.f.modifiedTime.getTime(), f.modifiedTime.getTime())
  // the time is the file's, not the answer's
  const before = Date.now()
  await sbx.files.write('/tmp/meta/new.txt', 'n')
  const n = await sbx.files.getInfo('/tmp/meta/new.txt')
  assert(Math.abs(n.modifiedTime.getTime() - before) < 60000, 'fresh mtime: ' + n.modifiedTime)
  const made = await sbx.files.makeDir('/tmp/meta/made')
  eq(made, true)
  const m = await sbx.files.getInfo('/tmp/meta/made')
  eq([m.type, m.permissions, m.owner], [FileType.DIR, 'drwxr-xr-x', 'user'], 'made as E2B\'s user')
  const moved = await sbx.files.rename('/tmp/meta/f', '/tmp/meta/g')
  eq([moved.path, moved.permissions, moved.size], ['/tmp/meta/g', 'urwxr-x---', 3])
})

check('files_directory_size_is_the_filesystems', async () => {
  // envd gives a directory's size as the filesystem reports it (4096 on
  // ext4), not 0; a symlink's is its text's length
  await sbx.commands.run('mkdir -p /home/user/sized && ln -sfn abcdef /home/user/sized/ln')
  const want = (await sbx.commands.run('stat -c %s /home/user/sized /home/user/sized/ln')).stdout.split('\n')
  const d = await sbx.files.getInfo('/home/user/sized')
  assert(Number(want[0]) > 0, 'the filesystem gives the directory a size: ' + want[0])
  eq([d.type, d.size], [FileType.DIR, Number(want[0])], 'getInfo')
  const listed = (await sbx.files.list('/home/user')).find(e => e.name === 'sized')
  eq(listed.size, Number(want[0]), 'list')
  eq((await sbx.files.getInfo('/home/user/sized/ln')).size, Number(want[1]), 'a symlink\'s')
})

check('files_symlink_out_is_not_followed', async () => {
  // a link the sandbox made to a host-looking path: read never follows it
  await sbx.commands.run('ln -s /etc/shadow /tmp/link; mkdir -p /tmp/ld; ln -s / /tmp/ld/root')
  const e = await raises(() => sbx.files.read('/tmp/link'))
  assert(/not a regular file/.test(e.message), 'refused, not followed: ' + e)
  // a linked folder is followed as envd follows it, inside the sandbox
  // only: its "/" is the sandbox's (sdk_links.mjs has more)
  const evil = 'evil-' + Date.now()
  await sbx.files.write('/tmp/ld/root/etc/' + evil, 'x')
  eq((await sbx.commands.run('cat /etc/' + evil)).stdout, 'x', 'written in the sandbox\'s /etc')
  assert(!existsSync('/etc/' + evil), 'the host\'s /etc was written through a link')
  await sbx.kill()
})

await runChecks()
