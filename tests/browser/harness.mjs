// The PASS/FAIL plumbing every browser script shares (tests/browser/*_e2e.mjs).
//
//   import { check, block, sleep, exitStatus } from './harness.mjs';
//   check(name, ok, why)   prints "PASS name" or "FAIL name: why" (first line, 300 chars)
//   await block(name, fn)  runs fn; an exception fails `name` with its message
//   process.exit(exitStatus())  1 when anything failed

let failed = 0;

export function check(name, ok, why = '') {
  console.log(ok ? `PASS ${name}` : `FAIL ${name}: ${String(why).split('\n')[0].slice(0, 300)}`);
  if (!ok) failed++;
  return ok;
}

export async function block(name, fn) {
  try {
    await fn();
  } catch (e) {
    check(name, false, e && e.message ? e.message : e);
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export const exitStatus = () => (failed ? 1 : 0);
