/**
 * Data explorer: browse a table in key order between bounds, page by page (the server's `next`
 * cursor); get one document by key; insert, edit (replace) and delete documents in a JSON editor.
 */
import { html } from 'htm/preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, type Doc, describeError, type Key, type TableInfo, type WriteResult } from '../api.ts';
import { formatCount } from '../format.ts';
import { checkJson, JsonEditor } from './json-editor.ts';

const PAGE_SIZES = [10, 25, 50, 100];

interface Editing {
  /** The key of the document being edited; null for a new one. */
  key: Key | null;
  text: string;
}

function writeProblem(r: WriteResult): string | null {
  if (r.errors === 0) return null;
  const detail = r.document_errors?.map((d) => d.message).join('; ') ?? r.first_error ?? 'unknown error';
  return `The server rejected the document: ${detail}`;
}

export function Explorer({ table, onTable }: { table: string | null; onTable: (t: string) => void }) {
  const [tables, setTables] = useState<TableInfo[]>([]);
  const [gte, setGte] = useState('');
  const [lt, setLt] = useState('');
  const [limit, setLimit] = useState(25);
  const [reverse, setReverse] = useState(false);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [docs, setDocs] = useState<Doc[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [count, setCount] = useState<number | null>(null);
  const [keyText, setKeyText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [editing, setEditing] = useState<Editing | null>(null);
  const [confirmDelete, setConfirmDelete] = useState<Key | null>(null);
  const [busy, setBusy] = useState(false);

  const info = tables.find((t) => t.name === table);
  const pk = info?.primaryKey ?? 'id';

  useEffect(() => {
    api.listTables().then(setTables, (err) => setError(describeError(err)));
  }, [table]);

  const load = useCallback(
    async (after: string | undefined) => {
      if (!table) return;
      try {
        const [page, n] = await Promise.all([api.scan(table, { gte, lt, limit, reverse, after }), api.count(table)]);
        setDocs(page.documents);
        setNext(page.next);
        setCount(n);
        setError(null);
      } catch (err) {
        setDocs(null);
        setError(describeError(err));
      }
    },
    [table, gte, lt, limit, reverse],
  );

  useEffect(() => {
    setCursors([undefined]);
    setEditing(null);
    setNotice(null);
    void load(undefined);
  }, [table]);

  const browse = (ev?: Event) => {
    ev?.preventDefault();
    setCursors([undefined]);
    void load(undefined);
  };
  const nextPage = () => {
    if (next === null) return;
    setCursors([...cursors, next]);
    void load(next);
  };
  const prevPage = () => {
    if (cursors.length < 2) return;
    const c = cursors.slice(0, -1);
    setCursors(c);
    void load(c[c.length - 1]);
  };
  const reload = () => void load(cursors[cursors.length - 1]);

  const getByKey = async (ev: Event) => {
    ev.preventDefault();
    if (!table || keyText === '') return;
    setNotice(null);
    try {
      const doc = await api.get(table, keyText, 'auto');
      setEditing({ key: doc[pk] as Key, text: JSON.stringify(doc, null, 2) });
      setError(null);
    } catch (err) {
      setError(describeError(err));
    }
  };

  const check = editing ? checkJson(editing.text) : null;
  const keyChanged = editing && editing.key !== null && check?.value && check.value[pk] !== editing.key;

  const save = async () => {
    if (!table || !editing || !check?.value) return;
    setBusy(true);
    setNotice(null);
    try {
      const r = await api.insert(table, check.value, {
        conflict: editing.key === null ? 'error' : 'replace',
        durability: 'hard',
      });
      const problem = writeProblem(r);
      if (problem) {
        setError(problem);
      } else {
        const key = (check.value[pk] ?? r.generated_keys?.[0]) as Key;
        setNotice(
          `Saved ${pk} ${JSON.stringify(key)}: ${r.inserted} inserted, ${r.replaced} replaced, ${r.unchanged} unchanged.`,
        );
        setEditing({ key, text: JSON.stringify({ ...check.value, [pk]: key }, null, 2) });
        setError(null);
        reload();
      }
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  const remove = async (key: Key) => {
    if (!table) return;
    setBusy(true);
    setNotice(null);
    try {
      const r = await api.delete(table, key, { durability: 'hard' });
      const problem = writeProblem(r);
      if (problem) setError(problem);
      else {
        setNotice(
          r.deleted
            ? `Deleted ${pk} ${JSON.stringify(key)}.`
            : `Nothing to delete: no document with ${pk} ${JSON.stringify(key)}.`,
        );
        setError(null);
        if (editing?.key === key) setEditing(null);
        reload();
      }
      setConfirmDelete(null);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return html`<section class="view" data-testid="view-explorer">
    <h2>Data explorer</h2>
    <div class="inline-form">
      <label>Table
        <select data-testid="explorer-table" value=${table ?? ''} onChange=${(e: Event) => onTable((e.target as HTMLSelectElement).value)}>
          <option value="" disabled>choose a table</option>
          ${tables.map((t) => html`<option value=${t.name}>${t.name}</option>`)}
        </select>
      </label>
      ${info ? html`<span class="muted">primary key <code>${pk}</code>, <span data-testid="explorer-count">${count === null ? '…' : formatCount(count)}</span> documents</span>` : null}
    </div>
    ${error ? html`<div class="error" role="alert" data-testid="explorer-error">${error}</div>` : null}
    ${notice ? html`<div class="notice" role="status" data-testid="explorer-notice">${notice}</div>` : null}
    ${
      !table
        ? html`<p class="muted">Choose a table to browse.</p>`
        : html`
      <form class="inline-form" onSubmit=${browse}>
        <label>${`${pk} ≥`} <input size="10" data-testid="range-gte" value=${gte} onInput=${(e: Event) => setGte((e.target as HTMLInputElement).value)} placeholder="min" /></label>
        <label>${`${pk} <`} <input size="10" data-testid="range-lt" value=${lt} onInput=${(e: Event) => setLt((e.target as HTMLInputElement).value)} placeholder="max" /></label>
        <label>Page <select value=${String(limit)} onChange=${(e: Event) => setLimit(Number((e.target as HTMLSelectElement).value))}>
          ${PAGE_SIZES.map((n) => html`<option value=${String(n)}>${n}</option>`)}</select></label>
        <label class="check"><input type="checkbox" checked=${reverse} onChange=${(e: Event) => setReverse((e.target as HTMLInputElement).checked)} /> reverse</label>
        <button type="submit">Browse</button>
      </form>
      <form class="inline-form" onSubmit=${getByKey}>
        <label>Get by ${pk} <input data-testid="get-key" size="14" value=${keyText} onInput=${(e: Event) => setKeyText((e.target as HTMLInputElement).value)} /></label>
        <button type="submit" disabled=${keyText === ''}>Get</button>
        <button type="button" data-testid="new-document" onClick=${() => {
          setNotice(null);
          setEditing({ key: null, text: `{\n  "${pk}": \n}` });
        }}>New document</button>
      </form>
      ${
        editing
          ? html`<div class="editor-panel" data-testid="editor-panel">
        <h3>${editing.key === null ? 'New document' : html`Edit ${pk} <code>${JSON.stringify(editing.key)}</code>`}</h3>
        <${JsonEditor} text=${editing.text} error=${check?.error ?? null} onInput=${(text: string) => setEditing({ ...editing, text })} />
        ${keyChanged ? html`<div class="field-warn">The ${pk} changed: saving writes a new document and keeps the old one.</div>` : null}
        <div class="buttons">
          <button class="primary" data-testid="save-document" disabled=${busy || !check?.value} onClick=${() => void save()}>${editing.key === null ? 'Insert' : 'Save (replace)'}</button>
          ${editing.key !== null ? html`<button class="danger" onClick=${() => setConfirmDelete(editing.key)}>Delete…</button>` : null}
          <button onClick=${() => setEditing(null)}>Close</button>
        </div>
      </div>`
          : null
      }
      ${
        confirmDelete !== null
          ? html`<div class="confirm-box" role="dialog" data-testid="confirm-delete">
        Delete the document with ${pk} <code>${JSON.stringify(confirmDelete)}</code>?
        <button class="danger" disabled=${busy} onClick=${() => void remove(confirmDelete)}>Confirm delete</button>
        <button onClick=${() => setConfirmDelete(null)}>Cancel</button>
      </div>`
          : null
      }
      ${
        docs === null
          ? null
          : docs.length === 0
            ? html`<p class="muted">No documents in this range.</p>`
            : html`
        <div class="table-scroll"><table class="grid docs" data-testid="documents">
          <thead><tr><th>${pk}</th><th>document</th><th></th></tr></thead>
          <tbody>${docs.map((d) => {
            const key = d[pk] as Key;
            return html`<tr key=${String(key)} data-testid="document-row">
              <td><code>${JSON.stringify(key)}</code></td>
              <td class="doc-preview"><code>${JSON.stringify(d)}</code></td>
              <td class="actions">
                <button data-testid="edit-document" onClick=${() => {
                  setNotice(null);
                  setEditing({ key, text: JSON.stringify(d, null, 2) });
                }}>Edit</button>
                <button class="danger" onClick=${() => setConfirmDelete(key)}>Delete</button>
              </td>
            </tr>`;
          })}</tbody>
        </table></div>`
      }
      <div class="pager">
        <button onClick=${prevPage} disabled=${cursors.length < 2}>← Previous</button>
        <span class="muted">page ${cursors.length}</span>
        <button data-testid="next-page" onClick=${nextPage} disabled=${next === null}>Next →</button>
      </div>`
    }
  </section>`;
}
