//! The captain's word for an irreversible verb (docs/spec/grant.md): when
//! the first mate (an agent whose environment has `FM_MATE` set) asks for
//! a verb that discards unlanded work or types over someone's text, the
//! tool refuses unless the captain granted that verb on that task.
//!
//! Owns `state/grants` (one line per grant, replaced atomically under
//! `state/.grants.lock`; nothing else writes it). A grant allows one
//! action and expires: [`take`] removes it under the lock, so of two
//! racing uses exactly one proceeds. This is a guard against an agent's
//! mistake, not a security boundary: the agent could unset the variable.
//!
//! The decisions are pure ([`parse`], [`render`], [`needs`],
//! [`Actor::from_value`]); the file's I/O is at the edges ([`give`],
//! [`list`], [`revoke`], [`take`], [`guard`]).

use std::ffi::OsStr;

use serde::Serialize;

use crate::control::Action;
use crate::error::{Error, Result, quoted};
use crate::fsx;
use crate::home::Home;
use crate::task_id::TaskId;

/// The environment variable the first mate's harness sets.
pub const MATE_VAR: &str = "FM_MATE";

/// How long a grant lasts unless `--for` says otherwise (seconds).
pub const DEFAULT_FOR: u64 = 3_600;

/// The longest `--for` accepted (seconds): a grant is for an action the
/// captain expects soon, not a standing permission.
pub const MAX_FOR: u64 = 7 * 24 * 3_600;

/// Most grants the file holds; a give past it is refused.
const MAX_GRANTS: usize = 1_000;

/// Largest grants file read (bytes): a thousand lines fit well within.
const MAX_FILE: u64 = 256 * 1024;

/// A verb that needs the captain's grant when the first mate asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// `fm-control teardown --force`: discards unlanded work.
    Teardown,
    /// `fm-control exit --force` (and `relaunch --force`): clears
    /// someone's half-typed text or cancels a dialog.
    Exit,
    /// Landing or merging a task's work (`fm land`).
    Land,
}

impl Verb {
    pub const ALL: [Verb; 3] = [Verb::Teardown, Verb::Exit, Verb::Land];

    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Teardown => "teardown",
            Verb::Exit => "exit",
            Verb::Land => "land",
        }
    }

    /// What the grant lets the first mate do, in words.
    pub fn what(self) -> &'static str {
        match self {
            Verb::Teardown => "teardown --force: discard unlanded work",
            Verb::Exit => "exit/relaunch --force: clear typed text or a dialog",
            Verb::Land => "land or merge the task's work",
        }
    }

    /// A verb as typed; anything else is a usage error.
    pub fn parse(s: &str) -> Result<Verb> {
        Verb::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| {
                Error::usage(format!(
                    "unknown verb {}: one of teardown, exit, land",
                    quoted(s)
                ))
            })
    }
}

/// Who is asking: the captain, or the first mate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    Captain,
    Mate,
}

impl Actor {
    /// The first mate when `FM_MATE` is set, non-empty and not `0`.
    pub fn from_value(v: Option<&OsStr>) -> Actor {
        match v {
            Some(v) if !v.is_empty() && v != "0" => Actor::Mate,
            _ => Actor::Captain,
        }
    }

    /// This process's actor, from its environment.
    pub fn from_env() -> Actor {
        Actor::from_value(std::env::var_os(MATE_VAR).as_deref())
    }
}

/// One grant: `verb` may be done once to task `id` until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    pub id: TaskId,
    pub verb: Verb,
    pub granted_at: u64,
    pub expires_at: u64,
}

impl Grant {
    fn is(&self, id: &TaskId, verb: Verb) -> bool {
        self.id == *id && self.verb == verb
    }

    /// `fix-login teardown until 2026-12-06 21:00:00 UTC (59m left)`
    pub fn line(&self, now: u64) -> String {
        format!(
            "{} {} until {} ({} left)",
            self.id,
            self.verb.as_str(),
            crate::clock::human_utc(self.expires_at),
            crate::clock::age(self.expires_at.saturating_sub(now))
        )
    }
}

/// The grant the action needs, and the words naming it, when the first
/// mate asks for it: `teardown --force` → teardown, `exit --force` and
/// `relaunch --force` → exit. Other actions need none.
pub(crate) fn needs(action: &Action) -> Option<(Verb, &'static str)> {
    match action {
        Action::Teardown { force: true } => Some((Verb::Teardown, "teardown --force")),
        Action::Exit { force: true } => Some((Verb::Exit, "exit --force")),
        Action::Relaunch { force: true, .. } => Some((Verb::Exit, "relaunch --force")),
        _ => None,
    }
}

/// The grants in `bytes` (the file's lines
/// `<id>\t<verb>\t<granted_at>\t<expires_at>`), those expired at `now`
/// left out. A line that does not parse (a hand edit, a cut write) is
/// skipped and dropped at the next rewrite.
pub fn parse(bytes: &[u8], now: u64) -> Vec<Grant> {
    let text = String::from_utf8_lossy(fsx::complete_lines(bytes));
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let id = TaskId::parse(f.next()?).ok()?;
            let verb = Verb::parse(f.next()?).ok()?;
            let granted_at = f.next()?.parse().ok()?;
            let expires_at = f.next()?.parse().ok()?;
            f.next().is_none().then_some(Grant {
                id,
                verb,
                granted_at,
                expires_at,
            })
        })
        .filter(|g| g.expires_at > now)
        .collect()
}

/// The file's bytes for `grants`.
pub fn render(grants: &[Grant]) -> Vec<u8> {
    let mut out = String::new();
    for g in grants {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            g.id,
            g.verb.as_str(),
            g.granted_at,
            g.expires_at
        ));
    }
    out.into_bytes()
}

