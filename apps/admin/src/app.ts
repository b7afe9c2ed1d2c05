/**
 * The shell: navigation (hash routes, so any server path serves the app), the connection
 * indicator, and the one /ws/stats feed that the dashboard draws from. The feed reconnects on
 * its own when the server restarts.
 */
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type FeedState, StatsFeed, storePassword, UNAUTHORIZED_EVENT } from './api.ts';
import { addSnapshot, emptyHistory, type StatsHistory } from './stats-history.ts';
import { Dashboard } from './views/dashboard.ts';
import { Explorer } from './views/explorer.ts';
import { Imports } from './views/imports.ts';
import { Jobs } from './views/jobs.ts';
import { Tables } from './views/tables.ts';

interface Route {
  view: 'dashboard' | 'tables' | 'explorer' | 'imports' | 'jobs';
  /** The table of the explorer and imports views, the job of the jobs view. */
  table: string | null;
}

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/');
  const table = parts[1] ? decodeURIComponent(parts[1]) : null;
  switch (parts[0]) {
    case 'tables':
      return { view: 'tables', table: null };
    case 'explorer':
      return { view: 'explorer', table };
    case 'imports':
      return { view: 'imports', table };
    case 'jobs':
      return { view: 'jobs', table };
    default:
      return { view: 'dashboard', table: null };
  }
}

const NAV: { view: Route['view']; label: string; href: string }[] = [
  { view: 'dashboard', label: 'Dashboard', href: '#/' },
  { view: 'tables', label: 'Tables', href: '#/tables' },
  { view: 'explorer', label: 'Data explorer', href: '#/explorer' },
  { view: 'imports', label: 'Imports', href: '#/imports' },
  { view: 'jobs', label: 'Jobs', href: '#/jobs' },
];

/** Asks for the server's admin password (WHARF_PASSWORD) when the API answers 401. */
function Login({ onDone }: { onDone: () => void }) {
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (ev: Event) => {
    ev.preventDefault();
    storePassword(password);
    try {
      await api.stats();
      onDone();
    } catch (err) {
      storePassword(null);
      setError(err instanceof Error ? err.message : String(err));
    }
  };
  return html`<form class="login" data-testid="login" onSubmit=${submit}>
    <h2>Sign in</h2>
    <p>This server needs its admin password (the one it was started with: WHARF_PASSWORD).</p>
    <input type="password" autocomplete="current-password" data-testid="login-password" value=${password}
      onInput=${(e: Event) => setPassword((e.target as HTMLInputElement).value)} />
    <button type="submit" data-testid="login-submit">Sign in</button>
    ${error ? html`<div class="error" role="alert">${error}</div>` : null}
  </form>`;
}

export function App() {
  const [needLogin, setNeedLogin] = useState(false);
  const [session, setSession] = useState(0);
  const [route, setRoute] = useState<Route>(() => parseRoute(window.location.hash));
  const [history, setHistory] = useState<StatsHistory>(emptyHistory);
  const [feed, setFeed] = useState<FeedState>('connecting');
  const [feedDetail, setFeedDetail] = useState<string | undefined>(undefined);

  useEffect(() => {
    const onHash = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  useEffect(() => {
    const onUnauthorized = () => setNeedLogin(true);
    window.addEventListener(UNAUTHORIZED_EVENT, onUnauthorized);
    // One probe: a server with a password answers 401 (the feed alone would only keep reconnecting).
    api.stats().catch(() => {});
    return () => window.removeEventListener(UNAUTHORIZED_EVENT, onUnauthorized);
  }, []);

  useEffect(() => {
    const f = new StatsFeed(
      (s) => setHistory((h) => addSnapshot(h, s)),
      (state, detail) => {
        setFeed(state);
        setFeedDetail(detail);
      },
    );
    return () => f.stop();
  }, [session]);

  if (needLogin) {
    return html`<div class="app"><main><${Login} onDone=${() => {
      setNeedLogin(false);
      setSession((n) => n + 1);
    }} /></main></div>`;
  }

  const latest = history.latest;
  let body: ReturnType<typeof html>;
  switch (route.view) {
    case 'tables':
      body = html`<${Tables} />`;
      break;
    case 'explorer':
      body = html`<${Explorer} table=${route.table} onTable=${(t: string) => {
        window.location.hash = `#/explorer/${encodeURIComponent(t)}`;
      }} />`;
      break;
    case 'imports':
      body = html`<${Imports} initialTable=${route.table} />`;
      break;
    case 'jobs':
      body = html`<${Jobs} selected=${route.table} />`;
      break;
    default:
      body = html`<${Dashboard} history=${history} feed=${feed} feedDetail=${feedDetail} />`;
  }

  return html`<div class="app">
    <header class="top">
      <h1><a href="#/">Wharf</a></h1>
      <nav>
        ${NAV.map((n) => html`<a href=${n.href} class=${route.view === n.view ? 'active' : ''} data-testid=${`nav-${n.view}`}>${n.label}</a>`)}
      </nav>
      <span class=${`feed feed-${feed}`} data-testid="feed-state" title=${feedDetail ?? ''}>
        ${feed === 'live' ? 'live' : feed === 'connecting' ? 'connecting…' : 'server unreachable, reconnecting…'}
      </span>
    </header>
    ${feed === 'reconnecting' ? html`<div class="error banner" role="alert" data-testid="feed-error">Lost the connection to the server's stats feed (${feedDetail ?? 'closed'}). Numbers are stale until it reconnects.</div>` : null}
    ${latest?.engine.poisoned && route.view !== 'dashboard' ? html`<div class="error banner" role="alert">The engine is poisoned: writes fail until the server restarts.</div>` : null}
    <main>${body}</main>
  </div>`;
}
