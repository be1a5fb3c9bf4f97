// E2B's network defaults on a service whose ceiling (network_egress_max)
// has no "*" (test_egress_e2b.py sets "allowed.test later.test"), through
// the real e2b SDK: a plain create (the SDK asks for the internet) is not
// refused but gets a gateway that allows nothing yet, so updateNetwork can
// give it rules later; updateNetwork({}) goes back to that default rather
// than a 403; rules beyond the ceiling still get the 403 sentence. The
// same stack sets e2b_ports_public = 1: ports are public unless a sandbox
// says allowPublicTraffic false, as E2B's.
import http from 'node:http'
import { Sandbox } from 'e2b'
import { check, assert, eq, raises, runChecks, serve8080 } from './lib.mjs'

async function reach(sbx, name) {
  const r = await sbx.commands.run(
    `getent hosts ${name} >/dev/null && echo dns=ok || echo dns=nx; ` +
    `curl -s -m 8 http://${name}/probe || echo curl=$?`, { user: 'root' })
  return r.stdout
}

check('plain_create_gets_rules_later', async () => {
  const sbx = await Sandbox.create()
  try {
    let a = await reach(sbx, 'allowed.test')
    assert(/dns=nx/.test(a) && !/server/.test(a), 'nothing is allowed yet: ' + a)
    // the old code: 400 "created without network rules"
    await sbx.updateNetwork({ allowOut: ['allowed.test'], denyOut: ({ allTraffic }) => [allTraffic] })
    a = await reach(sbx, 'allowed.test')
    assert(/server 45\.1\.1\.10 host allowed\.test/.test(a), 'allowed.test reached after the update: ' + a)
    const l = await reach(sbx, 'later.test')
    assert(/dns=nx/.test(l), 'later.test is not: ' + l)
    // denyOut alone is the internet but that: "*" is beyond this ceiling
    const e = await raises(() => sbx.updateNetwork({ denyOut: ['45.1.1.20'] }))
    assert(/"\*"/.test(e.message) && /network_egress_max/.test(e.message), 'the 403 sentence names "*": ' + e.message)
    a = await reach(sbx, 'allowed.test')
    assert(/server 45\.1\.1\.10/.test(a), 'a refused update changed nothing: ' + a)
    // {} clears the rules: back to the default this ceiling allows (the old code: 403 naming "*")
    await sbx.updateNetwork({})
    a = await reach(sbx, 'allowed.test')
    assert(/dns=nx/.test(a) && !/server/.test(a), 'updateNetwork({}) cleared allowed.test: ' + a)
  } finally {
    await sbx.kill()
  }
})

check('rules_beyond_the_ceiling_at_create', async () => {
  const e = await raises(() => Sandbox.create({ network: { denyOut: ['45.1.1.20'] } }))
  assert(/"\*"/.test(e.message) && /network_egress_max/.test(e.message), 'the 403 sentence: ' + e.message)
})

// a GET of the sandbox's port through the web's port relay, by Host
// name, with no token: the status
function portStatus(sbx, port) {
  const api = new URL(process.env.E2B_API_URL)
  return new Promise((resolve, reject) => {
    const req = http.request({ host: api.hostname, port: api.port, path: '/e2b/sandbox/', method: 'GET',
      headers: { Host: `${port}-${sbx.sandboxId}.${process.env.TEST_E2B_DOMAIN}` } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    })
    req.on('error', reject)
    req.setTimeout(20000, () => req.destroy(new Error('the port relay did not answer in 20 s')))
    req.end()
  })
}

check('e2b_ports_public_makes_ports_public_by_default', async () => {
  // the old code: 403 without the traffic token whatever the operator set
  const open = await Sandbox.create()
  const closed = await Sandbox.create({ network: { allowPublicTraffic: false } })
  try {
    await serve8080(open, 'python3 -m http.server 8080 --bind 127.0.0.1')
    await serve8080(closed, 'python3 -m http.server 8080 --bind 127.0.0.1')
    eq(await portStatus(open, 8080), 200, 'a plain create\'s port is public, as E2B\'s')
    eq(await portStatus(closed, 8080), 403, 'allowPublicTraffic false still needs the token')
  } finally {
    await open.kill()
    await closed.kill()
  }
})

await runChecks()
