/**
 * The SIGKILL campaign of the server: one implementation, run for a few rounds by
 * `kill.test.ts` (CI) and for hundreds by `scripts/reliability/kill-campaign.ts`.
 *
 * Each round starts the real server (packages/server/src/main.ts, as `wharf serve` runs it) on
 * one data directory, checks every write acknowledged as durable in the rounds before, loads it
 * through all three doors at once (the official `rethinkdb` driver, HTTP, the ws ingest), and
 * SIGKILLs it at a moment drawn from the seed. Some rounds also kill the restart itself between
 * the moment it opens the data directory (seen in /proc/PID/fd) and the moment it listens:
 * recovery (`Database.open`) and the listeners' start, killed part-way. After the last round one
 * more restart is checked, and that server must then exit 0 on SIGTERM.
 *
 * Durable acknowledgement, per door: a hard write answered as successful, or a soft write
 * answered as successful and followed by a sync that completed (driver `table.sync()`, HTTP
 * `POST /api/sync`, ws `sync` → `synced`). Only those are owed after a kill; soft writes without
 * a completed sync may or may not survive.
 *
 * The model, so that every check is exact while keys are rewritten round after round: each
 * writer owns its keys and never has two writes of one key in flight. Every write of a key gets
 * the next version number, and the value of (door, key, version) is a pure function (a document,
 * or a delete for some versions on the driver and HTTP doors). Per key the campaign keeps the
 * highest version sent and a floor: the newest version acknowledged as durable, or seen after a
 * restart (a value a restart served must never go back). After a restart each key must hold a
 * version between its floor and the highest sent, whose value is exactly the function's; a key
 * with no document is fine only if no floor binds it or a version in that range is a delete.
 *
 * Choices (operations, keys, batch sizes, durabilities, kill moments, memory budgets) come from
 * the seed, so a failing seed replays the same plan; the interleaving of real processes does not
 * replay exactly. Memory budgets of 4 to 64 MiB make checkpoints, run files, merges and segment
 * recycling happen within a round, so kills land in them too.
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { decodeServerMessage, encodeFrame, type ServerMessage, type WriteResult } from '@wharf/wire';
import rethinkdb from 'rethinkdb';
import WebSocket from 'ws';
import { rng } from '../helpers/rng.js';
import { makeTempDir, removeDir, type SpawnedServer, spawnServer } from '../helpers/spawn-server.js';

// @types/rethinkdb lags the driver (no sync on tables, conflict: 'replace' typing…): untyped.
type Any = any;
const r: Any = rethinkdb;

export const DOORS = ['driver', 'http', 'ws'] as const;
export type Door = (typeof DOORS)[number];

export interface CampaignOptions {
  rounds: number;
  seed: number;
  /** Kill moments are drawn from [minLoadMs, maxLoadMs] after the load starts. Default 150..2500. */
  minLoadMs?: number;
  maxLoadMs?: number;
  /** Share of restarts killed after opening the data directory, before listening. Default 0.15. */
  startupKillShare?: number;
  /** Writers per door (driver connections, HTTP request loops, ws connections). Default 2. */
  writersPerDoor?: number;
  /** Keys each writer owns (rewritten across rounds). Default 1500. */
  keysPerWriter?: number;
  /** Progress lines (one per round). */
  log?: (line: string) => void;
  /** Keep the data directory after a clean campaign (it is always kept after a failure). */
  keepDataDir?: boolean;
}

export interface DoorFigures {
  /** Writes (documents or deletes) answered as successful, any durability. */
  writesAcknowledged: number;
  /** Of those, hard ones. */
  hardAcknowledged: number;
  /** Soft writes made durable by a completed sync. */
  softSynced: number;
  /** Syncs completed. */
  syncs: number;
  /** hardAcknowledged + softSynced: writes owed after every kill. */
  durableAcknowledged: number;
  /** Durable-acknowledged writes checked at the restart after them (each once). */
  durableChecked: number;
  /** Key checks made at restarts (every key with a floor, every restart). */
  keyChecks: number;
  /** Keys missing or holding an older version than owed. */
  lost: number;
  /** Documents whose value is not what was written for their version (or a version never sent). */
  wrong: number;
}

