// Hostile use through the SDK: wrong keys, many processes at once.
import { Sandbox, AuthenticationError, SandboxError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

check('wrong_api_key_raises_authentication_error', async () => {
  const e = await raises(() => Sandbox.create({ apiKey: 'not-the-key' }))
  assert(e instanceof AuthenticationError, 'AuthenticationError: ' + e)
  const e2 = await raises(() => Sandbox.list({ apiKey: 'x'.repeat(5000) }).nextItems())
  assert(e2 instanceof AuthenticationError, 'an oversized key too: ' + e2)
})

check('thousand_processes_in_one_sandbox', async () => {
  const sbx = await Sandbox.create()
  try {
    const t0 = Date.now()
    const res = await Promise.allSettled(Array.from({ length: 1000 }, (_, i) =>
      sbx.commands.run(`sleep 2; echo ${i}`, { background: true })))
    const started = res.filter(r => r.status === 'fulfilled').map(r => r.value)
    const refused = res.filter(r => r.status === 'rejected')
    eq(started.length + refused.length, 1000)
    assert(started.length >= 1, 'at least one ran')
    for (const r of refused)
      assert(r.reason instanceof SandboxError && /one command at a time/.test(r.reason.message),
        'each refusal says why: ' + r.reason)
    for (const h of started) await h.wait()
    assert(Date.now() - t0 < 60000, 'all settled in a minute: ' + (Date.now() - t0))
    eq((await sbx.commands.run('echo still here')).stdout, 'still here\n', 'the sandbox still works')
    console.error(`1000 starts: ${started.length} ran, ${refused.length} refused, ${Date.now() - t0} ms`)
  } finally {
    await sbx.kill()
  }
})

await runChecks()
