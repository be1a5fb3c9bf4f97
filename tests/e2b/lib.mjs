// Tiny harness for the E2B SDK scripts: each check prints "PASS name" or
// "FAIL name: why" (the lines tests/run.sh counts), run one after another.
// The environment (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY) comes from
// tests/integration/test_e2b.py, which starts the stack.
export const checks = []
export function check(name, fn) { checks.push([name, fn]) }
export function assert(cond, msg) { if (!cond) throw new Error(msg || 'assertion failed') }
export function eq(a, b, msg) {
  const ja = JSON.stringify(a), jb = JSON.stringify(b)
  if (ja !== jb) throw new Error(`${msg || 'not equal'}: ${ja} != ${jb}`)
}
// Runs fn and returns the error it throws (fails when it does not).
export async function raises(fn, msg) {
  try { await fn() } catch (e) { return e }
  throw new Error(msg || 'expected an error')
}
export async function runChecks() {
  let failed = 0
  for (const [name, fn] of checks) {
    const t0 = Date.now()
    try {
      await fn()
      console.log(`PASS ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)`)
    } catch (e) {
      failed++
      console.log(`FAIL ${name}: ${(e && e.stack || String(e)).split('\n').slice(0, 3).join(' | ')}`)
    }
  }
  process.exit(failed ? 1 : 0)
}

// A server on 127.0.0.1:8080 of the sandbox that answers every GET with the
// request's headers, one "Name: value" line each (what a port relay passed).
export const HEADER_ECHO = `python3 -c "
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = ''.join(k + ': ' + v + chr(10) for k, v in self.headers.items()).encode()
        self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', 8080), H).serve_forever()
"`

// Starts cmd in sbx in the background (the header echo by default) and
// waits, at most 10 s, until 127.0.0.1:8080 answers 200 inside.
export async function serve8080(sbx, cmd = HEADER_ECHO) {
  await sbx.commands.run(cmd, { background: true })
  for (let i = 0; i < 50; i++) {
    const r = await sbx.commands.run('curl -s -o /dev/null -w %{http_code} http://127.0.0.1:8080/ || true')
    if (r.stdout.trim() === '200')
      return
    await new Promise((res) => setTimeout(res, 200))
  }
  throw new Error('the server in the sandbox did not start')
}
