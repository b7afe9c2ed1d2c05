#!/usr/bin/env node
// The `wharf` command (package.json "bin": dist/bin.js).
import { main } from './main.js';

const code = await main(process.argv.slice(2));
// Let stdout drain, then exit with the status (open handles must not keep the process alive).
process.stdout.write('', () => process.exit(code));
