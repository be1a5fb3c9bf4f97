// E2B's autoResume through the real e2b SDK: a sandbox made with
// lifecycle {onTimeout: 'pause', autoResume: true} that is paused (by
// pause() or at its timeout) is resumed by an envd call (commands, files),
// with a timeout as Sandbox.connect gives; one made without autoResume
// still refuses envd calls while paused.
import { Sandbox } from 'e2b'
import http from 'node:http'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

const sleep = ms => new Promise(res => setTimeout(res, ms))
const lifecycle = { onTimeout: 'pause', autoResume: true }

// GET path of a server the sandbox runs on port, by its E2B host name
// (the test stack's E2B domain is e2b.test), behind its traffic token
// (one connection a request: a kept-alive one after a port relay was seen to
// hold the next pause for about 60 s, a matter of the port relay's, not this)
function portGet(sbx, port, path) {
  const u = new URL(process.env.E2B_SANDBOX_URL)
  return new Promise((resolve, reject) => {
    const req = http.request({ agent: false, host: u.hostname, port: u.port, path: u.pathname + path, headers: {
      Host: `${port}-${sbx.sandboxId}.e2b.test`, 'e2b-traffic-access-token': sbx.trafficAccessToken } }, res => {
      let body = ''
      res.on('data', d => { body += d })
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

check('paused_by_pause_is_resumed_by_a_command', async () => {
  const a = await Sandbox.create({ lifecycle, metadata: { t: 'auto_resume' } })
  const end0 = (await a.getInfo()).endAt.getTime()
  eq(await a.pause(), true, 'paused')
  eq((await a.getInfo()).state, 'paused', 'getInfo says paused')
  // envd's health is no traffic that resumes: isRunning() still tells
  eq(await a.isRunning(), false, 'isRunning() of a paused one')
  eq((await a.getInfo()).state, 'paused', 'the health check did not resume it')
  eq((await a.commands.run('echo hi')).stdout, 'hi\n', 'a command resumed it')
  const info = await a.getInfo()
  eq(info.state, 'running', 'getInfo says running')
  // as a connect without a timeout: one paused by pause() keeps its end
  assert(Math.abs(info.endAt.getTime() - end0) < 2000, 'its end is kept: ' + info.endAt.toISOString())
  eq(await a.pause(), true, 'paused again')
  await a.files.write('/tmp/ar.txt', 'x')
  eq((await a.getInfo()).state, 'running', 'a files write resumed it')
  eq(await a.files.read('/tmp/ar.txt'), 'x')
  await a.kill()
})

check('paused_one_is_resumed_by_port_traffic', async () => {
  const a = await Sandbox.create({ lifecycle })
  await a.files.write('/tmp/www/hello.txt', 'hello\n')
  await a.commands.run('python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/www', { background: true })
  let res
  for (let i = 0; i < 50; i++) { // until the server listens
    res = await portGet(a, 8000, '/hello.txt')
    if (res.status !== 502) break
    await sleep(100)
  }
  eq(res.status, 200, 'the server answers: ' + res.body)
  eq(await a.pause(), true, 'paused')
  res = await portGet(a, 8000, '/hello.txt')
  eq([res.status, res.body], [200, 'hello\n'], 'port traffic resumed it')
  eq((await a.getInfo()).state, 'running', 'getInfo says running')
  await a.kill()
})

check('paused_at_timeout_is_resumed_with_a_timeout_again', async () => {
  const a = await Sandbox.create({ timeoutMs: 2000, lifecycle })
  await a.commands.run('(while :; do date +%s%N >/tmp/tick; sleep 0.05; done) >/dev/null 2>&1 &')
  await sleep(4000)
  eq((await Sandbox.getInfo(a.sandboxId)).state, 'paused', 'paused at its timeout')
  const t1 = (await a.commands.run('cat /tmp/tick')).stdout
  eq((await a.getInfo()).state, 'running', 'the command resumed it')
  await sleep(300)
  assert((await a.commands.run('cat /tmp/tick')).stdout !== t1, 'its processes run on')
  const left = (await a.getInfo()).endAt.getTime() - Date.now()
  assert(left > 200e3 && left < 310e3, "a timeout again, E2B's default 300 s (as connect): " + left)
  await a.kill()
})

check('without_auto_resume_a_paused_one_refuses', async () => {
  const a = await Sandbox.create({ lifecycle: { onTimeout: 'pause' } })
  eq(await a.pause(), true, 'paused')
  const e = await raises(() => a.commands.run('echo hi'))
  assert(/frozen/.test(e.message), 'refused with the sentence: ' + e)
  eq((await a.getInfo()).state, 'paused', 'still paused')
  await a.kill()
})

check('auto_resume_without_auto_pause_is_refused', async () => {
  // the SDK checks this itself; a raw client gets the server's sentence
  const res = await fetch(process.env.E2B_API_URL + '/sandboxes', {
    method: 'POST',
    headers: { 'X-API-KEY': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ templateID: 'base', autoResume: { enabled: true } }),
  })
  eq(res.status, 400, 'a 400')
  assert(/autoResume needs autoPause/.test((await res.json()).message), 'with a sentence')
})

await runChecks()