export interface CampaignResult {
  seed: number;
  roundsPlanned: number;
  roundsRun: number;
  killsDuringLoad: number;
  killsDuringStartup: number;
  /** Starts that reached "listening" and passed their check (the first start included). */
  restartsServed: number;
  doors: Record<Door, DoorFigures>;
  lost: number;
  wrong: number;
  /** Empty when the campaign passed. Each names round, door, key, expected and found. */
  failures: string[];
  dataDir: string;
  /** Replays this campaign: the environment variable and arguments to pass. */
  replay: string;
}

const TABLE: Record<Door, string> = { driver: 'kill_driver', http: 'kill_http', ws: 'kill_ws' };
const START_TIMEOUT_MS = 120_000;
/** After the kill, how long the doors' loops get to notice their connections died. */
const SETTLE_MS = 15_000;
/** Failures listed in full; the rest are counted. */
const MAX_LISTED = 25;

// ---------------------------------------------------------------------------------------------
// The value model

/** FNV-1a, 32 bits: the deterministic source of every document's content. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Whether version `ver` of `key` is a delete (about 1 in 8 on the doors that can delete). */
export function isDelete(door: Door, key: string, ver: number): boolean {
  return door !== 'ws' && hash(`del:${key}#${ver}`) % 8 === 0;
}

const PAD_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789 "\\\n\té日本語🚢';

/** The document written as version `ver` of `key` through `door`. */
export function documentFor(door: Door, key: string, ver: number): Record<string, unknown> {
  const h = hash(`${door}:${key}#${ver}`);
  const chars = [...PAD_CHARS];
  let pad = '';
  const len = h % 400;
  for (let i = 0, x = h; i < len; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    pad += chars[(x >>> 16) % chars.length];
  }
  return {
    id: key,
    door,
    ver,
    n: h % 1_000_003,
    neg: -(h % 97) / 8,
    flag: (h & 1) === 1,
    tags: [h % 7, `t${ver}`],
    nested: { pad, none: null },
  };
}

function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

interface KeyState {
  /** The newest version owed (0: nothing owed yet). */
  floor: number;
  /** Why the floor is owed, for failure messages. */
  floorWhy: string;
  /** The highest version sent (0: never written). */
  maxSent: number;
  /** A write of this key is in flight (its writer picks other keys meanwhile). */
  pending: boolean;
}

class Model {
  readonly keys: Record<Door, Map<string, KeyState>> = { driver: new Map(), http: new Map(), ws: new Map() };
  readonly figures: Record<Door, DoorFigures>;
  /** Durable acknowledgements since the last check, per door: counted as checked at the next. */
  readonly uncheckedDurable: Record<Door, number> = { driver: 0, http: 0, ws: 0 };

  constructor() {
    const zero = (): DoorFigures => ({
      writesAcknowledged: 0,
      hardAcknowledged: 0,
      softSynced: 0,
      syncs: 0,
      durableAcknowledged: 0,
      durableChecked: 0,
      keyChecks: 0,
      lost: 0,
      wrong: 0,
    });
    this.figures = { driver: zero(), http: zero(), ws: zero() };
  }

  state(door: Door, key: string): KeyState {
    let s = this.keys[door].get(key);
    if (!s) {
      s = { floor: 0, floorWhy: '', maxSent: 0, pending: false };
      this.keys[door].set(key, s);
    }
    return s;
  }

  /** A write is about to be sent: its version. */
  send(door: Door, key: string): number {
    const s = this.state(door, key);
    s.pending = true;
    return ++s.maxSent;
  }

  /** Its answer came (or the connection died): the key may be written again. */
  settle(door: Door, key: string): void {
    this.state(door, key).pending = false;
  }

