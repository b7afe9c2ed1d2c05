/** Helpers shared by the driver tests. */

/** A JSON array of documents without ids, about `bytes` long (seed 002's BLOCK). */
export function makeBlock(bytes: number): { text: string; docs: number } {
  const docs: object[] = [];
  let size = 2;
  for (let i = 0; size < bytes; i++) {
    const doc = { seq: i, kind: 'block', payload: 'x'.repeat(280) };
    size += JSON.stringify(doc).length + 1;
    docs.push(doc);
  }
  return { text: JSON.stringify(docs), docs: docs.length };
}

export interface Stats {
  engine: Record<string, number>;
  server: Record<string, number>;
}

export async function serverStats(url: string): Promise<Stats> {
  const res = await fetch(`${url}/api/stats`);
  if (!res.ok) throw new Error(`GET /api/stats: ${res.status}`);
  return (await res.json()) as Stats;
}
