// Seed 002's unit of work: one "block" document of ~900 KB holding many small transactions,
// as one JSON line. Deterministic; only the block id and height change from block to block.

let template: string | undefined;

function body(): string {
  if (template) return template;
  const txs: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < 900_000; i++) {
    const t =
      `{"id":"tx${String(i).padStart(7, '0')}","from":"addr${String((i * 7919) % 100000).padStart(6, '0')}",` +
      `"to":"addr${String((i * 104729) % 100000).padStart(6, '0')}","amount":${(i * 31) % 10000},"fee":${i % 17},"ts":${1_450_000_000 + i}}`;
    txs.push(t);
    bytes += t.length + 1;
  }
  template = `"transactions":[${txs.join(',')}]`;
  return template;
}

/** Block i as one JSON text (no newline), ~900 KB. */
export function blockLine(i: number): string {
  return `{"id":"b${String(i).padStart(8, '0')}","height":${i},${body()}}`;
}