  /** A write is owed from now on. */
  durable(door: Door, key: string, ver: number, why: string): void {
    const s = this.state(door, key);
    this.figures[door].durableAcknowledged++;
    this.uncheckedDurable[door]++;
    if (ver > s.floor) {
      s.floor = ver;
      s.floorWhy = why;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The check after a restart

async function scanTable(server: SpawnedServer, table: string, maxDocs: number): Promise<Record<string, unknown>[]> {
  const docs: Record<string, unknown>[] = [];
  let after: string | null = null;
  const pageRows = 10_000;
  for (let page = 0; page <= maxDocs / pageRows + 1; page++) {
    const q = new URLSearchParams({ limit: String(pageRows) });
    if (after !== null) q.set('after', after);
    const res = await fetch(`${server.url}/api/tables/${table}/documents?${q}`);
    if (res.status !== 200) throw new Error(`scan of ${table} answered ${res.status}: ${await res.text()}`);
    const body = (await res.json()) as { documents: Record<string, unknown>[]; next: string | null };
    docs.push(...body.documents);
    after = body.next;
    if (after === null) return docs;
  }
  throw new Error(`scan of ${table} holds more than ${maxDocs} documents, more keys than the campaign wrote`);
}

function describeDoc(doc: Record<string, unknown> | undefined): string {
  if (doc === undefined) return 'absent';
  const text = JSON.stringify(doc);
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}

/** Checks every key of every door; returns the failures (empty when all is as owed). */
async function checkAfterRestart(
  server: SpawnedServer,
  model: Model,
  label: string,
  maxDocs: number,
): Promise<string[]> {
  const failures: string[] = [];
  for (const door of DOORS) {
    const figures = model.figures[door];
    const docs = await scanTable(server, TABLE[door], maxDocs);
    const found = new Map<string, Record<string, unknown>>();
    for (const doc of docs) {
      const key = doc.id as string;
      if (!model.keys[door].has(key)) {
        figures.wrong++;
        failures.push(
          `${label}: door ${door}, key ${JSON.stringify(key)}: expected no such key (never written), found ${describeDoc(doc)}`,
        );
        continue;
      }
      found.set(key, doc);
    }
    for (const [key, s] of model.keys[door]) {
      if (s.floor > 0) figures.keyChecks++;
      const doc = found.get(key);
      const owed =
        s.floor > 0
          ? `version ${s.floor} (${s.floorWhy}) or a later one sent (up to ${s.maxSent})`
          : `nothing owed (up to version ${s.maxSent} sent)`;
      if (doc === undefined) {
        if (s.floor === 0) continue; // nothing owed, and maybe nothing was ever applied
        let firstDelete = 0;
        for (let v = s.floor; v <= s.maxSent && firstDelete === 0; v++) if (isDelete(door, key, v)) firstDelete = v;
        if (firstDelete === 0) {
          figures.lost++;
          failures.push(`${label}: door ${door}, key ${JSON.stringify(key)}: expected ${owed}, found absent — LOST`);
        } else if (firstDelete > s.floor) {
          // Some delete at or after firstDelete is what the key holds: it must not come back older.
          s.floor = firstDelete;
          s.floorWhy = `absence served after ${label}`;
        }
        continue;
      }
      const ver = doc.ver;
      if (typeof ver !== 'number' || !Number.isInteger(ver) || ver < 1 || ver > s.maxSent || isDelete(door, key, ver)) {
        figures.wrong++;
        failures.push(
          `${label}: door ${door}, key ${JSON.stringify(key)}: expected ${owed}, found a version never written as a document: ${describeDoc(doc)}`,
        );
        continue;
      }
      if (canonical(doc) !== canonical(documentFor(door, key, ver))) {
        figures.wrong++;
        failures.push(
          `${label}: door ${door}, key ${JSON.stringify(key)}: expected version ${ver} to be ${describeDoc(documentFor(door, key, ver))}, found ${describeDoc(doc)} — WRONG VALUE`,
        );
        continue;
      }
      if (ver < s.floor) {
        figures.lost++;
        failures.push(
          `${label}: door ${door}, key ${JSON.stringify(key)}: expected ${owed}, found version ${ver} — LOST (an older value came back)`,
        );
        continue;
      }
      if (ver > s.floor) {
        s.floor = ver;
        s.floorWhy = `served after ${label}`;
      }
    }
    figures.durableChecked += model.uncheckedDurable[door];
    model.uncheckedDurable[door] = 0;
  }
  return failures;
}

// ---------------------------------------------------------------------------------------------
// The doors

interface LoadContext {
  model: Model;
  server: SpawnedServer;
  /** Set just before the SIGKILL: errors after it are the kill's, not failures. */
  killed: () => boolean;
  failures: string[];
  label: string;
  keysPerWriter: number;
}

interface Write {
  key: string;
  ver: number;
  del: boolean;
}

/** Picks up to `n` distinct keys of this writer with no write in flight, and their next versions. */
function pickWrites(ctx: LoadContext, door: Door, writer: number, random: () => number, n: number): Write[] {
  const writes: Write[] = [];
  const chosen = new Set<string>();
  for (let tries = 0; writes.length < n && tries < n * 4; tries++) {
    const key = `${door[0]}${writer}-${Math.floor(random() * ctx.keysPerWriter)}`;
    if (chosen.has(key) || ctx.model.state(door, key).pending) continue;
    chosen.add(key);
    const ver = ctx.model.send(door, key);
    writes.push({ key, ver, del: isDelete(door, key, ver) });
  }
  return writes;
}

function writeSucceeded(
  result: Partial<WriteResult> | undefined,
  expected: number,
  kind: 'insert' | 'delete',
): boolean {
  if (!result || (result.errors ?? 0) !== 0) return false;
  const done =
    kind === 'insert'
      ? (result.inserted ?? 0) + (result.replaced ?? 0) + (result.unchanged ?? 0)
      : (result.deleted ?? 0) + (result.skipped ?? 0);
  return done === expected;
}

/** Counts an acknowledged write; hard ones are owed at once, soft ones once a sync completes. */
function acknowledged(
  ctx: LoadContext,
  door: Door,
  writes: Write[],
  durability: 'hard' | 'soft',
  softAcked: Write[],
): void {
  const f = ctx.model.figures[door];
  for (const w of writes) {
    f.writesAcknowledged++;
    if (durability === 'hard') {
      f.hardAcknowledged++;
      ctx.model.durable(door, w.key, w.ver, `hard write acknowledged in ${ctx.label}`);
    } else {
      softAcked.push(w);
    }
  }
}

function synced(ctx: LoadContext, door: Door, softAcked: Write[]): void {
  const f = ctx.model.figures[door];
  f.syncs++;
  for (const w of softAcked) {
    f.softSynced++;
    ctx.model.durable(door, w.key, w.ver, `soft write synced in ${ctx.label}`);
  }
  softAcked.length = 0;
}

/** Runs one writer until the kill; an error before the kill is a failure of the round. */
async function guarded(ctx: LoadContext, what: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    if (!ctx.killed())
      ctx.failures.push(`${ctx.label}: ${what} failed before the kill: ${(err as Error).stack ?? String(err)}`);
  }
}

function badResult(ctx: LoadContext, door: Door, what: string, result: unknown): void {
  ctx.failures.push(`${ctx.label}: door ${door}: ${what} answered an unsuccessful result: ${JSON.stringify(result)}`);
}

/** One step of a driver or HTTP writer: a hard batch, or a few soft batches then a sync. */
async function requestStep(
  ctx: LoadContext,
  door: 'driver' | 'http',
  writer: number,
  random: () => number,
  ops: {
    insert(writes: Write[], durability: 'hard' | 'soft'): Promise<unknown>;
    remove(write: Write, durability: 'hard' | 'soft'): Promise<unknown>;
    sync(): Promise<unknown>;
  },
): Promise<void> {
  const hard = random() < 0.5;
  const calls = hard ? 1 : 1 + Math.floor(random() * 4);
  const softAcked: Write[] = [];
  for (let c = 0; c < calls && !ctx.killed(); c++) {
    const batch = random() < 0.3 ? 1 : 1 + Math.floor(random() * 60);
    const writes = pickWrites(ctx, door, writer, random, batch);
    if (writes.length === 0) continue;
    const durability = hard ? 'hard' : 'soft';
    try {
      const inserts = writes.filter((w) => !w.del);
      if (inserts.length > 0) {
        const result = await ops.insert(inserts, durability);
        if (!writeSucceeded(result as WriteResult, inserts.length, 'insert'))
          return badResult(ctx, door, `insert of ${inserts.length}`, result);
        acknowledged(ctx, door, inserts, durability, softAcked);
      }
      for (const w of writes.filter((x) => x.del)) {
        const result = await ops.remove(w, durability);
        if (!writeSucceeded(result as WriteResult, 1, 'delete'))
          return badResult(ctx, door, `delete of ${w.key}`, result);
        acknowledged(ctx, door, [w], durability, softAcked);
      }
    } finally {
      // A write whose answer never came stays "sent": its key may hold it or the previous value.
      for (const w of writes) ctx.model.settle(door, w.key);
    }
  }
  if (!hard && softAcked.length > 0 && !ctx.killed()) {
    const result = (await ops.sync()) as { synced?: number };
    if (result?.synced !== 1) return badResult(ctx, door, 'sync', result);
    synced(ctx, door, softAcked);
  }
}

async function driverWriter(ctx: LoadContext, writer: number, random: () => number, conns: Any[]): Promise<void> {
  const conn = await r.connect({ host: ctx.server.driver.host, port: ctx.server.driver.port });
  conn.on('error', () => {});
  conns.push(conn);
  const table = r.table(TABLE.driver);
  const ops = {
    insert: (writes: Write[], durability: 'hard' | 'soft') =>
      table
        .insert(
          writes.map((w) => documentFor('driver', w.key, w.ver)),
          { durability, conflict: 'replace' },
        )
        .run(conn),
    remove: (w: Write, durability: 'hard' | 'soft') => table.get(w.key).delete({ durability }).run(conn),
    sync: () => table.sync().run(conn),
  };
  while (!ctx.killed()) await requestStep(ctx, 'driver', writer, random, ops);
}

async function httpJson(url: string, init: RequestInit): Promise<unknown> {
  const res = await fetch(url, init);
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, body: text };
  return JSON.parse(text) as unknown;
}

async function httpWriter(ctx: LoadContext, writer: number, random: () => number): Promise<void> {
  const base = `${ctx.server.url}/api/tables/${TABLE.http}/documents`;
  const ops = {
    insert: (writes: Write[], durability: 'hard' | 'soft') =>
      httpJson(`${base}?durability=${durability}&conflict=replace`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson' },
        body: writes.map((w) => JSON.stringify(documentFor('http', w.key, w.ver))).join('\n'),
      }),
    remove: (w: Write, durability: 'hard' | 'soft') =>
      httpJson(`${base}/${encodeURIComponent(w.key)}?keyType=string&durability=${durability}`, { method: 'DELETE' }),
    sync: () => httpJson(`${ctx.server.url}/api/sync`, { method: 'POST' }),
  };
  while (!ctx.killed()) await requestStep(ctx, 'http', writer, random, ops);
}

