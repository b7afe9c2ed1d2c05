/**
 * @wharf/bench: the benchmark suite that `wharf bench` runs (scenarios/), the per-issue goal
 * scripts of the repository (goals/), and the generators of their documents: `@wharf/bench/random`
 * (mulberry32, the project's one seeded PRNG) and `@wharf/bench/ycsb` (what `wharf gen` writes).
 */
export {
  benchMemoryBudgetMb,
  missingFor,
  parseScenarios,
  runBenchSuite,
  SCENARIOS,
  summaryTable,
  type BenchSuiteOptions,
  type BenchSuiteOutput,
  type ScenarioName,
} from './scenarios/index.js';
export type { ChartSpec, Row, ScenarioResult } from './scenarios/common.js';
export { mulberry32 } from './random.js';
