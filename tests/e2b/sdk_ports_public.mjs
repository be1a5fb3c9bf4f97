// The operator's e2b_ports_public = 1 (E2B's own default), through the real
// e2b SDK over TLS host names: a sandbox created without allowPublicTraffic
// serves its ports without the traffic token; allowPublicTraffic false
// still needs it; envd always needs its access token. test_e2b.py runs it
// on a web started with LLMBOX_E2B_PORTS_PUBLIC=1 (and the default's side,
// the token, with sdk_domain.mjs).
import { Sandbox } from 'e2b'
import { check, eq, runChecks } from './lib.mjs'

check('ports_public_by_default_when_the_operator_says', async () => {
  const plain = await Sandbox.create()
  const closed = await Sandbox.create({ network: { allowPublicTraffic: false } })
  try {
    for (const s of [plain, closed])
      await s.commands.run('python3 -m http.server 8004 --bind 127.0.0.1 --directory /tmp', { background: true })
    const get = async (s, h) => {
      for (let i = 0; i < 50; i++) {
        const res = await fetch(`https://${s.getHost(8004)}/`, { headers: h || {} })
        if (res.status !== 502) return res.status
        await new Promise(resolve => setTimeout(resolve, 100))
      }
      return 502
    }
    eq(await get(plain), 200, 'no allowPublicTraffic: public, as on E2B')
    eq(await get(closed), 403, 'allowPublicTraffic false: the token is needed')
    eq(await get(closed, { 'e2b-traffic-access-token': closed.trafficAccessToken }), 200, 'and opens it')
    const envd = await fetch(`https://${plain.getHost(49983)}/process.Process/List`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })
    eq(envd.status, 401, 'envd still needs the access token')
  } finally {
    await plain.kill()
    await closed.kill()
  }
})

await runChecks()
