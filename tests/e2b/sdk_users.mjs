// Per-user E2B keys through the real e2b SDK: each user's own llmbox API
// token is an E2B_API_KEY that sees and reaches only that user's
// sandboxes and snapshots (another's id is as absent as an unknown one),
// within the user's limits, while the shared sandbox token (E2B_API_KEY
// here) reaches every one as before. tests/integration/test_e2b.py gives
// the users' tokens in E2B_KEY_ALICE, E2B_KEY_BOB and E2B_KEY_CAROL.
import { Sandbox, SandboxNotFoundError, RateLimitError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

const alice = { apiKey: process.env.E2B_KEY_ALICE }
const bob = { apiKey: process.env.E2B_KEY_BOB }
const carol = { apiKey: process.env.E2B_KEY_CAROL }

async function ids(opts) {
  const p = Sandbox.list(opts)
  const out = []
  while (p.hasNext) out.push(...(await p.nextItems()).map(x => x.sandboxId))
  return out
}

check('each_user_sees_and_reaches_only_its_own', async () => {
  const a = await Sandbox.create({ ...alice, metadata: { t: 'users' } })
  const b = await Sandbox.create({ ...bob, metadata: { t: 'users' } })
  try {
    const la = await ids(alice), lb = await ids(bob), all = await ids({})
    assert(la.includes(a.sandboxId) && !la.includes(b.sandboxId), 'alice lists hers only: ' + la)
    assert(lb.includes(b.sandboxId) && !lb.includes(a.sandboxId), 'bob lists his only: ' + lb)
    assert(all.includes(a.sandboxId) && all.includes(b.sandboxId), 'the shared token lists both: ' + all)
    // another user's id: every control-plane call answers as for an absent one
    for (const [what, fn] of [
      ['connect', () => Sandbox.connect(b.sandboxId, alice)],
      ['getInfo', () => Sandbox.getInfo(b.sandboxId, alice)],
      ['setTimeout', () => Sandbox.setTimeout(b.sandboxId, 60000, alice)],
      ['pause', () => Sandbox.pause(b.sandboxId, alice)],
    ]) {
      const e = await raises(fn, what + ' of bob\'s sandbox with alice\'s key')
      assert(e instanceof SandboxNotFoundError, what + ': SandboxNotFoundError, not ' + e)
    }
    eq(await Sandbox.kill(b.sandboxId, alice), false, 'alice cannot kill bob\'s: as if there were none')
    eq((await b.commands.run('echo alive', { user: 'root' })).stdout, 'alive\n', 'bob\'s still runs')
    // each reaches its own: files and processes through its own connect
    const mine = await Sandbox.connect(a.sandboxId, alice)
    await mine.files.write('/tmp/who', 'alice')
    eq((await mine.commands.run('cat /tmp/who')).stdout, 'alice', 'alice works in hers')
    // the shared token reaches every one, as it always did
    const shared = await Sandbox.connect(b.sandboxId)
    eq((await shared.commands.run('echo shared')).stdout, 'shared\n')
    eq(await Sandbox.kill(b.sandboxId, bob), true, 'bob kills his own')
  } finally {
    await Sandbox.kill(a.sandboxId).catch(() => {})
    await Sandbox.kill(b.sandboxId).catch(() => {})
  }
})

check('snapshots_are_their_users', async () => {
  const a = await Sandbox.create(alice)
  let snap, c
  try {
    await a.files.write('/home/user/s.txt', 'hers')
    snap = await a.createSnapshot()
    const list = async (o) => {
      const p = Sandbox.listSnapshots(o)
      const out = []
      while (p.hasNext) out.push(...(await p.nextItems()).map(x => x.snapshotId))
      return out
    }
    assert((await list(alice)).includes(snap.snapshotId), 'alice lists her snapshot')
    assert(!(await list(bob)).includes(snap.snapshotId), 'bob does not')
    assert((await list({})).includes(snap.snapshotId), 'the shared token does')
    await raises(() => Sandbox.create(snap.snapshotId, bob), 'bob cannot start from alice\'s snapshot')
    eq(await Sandbox.deleteSnapshot(snap.snapshotId, bob), false, 'bob cannot delete it: as if there were none')
    c = await Sandbox.create(snap.snapshotId, alice)
    eq(await c.files.read('/home/user/s.txt'), 'hers', 'alice starts from her own')
    eq(await Sandbox.deleteSnapshot(snap.snapshotId, alice), true, 'alice deletes her own')
  } finally {
    await a.kill().catch(() => {})
    if (c) await c.kill().catch(() => {})
  }
})

check('quotas_answer_429', async () => {
  // carol: max_sandboxes 1, sandboxes_per_minute 2 (test_e2b.py's llmbox.conf)
  const one = await Sandbox.create(carol)
  const e = await raises(() => Sandbox.create({ ...carol, requestTimeoutMs: 30000 }), 'a second at once')
  assert(e instanceof RateLimitError && /max_sandboxes/.test(e.message), 'RateLimitError naming the limit: ' + e)
  await one.kill()
  const two = await Sandbox.create(carol)
  await two.kill()
  // a third create within the minute: refused with Retry-After, which the
  // SDK would wait out; a short request timeout makes it say so instead
  const e2 = await raises(() => Sandbox.create({ ...carol, requestTimeoutMs: 20000 }), 'a third in the minute')
  assert(e2 instanceof RateLimitError && /sandboxes_per_minute/.test(e2.message), 'RateLimitError: ' + e2)
  // the shared token has no user's limits
  const s = await Sandbox.create()
  await s.kill()
})

await runChecks()
