// Test scaffolding, not a change to the SDK: loaded with `node --import`,
// it makes `*.<domain>` resolve to one loopback address for this process
// only (LLMBOX_TEST_RESOLVE="<domain>=<address>"), the way a wildcard DNS
// record would. Every other name resolves as usual.
import dns from 'node:dns'

const [domain, address] = (process.env.LLMBOX_TEST_RESOLVE || '').split('=')
if (!domain || !address) throw new Error('LLMBOX_TEST_RESOLVE must be <domain>=<address>')
const suffix = '.' + domain.toLowerCase()
const real = dns.lookup

dns.lookup = function lookup (host, opts, cb) {
  if (typeof opts === 'function') {
    cb = opts
    opts = {}
  }
  if (typeof host !== 'string' || !host.toLowerCase().endsWith(suffix)) return real.call(dns, host, opts, cb)
  const all = typeof opts === 'object' && opts !== null && opts.all
  process.nextTick(() => all ? cb(null, [{ address, family: 4 }]) : cb(null, address, 4))
}
