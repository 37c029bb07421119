//! One task of a view: its kept facts reused or read again ([`refresh`]),
//! and the rows handed out in the fleet's order as blocks finish
//! ([`Emitter`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::Config;
use crate::crew_state::Row;
use crate::crew_state::facts::{Facts, PaneFact};
use crate::crew_state::gather::{self, Ancestry};
use crate::crew_state::notices::TaskNotices;
use crate::crew_state::read::{self, Listed, Present, Stamps, StateDir};
use crate::crew_state::resolve::step;
use crate::error::Result;
use crate::gitfiles::GitFiles;
use crate::home::Home;

use super::*;

/// A task's facts kept between frames, with the stamps they were read under.
#[derive(Debug)]
pub(super) struct Kept {
    pub(super) facts: Facts,
    pub(super) stamps: Stamps,
    /// The frame the stamps were last looked at in, and its clock (Unix
    /// seconds) ([`TaskNotices::quiet`]).
    pub(super) taken: u64,
    pub(super) taken_at: u64,
}

/// One task to read, with what the last frame kept of it (boxed: a
/// fleet's items are held for the whole view, and facts are large).
pub(super) struct Item {
    pub(super) listed: Listed,
    pub(super) prev: Option<Box<Kept>>,
}

/// One task read; its row as the view's caller maps it ([`Map`]).
pub(super) struct Done<T> {
    /// Its files were read (not reused).
    pub(super) reread: bool,
    /// Its stamps were taken (not trusted on the events' word).
    pub(super) looked: bool,
    /// Kept for the next frame, or for the second step (boxed: most of a
    /// one-shot view's tasks keep nothing, and a `Done` is handed on).
    pub(super) facts: Option<Box<Facts>>,
    pub(super) stamps: Option<Box<Stamps>>,
    /// The frame the stamps were last looked at in, and its clock.
    pub(super) taken: u64,
    pub(super) taken_at: u64,
    /// Known after the first step.
    pub(super) row: Option<T>,
}

/// What the reader threads share.
pub(super) struct Shared<'a> {
    pub(super) home: &'a Home,
    pub(super) cfg: &'a Config,
    pub(super) now: u64,
    pub(super) keep: bool,
    pub(super) git: &'a GitFiles,
    pub(super) ancestry: &'a Ancestry,
    pub(super) state: &'a StateDir,
    pub(super) notices: Option<&'a TaskNotices>,
    /// The frame now read (0 without notices).
    pub(super) frame: u64,
}

/// Facts kept from the last frame, ready for this one: the per-view inputs
/// cleared, the worktree looked at again.
pub(super) fn reuse(mut f: Facts, now: u64, dirs: &read::Dirs, git: &GitFiles) -> Facts {
    f.now = now;
    f.pane = PaneFact::Unset;
    f.screen = None;
    f.gate = None;
    f.git = None;
    f.run_contains_head = false;
    read::check_worktree(&mut f, dirs, Some(git));
    f
}

