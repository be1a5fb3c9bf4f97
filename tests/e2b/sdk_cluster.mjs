// Several nodes: the real e2b SDK through HAProxy in front of two nodes' webs
// (tests/integration/test_node_ids.py), or scripts/cluster.sh's three
// (tests/integration/test_cluster.py): sandboxes with prefixed ids
// (n1.<32 hex>, n2.<32 hex>) are created, run commands, write and read
// files and are killed, every call routed to the node that holds them;
// Sandbox.list through the balancer shows every node's (from the store the
// webs share).
import { Sandbox } from 'e2b'
import { check, assert, eq, runChecks } from './lib.mjs'

const made = []
// the nodes a sandbox may land on: n1 n2 (test_node_ids.py), or
// LLMBOX_E2B_NODES="n1 n2 n3" (scripts/cluster.sh, test_cluster.py)
const nodes = (process.env.LLMBOX_E2B_NODES || 'n1 n2').split(/\s+/).filter(Boolean)
const idRe = new RegExp('^(' + nodes.map(n => n.replace(/[^a-z0-9_-]/g, '')).join('|') + ')\\.[0-9a-f]{32}$')

check('create_on_prefixed_ids', async () => {
  for (let i = 0; i < 4; i++) made.push(await Sandbox.create({ metadata: { suite: 'cluster-' + process.pid } }))
  for (const s of made) assert(idRe.test(s.sandboxId), s.sandboxId)
  console.log('# ids: ' + made.map(s => s.sandboxId.split('.')[0]).join(' '))
})

check('commands_run_on_each', async () => {
  for (const s of made) {
    const r = await s.commands.run(`echo "${s.sandboxId}" > /tmp/me; cat /tmp/me`)
    eq(r.stdout, s.sandboxId + '\n', 'the command ran in its own sandbox')
  }
})

check('files_write_read_on_each', async () => {
  for (const s of made) {
    await s.files.write('/tmp/f.txt', 'file of ' + s.sandboxId + '\n')
  }
  for (const s of made) eq(await s.files.read('/tmp/f.txt'), 'file of ' + s.sandboxId + '\n', s.sandboxId)
})

check('connect_by_id', async () => {
  const again = await Sandbox.connect(made[0].sandboxId)
  eq((await again.commands.run('cat /tmp/me')).stdout, made[0].sandboxId + '\n')
})

check('list_spans_the_nodes', async () => {
  // whichever web answers, every node's sandboxes; paged one at a time too
  const want = made.map(s => s.sandboxId).sort()
  const q = { metadata: { suite: 'cluster-' + process.pid } }
  for (let i = 0; i < 3; i++) {
    const got = (await Sandbox.list({ query: q }).nextItems()).map(s => s.sandboxId).sort()
    eq(JSON.stringify(got), JSON.stringify(want), 'every node\'s sandboxes listed')
  }
  const p = Sandbox.list({ query: q, limit: 1 })
  const paged = []
  while (p.hasNext) paged.push(...(await p.nextItems()).map(s => s.sandboxId))
  eq(JSON.stringify(paged.sort()), JSON.stringify(want), 'paged')
  console.log('# listed: ' + want.map(id => id.split('.')[0]).join(' '))
})

check('kill_each', async () => {
  for (const s of made) await s.kill()
  for (const s of made) eq(await s.isRunning(), false, s.sandboxId + ' is gone')
  const left = await Sandbox.list({ query: { metadata: { suite: 'cluster-' + process.pid } } }).nextItems()
  eq(left.length, 0, 'killed: listed nowhere')
})

await runChecks()
