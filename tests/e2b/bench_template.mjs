// One Template.build through the real SDK for bench/e2b_template.py: the
// steps of its Dockerfile (COPY data, a RUN with a nonce so the builder's
// cache misses, ENV), timed from the call to the SDK's return (node's own
// start left out). Prints "seconds <s>".
import { Template } from 'e2b'

const [ctx, alias, nonce] = process.argv.slice(2)
const tpl = Template({ fileContextPath: ctx })
  .fromImage('team/base:1')
  .copy('data', '/data')
  .runCmd(`mkdir -p /opt/out && cat /data/* > /opt/out/all && echo ${nonce}`)
  .setEnvs({ READY: '1' })
const t = process.hrtime.bigint()
await Template.build(tpl, { alias })
console.log(`seconds ${(Number(process.hrtime.bigint() - t) / 1e9).toFixed(3)}`)
