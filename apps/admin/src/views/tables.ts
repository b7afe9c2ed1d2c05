/**
 * Tables: the list with document counts and sizes (refreshed every 5 s), create with a primary
 * key, drop after an inline confirmation that names the table.
 */
import { html } from 'htm/preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, describeError, type TableInfo } from '../api.ts';
import { formatBytes, formatCount } from '../format.ts';

export function Tables() {
  const [tables, setTables] = useState<TableInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [primaryKey, setPrimaryKey] = useState('id');
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState<string | null>(null);

  const refresh = useCallback(async () => {
    try {
      setTables(await api.listTables());
      setError(null);
    } catch (err) {
      setError(describeError(err));
    }
  }, []);

  useEffect(() => {
    void refresh();
    const t = setInterval(() => void refresh(), 5000);
    return () => clearInterval(t);
  }, [refresh]);

  const create = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    setNotice(null);
    try {
      const r = await api.createTable(name.trim(), primaryKey.trim() || undefined);
      setNotice(`Created table ${r.name} (primary key ${r.primaryKey}).`);
      setName('');
      setError(null);
      await refresh();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  const drop = async (table: string) => {
    setBusy(true);
    setNotice(null);
    try {
      await api.dropTable(table);
      setNotice(`Dropped table ${table}.`);
      setConfirming(null);
      setError(null);
      await refresh();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return html`<section class="view" data-testid="view-tables">
    <h2>Tables</h2>
    <form class="inline-form" onSubmit=${create} data-testid="create-table-form">
      <label>Name <input name="name" required value=${name} onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)} placeholder="users" /></label>
      <label>Primary key <input name="primaryKey" value=${primaryKey} onInput=${(e: Event) => setPrimaryKey((e.target as HTMLInputElement).value)} /></label>
      <button type="submit" disabled=${busy || name.trim() === ''}>Create table</button>
    </form>
    ${error ? html`<div class="error" role="alert" data-testid="tables-error">${error}</div>` : null}
    ${notice ? html`<div class="notice" role="status">${notice}</div>` : null}
    ${
      tables === null
        ? html`<p class="muted">Loading…</p>`
        : tables.length === 0
          ? html`<p class="muted">No tables yet.</p>`
          : html`<div class="table-scroll"><table class="grid" data-testid="tables-list">
            <thead><tr><th>Name</th><th>Primary key</th><th class="num">Documents</th><th class="num">Size</th><th></th></tr></thead>
            <tbody>
              ${tables.map(
                (t) => html`<tr key=${t.name} data-testid=${`table-row-${t.name}`}>
                <td><a href=${`#/explorer/${encodeURIComponent(t.name)}`}>${t.name}</a></td>
                <td><code>${t.primaryKey}</code></td>
                <td class="num" data-testid="table-documents">${formatCount(t.documents)}</td>
                <td class="num">${formatBytes(t.bytes)}</td>
                <td class="actions">
                  ${
                    confirming === t.name
                      ? html`<span class="confirm">Drop ${t.name} and its ${formatCount(t.documents)} documents?
                        <button class="danger" disabled=${busy} onClick=${() => void drop(t.name)}>Confirm drop</button>
                        <button onClick=${() => setConfirming(null)}>Cancel</button></span>`
                      : html`<a class="button" href=${`#/imports/${encodeURIComponent(t.name)}`}>Import</a>
                        <button class="danger" onClick=${() => setConfirming(t.name)}>Drop</button>`
                  }
                </td>
              </tr>`,
              )}
            </tbody>
          </table></div>`
    }
  </section>`;
}
