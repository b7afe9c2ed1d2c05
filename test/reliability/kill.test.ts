/**
 * SIGKILL the real server under mixed load (driver, HTTP and ws writers, hard writes and soft
 * writes followed by syncs), restart it on the same data directory, and check every write
 * acknowledged as durable: 10 rounds here; `scripts/reliability/kill-campaign.ts` runs hundreds
 * with the same implementation (kill-campaign.ts). The seed is printed; WHARF_KILL_SEED replays.
 */
import { expect, it } from 'vitest';
import { formatFigures, runKillCampaign } from './kill-campaign.js';

const ROUNDS = 10;

it(`every write acknowledged as durable survives SIGKILL of the server (${ROUNDS} rounds)`, {
  timeout: 600_000,
}, async () => {
  const seed = Number(process.env.WHARF_KILL_SEED ?? Math.floor(Math.random() * 2 ** 31));
  console.log(`kill campaign seed ${seed} (replay: WHARF_KILL_SEED=${seed})`);
  const result = await runKillCampaign({ rounds: ROUNDS, seed });
  const figures = formatFigures(result);
  console.log(figures);
  if (result.failures.length > 0) throw new Error(`${figures}\n\n${result.failures.join('\n\n')}`);

  expect(result.roundsRun).toBe(ROUNDS);
  expect(result.killsDuringLoad).toBe(ROUNDS);
  // Every start (the first, each restart, the final one) listened and passed its check.
  expect(result.restartsServed).toBe(ROUNDS + 1);
  expect(result.lost).toBe(0);
  // The campaign tested something: every door had durable writes checked after a kill, by
  // hard acknowledgement and by sync.
  for (const door of ['driver', 'http', 'ws'] as const) {
    const f = result.doors[door];
    expect(f.hardAcknowledged, `${door}: hard writes acknowledged`).toBeGreaterThan(0);
    expect(f.softSynced, `${door}: soft writes made durable by a sync`).toBeGreaterThan(0);
    expect(f.durableChecked, `${door}: durable writes checked after a restart`).toBe(f.durableAcknowledged);
  }
});
