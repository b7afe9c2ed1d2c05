/** A job's coordination table on a Wharf server, through its HTTP API (docs/CONTRACTS.md §1). */

import type { CoordinationDoc } from '@wharf/wire';
import { LoaderError } from '../errors.js';
import type { TargetSpec } from '../targets/target.js';
import type { WriteResult } from '../types.js';
import { type CoordinationStore, prefixEnd } from './store.js';

type Spec = Extract<TargetSpec, { kind: 'wharf' }>;

/** Rows per scan page (under the server's `scanPageRows`). */
const PAGE = 1000;

export class WharfStore implements CoordinationStore {
  readonly where: string;
  #base: string;
  #table: string;
  #auth: Record<string, string>;

  constructor(spec: Spec, table: string) {
    const h = spec.host.includes(':') ? `[${spec.host}]` : spec.host;
    this.#base = `${spec.secure ? 'https' : 'http'}://${h}:${spec.port}`;
    this.#table = encodeURIComponent(table);
    this.#auth = spec.password === undefined ? {} : { authorization: `Bearer ${spec.password}` };
    this.where = `${spec.secure ? 'wharfs' : 'wharf'}://${h}:${spec.port} table ${table}`;
  }

  async #request(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    let res: Response;
    try {
      res = await fetch(`${this.#base}${path}`, {
        method,
        headers: body === undefined ? this.#auth : { ...this.#auth, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new LoaderError(
        'WHARF_ERR_TRANSPORT',
        `${this.where}: ${method} ${path} failed: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
    const text = await res.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // reported below when the status is an error
    }
    return { status: res.status, json: json ?? text };
  }

  #fail(what: string, r: { status: number; json: unknown }): never {
    const j = r.json as { code?: string; message?: string } | string;
    const code = typeof j === 'object' && typeof j?.code === 'string' ? j.code : 'WHARF_ERR_TARGET';
    const message = typeof j === 'object' && typeof j?.message === 'string' ? j.message : String(j).slice(0, 300);
    throw new LoaderError(code, `${this.where}: ${what}: ${r.status} ${message}`);
  }

  async open(): Promise<void> {
    const r = await this.#request('POST', '/api/tables', { name: decodeURIComponent(this.#table), primaryKey: 'id' });
    if (r.status >= 400 && (r.json as { code?: string })?.code !== 'WHARF_ERR_TABLE_EXISTS')
      this.#fail('create table', r);
  }

  async #insert(doc: CoordinationDoc, conflict: 'error' | 'replace', durable: boolean): Promise<WriteResult> {
    const q = `conflict=${conflict}&durability=${durable ? 'hard' : 'soft'}`;
    const r = await this.#request('POST', `/api/tables/${this.#table}/documents?${q}`, doc);
    if (r.status >= 400) this.#fail(`write ${doc.id}`, r);
    return r.json as WriteResult;
  }

  async create(doc: CoordinationDoc): Promise<boolean> {
    const res = await this.#insert(doc, 'error', true);
    if (res.inserted === 1) return true;
    if (/duplicate primary key/i.test(res.first_error ?? '')) return false;
    throw new LoaderError('WHARF_ERR_TARGET', `${this.where}: create ${doc.id}: ${res.first_error ?? 'not written'}`);
  }

  async put(doc: CoordinationDoc, durable: boolean): Promise<void> {
    const res = await this.#insert(doc, 'replace', durable);
    if (res.errors > 0)
      throw new LoaderError('WHARF_ERR_TARGET', `${this.where}: write ${doc.id}: ${res.first_error ?? 'not written'}`);
  }

  async list(prefix: string): Promise<CoordinationDoc[]> {
    const out: CoordinationDoc[] = [];
    const bounds = `gte=${encodeURIComponent(JSON.stringify(prefix))}&lt=${encodeURIComponent(JSON.stringify(prefixEnd(prefix)))}`;
    let after: string | null = null;
    do {
      const page: string = after === null ? '' : `&after=${encodeURIComponent(after)}`;
      const r = await this.#request('GET', `/api/tables/${this.#table}/documents?${bounds}&limit=${PAGE}${page}`);
      if (r.status >= 400) this.#fail(`read ${prefix}*`, r);
      const { documents, next } = r.json as { documents: CoordinationDoc[]; next: string | null };
      out.push(...documents);
      after = next;
    } while (after !== null);
    return out;
  }

  async close(): Promise<void> {}
}
