// E2B's network rules as E2B's own tests use them, through the real e2b
// SDK, on a service whose ceiling (network_egress_max) is "*": an allowOut
// entry wins over denyOut (E2B: "allowed entries always take precedence"),
// a denyOut alone leaves the rest of the internet open, updateNetwork({})
// clears the rules back to E2B's default (the internet), and
// maskRequestHost is the Host a request relayed to the sandbox's port
// carries. Run by tests/security/test_egress_e2b.py inside the egress
// test's namespaces: 45.1.1.10 (allowed.test) and 45.1.1.20 (later.test)
// are HTTP servers answering "server ADDR host NAME".
import http from 'node:http'
import { Sandbox } from 'e2b'
import { check, assert, eq, raises, runChecks, serve8080 } from './lib.mjs'

// curl of http://TARGET/probe, one line; never throws
async function reach(sbx, target) {
  const r = await sbx.commands.run(`curl -s -m 8 http://${target}/probe || echo curl=$?`, { user: 'root' })
  return r.stdout
}
const ok = (out, addr) => new RegExp('server ' + addr.replace(/\./g, '\\.')).test(out)

check('allow_out_wins_over_deny_out', async () => {
  // the old mapping let the deny rule win: 45.1.1.10 was refused
  const sbx = await Sandbox.create({ network: { denyOut: ['45.1.1.0/24'], allowOut: ['45.1.1.10'] } })
  try {
    const a = await reach(sbx, '45.1.1.10'), b = await reach(sbx, '45.1.1.20')
    assert(ok(a, '45.1.1.10'), 'the allowed address inside a denied network is reached: ' + a)
    assert(!ok(b, '45.1.1.20') && /curl=/.test(b), 'the rest of the denied network is not: ' + b)
    const n = await reach(sbx, 'allowed.test')
    assert(ok(n, '45.1.1.10'), 'a name outside the denied network is reached (the internet stays open): ' + n)
  } finally {
    await sbx.kill()
  }
})

check('all_traffic_denied_but_allow_out', async () => {
  // E2B's "allow takes precedence over deny"
  const sbx = await Sandbox.create({
    network: { denyOut: ({ allTraffic }) => [allTraffic], allowOut: ['45.1.1.10', '45.1.1.20'] } })
  try {
    assert(ok(await reach(sbx, '45.1.1.10'), '45.1.1.10'), '45.1.1.10 reached')
    assert(ok(await reach(sbx, '45.1.1.20'), '45.1.1.20'), '45.1.1.20 reached')
    const n = await reach(sbx, 'later.test')
    assert(!/server/.test(n), 'a name no rule allows is not: ' + n)
  } finally {
    await sbx.kill()
  }
})

check('deny_out_alone_and_update_network', async () => {
  // E2B's "deny specific IP address", then "updateNetwork clears existing
  // rules when fields are omitted" and "applies new egress rules"
  const sbx = await Sandbox.create({ network: { denyOut: ['45.1.1.20'] } })
  try {
    assert(ok(await reach(sbx, '45.1.1.10'), '45.1.1.10'), 'an address not denied is reached')
    assert(!ok(await reach(sbx, '45.1.1.20'), '45.1.1.20'), 'the denied address is not')
    await sbx.updateNetwork({})
    assert(ok(await reach(sbx, '45.1.1.20'), '45.1.1.20'), 'updateNetwork({}) cleared the deny rule')
    await sbx.updateNetwork({ allowOut: ['45.1.1.10'], denyOut: ['0.0.0.0/0'] })
    assert(!ok(await reach(sbx, '45.1.1.20'), '45.1.1.20'), 'then only allowOut: 45.1.1.20 refused')
    assert(ok(await reach(sbx, '45.1.1.10'), '45.1.1.10'), 'and 45.1.1.10 reached')
    await sbx.updateNetwork({})
    assert(ok(await reach(sbx, '45.1.1.20'), '45.1.1.20'), 'updateNetwork({}) again: the internet')
  } finally {
    await sbx.kill()
  }
})

check('default_sandbox_gets_rules_later', async () => {
  // E2B's "updateNetwork applies new egress rules": a plain create, then a deny
  const sbx = await Sandbox.create()
  try {
    assert(ok(await reach(sbx, '45.1.1.20'), '45.1.1.20'), 'a plain create reaches the internet (E2B\'s default)')
    await sbx.updateNetwork({ denyOut: ['45.1.1.20'] })
    assert(!ok(await reach(sbx, '45.1.1.20'), '45.1.1.20'), 'denied after the update')
    assert(ok(await reach(sbx, '45.1.1.10'), '45.1.1.10'), 'other destinations stay reachable')
  } finally {
    await sbx.kill()
  }
})

// a GET to the sandbox's port through the web's port relay, by Host name
function portGet(sbx, port) {
  const api = new URL(process.env.E2B_API_URL)
  return new Promise((resolve, reject) => {
    const req = http.request({ host: api.hostname, port: api.port, path: '/e2b/sandbox/probe', method: 'GET',
      headers: { Host: `${port}-${sbx.sandboxId}.${process.env.TEST_E2B_DOMAIN}`,
        'e2b-traffic-access-token': sbx.trafficAccessToken } }, (res) => {
      let body = ''
      res.on('data', (d) => { body += d })
      res.on('end', () => resolve([res.statusCode, body]))
    })
    req.on('error', reject)
    req.setTimeout(20000, () => req.destroy(new Error('the port relay did not answer in 20 s')))
    req.end()
  })
}

check('mask_request_host', async () => {
  // the old code passed the client's Host (8080-<id>.<domain>) on
  const sbx = await Sandbox.create({ network: { maskRequestHost: 'custom-host.example.com:${PORT}' } })
  try {
    await serve8080(sbx)
    const [st, body] = await portGet(sbx, 8080)
    eq(st, 200, 'the relay answered: ' + body)
    assert(/^Host: custom-host\.example\.com:8080$/mi.test(body), 'the masked Host, ${PORT} replaced: ' + body)
    assert(!/Host: 8080-/i.test(body), 'not the client\'s Host: ' + body)
  } finally {
    await sbx.kill()
  }
  const plain = await Sandbox.create()
  try {
    await serve8080(plain)
    const [st, body] = await portGet(plain, 8080)
    eq(st, 200, 'the relay answered: ' + body)
    assert(new RegExp(`^Host: 8080-${plain.sandboxId}\\.`, 'mi').test(body), 'no mask: the client\'s Host: ' + body)
  } finally {
    await plain.kill()
  }
  for (const bad of ['a\r\nX-Evil: 1', 'a b', 'x'.repeat(300), 'h:1234567', 'h:', ':80', '', 'h:${PORT}x']) {
    const e = await raises(() => Sandbox.create({ network: { maskRequestHost: bad } }))
    assert(/maskRequestHost/.test(e.message), `${JSON.stringify(bad)} refused with a sentence: ${e.message}`)
  }
})

await runChecks()
