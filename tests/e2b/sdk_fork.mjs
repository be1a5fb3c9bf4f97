// E2B's fork through the real e2b SDK (server/e2b/e2b_fork.c): sbx.fork()
// makes new sandboxes from the source's files (its saved state); each fork
// has its own copy, the source keeps running, a fork keeps the source's
// template and metadata, and belongs to the same key, counted by that
// key's limits (the network policy: sdk_network.mjs, in the egress test's
// namespaces). Files under /tmp are not saved (docs/SANDBOX.md), so the
// checks write under /home/user. tests/integration/test_e2b.py gives the
// users' tokens in E2B_KEY_<NAME>: erin holds at most 2 sandboxes.
import { Sandbox, SandboxNotFoundError, RateLimitError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

const alice = { apiKey: process.env.E2B_KEY_ALICE }
const bob = { apiKey: process.env.E2B_KEY_BOB }
const erin = { apiKey: process.env.E2B_KEY_ERIN }
const made = []

check('fork_twice_each_has_its_own_files', async () => {
  const src = await Sandbox.create({ metadata: { t: 'fork' }, timeoutMs: 120000 })
  made.push(src)
  await src.files.write('/home/user/fork-a.txt', 'from the source\n')
  await src.commands.run('mkdir -p /home/user/d && echo deep > /home/user/d/f')
  const snapIds = async () => (await Sandbox.listSnapshots().nextItems()).map(x => x.snapshotId).sort()
  const before = await snapIds()
  const forks = await src.fork({ count: 2, timeoutMs: 120000 })
  eq(forks.length, 2, 'one entry per fork')
  for (const f of forks) {
    assert(f instanceof Sandbox, 'a fork started: ' + f)
    made.push(f)
  }
  const [f1, f2] = forks
  assert(f1.sandboxId !== f2.sandboxId && f1.sandboxId !== src.sandboxId, 'three sandboxes')
  for (const f of forks) {
    eq(await f.files.read('/home/user/fork-a.txt'), 'from the source\n', 'a fork sees the source\'s file')
    eq((await f.commands.run('cat /home/user/d/f')).stdout, 'deep\n', 'and its folders')
    const info = await f.getInfo()
    eq(info.metadata, { t: 'fork' }, 'the source\'s metadata')
    eq(info.templateId, (await src.getInfo()).templateId, 'the source\'s template')
  }
  // a write in one fork is not seen in the other, nor in the source
  await f1.files.write('/home/user/fork-a.txt', 'changed in fork 1\n')
  await f1.files.write('/home/user/only-f1', 'x')
  eq(await f2.files.read('/home/user/fork-a.txt'), 'from the source\n', 'fork 2 keeps its copy')
  eq(await src.files.read('/home/user/fork-a.txt'), 'from the source\n', 'the source keeps its file')
  eq(await f2.files.exists('/home/user/only-f1'), false, 'a new file of fork 1 is not in fork 2')
  eq(await src.files.exists('/home/user/only-f1'), false, 'nor in the source')
  // and the source's later writes are not in the forks
  await src.files.write('/home/user/after', 'late')
  eq(await f2.files.exists('/home/user/after'), false, 'a fork is the files at the fork')
  eq((await src.getInfo()).state, 'running', 'the source keeps running')
  eq((await src.commands.run('echo alive')).stdout, 'alive\n', 'and runs commands')
  // the fork's saved state is gone: it is no snapshot anyone sees
  eq(await snapIds(), before, 'no snapshot left behind')
})

check('fork_is_the_keys_and_counted', async () => {
  const src = await Sandbox.create({ ...erin, timeoutMs: 60000 })
  made.push(src)
  await src.files.write('/home/user/e', 'erin')
  // erin may hold 2: the first fork starts, the second is refused by her limit
  const forks = await src.fork({ ...erin, count: 2, timeoutMs: 60000 })
  eq(forks.length, 2, 'one entry per fork')
  assert(forks[0] instanceof Sandbox, 'the first fork started: ' + forks[0])
  made.push(forks[0])
  assert(forks[1] instanceof RateLimitError && /max_sandboxes/.test(forks[1].message),
    'the second is over erin\'s max_sandboxes: ' + forks[1])
  eq(await forks[0].files.read('/home/user/e'), 'erin')
  // the fork is erin's: bob's key does not see it, erin's lists it
  const e = await raises(() => Sandbox.getInfo(forks[0].sandboxId, bob))
  assert(e instanceof SandboxNotFoundError, 'another user\'s key: not found: ' + e)
  const mine = (await Sandbox.list(erin).nextItems()).map(x => x.sandboxId)
  assert(mine.includes(forks[0].sandboxId), 'listed by erin\'s key: ' + mine)
  // another user cannot fork erin's sandbox
  const e2 = await raises(() => Sandbox.fork(src.sandboxId, { ...alice }))
  assert(e2 instanceof SandboxNotFoundError, 'another user cannot fork it: ' + e2)
})

check('fork_refusals', async () => {
  const e = await raises(() => Sandbox.fork('0123456789abcdef0123456789abcdef'))
  assert(e instanceof SandboxNotFoundError, 'an unknown sandbox: ' + e)
  const src = made[0]
  const e2 = await raises(() => src.fork({ count: 17 }))
  assert(/count must be/.test(e2.message), 'count beyond the cap: ' + e2)
  // shapes the SDK never sends: 400 with a sentence, no fork made
  const before = (await Sandbox.list().nextItems()).length
  for (const [body, want] of [['{"count": "2"}', /count must be/], ['{"count": 1.5}', /count must be/],
    ['{"count": 0}', /count must be/], ['{"timeout": 0}', /timeout must be/], ['{"timeout": 1e9}', /timeout must be/],
    ['[1]', /JSON object/], ['{"count": ', /./]]) {
    const r = await fetch(`${process.env.E2B_API_URL}/sandboxes/${src.sandboxId}/fork`, {
      method: 'POST', body, headers: { 'X-API-KEY': process.env.E2B_API_KEY, 'Content-Type': 'application/json' } })
    const text = await r.text()
    assert(r.status === 400 && want.test(text), `${body}: ${r.status} ${text}`)
  }
  eq((await Sandbox.list().nextItems()).length, before, 'no fork made by a refused request')
})

check('cleanup', async () => {
  for (const s of made)
    await Sandbox.kill(s.sandboxId).catch(() => {})
})

await runChecks()
