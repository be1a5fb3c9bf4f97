// Any user of the sandbox, as envd, through the real e2b SDK: a name from
// the sandbox's own /etc/passwd runs commands, ptys and file calls as that
// user (its uid, gid, groups from /etc/group, HOME/USER/LOGNAME, its home
// as the start folder); a name the sandbox does not have is envd's
// authentication error. And the file calls are made as envd makes them: as
// root, whoever the call's user, with what they make handed to that user.
import { Sandbox, AuthenticationError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

let sbx

async function run(cmd, opts) {
  try { return await sbx.commands.run(cmd, opts) } catch (e) {
    throw new Error(`${cmd}: ${e.message} ${JSON.stringify(e.stdout || '')} ${JSON.stringify(e.stderr || '')}`)
  }
}

check('any_user_of_the_sandbox_runs_commands', async () => {
  sbx = await Sandbox.create()
  await run('groupadd -g 2345 devs && useradd -m -u 1234 -G devs -s /bin/bash alice', { user: 'root' })
  eq((await run('id -un; id -u; id -g', { user: 'alice' })).stdout, 'alice\n1234\n1234\n')
  const groups = (await run('id -Gn', { user: 'alice' })).stdout.trim().split(' ')
  assert(groups.includes('devs'), 'its groups from /etc/group: ' + groups)
  eq((await run('echo $HOME $USER $LOGNAME; pwd', { user: 'alice' })).stdout,
    '/home/alice alice alice\n/home/alice\n', 'its own home, as envd starts it')
  // a user of the image (www-data, uid 33) too, not only the ones made here
  eq((await run('id -u', { user: 'www-data', cwd: '/' })).stdout, '33\n', 'its home /var/www is not made: a cwd')
})

check('any_user_pty', async () => {
  let out = ''
  const dec = new TextDecoder()
  const h = await sbx.pty.create({ cols: 80, rows: 24, user: 'alice', onData: d => { out += dec.decode(d, { stream: true }) } })
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('echo "[$(whoami)]"; exit\n'))
  await h.wait().catch(() => {})
  assert(out.includes('[alice]'), 'the terminal\'s shell is alice\'s: ' + JSON.stringify(out.slice(-200)))
})

check('any_user_files', async () => {
  await sbx.files.write('/home/alice/a.txt', 'hers', { user: 'alice' })
  const e = await sbx.files.getInfo('/home/alice/a.txt', { user: 'alice' })
  eq([e.owner, e.group], ['alice', 'alice'], 'files.write as alice makes alice\'s file')
  eq(await sbx.files.read('/home/alice/a.txt', { user: 'alice' }), 'hers')
  await sbx.files.makeDir('/home/alice/d', { user: 'alice' })
  eq((await sbx.files.getInfo('/home/alice/d')).owner, 'alice', 'makeDir as alice')
  const names = (await sbx.files.list('/home/alice', { user: 'alice' })).map(x => x.name).sort()
  assert(names.includes('a.txt') && names.includes('d'), 'list as alice: ' + names)
})

check('unknown_user_is_an_authentication_error', async () => {
  for (const [what, fn] of [
    ['commands.run', () => sbx.commands.run('id', { user: 'no-such-user' })],
    ['files.read', () => sbx.files.read('/etc/hostname', { user: 'no-such-user' })],
    ['files.write', () => sbx.files.write('/tmp/x', 'x', { user: 'no-such-user' })],
    ['files.list', () => sbx.files.list('/tmp', { user: 'no-such-user' })],
  ]) {
    const e = await raises(fn, what + ' as an unknown user')
    assert(e instanceof AuthenticationError && /no-such-user/.test(e.message), `${what}: AuthenticationError naming it: ${e}`)
  }
  eq((await run('test -e /tmp/x || echo none', { user: 'root' })).stdout, 'none\n', 'nothing written')
})

