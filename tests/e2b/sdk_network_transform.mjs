// E2B's per-host transforms (network.rules) through the real e2b SDK: the
// gateway adds the client's header to the sandbox's HTTPS requests to that
// host only, replacing one the sandbox sent, and the value is nowhere the
// sandbox or the record can read. Run by tests/security/test_egress_secrets.py
// inside its world: allowed.test and other.test are HTTPS at 45.1.1.10
// whose server writes each request's Authorization headers to TLS_HITS.
import fs from 'node:fs'
import { Sandbox } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

const hits = (path) => fs.readFileSync(process.env.TLS_HITS, 'utf8').split('\n').filter((l) => l.trim())
  .map((l) => JSON.parse(l)).filter((h) => h.path === path)

check('transform_adds_the_header_to_its_host_only', async () => {
  const half1 = Math.random().toString(36).slice(2), half2 = String(Date.now())
  const value = 'e2b-transform-' + half1 + half2
  console.log('VALUE ' + value)
  // the old code: 400 "Per-host rules (transforms) are not supported"
  const sbx = await Sandbox.create({
    network: {
      allowOut: ['allowed.test', 'other.test'],
      denyOut: ({ allTraffic }) => [allTraffic],
      rules: { 'allowed.test': [{ transform: { headers: { Authorization: `Bearer ${value}` } } }] },
    },
  })
  try {
    let r = await sbx.commands.run('curl -sS -H "Authorization: Bearer mine" https://allowed.test/t1')
    eq(r.stdout, 'hello /t1\n', 'the request went through the gateway')
    let h = hits('/t1')
    assert(h.length === 1 && JSON.stringify(h[0].auth) === JSON.stringify([`Bearer ${value}`]),
      'the server got the client\'s header in place of the sandbox\'s: ' + JSON.stringify(h))
    // (passed through untouched: its certificate is the test CA's, which the sandbox does not trust)
    r = await sbx.commands.run('curl -sS -k https://other.test/t2')
    eq(r.stdout, 'hello /t2\n', 'other.test reached')
    h = hits('/t2')
    assert(h.length === 1 && h[0].auth.length === 0, 'a host the rule does not name gets no header: ' + JSON.stringify(h))
    // the sandbox sees no value: its environment, its files, its processes
    r = await sbx.commands.run(`a=${half1}; b=${half2}; grep -rls "$a$b" /etc /tmp /root /home /proc/1/environ ` +
      '2>/dev/null; env | grep -c "$a$b"; true', { user: 'root' })
    assert(!r.stdout.includes('/') && r.stdout.trim() === '0', 'the sandbox holds the value: ' + r.stdout)
    // nor the record the API answers
    const rec = await fetch(`${process.env.E2B_API_URL.replace(/\/e2b$/, '')}/api/sandboxes/${sbx.sandboxId}/network`,
      { headers: { Authorization: 'Bearer ' + process.env.E2B_API_KEY } })
    const text = await rec.text()
    eq(rec.status, 200, 'the record: ' + text)
    assert(!text.includes(value) && /secret header added/.test(text), 'the record names the use, not the value: ' + text)
    // an update cannot set new transforms (the values reach the gateway at its start only) ...
    const e = await raises(() => sbx.updateNetwork({ allowOut: ['allowed.test'], denyOut: ['0.0.0.0/0'],
      rules: { 'allowed.test': [{ transform: { headers: { 'X-Other': 'v' } } }] } }))
    assert(/created/.test(e.message), 'refused with a sentence: ' + e.message)
    // ... and one without rules clears them: the header is no longer added
    await sbx.updateNetwork({ allowOut: ['allowed.test'], denyOut: ['0.0.0.0/0'] })
    r = await sbx.commands.run('curl -sS -k https://allowed.test/t3') // passed through now, as other.test
    eq(r.stdout, 'hello /t3\n', 'allowed.test still reached')
    h = hits('/t3')
    assert(h.length === 1 && h[0].auth.length === 0, 'no header after the rules were cleared: ' + JSON.stringify(h))
  } finally {
    await sbx.kill()
  }
})

check('transform_shapes_llmbox_refuses', async () => {
  const bad = [
    { 'allowed.test': [{ transform: { headers: { 'Bad Name': 'v' } } }] },
    { 'allowed.test': [{ transform: { headers: { 'X-A': 'a\r\nEvil: 1' } } }] },
    { 'allowed.test': [{ transform: { headers: { Host: 'x' } } }] },
    { 'allowed.test': [{ transform: ({ iam }) => ({ headers: { Authorization: `Bearer ${iam.tokens.aws}` } }) }] },
    { 'beyond.example': [{ transform: { headers: { 'X-A': 'v' } } }] },
  ]
  for (const rules of bad) {
    const e = await raises(() => Sandbox.create({ network: { allowOut: ['allowed.test'], denyOut: ['0.0.0.0/0'], rules } }))
    assert(/network|rules|iam|identity|beyond/i.test(e.message), 'refused with a sentence: ' + e.message)
  }
})

await runChecks()
