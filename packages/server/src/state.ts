/**
 * Server-wide state shared by the listeners: the resolved options, counters shown by /api/stats
 * and /metrics, and the tracker of in-flight writes that a graceful shutdown waits for.
 */
import type { ServerCounters } from '@wharf/wire';
import { ByteBudget } from './byte-budget.js';
import { EventLoopMonitor } from './event-loop.js';
import { GcMonitor } from './heap.js';
import { LoginThrottle } from './login-throttle.js';
import type { ResolvedOptions } from './options.js';

export type { ServerCounters };

/** Counts writes that were accepted but not yet answered, so shutdown can wait for them. */
export class InflightWrites {
  #count = 0;
  #waiters: (() => void)[] = [];

  get count(): number {
    return this.#count;
  }

  /** Track one write until it settles; returns the same promise. */
  track<T>(promise: Promise<T>): Promise<T> {
    this.#count++;
    const done = (): void => {
      this.#count--;
      if (this.#count === 0) {
        const waiters = this.#waiters;
        this.#waiters = [];
        for (const w of waiters) w();
      }
    };
    promise.then(done, done);
    return promise;
  }

  /** Resolves once no write is in flight. */
  drain(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}

export class ServerState {
  readonly options: ResolvedOptions;
  readonly startedAt = Date.now();
  readonly writes = new InflightWrites();
  /** How late the event loop runs (closed with the engine plugin). */
  readonly eventLoop = new EventLoopMonitor();
  /** This process's GC pauses (closed with the engine plugin). */
  readonly gc = new GcMonitor();
  /** Set when shutdown begins: listeners stop accepting new work. */
  closing = false;
  /** Failed logins per client address (HTTP/ws credentials and driver-port SCRAM together). */
  readonly logins: LoginThrottle;
  /** Request-body bytes held across all HTTP requests (limit bufferedBodyBytes). */
  readonly bodyBytes: ByteBudget;
  /** Set by shutdown when the engine was poisoned: its message (the process then exits non-zero). */
  poisonedAtClose: string | null = null;
  /** Open connections, HTTP (ws included) and driver port together (limit maxConnections). */
  openConnections = 0;
  readonly counters: ServerCounters = {
    httpRequests: 0,
    httpInsertBatches: 0,
    wsConnections: 0,
    wsConnectionsTotal: 0,
    wsBatches: 0,
    wsDocuments: 0,
    wsErrors: 0,
    statsSubscribers: 0,
    driverConnections: 0,
    driverConnectionsTotal: 0,
    driverHandshakeFailures: 0,
    driverQueries: 0,
    driverBatches: 0,
    driverFeeds: 0,
    driverErrors: 0,
    documentsInserted: 0,
  };

  constructor(options: ResolvedOptions) {
    this.options = options;
    this.logins = new LoginThrottle(options.limits.loginFailuresPerMinute);
    this.bodyBytes = new ByteBudget(options.limits.bufferedBodyBytes);
  }
}
