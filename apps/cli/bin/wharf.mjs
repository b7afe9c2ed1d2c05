#!/usr/bin/env node
// The `wharf` command: the built CLI (src/bin.ts → dist/bin.js). A file of its own, always
// present, so that npm links the command before the build exists (a fresh clone's npm install
// links bins first and builds after).
import '../dist/bin.js';
