//! `Database`: open (recovery), the write entry points that queue for the committer, and reads.

use serde::Serialize;
use std::collections::VecDeque;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::cache::BlockCache;
use crate::checkpoint::{self, Background, Maintenance, MaintenanceState};
pub use crate::committer::{AckListener, Callback};
use crate::committer::{Committer, CommitterHooks, Queue, Recent, Request, Shared};
use crate::doc::{Doc, DocFormat, PreparedDocs};
use crate::error::{Error, ErrorCode, Result};
use crate::feed::{Feed, FeedBatch};
use crate::index::{self, Index, IndexInfo, IndexWorker, ValueBound};
use crate::io::{FileVfs, Vfs};
use crate::journal::{self, Flusher, Journal, Position, SegmentFile, SegmentPool, SEGMENT_HEADER_SIZE};
use crate::key::{Key, KeyRange};
use crate::manifest::{self, Manifest};
use crate::merge::{Merger, MERGE_THREADS};
use crate::mutation::GroupEncoder;
use crate::options::{Durability, Options, WriteOptions, DEFAULT_SEGMENT_SIZE, MIN_SEGMENT_SIZE};
use crate::pacing::Pacer;
use crate::predicate::{Filter, Verdict};
use crate::run::Fetch;
use crate::stats::{Counters, Stats};
use crate::table::{Catalog, Env, Table, WriteResult};

/// A table's name, primary key and size.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TableInfo {
    pub name: String,
    pub primary_key: String,
    pub documents: u64,
    pub bytes: u64,
}

/// An open database. Cheap to clone; every clone is the same database.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    background: Arc<Background>,
    flusher: Arc<Flusher>,
    memory_budget: u64,
    /// The database's own journal segment size (from its manifest), whatever was passed.
    segment_size: u64,
    /// What the open did differently from what it was asked (an option the database overrides).
    open_notes: Vec<String>,
    vfs: Arc<dyn Vfs>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    closed: Mutex<bool>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl Inner {
    fn close(&self) -> Result<()> {
        {
            let mut closed = self.closed.lock().unwrap();
            if *closed {
                return Ok(());
            }
            *closed = true;
        }
        let result = wait(|done| self.shared.submit([Request::Close { done }]));
        for table in self.shared.catalog.read().unwrap().tables() {
            table.close_feeds();
        }
        self.background.merges.stop();
        self.shared.index_worker.stop();
        self.flusher.stop();
        for t in self.threads.lock().unwrap().drain(..) {
            let _ = t.join();
        }
        self.vfs.unlock();
        result
    }
}

/// Runs a callback-style call and blocks until its callback runs. For Rust callers and tests.
pub fn wait<T: Send + 'static>(submit: impl FnOnce(Callback<T>)) -> Result<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    submit(Box::new(move |r| {
        let _ = tx.send(r);
    }));
    rx.recv().unwrap_or_else(|_| Err(Error::closed()))
}

impl Database {
    /// Opens (creating if needed) the database in `dir`, recovering from the last checkpoint
    /// and the journal after it.
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Database> {
        let dir = dir.as_ref();
        let vfs = FileVfs::new(dir).map_err(|e| Error::io(format!("opening {}", dir.display()), e))?;
        Database::open_with(Arc::new(vfs), options)
    }

    /// Opens a database on any [`Vfs`] (the crash tests use [`crate::io::SimVfs`]).
    pub fn open_with(vfs: Arc<dyn Vfs>, options: Options) -> Result<Database> {
        Database::open_with_hooks(vfs, options, CommitterHooks::default())
    }

    /// For tests: opens a database whose committer reads `hooks.clock` and reports its
    /// [`crate::testing::SyncPoint`]s. Not a stable API.
    #[doc(hidden)]
    pub fn open_with_hooks(vfs: Arc<dyn Vfs>, options: Options, hooks: CommitterHooks) -> Result<Database> {
        if options.segment_size.is_some_and(|n| n < MIN_SEGMENT_SIZE) {
            return Err(Error::invalid("segment_size must be at least 64 KiB"));
        }
        if options.memory_budget < 4 << 20 {
            return Err(Error::invalid("memory_budget must be at least 4 MiB"));
        }
        if options.merge_fan_in < 2 {
            return Err(Error::invalid("merge_fan_in must be at least 2"));
        }
        vfs.lock().map_err(|e| Error::new(ErrorCode::Locked, e.to_string()))?;
        let opened = Database::open_locked(vfs.clone(), options, hooks);
        if opened.is_err() {
            vfs.unlock();
        }
        opened
    }

