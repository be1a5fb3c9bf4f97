// Several nodes: E2B's volumes through the real e2b SDK, with E2B_API_URL
// and E2B_VOLUME_API_URL at HAProxy's /e2b in front of two nodes' webs
// (tests/integration/test_volume_cluster.py): Volume.create on a node
// (LLMBOX_VOLUME_NODE, created again until it lands there), its content
// written and read, Volume.list and getInfo, then Sandbox.create with it
// mounted, twice (round robin puts one create on each node's web; the
// other node's web forwards it to the holder) and the file read inside;
// Volume.destroy at the end.
import { Sandbox, Volume } from 'e2b'
import { check, assert, eq, runChecks } from './lib.mjs'

const want = process.env.LLMBOX_VOLUME_NODE || 'n2'
const name = 'sdk-' + process.pid
let v

check('volume_on_a_node_through_the_balancer', async () => {
  for (let i = 0; i < 8 && !v; i++) {
    const one = await Volume.create(name + '-' + i)
    assert(/^n[12]\.[0-9a-f]{32}$/.test(one.volumeId), 'an id naming its node: ' + one.volumeId)
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
  for (let i = 0; i < 2; i++) {
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
