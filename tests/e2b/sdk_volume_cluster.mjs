// Several nodes: E2B's volumes through the real e2b SDK, with E2B_API_URL
// and E2B_VOLUME_API_URL at HAProxy's /e2b in front of two nodes' webs
// (tests/integration/test_volume_cluster.py): Volume.create on a node
// (LLMBOX_VOLUME_NODE, created again until it lands there), its content
// written and read, Volume.list and getInfo, then Sandbox.create with it
// mounted, twice (round robin puts one create on each node's web; the
// other node's web forwards it to the holder) and the file read inside;
// Volume.destroy at the end. LLMBOX_E2B_NODES ("n1 n2" by default; "n1 n2
// n3" for scripts/cluster.sh, tests/integration/test_cluster.py) names the
// nodes; the sandboxes are created once per node, so that round robin
// puts one create on each node's web.
import { Sandbox, Volume } from 'e2b'
import { check, assert, eq, runChecks } from './lib.mjs'

const want = process.env.LLMBOX_VOLUME_NODE || 'n2'
const name = 'sdk-' + process.pid
const nodes = (process.env.LLMBOX_E2B_NODES || 'n1 n2').split(/\s+/).filter(Boolean)
const idRe = new RegExp('^(' + nodes.map(n => n.replace(/[^a-z0-9_-]/g, '')).join('|') + ')\\.[0-9a-f]{32}$')
let v

check('volume_on_a_node_through_the_balancer', async () => {
  for (let i = 0; i < 4 * nodes.length && !v; i++) {
    const one = await Volume.create(name + '-' + i)
    assert(idRe.test(one.volumeId), 'an id naming its node: ' + one.volumeId)
    if (one.volumeId.startsWith(want + '.')) v = one
    else await Volume.destroy(one.volumeId)
  }
  assert(v, 'no volume landed on ' + want)
  await v.writeFile('/hello.txt', 'hello through the balancer\n')
  eq(await v.readFile('/hello.txt'), 'hello through the balancer\n', 'read back')
  const again = await Volume.connect(v.volumeId)
  eq(await again.readFile('/hello.txt'), 'hello through the balancer\n', 'connect and read')
  const info = await Volume.getInfo(v.volumeId)
  eq([info.volumeId, info.name], [v.volumeId, v.name], 'getInfo')
  assert((await Volume.list()).map(x => x.volumeId).includes(v.volumeId), 'listed')
})

check('sandboxes_mount_it_whichever_node_the_create_reaches', async () => {
  assert(v, 'the volume of the first check')
  for (let i = 0; i < nodes.length; i++) {
    const s = await Sandbox.create({ volumeMounts: { '/mnt/v': v } })
    try {
      assert(s.sandboxId.startsWith(want + '.'), 'made on the volume\'s node: ' + s.sandboxId)
      eq((await s.commands.run('cat /mnt/v/hello.txt')).stdout, 'hello through the balancer\n', 'read inside')
      await s.commands.run('echo from-' + i + ' > /mnt/v/s' + i + '.txt')
      eq(await v.readFile('/s' + i + '.txt'), 'from-' + i + '\n', 'the sandbox\'s file through the content API')
    } finally {
      await s.kill()
    }
  }
})

check('destroyed', async () => {
  assert(v, 'the volume of the first check')
  eq(await Volume.destroy(v.volumeId), true, 'destroyed')
  assert(!(await Volume.list()).map(x => x.volumeId).includes(v.volumeId), 'no longer listed')
})

await runChecks()