check('file_calls_are_roots_and_what_they_make_is_the_users', async () => {
  // envd makes its file calls as root and hands what they make to the
  // call's user: E2B's own "write multiple files" writes /0/... as user
  await sbx.files.write('/etc/x', 'yes')
  await sbx.files.write('/0/deep/f.txt', 'new folders under /')
  eq((await run('stat -c %U:%G /etc/x /0 /0/deep /0/deep/f.txt', { user: 'root' })).stdout,
    'user:user\nuser:user\nuser:user\nuser:user\n', 'what the write makes is user\'s')
  // a root file of mode 0600 is read, a 0700 root folder listed and stat'ed
  await sbx.files.write('/tmp/secret', 's3cret', { user: 'root' })
  await run('chmod 600 /tmp/secret && mkdir -p /srv/closed && echo x > /srv/closed/f && chmod 700 /srv/closed',
    { user: 'root' })
  eq(await sbx.files.read('/tmp/secret'), 's3cret', 'read a 0600 root file as user')
  eq((await sbx.files.list('/srv/closed')).map(e => e.name), ['f'], 'list a 0700 root folder as user')
  eq((await sbx.files.getInfo('/srv/closed/f')).size, 2, 'getInfo inside it')
  eq(await sbx.files.exists('/srv/closed/f'), true, 'exists inside it')
  // an existing root file is replaced, and is then user's
  await sbx.files.write('/home/user/roots.txt', 'root\'s', { user: 'root' })
  await sbx.files.write('/home/user/roots.txt', 'mine')
  eq(await sbx.files.read('/home/user/roots.txt'), 'mine')
  eq((await run('stat -c %U /home/user/roots.txt', { user: 'root' })).stdout, 'user\n')
  // makeDir, rename and remove in /etc as user
  eq(await sbx.files.makeDir('/etc/newd'), true, 'makeDir in /etc as user')
  eq((await run('stat -c %U:%G /etc/newd', { user: 'root' })).stdout, 'user:user\n')
  await run('echo r > /etc/rootfile && echo r > /etc/rootfile2', { user: 'root' })
  eq((await sbx.files.rename('/etc/rootfile', '/etc/moved')).path, '/etc/moved', 'rename a root file as user')
  await sbx.files.remove('/etc/rootfile2')
  eq((await run('test -e /etc/moved && test ! -e /etc/rootfile && test ! -e /etc/rootfile2 && echo done',
    { user: 'root' })).stdout, 'done\n')
  // root's own writes stay root's
  await sbx.files.write('/etc/z', 'root', { user: 'root' })
  eq((await run('stat -c %U /etc/z', { user: 'root' })).stdout, 'root\n')
})

check('user_changes_its_own_home', async () => {
  // makeDir, rename and remove as user where it may: its own home
  eq(await sbx.files.makeDir('/home/user/w/a/b'), true, 'makeDir -p in its home')
  await sbx.files.write('/home/user/w/a/f.txt', 'f')
  eq((await run('stat -c %U:%G /home/user/w /home/user/w/a/b', { user: 'root' })).stdout, 'user:user\nuser:user\n',
    'what makeDir makes is user\'s')
  eq((await sbx.files.rename('/home/user/w/a/f.txt', '/home/user/w/g.txt')).path, '/home/user/w/g.txt')
  eq(await sbx.files.read('/home/user/w/g.txt'), 'f', 'renamed')
  await sbx.files.remove('/home/user/w')
  eq((await run('test -e /home/user/w || echo gone', { user: 'root' })).stdout, 'gone\n', 'removed with all it held')
  await sbx.files.remove('/home/user/never-there') // nothing there: as rm -f
  // a root file in user's home: user may remove it (the folder is user's), not change /etc's
  await run('touch /home/user/rootfile && chown root:root /home/user/rootfile', { user: 'root' })
  await sbx.files.remove('/home/user/rootfile')
  eq((await run('test -e /home/user/rootfile || echo gone', { user: 'root' })).stdout, 'gone\n')
})

check('no_tool_of_the_image_needed', async () => {
  // sandboxd makes the calls itself: an image without setpriv, mkdir or mv
  // still has them made, and what makeDir makes is user's
  await run('for p in /usr/bin/setpriv /bin/setpriv /usr/sbin/setpriv; do rm -f $p; done', { user: 'root' })
  eq(await sbx.files.makeDir('/opt/a/b'), true)
  eq((await run('stat -c %U:%G /opt/a /opt/a/b', { user: 'root' })).stdout, 'user:user\nuser:user\n')
  await sbx.files.remove('/opt/a')
  eq((await run('test -e /opt/a || echo gone', { user: 'root' })).stdout, 'gone\n')
  await sbx.kill()
})

await runChecks()
