// The `user` option through the real e2b SDK: llmbox runs everything as
// the sandbox's root, "root" and "user" both mean that, other names are refused.
import { Sandbox, InvalidArgumentError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

let sbx

check('user_root_and_user_are_root', async () => {
  sbx = await Sandbox.create()
  eq((await sbx.commands.run('id -u', { user: 'root' })).stdout, '0\n')
  eq((await sbx.commands.run('id -u', { user: 'user' })).stdout, '0\n', '"user" runs as root too')
  eq((await sbx.commands.run('id -u')).stdout, '0\n', 'none given')
  await sbx.files.write('/tmp/u.txt', 'u', { user: 'user' })
  eq(await sbx.files.read('/tmp/u.txt', { user: 'root' }), 'u')
})

check('other_user_refused', async () => {
  const e = await raises(() => sbx.commands.run('id -u', { user: 'nobody' }))
  assert(e instanceof InvalidArgumentError && /root/.test(e.message), 'InvalidArgumentError naming root: ' + e)
  const e2 = await raises(() => sbx.files.read('/tmp/u.txt', { user: 'www-data' }))
  assert(/www-data/.test(e2.message), 'files refuse it too: ' + e2)
  const e3 = await raises(() => sbx.files.list('/tmp', { user: 'nobody' }))
  assert(/nobody/.test(e3.message), 'Filesystem RPCs refuse it too: ' + e3)
  await sbx.kill()
})

await runChecks()
