/**
 * @wharf/bench: the benchmark suite that `wharf bench` runs (scenarios/), the per-issue goal
 * scripts of the repository (goals/), and the generators of their documents: `@wharf/bench/random`
 * (mulberry32, the project's one seeded PRNG) and `@wharf/bench/ycsb` (what `wharf gen` writes).
 */

export { mulberry32 } from './random.js';
export type { ChartSpec, Row, ScenarioResult } from './scenarios/common.js';
export {
  type BenchSuiteOptions,
  type BenchSuiteOutput,
  benchMemoryBudgetMb,
  missingFor,
  parseScenarios,
  runBenchSuite,
  SCENARIOS,
  type ScenarioName,
  summaryTable,
} from './scenarios/index.js';