/**
 * One ws connection: up to 4 insert batches in flight, hard or soft, and after every few soft
 * batches a `sync`; its `synced` makes durable the soft batches sent before it and acknowledged.
 */
async function wsWriter(ctx: LoadContext, writer: number, random: () => number, sockets: WebSocket[]): Promise<void> {
  const ws = new WebSocket(`ws://${ctx.server.http.host}:${ctx.server.http.port}/ws/ingest`);
  sockets.push(ws);
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('close', () => reject(new Error('ws closed before it opened')));
  });
  const inFlight = new Map<number, { writes: Write[]; durability: 'hard' | 'soft' }>();
  /** Soft batches sent and not yet covered by a sync: acknowledged or not. */
  let softSent: number[] = [];
  const softAckedById = new Map<number, Write[]>();
  const syncs = new Map<number, number[]>();
  let wake: (() => void) | null = null;
  let closed = false;
  const nudge = (): void => {
    const w = wake;
    wake = null;
    w?.();
  };
  ws.on('close', () => {
    closed = true;
    for (const { writes } of inFlight.values()) for (const w of writes) ctx.model.settle('ws', w.key);
    inFlight.clear();
    nudge();
  });
  ws.on('message', (data) => {
    let m: ServerMessage;
    try {
      m = decodeServerMessage(data as Buffer);
    } catch (err) {
      ctx.failures.push(`${ctx.label}: door ws: unreadable server message: ${(err as Error).message}`);
      return;
    }
    if (m.type === 'ack') {
      const sent = inFlight.get(m.id);
      if (!sent) return;
      inFlight.delete(m.id);
      for (const w of sent.writes) ctx.model.settle('ws', w.key);
      if (!writeSucceeded(m.result, sent.writes.length, 'insert')) {
        badResult(ctx, 'ws', `insert batch ${m.id} of ${sent.writes.length}`, m.result);
      } else {
        const acked: Write[] = [];
        acknowledged(ctx, 'ws', sent.writes, sent.durability, acked);
        if (acked.length > 0) softAckedById.set(m.id, acked);
      }
    } else if (m.type === 'synced') {
      const covered = syncs.get(m.id) ?? [];
      syncs.delete(m.id);
      const writes: Write[] = [];
      for (const id of covered) {
        writes.push(...(softAckedById.get(id) ?? []));
        softAckedById.delete(id);
      }
      synced(ctx, 'ws', writes);
    } else {
      const sent = m.id === null ? undefined : inFlight.get(m.id);
      if (sent) {
        inFlight.delete(m.id as number);
        for (const w of sent.writes) ctx.model.settle('ws', w.key);
      }
      if (!ctx.killed()) ctx.failures.push(`${ctx.label}: door ws: error answer ${JSON.stringify(m)}`);
    }
    nudge();
  });

  let id = 0;
  while (!ctx.killed() && !closed) {
    if (inFlight.size >= 4 || syncs.size > 0) {
      await new Promise<void>((resolve) => (wake = resolve));
      continue;
    }
    if (softSent.length >= 1 + Math.floor(random() * 6)) {
      const syncId = ++id;
      syncs.set(syncId, softSent);
      softSent = [];
      ws.send(encodeFrame({ type: 'sync', id: syncId }));
      continue;
    }
    const durability = random() < 0.4 ? 'hard' : 'soft';
    const writes = pickWrites(ctx, 'ws', writer, random, random() < 0.2 ? 1 : 1 + Math.floor(random() * 200));
    if (writes.length === 0) continue;
    const batchId = ++id;
    inFlight.set(batchId, { writes, durability });
    if (durability === 'soft') softSent.push(batchId);
    const format = random() < 0.5 ? 'ndjson' : 'json';
    const docs = writes.map((w) => JSON.stringify(documentFor('ws', w.key, w.ver)));
    ws.send(
      encodeFrame(
        { type: 'insert', id: batchId, table: TABLE.ws, format, durability, conflict: 'replace' },
        format === 'ndjson' ? docs.join('\n') : `[${docs.join(',')}]`,
      ),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Rounds

async function ensureTables(server: SpawnedServer): Promise<void> {
  for (const door of DOORS) {
    const res = await fetch(`${server.url}/api/tables`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: TABLE[door] }),
    });
    if (res.status !== 201 && res.status !== 409)
      throw new Error(`creating table ${TABLE[door]} answered ${res.status}: ${await res.text()}`);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Resolves with the time the process first holds a file of `dir` open, i.e. when the engine's
 * `Database.open` (recovery) has begun; null if it exits or listens first. Linux: polls
 * /proc/PID/fd every few milliseconds, for at most START_TIMEOUT_MS.
 */
function whenDataDirOpened(proc: ChildProcess, dir: string, until: Promise<unknown>): Promise<number | null> {
  const prefix = `${realpathSync(dir)}/`;
  let done = false;
  void until.finally(() => (done = true));
  return new Promise((resolve) => {
    const started = Date.now();
    const poll = (): void => {
      if (done || proc.exitCode !== null || proc.signalCode !== null || Date.now() - started > START_TIMEOUT_MS) {
        resolve(null);
        return;
      }
      try {
        for (const fd of readdirSync(`/proc/${proc.pid}/fd`)) {
          let target = '';
          try {
            target = readlinkSync(`/proc/${proc.pid}/fd/${fd}`);
          } catch {
            continue; // closed meanwhile
          }
          if (target.startsWith(prefix)) {
            resolve(Date.now());
            return;
          }
        }
      } catch {
        resolve(null); // the process is gone
        return;
      }
      setTimeout(poll, 3);
    };
    poll();
  });
}

/** Mixes the campaign seed with a round and a stream number into one 32-bit seed. */
function subSeed(seed: number, ...parts: number[]): number {
  let h = seed >>> 0;
  for (const p of parts) h = hash(`${h}:${p}`);
  return h;
}

export async function runKillCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const { rounds, seed } = options;
  const minLoadMs = options.minLoadMs ?? 150;
  const maxLoadMs = options.maxLoadMs ?? 2500;
  const startupKillShare = options.startupKillShare ?? 0.15;
  const writersPerDoor = options.writersPerDoor ?? 2;
  const keysPerWriter = options.keysPerWriter ?? 1500;
  const log = options.log ?? (() => {});
  const maxDocs = writersPerDoor * keysPerWriter;
  const dataDir = makeTempDir('wharf-kill-');
  const model = new Model();
  const result: CampaignResult = {
    seed,
    roundsPlanned: rounds,
    roundsRun: 0,
    killsDuringLoad: 0,
    killsDuringStartup: 0,
    restartsServed: 0,
    doors: model.figures,
    lost: 0,
    wrong: 0,
    failures: [],
    dataDir,
    replay: `seed ${seed}, rounds ${rounds} (WHARF_KILL_SEED=${seed}; scripts/reliability/kill-campaign.ts ${rounds} ${seed})`,
  };
  /** The server started last: killed on the way out if a failure left it running. */
  let current: SpawnedServer | undefined;
  /** From opening the data directory to listening, at the last start: where startup kills aim. */
  let lastOpenToListenMs = 300;

  const start = async (round: number, memoryBudgetMb: number): Promise<SpawnedServer> => {
    let opened: Promise<number | null> = Promise.resolve(null);
    let listening: () => void = () => {};
    const listened = new Promise<void>((resolve) => (listening = resolve));
    const server = await spawnServer({
      dataDir,
      args: ['--memory-budget-mb', String(memoryBudgetMb)],
      startTimeoutMs: START_TIMEOUT_MS,
      onSpawn: (proc) => (opened = whenDataDirOpened(proc, dataDir, listened)),
    });
    current = server;
    const listenedAt = Date.now();
    listening();
    const openedAt = await opened;
    if (openedAt !== null) lastOpenToListenMs = Math.max(1, listenedAt - openedAt);
    if (round === 0) await ensureTables(server);
    const label = round === 0 ? 'first start' : round < rounds ? `restart before round ${round}` : 'final restart';
    const failures = await checkAfterRestart(server, model, label, maxDocs);
    result.failures.push(...failures);
    if (failures.length === 0) result.restartsServed++;
    return server;
  };

  try {
    for (let round = 0; round <= rounds && result.failures.length === 0; round++) {
      const random = rng(subSeed(seed, round, 0));
      const memoryBudgetMb = [4, 4, 8, 64][Math.floor(random() * 4)] as number;

      // Some restarts are killed between opening the data directory and listening: recovery
      // (Database.open) and the listeners' start, killed part-way. The moment is a share, drawn
      // from the seed, of how long that took at the last start.
      if (round > 0 && random() < startupKillShare) {
        const delayMs = Math.floor(random() * lastOpenToListenMs);
        let timer: NodeJS.Timeout | undefined;
        let stopWatching: () => void = () => {};
        const stopped = new Promise<void>((resolve) => (stopWatching = resolve));
        try {
          const early = await spawnServer({
            dataDir,
            args: ['--memory-budget-mb', String(memoryBudgetMb)],
            startTimeoutMs: START_TIMEOUT_MS,
            onSpawn: (proc) => {
              void whenDataDirOpened(proc, dataDir, stopped).then((at) => {
                if (at !== null) timer = setTimeout(() => proc.kill('SIGKILL'), delayMs);
              });
            },
          });
          // It listened before the kill was due: kill it now, with nothing in flight.
          stopWatching();
          clearTimeout(timer);
          await early.stop('SIGKILL');
          log(
            `round ${round}: restart listened before its kill at ${delayMs} ms after opening the data directory; killed idle`,
          );
        } catch (err) {
          stopWatching();
          clearTimeout(timer);
          if (!/before listening/.test((err as Error).message)) throw err;
          result.killsDuringStartup++;
          log(
            `round ${round}: restart killed ${delayMs} ms after it opened the data directory, before it listened (that took ${lastOpenToListenMs} ms at the last start)`,
          );
        }
      }

      const server = await start(round, memoryBudgetMb);
      if (result.failures.length > 0 || round === rounds) {
        // The last restart is only checked, then must shut down cleanly.
        const code = await server.stop('SIGTERM');
        if (round === rounds && result.failures.length === 0 && code !== 0) {
          result.failures.push(
            `final restart: SIGTERM exited ${code}, expected 0:\n${server.output.slice(-20).join('\n')}`,
          );
        }
        break;
      }

      const label = `round ${round}`;
      let killed = false;
      const ctx: LoadContext = { model, server, killed: () => killed, failures: result.failures, label, keysPerWriter };
      const conns: Any[] = [];
      const sockets: WebSocket[] = [];
      const loops: Promise<void>[] = [];
      for (let w = 0; w < writersPerDoor; w++) {
        loops.push(
          guarded(ctx, `driver writer ${w}`, () => driverWriter(ctx, w, rng(subSeed(seed, round, 1, w)), conns)),
        );
        loops.push(guarded(ctx, `http writer ${w}`, () => httpWriter(ctx, w, rng(subSeed(seed, round, 2, w)))));
        loops.push(guarded(ctx, `ws writer ${w}`, () => wsWriter(ctx, w, rng(subSeed(seed, round, 3, w)), sockets)));
      }
      const killAfterMs = minLoadMs + Math.floor(random() * (maxLoadMs - minLoadMs));
      await sleep(killAfterMs);
      killed = true;
      await server.stop('SIGKILL');
      result.killsDuringLoad++;
      // Connections to a dead process fail on their own; the bound only keeps a stuck client
      // library from holding the campaign (its unanswered writes are not counted either way).
      await Promise.race([Promise.allSettled(loops), sleep(SETTLE_MS)]);
      for (const c of conns) c.close({ noreplyWait: false }).catch(() => {});
      for (const s of sockets) s.terminate();
      result.roundsRun++;
      const f = model.figures;
      log(
        `${label}: killed after ${killAfterMs} ms of load (memory budget ${memoryBudgetMb} MiB); durable acknowledged so far: driver ${f.driver.durableAcknowledged}, http ${f.http.durableAcknowledged}, ws ${f.ws.durableAcknowledged}`,
      );
    }
  } catch (err) {
    result.failures.push(`campaign stopped: ${(err as Error).stack ?? String(err)}`);
  } finally {
    await current?.stop('SIGKILL'); // a no-op once it has exited
  }

  result.lost = DOORS.reduce((n, d) => n + model.figures[d].lost, 0);
  result.wrong = DOORS.reduce((n, d) => n + model.figures[d].wrong, 0);
  if (result.failures.length > MAX_LISTED) {
    const more = result.failures.length - MAX_LISTED;
    result.failures.splice(MAX_LISTED, more, `… and ${more} more`);
  }
  if (result.failures.length === 0 && !options.keepDataDir) removeDir(dataDir);
  return result;
}

