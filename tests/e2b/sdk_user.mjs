// The `user` option through the real e2b SDK, as on E2B: commands, pty and
// files run as `user` (uid 1000 of the default image, passwordless sudo)
// unless the call says `user: 'root'`; names the sandbox lacks are refused. And the
// security side of it (docs/SECURITY.md in ARCHITECTURE.md's sandbox
// section): E2B's processes run without no_new_privs (so sudo can raise)
// but under sandboxd's seccomp filter, sudo's child included; the native
// API's shell keeps no_new_privs.
import { Sandbox, AuthenticationError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

let sbx

// commands.run that says what the command printed when it fails
async function run(cmd, opts) {
  try { return await sbx.commands.run(cmd, opts) } catch (e) {
    throw new Error(`${cmd}: ${e.message} ${JSON.stringify(e.stdout || '')} ${JSON.stringify(e.stderr || '')}`)
  }
}

// "Seccomp:\t2" and "NoNewPrivs:\t0" of /proc/<pid>/status as {Seccomp, NoNewPrivs}
function flags(text) {
  const o = {}
  for (const m of text.matchAll(/^(Seccomp|NoNewPrivs):\s*(\d+)$/gm)) o[m[1]] = Number(m[2])
  return o
}

check('commands_run_as_user_sudo_raises', async () => {
  sbx = await Sandbox.create()
  eq((await run('whoami')).stdout, 'user\n', 'the default user is user')
  eq((await run('id -u; id -g')).stdout, '1000\n1000\n')
  const groups = (await run('id -Gn')).stdout.trim().split(' ')
  assert(groups.includes('sudo'), 'supplementary groups from /etc/group: ' + groups)
  eq((await run('echo $HOME $USER $LOGNAME; pwd')).stdout, '/home/user user user\n/home/user\n')
  eq((await run('sudo whoami')).stdout, 'root\n', 'sudo raises to the sandbox\'s root')
  eq((await run('sudo -n apt-get --version >/dev/null && echo ok')).stdout, 'ok\n')
  const e = await raises(() => sbx.commands.run('touch /etc/nope'))
  assert(/Permission denied/.test(e.stderr || e.message), 'user cannot write /etc: ' + e)
  eq((await run('whoami', { user: 'user' })).stdout, 'user\n', 'named')
})

check('user_root_is_root', async () => {
  eq((await run('id -u', { user: 'root' })).stdout, '0\n')
  eq((await run('echo $HOME; pwd', { user: 'root' })).stdout, '/root\n/root\n', 'root starts in /root')
  const h = await sbx.commands.run('sleep 30', { user: 'root', background: true })
  eq((await run(`stat -c %U /proc/${h.pid}`)).stdout, 'root\n', 'a background one too')
  await h.kill()
})

check('files_belong_to_user', async () => {
  await sbx.files.write('/home/user/f.txt', 'mine')
  let e = await sbx.files.getInfo('/home/user/f.txt')
  eq([e.owner, e.group], ['user', 'user'], 'files.write makes user\'s files')
  eq((await run('stat -c %u:%g /home/user/f.txt')).stdout, '1000:1000\n')
  await sbx.files.write('/tmp/new/deeper/g.txt', 'x')
  eq((await run('stat -c %U:%G /tmp/new /tmp/new/deeper /tmp/new/deeper/g.txt')).stdout,
    'user:user\nuser:user\nuser:user\n', 'the folders it makes too')
  await sbx.files.write('/tmp/r.txt', 'r', { user: 'root' })
  eq((await sbx.files.getInfo('/tmp/r.txt')).owner, 'root', 'as root when asked')
  await sbx.files.makeDir('/tmp/made/sub')
  eq((await run('stat -c %U /tmp/made /tmp/made/sub')).stdout, 'user\nuser\n', 'makeDir as user')
  eq((await sbx.files.makeDir('/tmp/madeR', { user: 'root' })), true)
  eq((await sbx.files.getInfo('/tmp/madeR')).owner, 'root')
  // envd makes file calls as root: user removes a file of /etc
  await sbx.files.remove('/etc/hostname')
  eq((await run('test -e /etc/hostname || echo gone')).stdout, 'gone\n')
})

check('pty_runs_as_user', async () => {
  let out = ''
  const dec = new TextDecoder()
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: d => { out += dec.decode(d, { stream: true }) } })
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('echo "[$(whoami)]"; exit\n'))
  await h.wait().catch(() => {})
  assert(out.includes('[user]'), 'the terminal\'s shell is user\'s: ' + JSON.stringify(out.slice(-200)))
})

