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
