// Symlinked folders in E2B's file calls, through the real e2b SDK. envd runs
// in the sandbox as root and follows links, so makeDir, write, read, list
// and getInfo through /home/user/ln -> /tmp/real work, and what makeDir and
// write make is the call's user's. llmbox's sandboxd follows them inside
// the sandbox's root only: a link to "/", "/../../.." or "/etc" is the
// sandbox's own, never the host's (this script runs on the host, as the
// stack does, and looks there too), and a link into /proc is refused.
import { Sandbox } from 'e2b'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

let sbx
const tag = 'lbsd-link-' + randomBytes(6).toString('hex')

async function run(cmd) {
  try { return await sbx.commands.run(cmd, { user: 'root' }) } catch (e) {
    throw new Error(`${cmd}: ${e.message} ${JSON.stringify(e.stdout || '')} ${JSON.stringify(e.stderr || '')}`)
  }
}

check('makedir_through_a_linked_folder_as_user', async () => {
  sbx = await Sandbox.create()
  await run('mkdir -p /tmp/real && ln -s /tmp/real /home/user/ln')
  eq(await sbx.files.makeDir('/home/user/ln/a/b', { user: 'user' }), true, 'makeDir through the link')
  eq((await run('stat -c %U:%G /tmp/real/a /tmp/real/a/b')).stdout, 'user:user\nuser:user\n',
    'the folders it made are user\'s, where the link points')
  eq((await run('stat -c %U /tmp/real')).stdout, 'root\n', 'the link\'s target keeps its owner')
  eq((await sbx.files.getInfo('/home/user/ln/a/b')).type, 'dir', 'getInfo through the link')
  eq(await sbx.files.makeDir('/home/user/ln/a/b', { user: 'user' }), false, 'made already: false, as envd')
})

check('write_read_list_through_a_linked_folder', async () => {
  await sbx.files.write('/home/user/ln/a/f.txt', 'through', { user: 'user' })
  eq((await run('cat /tmp/real/a/f.txt; stat -c %U:%G /tmp/real/a/f.txt')).stdout, 'throughuser:user\n')
  eq(await sbx.files.read('/home/user/ln/a/f.txt'), 'through', 'read through the link')
  eq((await sbx.files.list('/home/user/ln/a')).map(e => e.name).sort(), ['b', 'f.txt'], 'list through the link')
  // a relative link and one with ".." in it, and a write making folders beyond it
  await run('ln -s ../../tmp/real /home/user/rel')
  await sbx.files.write('/home/user/rel/c/d.txt', 'rel', { user: 'user' })
  eq((await run('cat /tmp/real/c/d.txt; stat -c %U /tmp/real/c')).stdout, 'reluser\n')
  eq((await sbx.files.rename('/home/user/ln/c/d.txt', '/home/user/ln/a/e.txt')).path, '/home/user/ln/a/e.txt')
  await sbx.files.remove('/home/user/ln/c')
  eq((await run('ls /tmp/real; ls /tmp/real/a')).stdout, 'a\nb\ne.txt\nf.txt\n', 'rename and remove through links')
})

check('a_link_to_the_root_is_the_sandboxs_root', async () => {
  assert(!existsSync('/' + tag), 'no such host folder before')
  await run('ln -s / /home/user/top && ln -s /../../.. /home/user/up && ln -s /etc /home/user/etc')
  eq(await sbx.files.makeDir(`/home/user/top/${tag}/x`, { user: 'user' }), true)
  await sbx.files.write(`/home/user/up/${tag}/f.txt`, 'in the sandbox', { user: 'user' })
  await sbx.files.write(`/home/user/etc/${tag}`, 'sandbox etc', { user: 'user' })
  await sbx.files.write(`/home/user/up/tmp/${tag}`, 'its tmp')
  eq((await run(`stat -c %U /${tag}/x; cat /${tag}/f.txt /etc/${tag} /tmp/${tag}`)).stdout,
    'user\nin the sandboxsandbox etcits tmp', 'all made in the sandbox')
  for (const p of ['/' + tag, '/etc/' + tag, '/tmp/' + tag])
    assert(!existsSync(p), `the host's ${p} was made by a call through a link`)
  eq(await sbx.files.read('/home/user/etc/hostname'), (await run('cat /etc/hostname')).stdout,
    'a read through the link is the sandbox\'s /etc')
})

check('links_into_proc_are_refused', async () => {
  await run('ln -s /proc/sys/kernel /home/user/pk && ln -s /proc/1/root /home/user/magic && ln -s /proc/self/cwd /home/user/cwd')
  for (const p of ['/home/user/pk/lbsd-x', '/home/user/magic/tmp/lbsd-x', '/home/user/cwd/lbsd-x']) {
    await raises(() => sbx.files.write(p, 'no', { user: 'user' }), 'write through ' + p)
    await raises(() => sbx.files.makeDir(p + '-d', { user: 'user' }), 'makeDir through ' + p)
  }
  eq((await run('ls /tmp | grep -c lbsd-x || true')).stdout, '0\n', 'nothing made through a magic link')
  // a link loop is an error, not a hang
  await run('ln -s /home/user/loop2 /home/user/loop1 && ln -s /home/user/loop1 /home/user/loop2')
  await raises(() => sbx.files.makeDir('/home/user/loop1/x', { user: 'user' }), 'makeDir through a loop')
  await sbx.kill()
})

await runChecks()