pub(super) fn refresh<T>(s: &Shared, map: Map<T>, item: Item) -> Done<T> {
    let Item { listed, prev } = item;
    let (home, id, present) = (s.home, &listed.id, listed.present);
    let mut stamps = None;
    let mut facts = None;
    let (mut taken, mut taken_at) = (s.frame, s.now);
    let mut looked = false;
    // No event named the task since its stamps were taken: they hold
    // without a look.
    let quiet = |p: &Kept| {
        s.notices.is_some_and(|notices| {
            p.stamps.present() == present
                && !Stamps::needs_brief(&p.facts)
                && notices.quiet(id, present.inbox(), p.taken, p.taken_at, s.now)
        })
    };
    if s.keep && prev.as_deref().is_some_and(quiet) {
        let p = prev.expect("a kept task");
        (taken, taken_at) = (p.taken, p.taken_at);
        facts = Some(reuse(p.facts, s.now, &s.state.dirs, s.git));
        stamps = Some(p.stamps);
    } else if s.keep {
        looked = true;
        let brief = prev.as_ref().is_none_or(|p| Stamps::needs_brief(&p.facts));
        let last = prev.as_ref().map(|p| &p.stamps);
        let now_stamps = Stamps::take(home, s.state, id, present, s.now, brief, last);
        let named = |p: &Kept| {
            s.notices
                .is_some_and(|notices| notices.named_since(id, p.taken))
        };
        match prev {
            Some(p) if !named(&p) && p.stamps.still(&now_stamps) => {
                facts = Some(reuse(p.facts, s.now, &s.state.dirs, s.git));
                stamps = Some(p.stamps);
            }
            _ => {
                stamps = Some(if brief {
                    now_stamps
                } else {
                    Stamps::take(home, s.state, id, present, s.now, true, None)
                });
            }
        }
    }
    let reread = facts.is_none();
    let mut f = facts.unwrap_or_else(|| read::task(home, s.cfg, s.state, id, present, s.now));
    if gather::needs_attribution(&f) {
        gather::attribute_run(&mut f, s.git, s.ancestry);
    }
    let has_pane = f
        .meta
        .as_ref()
        .is_some_and(|m| m.pane.is_some() && !read::is_remote(m));
    // Only a noted agent home has reports of the agent's own to read.
    let has_pane_reports = has_pane && present.has(Present::AGENT_HOME);
    // The agent's own reports change with every turn: read each time,
    // not kept. Claude Code's session file is read once the pane's process
    // is known (`gather`).
    let note = if has_pane_reports {
        read::agent_note(home, id)
    } else {
        None
    };
    f.agent_turn = note.as_deref().and_then(|n| read::agent_turn(&f, n));
    f.agent_config = note.as_deref().and_then(crate::agent_report::noted_claude);
    f.agent_session = None;
    let resolved = if has_pane { None } else { step(&f).ok() };
    let keep_facts = resolved.is_none() || (s.keep && f.error.is_none());
    let stamps = stamps.filter(|_| f.error.is_none()).map(Box::new);
    // Boxed when kept: a task read is handed on several times, and most
    // of a one-shot view's tasks keep nothing.
    let (facts, row) = match resolved {
        Some(r) if keep_facts => {
            let row = map(Row::with(&f, r, s.cfg));
            (Some(Box::new(f)), Some(row))
        }
        // Facts no longer needed: the row takes what it can from them.
        Some(r) => (None, Some(map(Row::from_owned(f, r, s.cfg)))),
        None => (Some(Box::new(f)), None),
    };
    Done {
        reread,
        looked,
        facts,
        stamps,
        taken,
        taken_at,
        row,
    }
}

/// Hands rows out in order, holding everything behind the first task that
/// needs the second step.
pub(super) struct Emitter<'e, T> {
    pub(super) emit: &'e mut dyn FnMut(T) -> Result<()>,
    pub(super) pending: BTreeMap<usize, Vec<Done<T>>>,
    pub(super) next: usize,
    pub(super) held: Vec<Done<T>>,
    pub(super) blocked: bool,
    #[allow(
        clippy::vec_box,
        reason = "each box is handed on to the next frame's item"
    )]
    pub(super) kept: Vec<Box<Kept>>,
    pub(super) error: Option<crate::Error>,
    pub(super) stats: Stats,
}

impl<T> Emitter<'_, T> {
    pub(super) fn block(&mut self, k: usize, done: Vec<Done<T>>, stop: &AtomicBool) {
        self.pending.insert(k, done);
        while let Some(v) = self.pending.remove(&self.next) {
            self.next += 1;
            if !self.blocked && v.iter().all(|d| d.row.is_some()) {
                for d in v {
                    self.out(d, stop);
                }
            } else {
                self.blocked = true;
                self.held.extend(v);
            }
        }
    }

    pub(super) fn out(&mut self, mut d: Done<T>, stop: &AtomicBool) {
        self.stats.tasks += 1;
        self.stats.reread += usize::from(d.reread);
        self.stats.looked += usize::from(d.looked);
        if self.error.is_none()
            && let Some(row) = d.row.take()
            && let Err(e) = (self.emit)(row)
        {
            self.error = Some(e);
            stop.store(true, Ordering::SeqCst);
        }
        if let (Some(facts), Some(stamps)) = (d.facts, d.stamps) {
            self.kept.push(Box::new(Kept {
                facts: *facts,
                stamps: *stamps,
                taken: d.taken,
                taken_at: d.taken_at,
            }));
        }
    }
}