    fn open_locked(vfs: Arc<dyn Vfs>, options: Options, hooks: CommitterHooks) -> Result<Database> {
        let started = Instant::now();
        let counters = Arc::new(Counters::default());

        let creating = manifest::creation_unfinished(&*vfs)?;
        let stored = manifest::load(&*vfs)?;
        if stored.is_none() && !creating {
            manifest::begin_creation(&*vfs)?;
        }
        let env = Env { cache: Arc::new(BlockCache::new(options.memory_budget / 4)), counters: counters.clone() };
        let mut catalog = Catalog::new(env.clone());
        let mut manifest = stored.clone().unwrap_or(Manifest { next_run_id: 1, ..Default::default() });
        for entry in manifest.tables.iter_mut().filter(|t| t.index.is_none()) {
            let table = Table::new(entry.id, entry.name.clone(), entry.primary_key.clone(), &env);
            checkpoint::load_table(&*vfs, entry, &mut table.data.write())?;
            catalog.add(table);
        }
        catalog.next_index_tree_id = catalog.next_index_tree_id.max(manifest.next_index_tree_id);
        for entry in &mut manifest.tables {
            let Some(spec) = entry.index.clone() else { continue };
            let Some(owner) = catalog.by_id.get(&spec.table_id).cloned() else { continue };
            let tree = Table::new(entry.id, entry.name.clone(), String::new(), &env);
            if spec.complete {
                checkpoint::load_table(&*vfs, entry, &mut tree.data.write())?;
            }
            let index = Index::new(spec.name.clone(), spec.field.clone(), spec.multi, tree.clone(), spec.complete)?;
            owner.indexes.write().unwrap().push(Arc::new(index));
            catalog.by_id.insert(entry.id, tree);
        }
        catalog.next_table_id = catalog.next_table_id.max(manifest.next_table_id).max(1);
        checkpoint::remove_orphans(&*vfs, &manifest)?;

        let start = if stored.is_some() { manifest.start() } else { Position { next_seq: 1, ..Default::default() } };
        let (segment_size, open_notes) = effective_segment_size(&*vfs, stored.as_ref(), options.segment_size)?;
        manifest.segment_size = segment_size;
        let recovered = journal::recover(&*vfs, segment_size, start, |m| catalog.replay(m))?;
        let free = keep_free_segments_of_size(&*vfs, recovered.free, segment_size)?;
        counters.records_replayed.store(recovered.records, Relaxed);
        // Index entries are not journaled: an index is exact only as a clean close left it.
        // Any other is rebuilt, in the background, from its table.
        let stale: Vec<_> = catalog
            .by_name
            .values()
            .flat_map(|t| {
                t.indexes
                    .read()
                    .unwrap()
                    .iter()
                    .filter(|i| recovered.records > 0 || !i.ready())
                    .map(|i| (t.clone(), i.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        for (table, index) in &stale {
            catalog.remove_index(table, &index.name)?;
            catalog.add_index(table, &index.name, &index.field, index.multi)?;
        }

        // Close the segment recovery ended in with a marker naming the next segment, so nothing
        // a crash left past its end is ever read. When it ended at a marker already, that one is
        // rewritten: the id it named was never activated durably and is not used again.
        if let Some((id, seg)) = recovered.chain.back() {
            let sealed =
                journal::seal(seg, *id, recovered.end.offset, recovered.end.next_seq, recovered.next_segment_id)?;
            counters.bytes_written_journal.fetch_add(sealed, Relaxed);
        }
        let pool = Arc::new(SegmentPool::new(
            vfs.clone(),
            segment_size,
            options.recycle_segments,
            free,
            recovered.next_slot,
            counters.clone(),
        ));
        let retained: VecDeque<_> = recovered.chain;
        let mut journal = Journal::start(
            pool.clone(),
            counters.clone(),
            segment_size,
            recovered.next_segment_id,
            recovered.end.next_seq,
            retained,
        )?;
        if stored.is_none() {
            // A new database: its first segment, then the manifest that points at it.
            journal.sync()?;
            manifest.version = 1;
            manifest.next_table_id = 1;
            manifest.set_start(Position {
                segment_id: recovered.next_segment_id,
                offset: SEGMENT_HEADER_SIZE,
                next_seq: recovered.end.next_seq,
            });
            let stored = manifest::store(&*vfs, &manifest)?;
            counters.bytes_written_other.fetch_add(stored, Relaxed);
            manifest::finish_creation(&*vfs)?;
        }
        let replayed = recovered.end.next_seq.saturating_sub(start.next_seq);
        counters.applied_seq.store(recovered.end.next_seq - 1, Relaxed);
        counters.durable_seq.store(recovered.end.next_seq - 1, Relaxed);
        // Replayed changes are in memory only: count them toward the next checkpoint.
        if replayed > 0 {
            counters.journal_bytes_since_checkpoint.store(options.checkpoint_bytes / 2, Relaxed);
        }

        let maintenance_state = Arc::new(Mutex::new(MaintenanceState::default()));
        let shared = Arc::new(Shared {
            catalog: Arc::new(RwLock::new(catalog)),
            counters: counters.clone(),
            queue: Mutex::new(Queue::default()),
            queued: Default::default(),
            wake: Condvar::new(),
            poison: Mutex::new(None),
            maintenance: maintenance_state.clone(),
            index_worker: Arc::new(IndexWorker::default()),
            ack_listener: OnceLock::new(),
            clock: hooks.clock.clone(),
            sync_point: hooks.sync_point,
        });
        let weak = Arc::downgrade(&shared);
        hooks.clock.on_advance(Box::new(move || {
            if let Some(shared) = weak.upgrade() {
                shared.wake_committer();
            }
        }));
        shared.index_worker.start_build();
        let (tasks, task_rx) = mpsc::channel();
        let background = Arc::new(Background {
            vfs: vfs.clone(),
            manifest: Mutex::new(manifest),
            env,
            rates: Default::default(),
            merges: Default::default(),
            level0_runs: Default::default(),
            levels: Default::default(),
            delay_per_mib: options.background_delay_per_mib,
        });
        let maintenance =
            Maintenance { bg: background.clone(), pool, state: maintenance_state.clone(), spare_segments: 1 };
        let mergers: Vec<(&str, Merger)> = MERGE_THREADS
            .iter()
            .map(|(name, levels)| {
                let merger = Merger {
                    bg: background.clone(),
                    catalog: shared.catalog.clone(),
                    state: maintenance_state.clone(),
                    fan_in: options.merge_fan_in,
                    levels: levels.clone(),
                };
                (*name, merger)
            })
            .collect();
        // Runs left over from before (a crash mid-merge, or a backlog) are merged from the start.
        background.note_shape(&background.manifest.lock().unwrap());
        background.merges.checkpoint_done();
        let memory_budget = options.memory_budget;
        let flusher = Arc::new(Flusher::default());
        let encoder = GroupEncoder::new(journal.max_payload());
        let committer = Committer {
            shared: shared.clone(),
            journal,
            flusher: flusher.clone(),
            pacer: Pacer::new(options.memory_budget / 4, options.merge_fan_in),
            background: background.clone(),
            options,
            tasks,
            encoder,
            recent: Recent::new(hooks.clock.now()),
        };
        let mut threads = vec![
            std::thread::Builder::new()
                .name("wharf-maintenance".into())
                .spawn(move || {
                    background_priority(5);
                    maintenance.run(task_rx)
                })
                .map_err(|e| Error::io("starting the maintenance thread", e))?,
            {
                let (worker, catalog) = (shared.index_worker.clone(), shared.catalog.clone());
                std::thread::Builder::new()
                    .name("wharf-index".into())
                    .spawn(move || {
                        background_priority(5);
                        worker.run(catalog)
                    })
                    .map_err(|e| Error::io("starting the index thread", e))?
            },
            {
                let (flusher, shared) = (flusher.clone(), shared.clone());
                std::thread::Builder::new()
                    .name("wharf-flush".into())
                    .spawn(move || {
                        flusher.run(&shared.counters, || {
                            shared.queue.lock().unwrap().synced_in_background = true;
                            shared.wake.notify_one();
                        })
                    })
                    .map_err(|e| Error::io("starting the flush thread", e))?
            },
            std::thread::Builder::new()
                .name("wharf-committer".into())
                .spawn(move || committer.run())
                .map_err(|e| Error::io("starting the committer thread", e))?,
        ];
        for (name, merger) in mergers {
            let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
                background_priority(10);
                merger.run()
            });
            threads.push(thread.map_err(|e| Error::io("starting a merge thread", e))?);
        }
        counters.recovery_us.store(started.elapsed().as_micros() as u64, Relaxed);
        Ok(Database {
            inner: Arc::new(Inner {
                shared,
                background,
                flusher,
                memory_budget,
                segment_size,
                open_notes,
                vfs,
                threads: Mutex::new(threads),
                closed: Mutex::new(false),
            }),
        })
    }

    fn submit(&self, request: Request) {
        self.submit_all([request]);
    }

    /// Queues requests, or fails them all once closed.
    fn submit_all(&self, requests: impl IntoIterator<Item = Request>) {
        if *self.inner.closed.lock().unwrap() {
            requests.into_iter().for_each(|r| crate::committer::fail(r, Error::closed()));
        } else {
            self.inner.shared.submit(requests);
        }
    }

    /// Creates a table; `done` runs once the creation is durable.
    pub fn create_table(&self, name: &str, primary_key: &str, done: Callback<()>) {
        self.submit(Request::CreateTable { name: name.into(), primary_key: primary_key.into(), done });
    }

    /// Drops a table and its documents; `done` runs once the drop is durable.
    pub fn drop_table(&self, name: &str, done: Callback<()>) {
        self.submit(Request::DropTable { name: name.into(), done });
    }

    /// The primary key field of `table`, needed to [`PreparedDocs::parse`] for it.
    pub fn primary_key(&self, table: &str) -> Result<String> {
        Ok(self.table(table)?.primary_key.clone())
    }

    /// Parses `bytes` for `table` (any thread; [`PreparedDocs::parse`] with the table's key).
    pub fn prepare(&self, table: &str, bytes: &[u8], format: DocFormat) -> Result<PreparedDocs> {
        PreparedDocs::parse(bytes, format, &self.table(table)?.primary_key)
    }

    /// Inserts a prepared batch. Bad documents fail alone; `done` gets the RethinkDB-shaped
    /// result when the batch is visible (`Soft`) or durable (`Hard`).
    pub fn insert(&self, table: &str, docs: PreparedDocs, options: WriteOptions, done: Callback<WriteResult>) {
        self.submit(Request::Insert {
            table: table.into(),
            docs,
            options,
            done,
            submitted: self.inner.shared.clock.now(),
        });
    }

    /// Single-document inserts into one table, in order, each a write of its own: `done` gets
    /// one result per document of `docs`, in order, each as if that document had been inserted
    /// alone. The binding sends the single-document inserts of one JS tick this way, parsed
    /// together, applied as one request and answered with one callback.
    pub fn insert_each(
        &self,
        table: &str,
        docs: PreparedDocs,
        done: Callback<Vec<WriteResult>>,
        options: WriteOptions,
    ) {
        if docs.is_empty() {
            return done(Ok(Vec::new())); // a request of no writes would not wake the committer
        }
        self.submit(Request::InsertEach {
            table: table.into(),
            docs,
            options,
            done,
            submitted: self.inner.shared.clock.now(),
        });
    }

    /// Sets the one listener the committer tells around each batch of acknowledgements it sends:
    /// a group's soft ones once it is applied, its durable ones after its fdatasync (see
    /// [`AckListener`]). Fails if one is set already.
    pub fn set_ack_listener(&self, listener: Box<dyn AckListener>) -> Result<()> {
        self.inner
            .shared
            .ack_listener
            .set(listener)
            .map_err(|_| Error::invalid("an acknowledgement listener is set already".to_string()))
    }

    /// Deletes `keys`; missing keys count as `skipped`.
    pub fn delete(&self, table: &str, keys: Vec<Key>, durability: Durability, done: Callback<WriteResult>) {
        self.submit(Request::Delete {
            table: table.into(),
            keys,
            durability,
            done,
            submitted: self.inner.shared.clock.now(),
        });
    }

    /// `done` runs once everything acknowledged before this call is durable.
    pub fn sync(&self, done: Callback<()>) {
        self.submit(Request::Sync { done });
    }

    fn table(&self, name: &str) -> Result<Arc<Table>> {
        if *self.inner.closed.lock().unwrap() {
            return Err(Error::closed());
        }
        self.inner.shared.catalog.read().unwrap().get(name).cloned()
    }

    /// A document's JSON text, if present.
    pub fn get(&self, table: &str, key: &Key) -> Result<Option<Arc<str>>> {
        let doc = self.table(table)?.get(key)?;
        self.inner.shared.counters.record_read(doc.is_some() as u64);
        Ok(doc)
    }

    pub fn get_many(&self, table: &str, keys: &[Key]) -> Result<Vec<Option<Arc<str>>>> {
        let docs = self.table(table)?.get_many(keys, Fetch::Wait)?.unwrap_or_default();
        self.inner.shared.counters.record_read(docs.iter().filter(|d| d.is_some()).count() as u64);
        Ok(docs)
    }

    /// `get_many` if it needs no disk wait: every document is in a memtable, the block cache
    /// or the OS page cache. `None` otherwise (nothing counted: call `get_many`). For callers
    /// on a thread that must not block, such as Node's: a hit is answered there and then.
    pub fn get_many_from_memory(&self, table: &str, keys: &[Key]) -> Result<Option<Vec<Option<Arc<str>>>>> {
        let Some(docs) = self.table(table)?.get_many(keys, Fetch::IfCached)? else { return Ok(None) };
        let c = &self.inner.shared.counters;
        c.record_read(docs.iter().filter(|d| d.is_some()).count() as u64);
        c.reads_from_memory.fetch_add(1, Relaxed);
        Ok(Some(docs))
    }

    /// Documents in key order (or reverse) within `range`, at most `limit`.
    pub fn scan(
        &self,
        table: &str,
        range: &KeyRange,
        limit: Option<usize>,
        reverse: bool,
    ) -> Result<Vec<(Key, Arc<str>)>> {
        let table = self.table(table)?;
        if range_is_empty(range) {
            return Ok(Vec::new());
        }
        let rows = table.data.read().scan(range, limit.unwrap_or(usize::MAX), reverse)?;
        self.inner.shared.counters.record_read(rows.len() as u64);
        Ok(rows)
    }

    pub fn count(&self, table: &str) -> Result<u64> {
        let n = self.table(table)?.data.read().documents;
        self.inner.shared.counters.record_read(0);
        Ok(n)
    }

    /// Creates a secondary index on `field` (a dotted path) of `table`; `done` runs once the
    /// creation is durable. The index then builds in the background: see [`Database::index_wait`].
    pub fn create_index(&self, table: &str, name: &str, field: &str, multi: bool, done: Callback<()>) {
        self.submit(Request::CreateIndex { table: table.into(), name: name.into(), field: field.into(), multi, done });
    }

    pub fn drop_index(&self, table: &str, name: &str, done: Callback<()>) {
        self.submit(Request::DropIndex { table: table.into(), name: name.into(), done });
    }

    pub fn list_indexes(&self, table: &str) -> Result<Vec<IndexInfo>> {
        let t = self.table(table)?;
        let documents = t.data.read().documents;
        let mut list: Vec<IndexInfo> = t.indexes.read().unwrap().iter().map(|i| i.info(documents)).collect();
        list.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(list)
    }

    fn index(&self, table: &Arc<Table>, name: &str) -> Result<Arc<Index>> {
        table
            .indexes
            .read()
            .unwrap()
            .iter()
            .find(|i| i.name == name)
            .cloned()
            .ok_or_else(|| index::not_found(&table.name, name))
    }

    /// Blocks until the named indexes (all when `names` is empty) are built and reflect every
    /// write acknowledged before the call, or `timeout` passes (`WHARF_ERR_INDEX_NOT_READY`).
    pub fn index_wait(&self, table: &str, names: &[String], timeout: Duration) -> Result<Vec<IndexInfo>> {
        let t = self.table(table)?;
        let indexes: Vec<Arc<Index>> = if names.is_empty() {
            t.indexes.read().unwrap().clone()
        } else {
            names.iter().map(|n| self.index(&t, n)).collect::<Result<_>>()?
        };
        let seq = self.inner.shared.counters.applied_seq.load(Relaxed);
        let deadline = Instant::now() + timeout;
        let worker = &self.inner.shared.index_worker;
        if !worker.wait(seq, || indexes.iter().all(|i| i.ready()), deadline) {
            let documents = t.data.read().documents;
            let slow = indexes.iter().find(|i| !i.ready()).map(|i| i.info(documents));
            return Err(match slow {
                Some(info) => index::not_ready(table, &info),
                None => Error::new(
                    ErrorCode::IndexNotReady,
                    format!("indexes of table `{table}` did not catch up within {timeout:?}"),
                )
                .with_table(table),
            });
        }
        let documents = t.data.read().documents;
        Ok(indexes.iter().map(|i| i.info(documents)).collect())
    }

    /// Waits as `fresh` asks: built and caught up (up to a minute), or else built already.
    fn query_index(&self, table: &str, name: &str, fresh: bool) -> Result<(Arc<Table>, Arc<Index>)> {
        let t = self.table(table)?;
        let i = self.index(&t, name)?;
        if fresh {
            self.index_wait(table, &[name.to_string()], Duration::from_secs(60))?;
        } else if !i.ready() {
            return Err(index::not_ready(table, &i.info(0)));
        }
        Ok((t, i))
    }

    /// Documents whose indexed field equals one of `values` (once per matching value). `fresh`
    /// waits until the index reflects every write acknowledged before the call.
    pub fn get_all(
        &self,
        table: &str,
        index: &str,
        values: &[serde_json::Value],
        fresh: bool,
    ) -> Result<Vec<(Key, Arc<str>)>> {
        let (t, i) = self.query_index(table, index, fresh)?;
        let rows = i.get_all(&t, values)?;
        self.inner.shared.counters.record_read(rows.len() as u64);
        Ok(rows)
    }

    /// Documents whose indexed field lies within the bounds, in index order.
    #[allow(clippy::too_many_arguments)]
    pub fn between(
        &self,
        table: &str,
        index: &str,
        lower: &ValueBound,
        upper: &ValueBound,
        limit: Option<usize>,
        reverse: bool,
        fresh: bool,
    ) -> Result<Vec<(Key, Arc<str>)>> {
        let (t, i) = self.query_index(table, index, fresh)?;
        let rows = i.between(&t, lower, upper, limit.unwrap_or(usize::MAX), reverse)?;
        self.inner.shared.counters.record_read(rows.len() as u64);
        Ok(rows)
    }

    /// One page of a lazy read: documents of `table` in key order, or of index ranges in index
    /// order ([`ReadFrom`]), from just after `after` (a resume point an earlier page returned),
    /// each kept or left out by `options.filter` (see [`crate::predicate`]), until `limit`
    /// documents are taken or `examine` documents have been read. With `count_only` the kept
    /// documents are counted, not returned (deferred ones are always returned: the caller
    /// decides them). The page's `resume` is `None` once the range is exhausted.
    pub fn read_page(
        &self,
        table: &str,
        from: &ReadFrom,
        after: Option<Resume>,
        options: &PageOptions,
    ) -> Result<Page> {
        let limit = options.limit.max(1);
        let examine = options.examine.max(1);
        let mut page = Page::default();
        // A document is `None` only where none is needed: counting a fresh index range, unfiltered.
        let mut fetched = 0u64;
        let mut take = |key: Key, doc: Option<Doc>| -> bool {
            page.examined += 1;
            fetched += doc.is_some() as u64;
            let verdict = match (&options.filter, &doc) {
                (Some(f), Some(doc)) => f.verdict(doc),
                _ => Verdict::Match,
            };
            match (verdict, doc) {
                (Verdict::Match, _) if options.count_only => page.counted += 1,
                (Verdict::Match, Some(doc)) => page.rows.push(PageRow { key, doc, deferred: false }),
                (Verdict::Defer, Some(doc)) => page.rows.push(PageRow { key, doc, deferred: true }),
                _ => {}
            }
            page.rows.len() < limit && (page.examined as usize) < examine
        };
        // What a page probably reads: `limit` documents when each is kept, more through a filter.
        let expected = if options.filter.is_none() && !options.count_only { limit.min(examine) } else { 256 };
        let resume = match from {
            ReadFrom::Keys(range) => {
                let t = self.table(table)?;
                let mut range = range.clone();
                match after {
                    Some(Resume::Key(k)) if options.reverse => range.upper = Bound::Excluded(k),
                    Some(Resume::Key(k)) => range.lower = Bound::Excluded(k),
                    Some(Resume::Entry(..)) => {
                        return Err(Error::invalid("a key range resumes after a key, not an index entry"))
                    }
                    None => {}
                }
                let mut chunk = expected.clamp(1, 4096);
                let mut resume = None;
                while !range_is_empty(&range) {
                    let rows = t.data.read().scan(&range, chunk, options.reverse)?;
                    let full = rows.len() == chunk;
                    let last = rows.last().map(|(k, _)| k.clone());
                    let mut stopped = None;
                    for (key, doc) in rows {
                        if !take(key.clone(), Some(doc)) {
                            stopped = Some(key);
                            break;
                        }
                    }
                    if let Some(k) = stopped {
                        resume = Some(Resume::Key(k));
                        break;
                    }
                    let (true, Some(last)) = (full, last) else { break };
                    if options.reverse {
                        range.upper = Bound::Excluded(last);
                    } else {
                        range.lower = Bound::Excluded(last);
                    }
                    chunk = (chunk * 2).min(4096);
                }
                resume
            }
            ReadFrom::Index { name, ranges } => {
                let (t, i) = self.query_index(table, name, options.fresh)?;
                let after = match after {
                    Some(Resume::Entry(at, entry)) => Some((at, entry)),
                    Some(Resume::Key(_)) => {
                        return Err(Error::invalid("an index read resumes after an index entry, not a key"))
                    }
                    None => None,
                };
                let fetch_all = options.filter.is_some() || !options.count_only || !options.fresh;
                i.walk_entries(&t, ranges, after, options.reverse, expected, fetch_all, &mut take)?
                    .map(|(at, k)| Resume::Entry(at, k))
            }
        };
        page.resume = resume;
        self.inner.shared.counters.record_read(fetched);
        Ok(page)
    }

    /// Tables in name order (none once closed).
    pub fn list_tables(&self) -> Vec<TableInfo> {
        if *self.inner.closed.lock().unwrap() {
            return Vec::new();
        }
        let catalog = self.inner.shared.catalog.read().unwrap();
        let mut tables: Vec<TableInfo> = catalog
            .by_name
            .values()
            .map(|t| {
                let data = t.data.read();
                TableInfo {
                    name: t.name.clone(),
                    primary_key: t.primary_key.clone(),
                    documents: data.documents,
                    bytes: data.bytes,
                }
            })
            .collect();
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        tables
    }

    pub fn stats(&self) -> Stats {
        let mut s = self.inner.shared.counters.snapshot();
        let cache = &self.inner.background.env.cache;
        s.memory_budget = self.inner.memory_budget;
        s.segment_size = self.inner.segment_size;
        s.open_notes = self.inner.open_notes.clone();
        s.cache_bytes = cache.bytes();
        s.cache_hits = cache.hits.load(Relaxed);
        s.cache_misses = cache.misses.load(Relaxed);
        for t in self.inner.shared.catalog.read().unwrap().by_id.values() {
            let totals = &t.run_totals;
            s.runs += totals.runs.load(Relaxed);
            s.run_bytes += totals.bytes.load(Relaxed);
            s.run_index_bytes += totals.index_bytes.load(Relaxed);
        }
        s
    }

    /// Finishes every queued request, checkpoints, and stops the engine's threads. Later calls
    /// fail with `WHARF_ERR_CLOSED`. Closing twice is harmless.
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }

    /// Subscribes to `table`'s changes: every insert, replace, update and delete applied from now
    /// on, in commit order, at most `capacity` waiting (more are counted as skipped). `ready` is
    /// called, from the committer's thread, when changes arrive after a take that emptied the
    /// feed, and when the feed ends: then take until a batch comes back empty.
    pub fn changes(&self, table: &str, capacity: usize, ready: Box<dyn Fn() + Send + Sync>) -> Result<ChangeFeed> {
        let table = self.table(table)?;
        let feed = Arc::new(Feed::new(capacity, ready));
        table.add_feed(feed.clone());
        Ok(ChangeFeed { feed, table: Arc::downgrade(&table) })
    }
}

/// A subscription to a table's changes ([`Database::changes`]); dropping it unsubscribes.
pub struct ChangeFeed {
    feed: Arc<Feed>,
    table: Weak<Table>,
}

impl ChangeFeed {
    /// Up to `max` changes in commit order, the changes skipped before them, and whether the feed
    /// ended (its table was dropped or the database closed).
    pub fn take(&self, max: usize) -> FeedBatch {
        self.feed.take(max)
    }
}

impl Drop for ChangeFeed {
    fn drop(&mut self) {
        if let Some(table) = self.table.upgrade() {
            table.remove_feed(&self.feed);
        }
    }
}

/// Lowers this thread's CPU priority (Linux nice value, per thread). On a machine with few cores
/// the committer and the caller's threads then win the CPU when background work competes for
/// it, as seed 003's second remedy does; checkpoints (5) outrank merges (10). Pacing measures
/// the background's actual rate, so it adapts to the share it gets.
fn background_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// The journal segment size to use, and a note when it is not the one asked for. It shapes the
/// files on disk, so an existing database keeps its own: from the manifest, or — a manifest from
/// before it was recorded — the length of its largest segment file.
fn effective_segment_size(vfs: &dyn Vfs, stored: Option<&Manifest>, asked: Option<u64>) -> Result<(u64, Vec<String>)> {
    let Some(stored) = stored else { return Ok((asked.unwrap_or(DEFAULT_SEGMENT_SIZE), Vec::new())) };
    let own = match stored.segment_size {
        0 => {
            let mut largest = 0;
            for name in vfs.list().map_err(|e| Error::io("listing the database directory", e))? {
                if journal::slot_of(&name).is_some() {
                    let file = vfs.open(&name, false).map_err(|e| Error::io(format!("opening {name}"), e))?;
                    largest = largest.max(file.len().map_err(|e| Error::io(format!("reading {name}"), e))?);
                }
            }
            Some(largest).filter(|n| *n >= MIN_SEGMENT_SIZE)
        }
        n => Some(n),
    };
    let size = own.or(asked).unwrap_or(DEFAULT_SEGMENT_SIZE);
    let mut notes = Vec::new();
    if let Some(asked) = asked.filter(|a| *a != size) {
        notes.push(format!(
            "segment size {asked} bytes ignored: this database was created with {size}-byte journal segments and keeps them"
        ));
    }
    Ok((size, notes))
}

/// Free journal segments of exactly `size` bytes, for reuse. Any other is removed: one cut short
/// by a crash or a full disk while it was created (its creation ends with a sync, so it was never
/// used), or one of another size from before segment sizes were recorded.
fn keep_free_segments_of_size(vfs: &dyn Vfs, free: Vec<SegmentFile>, size: u64) -> Result<Vec<SegmentFile>> {
    let mut kept = Vec::with_capacity(free.len());
    for seg in free {
        if seg.file.len().map_err(|e| Error::io(format!("reading {}", seg.name), e))? == size {
            kept.push(seg);
        } else {
            vfs.remove(&seg.name).map_err(|e| Error::io(format!("removing {}", seg.name), e))?;
        }
    }
    Ok(kept)
}

/// Where a lazy read is from.
#[derive(Debug, Clone)]
pub enum ReadFrom {
    /// A range of primary keys.
    Keys(KeyRange),
    /// Ranges of a secondary index's values, (lower, upper) each, read one after the other.
    Index { name: String, ranges: Vec<(ValueBound, ValueBound)> },
}

/// Where the next page of a lazy read starts: after this primary key, or after this entry of
/// the index range at this position.
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    Key(Key),
    Entry(usize, Key),
}

