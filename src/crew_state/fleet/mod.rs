//! Reading the fleet (docs/spec/crew-state.md#output, #resolution): every task once, on every core,
//! rows handed out in id order as soon as they are known.
//!
//! A view goes in two steps. First the tasks' own files ([`super::read`]),
//! block by block on one thread per core; a task that needs nothing from
//! outside its files is resolved on the spot, and the rows of a block are
//! handed to the caller as soon as every block before it is out — so a
//! pane-less fleet streams and never holds its rows. Then, for the tasks
//! that need more, tmux once per socket and git once per repository
//! ([`super::gather`], [`super::done_check`]), and their rows (with every
//! row held behind the first of them).
//!
//! A [`FleetReader`] made with [`FleetReader::kept`] is meant to be held
//! across frames (the live view, the dashboard): it keeps each task's facts
//! with the stamps of the files they came from and re-reads only files
//! that changed ([`super::read::Stamps`]), reuses screens whose panes
//! printed nothing since their capture, and remembers the done check's
//! answers while the refs they depend on are unchanged. A fleet too big to
//! keep ([`KEEP_MAX`] tasks) is read afresh each frame.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use super::Row;
use super::done_check::{DoneCheck, Request};
use super::facts::Facts;
use super::gather::{self, Ancestry, Panes};
use super::notices::TaskNotices;
use super::read::{self, Listed, Listing, Present, StateDir};
use super::resolve::{Need, Resolution, step};
use crate::config::Config;
use crate::error::Result;
use crate::gitfiles::GitFiles;
use crate::home::Home;
use crate::task_id::TaskId;

mod task;

use task::*;

/// Tasks per unit of work.
const BLOCK: usize = 64;

/// Reader threads at most.
const MAX_THREADS: usize = 8;

/// A kept reader keeps facts only for fleets up to this size.
pub const KEEP_MAX: usize = 20_000;

/// What a view's caller makes of each row, on the thread that read the
/// task (so a row built there is dropped there, and the caller's thread
/// only takes what it keeps).
pub type Map<'m, T> = &'m (dyn Fn(Row) -> T + Sync);

/// What the last view did, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Tasks in the view.
    pub tasks: usize,
    /// Tasks whose files were read (not reused from the last frame).
    pub reread: usize,
    /// Tasks whose files' stamps were taken (the others were trusted on
    /// the file events' word).
    pub looked: usize,
}

/// Reads fleets; see the module doc.
#[derive(Debug, Default)]
pub struct FleetReader {
    keep: bool,
    stats: Stats,
    /// Boxed: a task's facts are large, and are handed from frame to frame
    /// without being copied.
    #[allow(
        clippy::vec_box,
        reason = "each box is handed on to the next frame's item"
    )]
    kept: Vec<Box<Kept>>,
    panes: Panes,
    done: DoneCheck,
    ancestry: Ancestry,
    /// The git-file reader, kept across frames by a kept reader.
    git: GitFiles,
    /// A kept reader's file events, once started ([`TaskNotices`]); whether
    /// starting it was tried.
    notices: Option<TaskNotices>,
    notices_tried: bool,
}

impl FleetReader {
    /// A reader for one view.
    pub fn new() -> FleetReader {
        FleetReader::default()
    }

    /// A reader to hold across frames (see the module doc).
    pub fn kept() -> FleetReader {
        FleetReader {
            keep: true,
            panes: Panes::kept(),
            git: GitFiles::kept(),
            ..FleetReader::default()
        }
    }

