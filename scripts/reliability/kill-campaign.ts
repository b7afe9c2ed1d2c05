/**
 * The SIGKILL campaign of the server, for as many rounds as you like:
 *
 *   npx tsx scripts/reliability/kill-campaign.ts [ROUNDS=200] [SEED=random]
 *
 * Same implementation as test/reliability/kill.test.ts (test/reliability/kill-campaign.ts). Prints
 * one line per round, then the figures (rounds, kills, writes acknowledged and checked per door,
 * lost); exits 1 and lists the failures (door, key, expected, found) if anything owed is missing
 * or wrong, keeping the data directory.
 */
import { formatFigures, runKillCampaign } from '../../test/reliability/kill-campaign.ts';

// The server children run the workspace sources, as under vitest (vitest.config.ts).
if (!(process.env.NODE_OPTIONS ?? '').includes('--conditions=wharf-source')) {
  process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, '--conditions=wharf-source'].filter(Boolean).join(' ');
}

const [roundsArg, seedArg] = process.argv.slice(2);
const rounds = roundsArg === undefined ? 200 : Number(roundsArg);
const seed = seedArg === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(seedArg);
if (!Number.isInteger(rounds) || rounds < 1 || !Number.isInteger(seed) || seed < 0) {
  process.stderr.write('usage: tsx scripts/reliability/kill-campaign.ts [ROUNDS (integer ≥ 1)] [SEED (integer ≥ 0)]\n');
  process.exit(2);
}

const started = Date.now();
process.stdout.write(
  `kill campaign: ${rounds} rounds, seed ${seed} (replay: tsx scripts/reliability/kill-campaign.ts ${rounds} ${seed})\n`,
);
const result = await runKillCampaign({ rounds, seed, log: (line) => process.stdout.write(`${line}\n`) });
process.stdout.write(`${formatFigures(result)}\nwall time ${Math.round((Date.now() - started) / 1000)} s\n`);
if (result.failures.length > 0) {
  process.stdout.write(`\n${result.failures.join('\n\n')}\n`);
  process.exit(1);
}
