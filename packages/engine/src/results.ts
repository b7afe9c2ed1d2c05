/**
 * What the engine hands back: write results, table listings and stats, typed for JS. The shapes
 * are `@wharf/wire`'s (shared with the server and the admin UI); this file builds them.
 */
import type { EngineStats, IndexInfo, TableInfo } from '@wharf/wire';

export type { EngineStats, IndexInfo, LatencySummary, TableInfo, WriteResult, WriteStages } from '@wharf/wire';

export function indexInfos(raw: unknown): IndexInfo[] {
  return (raw as IndexInfo[]).map(({ name, field, multi, ready, indexed }) => ({ name, field, multi, ready, indexed }));
}

export function tableInfosFromJson(json: string): TableInfo[] {
  const tables = JSON.parse(json) as { name: string; primary_key: string; documents: number; bytes: number }[];
  return tables.map((t) => ({ name: t.name, primaryKey: t.primary_key, documents: t.documents, bytes: t.bytes }));
}

/** The engine's snake_case stats, camelCased; fields the engine adds later come through too. */
export function statsFromJson(json: string): EngineStats {
  const raw = JSON.parse(json) as Record<string, unknown>;
  const stats: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(raw)) {
    stats[name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
  }
  return stats as unknown as EngineStats;
}
