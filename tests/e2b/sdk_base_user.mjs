// E2B's base template's user through the real e2b SDK: the default image
// has `user` (uid 1000, home /home/user, passwordless sudo); E2B's
// commands and relative paths start in /home/user, and entries carry the
// owners' names from the sandbox's own /etc/passwd and /etc/group, which
// the sandbox's code may replace with anything.
import { Sandbox } from 'e2b'
import { check, eq, runChecks } from './lib.mjs'

let sbx

check('commands_and_relative_paths_start_in_home_user', async () => {
  sbx = await Sandbox.create()
  eq((await sbx.commands.run('pwd')).stdout, '/home/user\n', 'a command starts in /home/user')
  await sbx.files.makeDir('sub')
  eq((await sbx.commands.run('pwd', { cwd: 'sub' })).stdout, '/home/user/sub\n', 'a relative cwd is from there')
  await sbx.files.write('rel.txt', 'relative')
  eq((await sbx.commands.run('cat /home/user/rel.txt')).stdout, 'relative', 'a relative file path is from there')
  eq(await sbx.files.read('rel.txt'), 'relative')
  eq((await sbx.files.getInfo('rel.txt')).path, '/home/user/rel.txt')
  eq((await sbx.commands.run('getent passwd user | cut -d: -f3,6')).stdout, '1000:/home/user\n', 'the user')
  eq((await sbx.commands.run('sudo -n -u user id -un')).stdout, 'user\n', 'sudo')
})

check('owner_names_come_from_the_sandbox_passwd', async () => {
  await sbx.commands.run('chown user:user /home/user/rel.txt', { user: 'root' })
  let e = await sbx.files.getInfo('/home/user/rel.txt')
  eq([e.owner, e.group], ['user', 'user'], 'names of uid and gid 1000')
  eq((await sbx.files.getInfo('/etc')).owner, 'root')
  const l = (await sbx.files.list('/home')).find(x => x.name === 'user')
  eq([l.owner, l.group], ['user', 'user'], 'in a list')
  // a hostile passwd: a name that is no name, then a symlink, then a huge file
  await sbx.commands.run("cp /etc/passwd /tmp/pw && sed -i 's/^user:/us;er:/' /etc/passwd", { user: 'root' })
  e = await sbx.files.getInfo('/home/user/rel.txt')
  eq(e.owner, '1000', 'a name with a ";" is not taken')
  eq(e.group, 'user', 'the group file still names it')
  await sbx.commands.run('rm /etc/passwd && ln -s /tmp/pw /etc/passwd', { user: 'root' })
  eq((await sbx.files.getInfo('/home/user/rel.txt')).owner, '1000', 'a symlinked /etc/passwd is not followed')
  await sbx.commands.run('rm /etc/passwd && (cat /tmp/pw; head -c 300000 /dev/zero | tr "\\0" "x") > /etc/passwd', { user: 'root' })
  eq((await sbx.files.getInfo('/home/user/rel.txt')).owner, '1000', 'an /etc/passwd over 256 KiB is not read')
  await sbx.commands.run('cp /tmp/pw /etc/passwd', { user: 'root' })
  eq((await sbx.files.getInfo('/home/user/rel.txt')).owner, 'user', 'back')
  await sbx.kill()
})

await runChecks()
