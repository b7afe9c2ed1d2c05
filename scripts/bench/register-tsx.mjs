// Imported by `wharf bench` (apps/cli, built JavaScript) before it loads the suite's TypeScript:
// tsx is resolved from here, in the clone, whatever the working directory.
import { register } from 'tsx/esm/api';

register();
