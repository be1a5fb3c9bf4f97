// Each sandbox's own boot id through the real e2b SDK, as E2B's own tests
// read it: /proc/sys/kernel/random/boot_id differs between sandboxes and
// from the host's, changes after a pause without memory (keepMemory:
// false: every process ended, a reboot) and stays after a pause that
// keeps the memory (the same boot going on).
import { readFileSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { check, assert, eq, runChecks } from './lib.mjs'

const FORM = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$/
const host = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')

async function bootId(sbx) {
  const id = (await sbx.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout
  assert(FORM.test(id), 'a boot id as the kernel writes it: ' + JSON.stringify(id))
  return id
}

check('boot_id_per_sandbox', async () => {
  const a = await Sandbox.create(), b = await Sandbox.create()
  const ia = await bootId(a), ib = await bootId(b)
  assert(ia !== ib, 'two sandboxes have two boot ids: ' + ia)
  assert(ia !== host && ib !== host, 'a sandbox has not the host\'s boot id')
  eq(await bootId(a), ia, 'it stays while the sandbox runs')
  const w = await a.commands.run('echo 1 > /proc/sys/kernel/random/boot_id', { user: 'root' }).catch(e => e)
  assert(w.exitCode !== 0, 'the sandbox cannot write its boot id')
  eq(await bootId(a), ia, 'unchanged by a try to write it')
  await a.kill()
  await b.kill()
})

check('boot_id_changes_after_pause_without_memory', async () => {
  const sbx = await Sandbox.create()
  const before = await bootId(sbx)
  eq(await sbx.pause(), true, 'paused with its memory')
  let back = await Sandbox.connect(sbx.sandboxId)
  eq(await bootId(back), before, 'a pause that keeps the memory is the same boot')
  eq(await back.pause({ keepMemory: false }), true, 'paused without its memory')
  back = await Sandbox.connect(sbx.sandboxId)
  const after = await bootId(back)
  assert(after !== before && after !== host, 'a pause without memory is a reboot: a new boot id')
  await back.kill()
})

await runChecks()