    /// What the last view did.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Reads every task with a meta, handing each row to `emit` in id
    /// order; returns the warnings (tmux could not be asked) for the
    /// caller to print. An error from `emit` stops the read and is returned.
    pub fn fleet(
        &mut self,
        home: &Home,
        cfg: &Config,
        now: u64,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<Vec<String>> {
        self.fleet_mapped(home, cfg, now, &|r| r, emit)
    }

    /// [`FleetReader::fleet`], each row first handed to `map` on the
    /// thread that read its task, and what `map` made of it to `emit`.
    pub fn fleet_mapped<T: Send>(
        &mut self,
        home: &Home,
        cfg: &Config,
        now: u64,
        map: Map<T>,
        emit: &mut dyn FnMut(T) -> Result<()>,
    ) -> Result<Vec<String>> {
        let mut listing = Listing::read(home)?;
        let state = StateDir::listed(listing.dir.take());
        let keep = self.keep && listing.tasks.len() <= KEEP_MAX;
        let inboxes: Vec<(TaskId, bool)> = if keep {
            listing
                .tasks
                .iter()
                .map(|l| (l.id.clone(), l.present.inbox()))
                .collect()
        } else {
            Vec::new()
        };
        let mut prev = std::mem::take(&mut self.kept).into_iter().peekable();
        // Made as the blocks are (never all at once beside the listing).
        let items = listing.tasks.into_iter().map(|listed| {
            while prev.next_if(|k| k.facts.id < listed.id).is_some() {}
            let prev = prev.next_if(|k| k.facts.id == listed.id);
            Item { listed, prev }
        });
        if keep && !self.notices_tried {
            self.notices_tried = true;
            self.notices = TaskNotices::start(home);
        }
        if !keep {
            // Too big to keep: started afresh once it is small again.
            self.notices = None;
            self.notices_tried = false;
        }
        if let Some(notices) = self.notices.as_mut()
            && !notices.begin_frame()
        {
            self.notices = None;
        }
        let result = self.read(home, cfg, now, items, keep, map, emit, &state);
        if let Some(notices) = self.notices.as_mut() {
            notices.end_frame(home, &inboxes);
        }
        result
    }

    /// The rows of `ids` (in the order given), and the warnings.
    pub fn tasks(
        &mut self,
        home: &Home,
        cfg: &Config,
        ids: &[TaskId],
        now: u64,
    ) -> (Vec<Row>, Vec<String>) {
        let items = ids.iter().map(|id| Item {
            listed: Listed {
                id: id.clone(),
                present: Present::ALL,
            },
            prev: None,
        });
        let mut rows = Vec::with_capacity(ids.len());
        let state = StateDir::open(home);
        let warnings = self
            .read(
                home,
                cfg,
                now,
                items,
                false,
                &|r| r,
                &mut |r| {
                    rows.push(r);
                    Ok(())
                },
                &state,
            )
            .unwrap_or_default();
        (rows, warnings)
    }

    #[allow(clippy::too_many_arguments)]
    fn read<T: Send>(
        &mut self,
        home: &Home,
        cfg: &Config,
        now: u64,
        items: impl Iterator<Item = Item>,
        keep: bool,
        map: Map<T>,
        emit: &mut dyn FnMut(T) -> Result<()>,
        state: &StateDir,
    ) -> Result<Vec<String>> {
        // A kept reader's git answers are looked at again, not re-read,
        // while the files they came from are as they were.
        let mut git = if keep {
            std::mem::take(&mut self.git)
        } else {
            GitFiles::new()
        };
        git.begin_frame(now);
        let result = self.read_with(home, cfg, now, items, keep, map, emit, &git, state);
        if keep {
            git.end_frame();
            self.git = git;
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn read_with<T: Send>(
        &mut self,
        home: &Home,
        cfg: &Config,
        now: u64,
        items: impl Iterator<Item = Item>,
        keep: bool,
        map: Map<T>,
        emit: &mut dyn FnMut(T) -> Result<()>,
        git: &GitFiles,
        state: &StateDir,
    ) -> Result<Vec<String>> {
        let shared = Shared {
            home,
            cfg,
            now,
            keep,
            git,
            ancestry: &self.ancestry,
            state,
            notices: if keep { self.notices.as_ref() } else { None },
            frame: self.notices.as_ref().map_or(0, TaskNotices::frame),
        };
        let mut blocks: Vec<Mutex<Option<Vec<Item>>>> = Vec::new();
        let mut items = items.peekable();
        let mut n = 0;
        while items.peek().is_some() {
            let block: Vec<Item> = items.by_ref().take(BLOCK).collect();
            n += block.len();
            blocks.push(Mutex::new(Some(block)));
        }
        let mut em = Emitter {
            emit,
            pending: BTreeMap::new(),
            next: 0,
            held: Vec::new(),
            blocked: false,
            kept: Vec::with_capacity(if keep { n } else { 0 }),
            error: None,
            stats: Stats::default(),
        };
        let stop = AtomicBool::new(false);
        let next = AtomicUsize::new(0);
        let count = blocks.len();
        let work = |k: usize| -> Vec<Done<T>> {
            let items = blocks[k].lock().expect("block").take().unwrap_or_default();
            items
                .into_iter()
                .map(|i| refresh(&shared, map, i))
                .collect()
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .min(MAX_THREADS)
            .min(n / BLOCK);
        if threads < 2 {
            for k in 0..count {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let done = work(k);
                em.block(k, done, &stop);
            }
        } else {
            std::thread::scope(|scope| {
                let (tx, rx) = mpsc::channel();
                for _ in 0..threads {
                    let tx = tx.clone();
                    let (next, stop, work) = (&next, &stop, &work);
                    scope.spawn(move || {
                        loop {
                            let k = next.fetch_add(1, Ordering::SeqCst);
                            if k >= count || stop.load(Ordering::SeqCst) {
                                break;
                            }
                            if tx.send((k, work(k))).is_err() {
                                break;
                            }
                        }
                    });
                }
                drop(tx);
                for (k, done) in rx {
                    em.block(k, done, &stop);
                }
            });
        }
        if let Some(e) = em.error.take() {
            return Err(e);
        }
        let mut warnings = Vec::new();
        let mut held = std::mem::take(&mut em.held);
        self.second_step(
            home,
            cfg,
            git,
            &state.dirs,
            now,
            map,
            &mut held,
            &mut warnings,
        );
        for d in held {
            em.out(d, &stop);
            if em.error.is_some() {
                break;
            }
        }
        if let Some(e) = em.error.take() {
            return Err(e);
        }
        if keep {
            self.kept = std::mem::take(&mut em.kept);
            self.done.end_frame();
        }
        self.stats = em.stats;
        Ok(warnings)
    }

    /// tmux and git for the tasks the first step could not resolve.
    #[allow(clippy::too_many_arguments)]
    fn second_step<T>(
        &mut self,
        home: &Home,
        cfg: &Config,
        git: &GitFiles,
        dirs: &read::Dirs,
        now: u64,
        map: Map<T>,
        held: &mut [Done<T>],
        warnings: &mut Vec<String>,
    ) {
        let mut open: Vec<&mut Facts> = held
            .iter_mut()
            .filter(|d| d.row.is_none())
            .filter_map(|d| d.facts.as_deref_mut())
            .collect();
        if open.is_empty() {
            return;
        }
        self.panes.gather(cfg, &mut open, now, warnings);
        // Each task is resolved once here (a screen is read by its rules
        // once), and again only once the gate has judged its `done`.
        let mut resolved: Vec<Option<Resolution>> = Vec::with_capacity(open.len());
        let mut gated: Vec<usize> = Vec::new();
        for (i, f) in open.iter().enumerate() {
            match step(f) {
                Ok(r) => resolved.push(Some(r)),
                Err(need) => {
                    if need == Need::Gate && f.meta.is_some() {
                        gated.push(i);
                    }
                    resolved.push(None);
                }
            }
        }
        if !gated.is_empty() {
            let requests: Vec<Request> = gated
                .iter()
                .map(|&i| {
                    let f = &*open[i];
                    Request {
                        id: &f.id,
                        meta: f.meta.as_ref().expect("a meta"),
                        line: gather::done_line(f),
                    }
                })
                .collect();
            let verdicts = self.done.verdicts(home, cfg, git, dirs, &requests, now);
            drop(requests);
            for (&i, v) in gated.iter().zip(verdicts) {
                open[i].gate = Some(v);
            }
        }
        drop(open);
        let mut resolved = resolved.into_iter();
        for d in held.iter_mut().filter(|d| d.row.is_none()) {
            if let Some(f) = &d.facts {
                let r = resolved.next().flatten();
                d.row = Some(map(match r {
                    Some(r) => Row::with(f, r, cfg),
                    None => Row::from_facts(f, cfg),
                }));
            }
        }
    }
}
