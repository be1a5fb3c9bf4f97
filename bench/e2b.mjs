// The E2B SDK against llmbox's own /api/sandboxes, interleaved in one run
// (bench/e2b.py starts the stack and passes the environment):
//   create -> first output: Sandbox.create + commands.run('echo hi') until
//     its first stdout, vs POST /api/sandboxes + POST .../exec 'echo hi';
//   a command's round trip on a running sandbox: commands.run('true') vs
//     POST .../exec 'true'.
// The SDK runs every command as `/bin/bash -l -c CMD` (a login shell, which
// reads /etc/profile): "native_same" is the native exec of that same line,
// so the difference to it is the protocol's cost alone.
// Prints one JSON line of figures (ms).
import { Sandbox } from 'e2b'

const N = Number(process.env.BENCH_N || 100)
const RT = Number(process.env.BENCH_RT || 200)
const base = process.env.LLMBOX_URL
const auth = { Authorization: 'Bearer ' + process.env.E2B_API_KEY, 'Content-Type': 'application/json' }

async function native(method, path, body) {
  const r = await fetch(base + path, { method, headers: auth, body: body && JSON.stringify(body) })
  const j = await r.json()
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(j)}`)
  return j
}

const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))] }
const stats = a => ({ p50: +pct(a, 0.5).toFixed(2), p90: +pct(a, 0.9).toFixed(2), max: +Math.max(...a).toFixed(2), n: a.length })

const e2bFirst = [], nativeFirst = [], sameFirst = []
for (let i = 0; i < N; i++) {
  let t0 = performance.now(), t1 = 0
  const sbx = await Sandbox.create()
  await sbx.commands.run('echo hi', { onStdout: () => { if (!t1) t1 = performance.now() } })
  e2bFirst.push(t1 - t0)
  await sbx.kill()
  t0 = performance.now()
  const s = await native('POST', '/api/sandboxes', {})
  const o = await native('POST', `/api/sandboxes/${s.id}/exec`, { command: 'echo hi' })
  if (o.stdout !== 'hi\n') throw new Error('native exec: ' + JSON.stringify(o))
  nativeFirst.push(performance.now() - t0)
  await native('DELETE', `/api/sandboxes/${s.id}`)
  t0 = performance.now()
  const s2 = await native('POST', '/api/sandboxes', {})
  const o2 = await native('POST', `/api/sandboxes/${s2.id}/exec`, { command: "/bin/bash -l -c 'echo hi'" })
  if (o2.stdout !== 'hi\n') throw new Error('native exec: ' + JSON.stringify(o2))
  sameFirst.push(performance.now() - t0)
  await native('DELETE', `/api/sandboxes/${s2.id}`)
}

const sbx = await Sandbox.create()
const s = await native('POST', '/api/sandboxes', {})
const e2bRt = [], nativeRt = [], sameRt = []
for (let i = 0; i < RT; i++) {
  let t0 = performance.now()
  await sbx.commands.run('true')
  e2bRt.push(performance.now() - t0)
  t0 = performance.now()
  await native('POST', `/api/sandboxes/${s.id}/exec`, { command: 'true' })
  nativeRt.push(performance.now() - t0)
  t0 = performance.now()
  await native('POST', `/api/sandboxes/${s.id}/exec`, { command: "/bin/bash -l -c 'true'" })
  sameRt.push(performance.now() - t0)
}
await sbx.kill()
await native('DELETE', `/api/sandboxes/${s.id}`)
console.log(JSON.stringify({
  create_first_output: { e2b: stats(e2bFirst), native: stats(nativeFirst), native_same: stats(sameFirst) },
  round_trip: { e2b: stats(e2bRt), native: stats(nativeRt), native_same: stats(sameRt) },
}))
