/**
 * The shell: navigation (hash routes, so any server path serves the app), the connection
 * indicator, and the one /ws/stats feed that the dashboard draws from. The feed reconnects on
 * its own when the server restarts.
 */
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { StatsFeed, type FeedState } from './api.ts';
import { addSnapshot, emptyHistory, type StatsHistory } from './stats-history.ts';
import { Dashboard } from './views/dashboard.ts';
import { Tables } from './views/tables.ts';
import { Explorer } from './views/explorer.ts';
import { Imports } from './views/imports.ts';

interface Route {
  view: 'dashboard' | 'tables' | 'explorer' | 'imports';
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
    default:
      return { view: 'dashboard', table: null };
  }
}

const NAV: { view: Route['view']; label: string; href: string }[] = [
  { view: 'dashboard', label: 'Dashboard', href: '#/' },
  { view: 'tables', label: 'Tables', href: '#/tables' },
  { view: 'explorer', label: 'Data explorer', href: '#/explorer' },
  { view: 'imports', label: 'Imports', href: '#/imports' },
];

export function App() {
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
    const f = new StatsFeed(
      (s) => setHistory((h) => addSnapshot(h, s)),
      (state, detail) => {
        setFeed(state);
        setFeedDetail(detail);
      },
    );
    return () => f.stop();
  }, []);

  const latest = history.latest;
  let body;
  switch (route.view) {
    case 'tables':
      body = html`<${Tables} />`;
      break;
    case 'explorer':
      body = html`<${Explorer} table=${route.table} onTable=${(t: string) => { window.location.hash = `#/explorer/${encodeURIComponent(t)}`; }} />`;
      break;
    case 'imports':
      body = html`<${Imports} initialTable=${route.table} />`;
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
