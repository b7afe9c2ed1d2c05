/** The suite's scenarios, in the order `all` runs them. A module of its own, so `wharf`'s option
 * parsing can list them without loading the suite. */
export const SCENARIOS = [
  'limit',
  'seed000',
  'group-commit',
  'bulk',
  'import',
  'job',
  'sustained',
  'kv',
  'reql',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];
