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
      // no client-side time budget: on a loaded machine the 1,000 queue
      // for the web's threads longer than the SDK's default 60 s
      sbx.commands.run(`echo ${i}`, { background: true, timeoutMs: 0, requestTimeoutMs: 0 }).then(h => h.wait())))
    const done = res.filter(r => r.status === 'fulfilled')
    const refused = res.filter(r => r.status === 'rejected')
    eq(done.length + refused.length, 1000)
    const why = {}
    for (const r of refused) {
      assert(r.reason instanceof SandboxError, 'each refusal is an SDK error: ' + r.reason)
      const k = String(r.reason.message).slice(0, 80)
      why[k] = (why[k] || 0) + 1
    }
    if (refused.length) console.error('refusals:', JSON.stringify(why))
    const outs = new Set(done.map(r => r.value.stdout))
    eq(outs.size, done.length, 'each its own output')
    eq(done.length, 1000, 'every one ran')
    assert(Date.now() - t0 < 300000, 'all settled in five minutes: ' + (Date.now() - t0))
    eq((await sbx.commands.run('echo still here')).stdout, 'still here\n', 'the sandbox still works')
    eq((await sbx.commands.list()).length, 0, 'nothing left listed')
    console.error(`1000 processes: ${done.length} ran, ${refused.length} refused, ${Date.now() - t0} ms`)
  } finally {
    await sbx.kill()
  }
})

await runChecks()
