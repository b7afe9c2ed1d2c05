#!/usr/bin/env node
// The `wharf` command: registers tsx so the TypeScript sources run as they are, then hands over.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/main.ts');
const code = await main(process.argv.slice(2));
// Let stdout drain, then exit with the status (open handles must not keep the process alive).
process.stdout.write('', () => process.exit(code));
