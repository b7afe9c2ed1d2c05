/**
 * A JSON document editor: a textarea validated on every keystroke. Syntax errors are shown
 * inline with their line and column; the value must be a JSON object.
 */
import { html } from 'htm/preact';

export interface JsonCheck {
  value: Record<string, unknown> | null;
  error: string | null;
}

export function checkJson(text: string): JsonCheck {
  if (text.trim() === '') return { value: null, error: 'Empty: a document is a JSON object, e.g. {"id": 1}.' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    const m = /position (\d+)/.exec(msg);
    if (m) {
      const pos = Number(m[1]);
      const before = text.slice(0, pos);
      const line = before.split('\n').length;
      const column = pos - before.lastIndexOf('\n');
      return { value: null, error: `Invalid JSON at line ${line}, column ${column}: ${msg}` };
    }
    return { value: null, error: `Invalid JSON: ${msg}` };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return {
      value: null,
      error: `A document must be a JSON object, not ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : typeof parsed}.`,
    };
  }
  return { value: parsed as Record<string, unknown>, error: null };
}

export interface JsonEditorProps {
  text: string;
  onInput: (text: string) => void;
  error: string | null;
  rows?: number;
}

export function JsonEditor({ text, onInput, error, rows = 14 }: JsonEditorProps) {
  return html`<div class="json-editor">
    <textarea
      data-testid="json-editor"
      spellcheck=${false}
      rows=${rows}
      aria-invalid=${error ? 'true' : 'false'}
      class=${error ? 'invalid' : ''}
      value=${text}
      onInput=${(e: Event) => onInput((e.target as HTMLTextAreaElement).value)}
    ></textarea>
    ${error ? html`<div class="field-error" role="alert" data-testid="json-error">${error}</div>` : html`<div class="field-ok">Valid JSON object.</div>`}
  </div>`;
}
