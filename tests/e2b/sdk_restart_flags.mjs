// E2B's flags of a sandbox survive a restart of the web (they live in the
// sandbox's record, var/web/sandboxes/): allowPublicTraffic (its ports
// without the traffic token), maskRequestHost (the Host its port servers
// get) and autoPause (paused, not destroyed, at its timeout). test_e2b.py
// runs it twice: "before" makes the sandbox and prints KEEP_ID, then the
// web is killed and started again, then "after" with KEEP_ID checks them.
import http from 'node:http'
import { Sandbox } from 'e2b'
import { check, assert, eq, runChecks, serve8080 } from './lib.mjs'

const sleep = ms => new Promise(res => setTimeout(res, ms))
const phase = process.argv[2] || 'before'

// GET / of port 8080 by its E2B host name, without the traffic token
function portGet(id) {
  const u = new URL(process.env.E2B_SANDBOX_URL)
  return new Promise((resolve, reject) => {
    const req = http.request({ agent: false, host: u.hostname, port: u.port, path: u.pathname + '/',
      headers: { Host: `8080-${id}.e2b.test` } }, res => {
      let body = ''
      res.on('data', d => { body += d })
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function publicAndMasked(id) {
  let r
  for (let i = 0; i < 50; i++) {
    r = await portGet(id)
    if (r.status !== 502) break
    await sleep(200)
  }
  eq(r.status, 200, 'public: no token needed: ' + r.body)
  assert(/^Host: kept\.example:8080$/mi.test(r.body), 'the masked Host: ' + r.body)
}

if (phase === 'before') {
  check('flags_set', async () => {
    const sbx = await Sandbox.create({ network: { allowPublicTraffic: true, maskRequestHost: 'kept.example:${PORT}' },
      lifecycle: { onTimeout: 'pause' } })
    await serve8080(sbx)
    await publicAndMasked(sbx.sandboxId)
    console.log('KEEP_ID=' + sbx.sandboxId)
  })
} else {
  check('flags_kept_after_a_restart_of_the_web', async () => {
    const id = process.env.KEEP_ID
    await publicAndMasked(id)
    await Sandbox.setTimeout(id, 1000)
    await sleep(4000)
    eq((await Sandbox.getInfo(id)).state, 'paused', 'autoPause: paused, not destroyed, at its timeout')
    await Sandbox.kill(id)
  })
}

await runChecks()
