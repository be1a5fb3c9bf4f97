// getMetrics through the real e2b SDK: samples of the sandbox's cgroup
// (CPU time over time, memory, disk) as E2B returns them.
import { Sandbox, SandboxNotFoundError } from 'e2b'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

check('get_metrics_samples_cpu_memory_disk', async () => {
  const sbx = await Sandbox.create()
  try {
    // one CPU kept busy for a while, some memory held, 16 MiB written
    await sbx.commands.run('head -c 16777216 /dev/urandom > /root/blob', { user: 'root' })
    await sbx.commands.run('(timeout 120 sh -c "while :; do :; done" &) ; ' +
      '(timeout 120 python3 -c "import time; b = bytearray(64 << 20); time.sleep(120)" &)', { user: 'root' })
    let ms = [], busy = null
    for (let i = 0; i < 60 && !busy; i++) { // samples come every 5 s; this bounds a hang
      await new Promise(res => setTimeout(res, 1000))
      ms = await sbx.getMetrics()
      busy = ms.find(m => m.cpuUsedPct > 5)
    }
    assert(busy, 'a sample shows the busy CPU: ' + JSON.stringify(ms))
    const last = ms[ms.length - 1]
    assert(last.timestamp instanceof Date && !isNaN(last.timestamp), 'a timestamp: ' + last.timestamp)
    for (let i = 1; i < ms.length; i++)
      assert(ms[i].timestamp > ms[i - 1].timestamp, 'oldest first')
    assert(last.cpuCount >= 1 && busy.cpuUsedPct <= 100, 'cpu: ' + JSON.stringify(busy))
    assert(last.memUsed >= 64 << 20 && last.memTotal >= last.memUsed, 'memory: ' + JSON.stringify(last))
    assert(last.diskTotal > 0 && last.diskUsed >= 16 << 20 && last.diskUsed <= last.diskTotal, 'disk: ' + JSON.stringify(last))
    // start and end filter by time
    eq(await sbx.getMetrics({ start: new Date(Date.now() + 3600e3) }), [], 'none after an hour ahead')
    const upTo = await sbx.getMetrics({ end: busy.timestamp })
    assert(upTo.length >= 1 && upTo.every(m => m.timestamp.getTime() <= busy.timestamp.getTime() + 999), 'end')
  } finally {
    await sbx.kill()
  }
  const e = await raises(() => Sandbox.getMetrics(sbx.sandboxId))
  assert(e instanceof SandboxNotFoundError, 'a killed sandbox has none: ' + e)
})

await runChecks()
