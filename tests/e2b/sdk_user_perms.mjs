// Any user of the sandbox, as envd, through the real e2b SDK: a name from
// the sandbox's own /etc/passwd runs commands, ptys and file calls as that
// user (its uid, gid, groups from /etc/group, HOME/USER/LOGNAME, its home
// as the start folder); a name the sandbox does not have is envd's
// authentication error. And the file calls obey the user's permissions as
// envd's do (envd runs them as the user): `user` cannot write /etc or read
// a root file of mode 0600, writes its own home, and root does all of it.
import { Sandbox, AuthenticationError, FileNotFoundError, SandboxError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

let sbx

async function run(cmd, opts) {
  try { return await sbx.commands.run(cmd, opts) } catch (e) {
    throw new Error(`${cmd}: ${e.message} ${JSON.stringify(e.stdout || '')} ${JSON.stringify(e.stderr || '')}`)
  }
}

// a permission error as envd's: not a missing file, and it says why
function denied(e, what) {
  assert(e instanceof SandboxError && !(e instanceof FileNotFoundError) &&
    /permission denied/i.test(e.message), `${what}: a permission error, got ${e && e.constructor.name}: ${e}`)
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

check('files_obey_the_users_permissions', async () => {
  // user: /etc is root's
  denied(await raises(() => sbx.files.write('/etc/x', 'no')), 'write /etc/x as user')
  denied(await raises(() => sbx.files.write('/etc/newdir/x', 'no')), 'write into a new folder of /etc as user')
  eq((await run('ls /etc/x /etc/newdir 2>&1 | wc -l; test -e /etc/x || echo none', { user: 'root' })).stdout.split('\n')[1],
    'none', 'nothing was written')
  // a root file of mode 0600
  await sbx.files.write('/tmp/secret', 's3cret', { user: 'root' })
  await run('chmod 600 /tmp/secret', { user: 'root' })
  denied(await raises(() => sbx.files.read('/tmp/secret')), 'read a 0600 root file as user')
  // an existing file user may not write (root's 0644 in user's home): not replaced
  await sbx.files.write('/home/user/roots.txt', 'root\'s', { user: 'root' })
  await run('chmod 644 /home/user/roots.txt', { user: 'root' })
  denied(await raises(() => sbx.files.write('/home/user/roots.txt', 'mine')), 'overwrite a file user may not write')
  eq(await sbx.files.read('/home/user/roots.txt'), 'root\'s', 'left as it was')
  // a folder user may not read
  await run('mkdir -p /srv/closed && chmod 700 /srv/closed', { user: 'root' })
  denied(await raises(() => sbx.files.list('/srv/closed')), 'list a 0700 root folder as user')
  // makeDir, rename and remove as user: refused by its permissions, envd's error too
  denied(await raises(() => sbx.files.makeDir('/etc/newd')), 'makeDir in /etc as user')
  denied(await raises(() => sbx.files.rename('/etc/hostname', '/tmp/h')), 'rename a file of /etc as user')
  denied(await raises(() => sbx.files.remove('/etc/hostname')), 'remove a file of /etc as user')
  eq((await run('test -e /etc/newd || test ! -e /etc/hostname || echo kept', { user: 'root' })).stdout, 'kept\n')
  // user's own home: written, and the file is user:user
  await sbx.files.write('/home/user/mine/ok.txt', 'ok')
  eq((await run('stat -c %U:%G /home/user/mine /home/user/mine/ok.txt')).stdout, 'user:user\nuser:user\n')
  eq(await sbx.files.read('/home/user/mine/ok.txt'), 'ok')
  // root does all of it
  await sbx.files.write('/etc/x', 'yes', { user: 'root' })
  eq(await sbx.files.makeDir('/etc/newd', { user: 'root' }), true, 'root makes a folder in /etc')
  eq(await sbx.files.read('/tmp/secret', { user: 'root' }), 's3cret')
  assert(Array.isArray(await sbx.files.list('/srv/closed', { user: 'root' })), 'root lists it')
  eq((await run('stat -c %U /etc/x', { user: 'root' })).stdout, 'root\n')
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

check('getinfo_and_exists_obey_search_permission', async () => {
  await run('mkdir -p /srv/closed && chmod 700 /srv/closed && echo x > /srv/closed/f', { user: 'root' })
  denied(await raises(() => sbx.files.getInfo('/srv/closed/f')), 'getInfo inside a 0700 root folder as user')
  denied(await raises(() => sbx.files.exists('/srv/closed/f')), 'exists inside a 0700 root folder as user')
  eq((await sbx.files.getInfo('/srv/closed/f', { user: 'root' })).size, 2, 'root stats it')
  eq(await sbx.files.exists('/srv/closed/f', { user: 'root' }), true, 'root finds it')
  eq(await sbx.files.exists('/srv/closed/none', { user: 'root' }), false)
  eq((await sbx.files.getInfo('/srv/closed')).type, 'dir', 'the folder itself is seen by user')
})

check('user_is_refused_without_setpriv_in_the_image', async () => {
  // the sandbox's image need not have util-linux's setpriv: sandboxd checks
  await run('for p in /usr/bin/setpriv /bin/setpriv /usr/sbin/setpriv; do rm -f $p; done; ' +
    'command -v setpriv || echo none', { user: 'root' })
  denied(await raises(() => sbx.files.makeDir('/etc/nosetpriv')), 'makeDir in /etc as user')
  denied(await raises(() => sbx.files.rename('/etc/hostname', '/tmp/h2')), 'rename a file of /etc as user')
  denied(await raises(() => sbx.files.rename('/etc/x', '/tmp/h3')), 'rename root\'s file of /etc as user')
  denied(await raises(() => sbx.files.remove('/etc/hostname')), 'remove /etc/hostname as user')
  denied(await raises(() => sbx.files.remove('/etc/newd')), 'remove a root folder of /etc as user')
  eq((await run('test -e /etc/nosetpriv || test -e /tmp/h2 || test -e /tmp/h3 || ' +
    'test ! -e /etc/hostname || test ! -e /etc/x || test ! -d /etc/newd || echo kept', { user: 'root' })).stdout,
  'kept\n', 'nothing changed')
  // and root still does it
  eq((await sbx.files.rename('/etc/x', '/etc/y', { user: 'root' })).path, '/etc/y')
  await sbx.files.remove('/etc/newd', { user: 'root' })
  eq((await run('test -e /etc/y && test ! -e /etc/newd && echo done', { user: 'root' })).stdout, 'done\n')
  await sbx.kill()
})

await runChecks()
