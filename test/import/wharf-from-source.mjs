// The `wharf` command run from source for the import tests: tsx (found from this file, whatever
// the child's working directory) loads apps/cli/src/bin.ts as it is. The workspace packages
// resolve to their sources through NODE_OPTIONS=--conditions=wharf-source (vitest.config.ts).
import { register } from 'tsx/esm/api';

register();
await import('../../apps/cli/src/bin.ts');
