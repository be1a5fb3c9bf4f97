// E2B_DOMAIN host names through the real SDK: with only E2B_DOMAIN set
// (no E2B_SANDBOX_URL) it reaches each sandbox's envd at
// https://49983-<id>.<domain>, here nginx's TLS server block with a
// throwaway wildcard certificate (tests/integration/test_e2b.py makes it).
import { Sandbox } from 'e2b'
import { check, assert, eq, runChecks } from './lib.mjs'

const domain = process.env.E2B_DOMAIN

check('sdk_reaches_envd_by_host_name_over_tls', async () => {
  assert(domain && !process.env.E2B_SANDBOX_URL, 'only E2B_DOMAIN is set')
  const sbx = await Sandbox.create()
  try {
    eq(sbx.getHost(49983), `49983-${sbx.sandboxId}.${domain}`, 'the SDK builds E2B\'s host name')
    eq(sbx.envdApiUrl, `https://49983-${sbx.sandboxId}.${domain}`, 'and reaches it over https')
    const out = []
    const r = await sbx.commands.run('echo via-domain; echo err >&2', { onStdout: d => out.push(d) })
    eq(r.stdout, 'via-domain\n')
    eq(r.stderr, 'err\n')
    eq(out.join(''), 'via-domain\n', 'streamed')
    await sbx.files.write('/tmp/d.txt', 'over tls')
    eq(await sbx.files.read('/tmp/d.txt'), 'over tls')
    const bg = await sbx.commands.run('sleep 30', { background: true })
    eq((await sbx.commands.list()).length, 1)
    await bg.kill()
  } finally {
    await sbx.kill()
  }
})

await runChecks()