fn read(home: &Home, now: u64) -> Result<Vec<Grant>> {
    let path = home.grants();
    let Some((bytes, _, _)) = fsx::read_from(&path, fsx::Start::Offset(0), MAX_FILE)? else {
        return Ok(Vec::new());
    };
    Ok(parse(&bytes, now))
}

/// Reads the grants under the lock, lets `change` edit them, and writes
/// them back when it says so.
fn update<T>(
    home: &Home,
    now: u64,
    change: impl FnOnce(&mut Vec<Grant>) -> (bool, T),
) -> Result<T> {
    let _lock = fsx::lock(&home.grants_lock(), fsx::LOCK_WAIT)?;
    let mut grants = read(home, now)?;
    let (write, out) = change(&mut grants);
    if write {
        fsx::atomic_write(&home.grants(), &render(&grants))?;
    }
    Ok(out)
}

/// Refuses the first mate: only the captain gives a grant.
pub fn captain_only(actor: Actor) -> Result<()> {
    match actor {
        Actor::Captain => Ok(()),
        Actor::Mate => Err(Error::refused(format!(
            "a grant is the captain's word: refused while {MATE_VAR} is set (the first mate cannot grant itself)"
        ))),
    }
}

/// Records that `verb` may be done once to `id` within `for_secs` of
/// `now`; a grant of the same verb to the same task is replaced. The
/// first mate cannot grant itself: refused when `actor` is the mate; a
/// task without a meta file is refused too (a typo would grant nothing).
pub fn give(
    home: &Home,
    actor: Actor,
    id: &TaskId,
    verb: Verb,
    for_secs: u64,
    now: u64,
) -> Result<Grant> {
    captain_only(actor)?;
    if for_secs == 0 || for_secs > MAX_FOR {
        return Err(Error::usage(format!(
            "--for must be more than 0 and at most {}",
            crate::clock::age(MAX_FOR)
        )));
    }
    if !fsx::exists(&home.meta(id))? {
        return Err(Error::refused(format!("unknown task {id}: no meta")));
    }
    let grant = Grant {
        id: id.clone(),
        verb,
        granted_at: now,
        expires_at: now.saturating_add(for_secs),
    };
    let g = grant.clone();
    update(home, now, move |grants| {
        grants.retain(|x| !x.is(id, verb));
        if grants.len() >= MAX_GRANTS {
            return (
                false,
                Err(Error::refused(format!(
                    "{MAX_GRANTS} grants are open already; revoke some first"
                ))),
            );
        }
        grants.push(g);
        (true, Ok(()))
    })??;
    Ok(grant)
}

/// The grants open at `now`, in the order given.
pub fn list(home: &Home, now: u64) -> Result<Vec<Grant>> {
    read(home, now)
}

/// Withdraws the grant of `verb` on `id`; whether there was one.
pub fn revoke(home: &Home, id: &TaskId, verb: Verb, now: u64) -> Result<bool> {
    update(home, now, |grants| {
        let before = grants.len();
        grants.retain(|g| !g.is(id, verb));
        let gone = grants.len() != before;
        (gone, gone)
    })
}

/// Uses up the grant of `verb` on `id` open at `now`: the one that
/// removes it under the lock gets it, a second taker does not.
pub fn take(home: &Home, id: &TaskId, verb: Verb, now: u64) -> Result<Option<Grant>> {
    update(home, now, |grants| {
        match grants.iter().position(|g| g.is(id, verb)) {
            Some(i) => (true, Some(grants.remove(i))),
            None => (false, None),
        }
    })
}

/// Puts back a grant taken for an action that then failed, so a retry
/// does not need the captain again (unless it has expired meanwhile).
pub fn give_back(home: &Home, grant: Grant, now: u64) -> Result<()> {
    update(home, now, move |grants| {
        if grant.expires_at <= now || grants.iter().any(|g| g.is(&grant.id, grant.verb)) {
            return (false, ());
        }
        grants.push(grant);
        (true, ())
    })
}

/// The refusal when the first mate asks for `what` (`teardown --force`)
/// of `id` without a grant; it names the command the captain types.
pub fn refusal(id: &TaskId, verb: Verb, what: &str) -> Error {
    Error::refused(format!(
        "{what} of {id} needs the captain's grant; the captain runs: fm grant {id} {}",
        verb.as_str()
    ))
}

/// The check before `action` is carried out for `actor`: nothing to do
/// for the captain or an action that needs no grant; for the first mate,
/// the grant is taken (and returned, to give back if the action fails)
/// or the action refused with [`refusal`].
pub(crate) fn guard(
    home: &Home,
    actor: Actor,
    id: &TaskId,
    action: &Action,
    now: u64,
) -> Result<Option<Grant>> {
    let Some((verb, what)) = needs(action) else {
        return Ok(None);
    };
    check(home, actor, id, verb, what, now)
}

/// [`guard`] for a verb named directly: `fm land`
/// ([`crate::route::land::land`]) calls it with [`Verb::Land`] and its
/// own words (`land`) before it merges anything, and gives the grant
/// back with [`give_back`] if the landing fails.
pub fn check(
    home: &Home,
    actor: Actor,
    id: &TaskId,
    verb: Verb,
    what: &str,
    now: u64,
) -> Result<Option<Grant>> {
    if actor == Actor::Captain {
        return Ok(None);
    }
    match take(home, id, verb, now)? {
        Some(g) => Ok(Some(g)),
        None => Err(refusal(id, verb, what)),
    }
}

#[cfg(test)]
#[path = "grant_tests.rs"]
mod tests;
