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
      sbx.commands.run(`echo ${i}`, { background: true }).then(h => h.wait())))
    const done = res.filter(r => r.status === 'fulfilled')
    const refused = res.filter(r => r.status === 'rejected')
    eq(done.length + refused.length, 1000)
    for (const r of refused)
      assert(r.reason instanceof SandboxError, 'each refusal is an SDK error: ' + r.reason)
    const outs = new Set(done.map(r => r.value.stdout))
    eq(outs.size, done.length, 'each its own output')
    assert(done.length >= 900, `most ran (${done.length}), the rest refused with a reason`)
    assert(Date.now() - t0 < 120000, 'all settled in two minutes: ' + (Date.now() - t0))
    eq((await sbx.commands.run('echo still here')).stdout, 'still here\n', 'the sandbox still works')
    eq((await sbx.commands.list()).length, 0, 'nothing left listed')
    console.error(`1000 processes: ${done.length} ran, ${refused.length} refused, ${Date.now() - t0} ms`)
  } finally {
    await sbx.kill()
  }
})

await runChecks()
