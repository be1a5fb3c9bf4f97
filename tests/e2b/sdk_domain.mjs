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

// sbx.getHost(port): a server the sandbox's code started, through its host
// name, behind the sandbox's traffic token
check('get_host_reaches_a_server_in_the_sandbox', async () => {
  const sbx = await Sandbox.create()
  try {
    await sbx.files.write('/tmp/www/hello.txt', 'hello from the sandbox\n')
    await sbx.commands.run('python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/www', { background: true })
    const host = sbx.getHost(8000)
    eq(host, `8000-${sbx.sandboxId}.${domain}`)
    assert(sbx.trafficAccessToken, 'create answers a traffic token')
    const h = { 'e2b-traffic-access-token': sbx.trafficAccessToken }
    let res
    for (let i = 0; i < 50; i++) { // until the server listens
      res = await fetch(`https://${host}/hello.txt`, { headers: h })
      if (res.status !== 502) break
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    eq(res.status, 200)
    eq(await res.text(), 'hello from the sandbox\n')
    eq((await fetch(`https://${host}/nope`, { headers: h })).status, 404, 'the server\'s own answers pass')
    // a server that echoes what reached it: method, path and query, a header, the body
    await sbx.files.write('/tmp/echo.py', [
      'import http.server',
      'class H(http.server.BaseHTTPRequestHandler):',
      '    def do_POST(self):',
      '        body = self.rfile.read(int(self.headers["Content-Length"]))',
      '        out = ("%s %s %s %d %s" % (self.command, self.path, self.headers["X-Test"], len(body),',
      '               self.headers.get("X-Access-Token"))).encode()',
      '        self.send_response(201)',
      '        self.send_header("X-Echo", "yes")',
      '        self.send_header("Content-Length", str(len(out)))',
      '        self.end_headers()',
      '        self.wfile.write(out)',
      'http.server.HTTPServer(("127.0.0.1", 8002), H).serve_forever()', ''].join('\n'))
    await sbx.commands.run('python3 /tmp/echo.py', { background: true })
    let post
    for (let i = 0; i < 50; i++) {
      post = await fetch(`https://${sbx.getHost(8002)}/p/a?q=1&r=%20`,
        { method: 'POST', headers: { ...h, 'X-Test': 'v', 'X-Access-Token': 'x' }, body: 'x'.repeat(100000) })
      if (post.status !== 502) break
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    eq(post.status, 201, 'the server\'s status')
    eq(post.headers.get('x-echo'), 'yes', 'its headers')
    eq(await post.text(), 'POST /p/a?q=1&r=%20 v 100000 None', 'method, path, query, headers and body relayed; the token not')
    eq((await fetch(`https://${host}/hello.txt`)).status, 403, 'no token, no way in')
    eq((await fetch(`https://${host}/hello.txt`, { headers: { 'e2b-traffic-access-token': 'f'.repeat(64) } })).status,
      403, 'another token, no way in')
    // hostile servers: no HTTP head, a head without end, a close at once
    await sbx.files.write('/tmp/bad.py', [
      'import socket, threading',
      'def serve(port, answer):',
      '    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
      '    s.bind(("127.0.0.1", port)); s.listen()',
      '    while True:',
      '        c, _ = s.accept(); c.recv(65536)',
      '        try: c.sendall(answer)',
      '        except OSError: pass',
      '        c.close()',
      'for port, answer in ((8003, b"garbage\\r\\n\\r\\n"), (8004, b"HTTP/1.0 200 OK\\r\\nX: " + b"y" * 200000),',
      '                     (8005, b""), (8006, b"HTTP/1.0 99 Odd\\r\\n\\r\\n")):',
      '    threading.Thread(target=serve, args=(port, answer)).start()',
      'serve(8007, b"HTTP/1.0 200 OK\\r\\nX-Accel-Redirect: /_errors/bad_request\\r\\nContent-Length: 2\\r\\n\\r\\nok")',
      ''].join('\n'))
    await sbx.commands.run('python3 /tmp/bad.py', { background: true })
    for (const port of [8003, 8004, 8005, 8006]) {
      let text = ''
      let status = 0
      for (let i = 0; i < 50 && (!status || /port is not open/.test(text)); i++) {
        if (i) await new Promise(resolve => setTimeout(resolve, 100))
        const bad = await fetch(`https://${sbx.getHost(port)}/`, { headers: h })
        status = bad.status
        text = await bad.text()
      }
      eq(status, 502, `port ${port}: a 502`)
      assert(/server in the sandbox/.test(text), `port ${port} says why: ${text}`)
    }
    // X-Accel-Redirect from the sandbox's server: nginx must not follow it
    let accel
    for (let i = 0; i < 50; i++) {
      accel = await fetch(`https://${sbx.getHost(8007)}/`, { headers: h })
      if (accel.status !== 502) break
      await accel.text()
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    eq(accel.status, 200, 'the server\'s own answer')
    eq(await accel.text(), 'ok', 'not the internal location it named')
    eq(accel.headers.get('x-accel-redirect'), null)
    const closed = await fetch(`https://${sbx.getHost(8001)}/`, { headers: h })
    eq(closed.status, 502, 'nothing listens there')
    assert(/port is not open/.test(await closed.text()), 'and it says so')
  } finally {
    await sbx.kill()
  }
  // a port of a killed sandbox: E2B's edge's answer, which clients read
  const gone = await fetch(`https://${sbx.getHost(3000)}/`)
  eq(gone.status, 502, 'a killed sandbox\'s port')
  eq(await gone.json(), { message: 'The sandbox was not found', sandboxId: sbx.sandboxId, code: 502 },
    'E2B\'s body for it')
})

// network.allowPublicTraffic true (E2B's own default): the sandbox's ports
// answer without its traffic token; without it (llmbox's default) and with
// false they need it; envd always needs its access token
check('allow_public_traffic_true_opens_ports_only', async () => {
  const open = await Sandbox.create({ network: { allowPublicTraffic: true } })
  const closed = await Sandbox.create({ network: { allowPublicTraffic: false } })
  try {
    for (const s of [open, closed])
      await s.commands.run('python3 -m http.server 8003 --bind 127.0.0.1 --directory /tmp', { background: true })
    const get = async (s, h) => {
      for (let i = 0; i < 50; i++) {
        const res = await fetch(`https://${s.getHost(8003)}/`, { headers: h || {} })
        if (res.status !== 502) return res.status
        await new Promise(resolve => setTimeout(resolve, 100))
      }
      return 502
    }
    eq(await get(open), 200, 'public: no token needed')
    eq(await get(closed), 403, 'allowPublicTraffic false: the token is needed')
    eq(await get(closed, { 'e2b-traffic-access-token': closed.trafficAccessToken }), 200, 'and opens it')
    const envd = await fetch(`https://${open.getHost(49983)}/process.Process/List`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })
    eq(envd.status, 401, 'envd still needs the access token')
  } finally {
    await open.kill()
    await closed.kill()
  }
})

await runChecks()