check('unknown_user_refused', async () => {
  // any user of the sandbox is answered (sdk_user_perms.mjs); a name its
  // /etc/passwd lacks is envd's authentication error
  const e = await raises(() => sbx.commands.run('id -u', { user: 'nobody-here' }))
  assert(e instanceof AuthenticationError && /nobody-here/.test(e.message), 'AuthenticationError naming it: ' + e)
  const e2 = await raises(() => sbx.files.read('/tmp/r.txt', { user: 'www-data2' }))
  assert(/www-data2/.test(e2.message), 'files refuse it too: ' + e2)
  const e3 = await raises(() => sbx.files.list('/tmp', { user: 'nobody-here' }))
  assert(/nobody-here/.test(e3.message), 'Filesystem RPCs refuse it too: ' + e3)
  const e4 = await raises(() => sbx.commands.run('id -u', { user: 'bad name' }))
  assert(e4 instanceof AuthenticationError, 'a name that is no user\'s name: AuthenticationError: ' + e4)
})

check('security_seccomp_everywhere_nnp_only_off_for_e2b', async () => {
  // every E2B process: under the filter, without no_new_privs
  eq(flags((await run('cat /proc/self/status')).stdout), { NoNewPrivs: 0, Seccomp: 2 }, 'user')
  eq(flags((await run('cat /proc/self/status', { user: 'root' })).stdout), { NoNewPrivs: 0, Seccomp: 2 },
    'root')
  // a setuid exec keeps the filter (it cannot be removed)
  eq(flags((await run('sudo cat /proc/self/status')).stdout), { NoNewPrivs: 0, Seccomp: 2 }, 'sudo')
  // and the filter still denies: unshare (a new namespace) even as sudo's root
  const u = await run('sudo unshare -U true || echo denied')
  assert(/denied/.test(u.stdout), 'unshare is still refused under sudo: ' + u.stdout + u.stderr)
  // every process of the sandbox is filtered; the native API's shell keeps
  // no_new_privs, its children too
  const all = (await run(
    'for d in /proc/[0-9]*; do printf "%s %s %s\\n" "${d#/proc/}" "$(tr "\\0" " " < $d/cmdline | cut -c1-40)" ' +
    '"$(grep -E "^(Seccomp|NoNewPrivs):" $d/status 2>/dev/null | tr -s "\\t\\n" "  ")"; done', { user: 'root' })).stdout
  let seen = 0
  for (const line of all.trim().split('\n')) {
    if (!/Seccomp/.test(line)) continue // a process that ended while the loop ran
    assert(/Seccomp: 2/.test(line), 'every process is under the filter: ' + line)
    seen++
  }
  assert(seen >= 4 && /^1 llmbox-init .*Seccomp: 2/m.test(all), 'init, the shell, the spawner, this: ' + all)
  const api = process.env.E2B_API_URL.replace(/\/e2b$/, '')
  const r = await fetch(`${api}/api/sandboxes/${sbx.sandboxId}/exec`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${process.env.E2B_API_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ command: 'cat /proc/self/status; echo ==; cat /proc/$$/status' }),
  })
  eq(r.status, 200, 'the native exec')
  const [cmd, shell] = (await r.json()).stdout.split('==\n')
  eq(flags(cmd), { NoNewPrivs: 1, Seccomp: 2 }, 'a native exec: no_new_privs and the filter')
  eq(flags(shell), { NoNewPrivs: 1, Seccomp: 2 }, 'its shell too')
  await sbx.kill()
})

await runChecks()
