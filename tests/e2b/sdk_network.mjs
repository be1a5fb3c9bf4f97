// E2B's network rules through the real e2b SDK: a sandbox created with
// allowInternetAccess false and network {allowOut, denyOut} reaches only
// the allowed names, and sbx.updateNetwork (PUT /sandboxes/{id}/network)
// changes them while it runs, within the operator's ceiling (403 with the
// rule's name beyond it). Run by tests/security/test_egress_e2b.py inside
// the egress test's namespaces, where allowed.test is 45.1.1.10 and
// later.test 45.1.1.20 (HTTP servers answering "server ADDR host NAME").
import { Sandbox } from 'e2b'
import { check, assert, raises, runChecks } from './lib.mjs'

// getent, then curl of http://NAME/, one line each; never throws
async function reach(sbx, name) {
  const r = await sbx.commands.run(
    `getent hosts ${name} >/dev/null && echo dns=ok || echo dns=nx; ` +
    `curl -s -m 8 http://${name}/probe || echo curl=$?`, { user: 'root' })
  return r.stdout
}

check('create_with_allow_out_then_update_network', async () => {
  const sbx = await Sandbox.create({
    allowInternetAccess: false,
    network: { allowOut: ['allowed.test'], denyOut: ['0.0.0.0/0'] },
  })
  try {
    let a = await reach(sbx, 'allowed.test'), l = await reach(sbx, 'later.test')
    assert(/dns=ok/.test(a) && /server 45\.1\.1\.10 host allowed\.test/.test(a), 'allowed.test reached: ' + a)
    assert(/dns=nx/.test(l) && /curl=6/.test(l), 'later.test not resolved: ' + l)

    // beyond the ceiling ("*": names and public addresses, no private
    // network): refused naming the rule, nothing changed
    const e = await raises(() => sbx.updateNetwork({ allowOut: ['10.0.0.0/8'], denyOut: ['0.0.0.0/0'] }))
    assert(/10\.0\.0\.0\/8/.test(e.message) && /network_egress_max/.test(e.message), 'the 403 sentence: ' + e.message)
    a = await reach(sbx, 'allowed.test')
    assert(/server 45\.1\.1\.10/.test(a), 'a refused update changed nothing: ' + a)

    // the swap: later.test in, allowed.test out
    await sbx.updateNetwork({ allowOut: ['later.test'], denyOut: ['0.0.0.0/0'] })
    a = await reach(sbx, 'allowed.test')
    l = await reach(sbx, 'later.test')
    assert(/dns=nx/.test(a) && /curl=6/.test(a), 'allowed.test refused after the update: ' + a)
    assert(/dns=ok/.test(l) && /server 45\.1\.1\.20 host later\.test/.test(l), 'later.test reached: ' + l)

    // a fork (e2b_fork.c) gets the rules as they are now, not as created
    const [fk] = await sbx.fork({ timeoutMs: 60000 })
    assert(fk instanceof Sandbox, 'the fork started: ' + fk)
    try {
      a = await reach(fk, 'allowed.test')
      l = await reach(fk, 'later.test')
      assert(/dns=nx/.test(a) && /curl=6/.test(a), 'the fork refuses allowed.test, as the source now: ' + a)
      assert(/server 45\.1\.1\.20 host later\.test/.test(l), 'the fork reaches later.test, as the source now: ' + l)
    } finally {
      await fk.kill()
    }

    // denyOut alone: the internet ("*") but the denied name
    await sbx.updateNetwork({ denyOut: ['later.test'] })
    a = await reach(sbx, 'allowed.test')
    l = await reach(sbx, 'later.test')
    assert(/server 45\.1\.1\.10/.test(a), 'allowed.test reached again: ' + a)
    assert(/dns=nx/.test(l), 'later.test denied: ' + l)

    // shapes the SDK never sends: 400 with a sentence each, nothing changed
    const put = async (body) => {
      const r = await fetch(`${process.env.E2B_API_URL}/sandboxes/${sbx.sandboxId}/network`, {
        method: 'PUT', body, headers: { 'X-API-KEY': process.env.E2B_API_KEY, 'Content-Type': 'application/json' } })
      return [r.status, await r.text()]
    }
    for (const [body, want] of [['{"allowOut": "allowed.test"}', /lists of rules/],
      ['{"allow_internet_access": "yes"}', /true or false/], ['[1]', /JSON object/],
      ['{"allowOut": [7]}', /./], ['{"allowOut": ["a b"]}', /./], ['{"allowOut": [', /./]]) {
      const [st, text] = await put(body)
      assert(st === 400 && want.test(text), `${body}: ${st} ${text}`)
    }
    a = await reach(sbx, 'allowed.test')
    assert(/server 45\.1\.1\.10/.test(a), 'refused bodies changed nothing: ' + a)

    // what llmbox does not have is refused with a sentence, not ignored
    const p = await raises(() => sbx.updateNetwork({ allowOut: ['allowed.test'],
      egressProxy: { address: 'proxy.test:1080' } }))
    assert(/egress proxy/.test(p.message), 'egressProxy refused: ' + p.message)
  } finally {
    await sbx.kill()
  }
})

check('update_network_of_a_plain_sandbox', async () => {
  // a plain create on a service whose ceiling allows "*" is E2B's default
  // (the internet) through a gateway, so updateNetwork narrows it later
  const sbx = await Sandbox.create()
  try {
    let a = await reach(sbx, 'allowed.test')
    assert(/server 45\.1\.1\.10/.test(a), 'a plain create reaches allowed.test: ' + a)
    await sbx.updateNetwork({ allowOut: ['later.test'], denyOut: ['0.0.0.0/0'] })
    a = await reach(sbx, 'allowed.test')
    assert(/dns=nx/.test(a), 'allowed.test refused after the update: ' + a)
  } finally {
    await sbx.kill()
  }
})

await runChecks()
