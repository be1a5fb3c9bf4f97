// Pause and resume (follow-ups's freeze / thaw) through the real e2b SDK:
// sbx.pause(), Sandbox.connect() of a paused one resumes it.
import { Sandbox, SandboxNotFoundError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

let sbx

check('pause_freezes_and_connect_resumes', async () => {
  sbx = await Sandbox.create({ metadata: { t: 'pause' } })
  // a counter that only moves while the sandbox gets CPU
  await sbx.commands.run('(while :; do date +%s%N >/tmp/tick; sleep 0.05; done) >/dev/null 2>&1 &')
  await new Promise(res => setTimeout(res, 300))
  eq(await sbx.pause(), true, 'paused')
  eq((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused', 'getInfo says paused')
  eq(await sbx.pause(), false, 'a second pause says it was paused already')
  const paused = await Sandbox.list({ query: { state: ['paused'], metadata: { t: 'pause' } } }).nextItems()
  eq(paused.map(x => x.sandboxId), [sbx.sandboxId], 'listed as paused')
  const running = await Sandbox.list({ query: { state: ['running'], metadata: { t: 'pause' } } }).nextItems()
  eq(running.length, 0, 'not listed as running')
  await new Promise(res => setTimeout(res, 400))
  const back = await Sandbox.connect(sbx.sandboxId)
  eq((await back.getInfo()).state, 'running', 'connect resumed it')
  const a = (await back.commands.run('cat /tmp/tick')).stdout
  await new Promise(res => setTimeout(res, 300))
  const b = (await back.commands.run('cat /tmp/tick')).stdout
  assert(a !== b, 'the loop runs again after the resume: ' + a + ' ' + b)
  eq((await back.commands.run('echo after')).stdout, 'after\n')
})

check('pause_of_killed_is_not_found', async () => {
  await sbx.kill()
  const e = await raises(() => Sandbox.pause(sbx.sandboxId))
  assert(e instanceof SandboxNotFoundError, 'SandboxNotFoundError: ' + e)
  const e2 = await raises(() => Sandbox.connect(sbx.sandboxId))
  assert(e2 instanceof SandboxNotFoundError, 'SandboxNotFoundError on connect: ' + e2)
})

await runChecks()
