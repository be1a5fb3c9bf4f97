// E2B's own example (the e2b package's README, "Start a sandbox and run
// commands"), unchanged: test_e2b.py checks what it prints.
import { Sandbox } from 'e2b'

const sandbox = await Sandbox.create()
const result = await sandbox.commands.run('echo "Hello from E2B!"')
console.log(result.stdout) // Hello from E2B!
