// The `wharf` command, run by bin/wharf.mjs (package.json "bin").
import { main } from './main.js';

const code = await main(process.argv.slice(2));
// Let stdout drain, then exit with the status (open handles must not keep the process alive).
process.stdout.write('', () => process.exit(code));