/// How one page of [`Database::read_page`] is read.
#[derive(Debug, Clone)]
pub struct PageOptions {
    /// Documents to return at most (kept and deferred ones).
    pub limit: usize,
    /// Documents to read at most (bounds the work of one call when a filter keeps few).
    pub examine: usize,
    pub reverse: bool,
    pub filter: Option<Filter>,
    /// Count the kept documents instead of returning them.
    pub count_only: bool,
    /// For index reads: wait until the index reflects every write acknowledged before the call.
    pub fresh: bool,
}

/// A document of a page; `deferred` when the filter left it to the caller.
#[derive(Debug, Clone)]
pub struct PageRow {
    pub key: Key,
    pub doc: Doc,
    pub deferred: bool,
}

/// One page of a lazy read.
#[derive(Debug, Clone, Default)]
pub struct Page {
    pub rows: Vec<PageRow>,
    /// Kept documents counted (with `count_only`).
    pub counted: u64,
    /// Documents read, or index entries that answered for theirs (an unfiltered count of a
    /// fresh index range reads no document for an entry whose value is whole in its key: a fresh
    /// index holds exactly the values of every write acknowledged before the read).
    pub examined: u64,
    pub resume: Option<Resume>,
}

fn range_is_empty(range: &KeyRange) -> bool {
    use Bound::*;
    match (&range.lower, &range.upper) {
        (Included(a), Included(b)) => a > b,
        (Included(a) | Excluded(a), Included(b) | Excluded(b)) => a >= b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{CrashMode, SimVfs};
    use crate::key::Key;

    #[test]
    fn a_manifest_from_before_segment_size_was_recorded_takes_the_size_of_its_segment_files() {
        let vfs = SimVfs::new();
        let options = |size| Options { segment_size: Some(size), checkpoint_bytes: 1 << 40, ..Options::default() };
        let db = Database::open_with(Arc::new(vfs.clone()), options(256 << 10)).unwrap();
        wait(|done| db.create_table("t", "id", done)).unwrap();
        let doc = |k: u64| format!("{{\"id\":{k},\"pad\":\"{}\"}}", "x".repeat(200));
        for k in 0..600 {
            let docs = PreparedDocs::parse(doc(k).as_bytes(), DocFormat::Ndjson, "id").unwrap();
            wait(|done| db.insert("t", docs, WriteOptions::default(), done)).unwrap();
        }
        std::mem::forget(db);
        let vfs = vfs.crash(CrashMode::DropUnsynced);
        // The manifest as an older engine wrote it: no segment size.
        let mut m = manifest::load(&vfs).unwrap().unwrap();
        assert_eq!(m.segment_size, 256 << 10);
        m.segment_size = 0;
        m.version += 1;
        manifest::store(&vfs, &m).unwrap();
        let db = Database::open_with(Arc::new(vfs.clone()), options(64 << 10)).unwrap();
        assert_eq!(db.stats().segment_size, 256 << 10);
        assert_eq!(db.stats().open_notes.len(), 1);
        for k in 0..600 {
            assert_eq!(db.get("t", &Key::from(k as f64)).unwrap().as_deref(), Some(doc(k).as_str()), "key {k}");
        }
        db.close().unwrap();
        // Its next manifest records the size.
        assert_eq!(manifest::load(&vfs).unwrap().unwrap().segment_size, 256 << 10);
    }
}
