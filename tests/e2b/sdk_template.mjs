// E2B's template API through the real e2b SDK (Template().fromImage()...,
// Template.build): the steps become an llmbox image named by the alias,
// built by sandboxd, and Sandbox.create(alias) runs in it. TPL_BASE is a
// layered image of the test's store (tests/integration/test_e2b_template.py
// makes it with umoci: the default image is not made of layers).
import { Template, Sandbox, BuildError, FileUploadError } from 'e2b'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { check, assert, eq, raises, runChecks } from './lib.mjs'

const BASE = process.env.TPL_BASE
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llmbox-tpl-'))
fs.writeFileSync(path.join(dir, 'hello.txt'), 'hello from the template\n')
fs.mkdirSync(path.join(dir, 'app'))
fs.writeFileSync(path.join(dir, 'app', 'run.sh'), '#!/bin/sh\necho "ran as $(id -u)"\n', { mode: 0o755 })
fs.mkdirSync(path.join(dir, 'linked'))
fs.writeFileSync(path.join(dir, 'linked', 'a.txt'), 'a\n')
fs.symlinkSync('/etc/passwd', path.join(dir, 'linked', 'out'))

// The line this is called from (the SDK's BuildError points at a step's line).
function callerLine() { return new Error().stack.split('\n')[2].match(/:(\d+):\d+\)?$/)[1] }

// aptInstall, pipInstall and npmInstall arrive as RUN steps: the build asks
// sandboxd for the network (nat) where network_allow allows it, which
// test_e2b_template.py's stack does (TPL_NAT=1): the RUN's sandbox has
// slirp4netns's tap0 beside lo, where without it it has lo only
check('run_steps_get_the_build_network', async () => {
  const logs = []
  const tpl = Template().fromImage(BASE).runCmd('cat /proc/net/dev')
  await Template.build(tpl, { alias: 'tpl-net', onBuildLogs: (e) => logs.push(e.message) })
  const all = logs.join('\n')
  if (process.env.TPL_NAT === '1') {
    assert(/The RUN steps have the network \(nat\)/.test(all), 'the build says its network: ' + all.slice(-2000))
    assert(/tap0:/.test(all), 'the RUN has the network: ' + all.slice(-2000))
  } else {
    assert(/loopback only/.test(all) && !/tap0:/.test(all), 'without nat allowed, loopback only: ' + all.slice(-2000))
  }
})

check('build_with_logs_then_a_sandbox_of_it', async () => {
  const logs = []
  const tpl = Template({ fileContextPath: dir })
    .fromImage(BASE)
    .runCmd('echo hi > /built')
    .setEnvs({ A: '1', B: 'two words' })
    .copy('hello.txt', '/opt/hello.txt')
    .copy('app', '/opt/app')
    .runCmd('for f in /opt/hello.txt; do cat "$f"; done > /opt/seen && echo "step-output-$A"')
  const info = await Template.build(tpl, { alias: 'tpl-one', onBuildLogs: (e) => logs.push(e.message) })
  eq(info.templateId, 'tpl-one')
  const all = logs.join('\n')
  assert(/step-output-1/.test(all), 'a RUN\'s output reaches onBuildLogs: ' + all.slice(-2000))
  assert(/Sandbox\.create\("tpl-one"\)/.test(all), 'the last line says it is built: ' + all.slice(-500))
  const sbx = await Sandbox.create('tpl-one')
  try {
    eq((await sbx.commands.run('cat /built')).stdout, 'hi\n')
    eq((await sbx.commands.run('echo "$A|$B"')).stdout, '1|two words\n', 'setEnvs is the image\'s Env')
    eq(await sbx.files.read('/opt/hello.txt'), 'hello from the template\n')
    eq(await sbx.files.read('/opt/seen'), 'hello from the template\n', 'a RUN after the copy sees the file')
    eq((await sbx.commands.run('/opt/app/run.sh')).stdout, 'ran as 0\n', 'a copied folder keeps its x bit')
  } finally {
    await sbx.kill()
  }
  assert(await Template.exists('tpl-one'), 'Template.exists sees it')
  assert(!(await Template.exists('tpl-never-built')), 'and not a name never built')
})

check('failing_run_is_a_build_error_with_the_sentence', async () => {
  const logs = []
  const tpl = Template().fromImage(BASE).runCmd('echo going-to-fail; exit 3'); const line = callerLine()
  const e = await raises(() => Template.build(tpl, { alias: 'tpl-fail', onBuildLogs: (l) => logs.push(l.message) }))
  assert(e instanceof BuildError, 'BuildError: ' + e)
  assert(/RUN/.test(e.message) && /3/.test(e.message), 'the step and its exit code: ' + e.message)
  assert(logs.join('\n').includes('going-to-fail'), 'the failing step\'s output was streamed')
  assert(String(e.stack).includes(`sdk_template.mjs:${line}:`), `the error points at the runCmd line ${line}: ` + e.stack)
  const e2 = await raises(() => Sandbox.create('tpl-fail'))
  assert(/tpl-fail/.test(e2.message), 'nothing was registered under the name: ' + e2)
})

check('a_step_llmbox_cannot_do_is_said', async () => {
  const tpl = Template().fromImage(BASE).runCmd('true').setStartCmd('sleep 1000', 'true')
  const e = await raises(() => Template.build(tpl, { alias: 'tpl-start' }))
  assert(e instanceof BuildError && /setStartCmd/.test(e.message), 'setStartCmd refused in a sentence: ' + e)
  const t2 = Template({ fileContextPath: dir }).fromImage(BASE).copy('hello.txt', '/x', { user: 'user' })
  const e2 = await raises(() => Template.build(t2, { alias: 'tpl-owner' }))
  assert(e2 instanceof BuildError && /numeric owner/.test(e2.message), 'a named owner refused: ' + e2)
})

check('a_symlink_in_the_upload_is_refused', async () => {
  const tpl = Template({ fileContextPath: dir }).fromImage(BASE).copy('linked', '/opt/linked')
  const e = await raises(() => Template.build(tpl, { alias: 'tpl-link' }))
  assert(e instanceof FileUploadError, 'the upload is refused: ' + e)
})

await runChecks()
