// E2B's protocol's last pieces through the E2B SDK, each beside a peer measured
// in the same run (bench/e2b.py --fin starts the stack):
//   stat: files.getInfo(path) vs the native GET /api/sandboxes/{id}/stat/{path}
//     of the same file in the same sandbox (an E2B sandbox is an API one);
//   watch: files.write of a new file until watchDir's create event for it,
//     vs the same files.write's own round trip (the event's extra delay);
//   pty: typing `echo mN` on sbx.pty until mN comes back, vs
//     commands.run('echo mN') (a process per command).
// Prints one JSON line of figures (ms).
import { Sandbox } from 'e2b'

const K = Number(process.env.BENCH_RT || 200)
const base = process.env.LLMBOX_URL
const auth = { Authorization: 'Bearer ' + process.env.E2B_API_KEY }
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))] }
const stats = a => ({ p50: +pct(a, 0.5).toFixed(2), p90: +pct(a, 0.9).toFixed(2), max: +Math.max(...a).toFixed(2), n: a.length })
const sleep = ms => new Promise(r => setTimeout(r, ms))

const sbx = await Sandbox.create({ timeoutMs: 600000 })
await sbx.files.write('/tmp/b/f.txt', 'x')
const statE = [], statN = []
for (let i = 0; i < K; i++) {
  let t0 = performance.now()
  await sbx.files.getInfo('/tmp/b/f.txt')
  statE.push(performance.now() - t0)
  t0 = performance.now()
  const r = await fetch(`${base}/api/sandboxes/${sbx.sandboxId}/stat/tmp/b/f.txt`, { headers: auth })
  if (!r.ok) throw new Error('native stat ' + r.status)
  await r.json()
  statN.push(performance.now() - t0)
}

await sbx.files.makeDir('/tmp/w')
const seen = new Map()
const h = await sbx.files.watchDir('/tmp/w', e => { if (e.type === 'create') seen.set(e.name, performance.now()) }, { timeoutMs: 0 })
const watchE = [], writeRt = []
for (let i = 0; i < K; i++) {
  const name = 'f' + i
  const t0 = performance.now()
  await sbx.files.write('/tmp/w/' + name, 'x')
  writeRt.push(performance.now() - t0)
  while (!seen.has(name)) await sleep(0)
  watchE.push(seen.get(name) - t0)
}
await h.stop()

let out = ''
const dec = new TextDecoder()
const p = await sbx.pty.create({ cols: 80, rows: 24, timeoutMs: 0, onData: d => { out += dec.decode(d, { stream: true }) } })
await sbx.pty.sendInput(p.pid, new TextEncoder().encode("PS1='$ '\n"))
await sleep(300)
const ptyE = [], cmdRt = []
for (let i = 0; i < K; i++) {
  // the output line, not the terminal's echo of what was typed (readline
  // may put escape sequences before it)
  const want = new RegExp(`(?<!echo )m${i}\\r\\n`)
  out = ''
  let t0 = performance.now()
  await sbx.pty.sendInput(p.pid, new TextEncoder().encode(`echo m${i}\n`))
  while (!want.test(out)) await sleep(0)
  ptyE.push(performance.now() - t0)
  t0 = performance.now()
  await sbx.commands.run(`echo m${i}`)
  cmdRt.push(performance.now() - t0)
}
await sbx.pty.kill(p.pid)
await sbx.kill()
console.log(JSON.stringify({ stat: { e2b: stats(statE), native: stats(statN) },
  watch: { event: stats(watchE), write: stats(writeRt) }, pty: { echo: stats(ptyE), command: stats(cmdRt) } }))