/** The figures as lines of text, for the script's output and the test's failure message. */
export function formatFigures(res: CampaignResult): string {
  const lines = [
    `kill campaign: seed ${res.seed}, rounds ${res.roundsRun}/${res.roundsPlanned}, kills under load ${res.killsDuringLoad}, kills during startup ${res.killsDuringStartup}, restarts served and checked ${res.restartsServed}`,
    'door    writes acked  hard acked  soft synced  syncs  durable acked  durable checked  key checks  lost  wrong',
  ];
  for (const d of DOORS) {
    const f = res.doors[d];
    lines.push(
      `${d.padEnd(6)}  ${String(f.writesAcknowledged).padStart(12)}  ${String(f.hardAcknowledged).padStart(10)}  ${String(f.softSynced).padStart(11)}  ${String(f.syncs).padStart(5)}  ${String(f.durableAcknowledged).padStart(13)}  ${String(f.durableChecked).padStart(15)}  ${String(f.keyChecks).padStart(10)}  ${String(f.lost).padStart(4)}  ${String(f.wrong).padStart(5)}`,
    );
  }
  const total = (k: keyof DoorFigures): number => DOORS.reduce((n, d) => n + res.doors[d][k], 0);
  lines.push(
    `total   ${String(total('writesAcknowledged')).padStart(12)}  ${String(total('hardAcknowledged')).padStart(10)}  ${String(total('softSynced')).padStart(11)}  ${String(total('syncs')).padStart(5)}  ${String(total('durableAcknowledged')).padStart(13)}  ${String(total('durableChecked')).padStart(15)}  ${String(total('keyChecks')).padStart(10)}  ${String(res.lost).padStart(4)}  ${String(res.wrong).padStart(5)}`,
  );
  lines.push(
    `acknowledged writes lost: ${res.lost}; wrong values: ${res.wrong}; ${res.failures.length === 0 ? 'PASSED' : `FAILED (${res.replay}; data directory kept: ${res.dataDir})`}`,
  );
  return lines.join('\n');
}
