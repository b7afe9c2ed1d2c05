/**
 * Warming the driver port's per-query code before the first client comes. A freshly started
 * process runs this code in V8's interpreter until it has run often enough to be compiled: on
 * seed 000's loop (1000 sequential single-document inserts on a fresh server) the server's main
 * thread spent ~300–400 µs of CPU per insert cold against ~120 µs once warm (docs/BENCHMARKS.md).
 *
 * The warm-up runs the steps a query takes that touch no data: a frame read and its JSON parsed,
 * the term compiled, the single-document insert recognised (`singleInsertOf`) and its result built
 * and serialized, a full `runQuery` of an `r.expr(DOC)` (the evaluator, no table), and the response
 * frame encoded. Nothing reaches the engine or a socket, so no user data is written and no client
 * can see it; its cost is paid once, at startup.
 */

import { resultJson } from './cursor.js';
import { encodeQuery, encodeResponse, FrameReader } from './framing.js';
import { compile } from './term/compiler.js';
import { type EvaluatorDeps, runQuery } from './term/evaluator.js';
import { singleInsertOf } from './term/single-insert.js';
import { ResultBuilder } from './term/writes.js';

/** Rounds of the warm-up: enough for V8 to optimize the hot functions (~0.1–0.3 s at startup). */
export const WARM_UP_ROUNDS = 2000;

/** A document shaped like a typical small one: strings, numbers, a nested array, a boolean. */
function warmDoc(i: number): string {
  return `{"id":"warm-${i}","name":"name ${i}","email":"u${i}@example.org","age":${i % 90},"score":${i * 1.5},"tags":[2,["a","b"]],"active":${i % 2 === 0}}`;
}

/**
 * Runs `rounds` rounds of the per-query steps above. Resolves with the number of queries that
 * took each path, which a test checks (a warm-up that silently stopped exercising the insert
 * path would still "pass").
 */
export async function warmQueryPath(
  deps: EvaluatorDeps,
  rounds: number = WARM_UP_ROUNDS,
): Promise<{ inserts: number; exprs: number }> {
  const reader = new FrameReader(1 << 20);
  let inserts = 0;
  let exprs = 0;
  for (let i = 0; i < rounds; i++) {
    const doc = warmDoc(i);
    // What the official driver sends for r.table(T).insert(DOC, {durability}) and r.expr(DOC).
    reader.push(encodeQuery(2 * i + 1, `[1,[56,[[15,["warm_up"]],${doc}],{"durability":"hard"}],{}]`));
    reader.push(encodeQuery(2 * i + 2, `[1,${doc},{}]`));
    for (let ev = reader.next(); ev !== null; ev = reader.next()) {
      if (ev.kind !== 'frame') throw new Error('warm-up: a frame over the limit');
      const query = JSON.parse(ev.body.toString('utf8')) as [number, unknown, Record<string, unknown>];
      const root = compile(query[1]);
      let json: string;
      if (singleInsertOf(root, query[2]) !== undefined) {
        const result = new ResultBuilder(false);
        result.add({ inserted: 1, replaced: 0, unchanged: 0, deleted: 0, skipped: 0, errors: 0 });
        json = resultJson(result.build());
        inserts++;
      } else {
        const answer = await runQuery(deps, query[1], query[2]);
        if (answer.kind !== 'atom') throw new Error('warm-up: r.expr gave a stream');
        json = resultJson(answer.value);
        exprs++;
      }
      encodeResponse(ev.token, `{"t":1,"r":[${json}]}`);
    }
  }
  return { inserts, exprs };
}
