//! The resolution rules of docs/spec/crew-state.md#resolution, as a pure function of [`Facts`].
//!
//! First match wins. Two inputs are expensive to obtain (the pane's screen
//! needs a `capture-pane`, the done gate needs git), so [`step`] says which
//! one it is missing instead of guessing; [`super::gather`] fetches
//! exactly that and asks again. [`resolve`] never guesses in the unsafe
//! direction: an ungated ship `done` reads blocked, an uncaptured screen
//! reads not busy.

use super::agent_session::{self, Status};
use super::facts::{Facts, Gate, PaneFact, WorktreeFact};
use super::{Source, State};
use crate::meta::Kind;
use crate::status::Verb;

/// The answer: `state · source · detail`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub(crate) state: State,
    pub source: Source,
    pub(crate) detail: String,
}

fn r(state: State, source: Source, detail: impl Into<String>) -> Resolution {
    Resolution {
        state,
        source,
        detail: detail.into(),
    }
}

/// An input the rules reached but the facts do not hold yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// The pane's visible screen, for the harness `busy_regex`.
    Screen,
    /// The gate's verdict (docs/spec/dod.md#gate) on the current `done` line.
    Gate,
}

/// Resolves, treating a missing screen as not busy and a missing gate
/// verdict on a ship `done` as a refusal.
pub fn resolve(f: &Facts) -> Resolution {
    match step(f) {
        Ok(res) => res,
        Err(Need::Screen) => {
            let mut g = f.clone();
            g.screen = Some(String::new());
            resolve(&g)
        }
        Err(Need::Gate) => {
            let mut g = f.clone();
            g.gate = Some(Gate::Refused("done not verified (gate not run)".into()));
            resolve(&g)
        }
    }
}

/// One pass over the rules; `Err` names the missing input.
pub fn step(f: &Facts) -> Result<Resolution, Need> {
    // Rule 1.
    if let Some(e) = &f.error {
        return Ok(r(State::Unknown, Source::None, format!("unreadable: {e}")));
    }
    if f.meta.is_none() {
        return Ok(r(
            State::Unknown,
            Source::None,
            format!("no metadata for {}", f.id),
        ));
    }
    // A meta naming no worktree is a task never spawned (a sub-brief's meta
    // holds only `parent=`): the later rules say what little is known.
    let kind = f.kind();
    if kind.has_worktree() && f.worktree == WorktreeFact::Missing {
        return Ok(r(
            State::Unknown,
            Source::None,
            "worktree gone (torn down?)",
        ));
    }
    // Rule 2.
    if let Some(res) = run_rule(f) {
        return Ok(res);
    }
    // Rules 3–4 (only with a recorded pane whose server answered).
    let alive = match &f.pane {
        PaneFact::Unset | PaneFact::Unknown => None,
        PaneFact::Gone | PaneFact::Lost(_) => Some(false),
        PaneFact::Present { dead, command } => Some(crate::harness::is_alive(
            f.profile.as_deref(),
            *dead,
            command,
        )),
    };
    if alive == Some(false) {
        if let Some(res) = terminal_from_log(f, &kind)? {
            return Ok(res);
        }
        let which = match &f.pane {
            PaneFact::Gone => "pane gone",
            PaneFact::Lost(words) => words,
            _ => "agent exited",
        };
        return Ok(r(State::Exited, Source::Pane, which));
    }
    // The agent's own session file, ahead of the busy record and the
    // screen (docs/spec/crew-state.md#agent-session): the live process
    // rewrites it at every change, while a record can outlive its turn.
    let session = f.agent_session.filter(|_| alive == Some(true));
    if let Some(s) = session {
        match s.status {
            // Any dialog waiting for an answer (a permission prompt, the
            // rewind view): the screen names it when it shows it.
            Status::Waiting => {
                let name = match &f.screen {
                    None => return Err(Need::Screen),
                    Some(s) => crate::tmux::screen::screen_dialog(f.profile.as_deref(), s),
                };
                return Ok(r(
                    State::Blocked,
                    Source::AgentSession,
                    format!(
                        "waiting in a dialog: {}",
                        name.as_deref().unwrap_or("input")
                    ),
                ));
            }
            Status::Busy => {
                return Ok(r(
                    State::Working,
                    Source::AgentSession,
                    format!("busy ({})", agent_session::SOURCE),
                ));
            }
            Status::Idle => {}
        }
    }
    if alive == Some(true) {
        // A dialog owns the keyboard whatever the busy record says (a
        // permission prompt comes mid-turn).
        if f.profile.as_ref().is_some_and(|p| !p.dialogs.is_empty()) {
            match &f.screen {
                None => return Err(Need::Screen),
                Some(s) => {
                    if let Some(d) = crate::tmux::screen::screen_dialog(f.profile.as_deref(), s) {
                        return Ok(r(
                            State::Blocked,
                            Source::Pane,
                            format!("waiting in a dialog: {d}"),
                        ));
                    }
                }
            }
        }
        if let Some(b) = f.busy.as_ref().filter(|_| session.is_none())
            && b.busy_since(f.last_line_at)
        {
            // A screen that shows every turn and reads idle overrules a
            // record no hook closed (a turn interrupted from the keyboard).
            let overruled = if f.profile.as_ref().is_some_and(|p| p.busy_whole_turn) {
                match &f.screen {
                    None => return Err(Need::Screen),
                    Some(s) => crate::tmux::screen::screen_overrules_busy_record(
                        f.profile.as_deref(),
                        s,
                        f.now.saturating_sub(b.at),
                    ),
                }
            } else {
                false
            };
            if !overruled {
                return Ok(r(
                    State::Working,
                    Source::Pane,
                    format!("busy ({})", b.source),
                ));
            }
        }
        // The agent's own session log says a turn is running (Codex shows
        // nothing while its answer streams).
        if f.agent_turn.is_some() {
            return Ok(r(
                State::Working,
                Source::Pane,
                format!("busy ({})", crate::agent_report::SOURCE),
            ));
        }
        let regex = f.profile.as_ref().and_then(|p| p.busy_regex.as_ref());
        if regex.is_some() && session.is_none() {
            match &f.screen {
                None => return Err(Need::Screen),
                Some(s) if crate::tmux::screen::screen_busy(f.profile.as_deref(), s) => {
                    return Ok(r(State::Working, Source::Pane, "busy (screen)"));
                }
                Some(_) => {}
            }
        }
    }
    // Rule 5.
    if let Some(c) = f.fold.current_ref() {
        let kind_verb = verb_of(c.verb);
        if kind_verb == Verb::Done {
            return done_line(f, &kind, c.text);
        }
        let state = match kind_verb {
            Verb::Working => State::Working,
            Verb::NeedsDecision => State::Parked,
            Verb::Blocked => State::Blocked,
            Verb::Paused => State::Paused,
            Verb::Failed => State::Failed,
            _ => State::Unknown,
        };
        return Ok(r(state, Source::StatusLog, c.text));
    }
    // Rule 6.
    if session.is_some() {
        return Ok(r(
            State::Idle,
            Source::AgentSession,
            format!("idle ({}), no status yet", agent_session::SOURCE),
        ));
    }
    if alive == Some(true) {
        return Ok(r(State::Idle, Source::Pane, "agent alive, no status yet"));
    }
    // Rule 7.
    Ok(r(
        State::Unknown,
        Source::None,
        "no current-state source available",
    ))
}

/// A ship `done` passes the gate or reads blocked with the refusal.
fn done_line(f: &Facts, kind: &Kind, text: &str) -> Result<Resolution, Need> {
    if *kind != Kind::Ship {
        return Ok(r(State::Done, Source::StatusLog, text));
    }
    match &f.gate {
        None => Err(Need::Gate),
        Some(Gate::Refused(why)) => Ok(r(State::Blocked, Source::StatusLog, why.clone())),
        Some(Gate::Accepted | Gate::NotGated) => Ok(r(State::Done, Source::StatusLog, text)),
    }
}

/// Rule 3's "done or failed from the log, as in rule 5".
fn terminal_from_log(f: &Facts, kind: &Kind) -> Result<Option<Resolution>, Need> {
    let Some(c) = f.fold.current_ref() else {
        return Ok(None);
    };
    match Some(verb_of(c.verb)) {
        Some(Verb::Done) => done_line(f, kind, c.text).map(Some),
        Some(Verb::Failed) => Ok(Some(r(State::Failed, Source::StatusLog, c.text))),
        _ => Ok(None),
    }
}

/// The verb of a current line. The fold only yields lines whose verb it
/// recognised, so a word that is none of the fixed ones is the configured
/// paused word.
fn verb_of(word: &str) -> Verb {
    Verb::from_word(word, word).unwrap_or(Verb::Note)
}

/// Whether the run record belongs to the worktree as it is now: same
/// branch, and the run's head is HEAD or has HEAD as an ancestor.
pub(crate) fn run_attributed(f: &Facts) -> bool {
    let (Some(run), Some(git)) = (&f.run, &f.git) else {
        return false;
    };
    !run.branch.is_empty()
        && git.branch.as_deref() == Some(run.branch.as_str())
        && !run.head.is_empty()
        && (git.head == run.head || f.run_contains_head)
}

fn run_rule(f: &Facts) -> Option<Resolution> {
    if !run_attributed(f) {
        return None;
    }
    let run = f.run.as_ref()?;
    let st = run.status.as_str();
    let mut res = match st {
        "running" | "fixing" | "pending" => {
            r(State::Working, Source::Run, format!("validating ({st})"))
        }
        "ci" => r(State::Working, Source::Run, "ci running"),
        "awaiting_approval" | "fix_review" => {
            let gate = if run.gate.is_empty() { st } else { &run.gate };
            let n = run.findings;
            let noun = if n == 1 { "finding" } else { "findings" };
            r(
                State::Parked,
                Source::Run,
                format!("parked at {gate}: {n} {noun}"),
            )
        }
        "passed" | "checks-passed" => {
            let mut d = format!("run {st}");
            if !run.pr.is_empty() {
                d = format!("{d} \u{b7} PR {}", run.pr);
            }
            r(State::Done, Source::Run, d)
        }
        "failed" | "cancelled" => r(State::Failed, Source::Run, format!("run {st}")),
        _ => return None,
    };
    if run_moved_past_decision(f) {
        res.detail.push_str(" \u{b7} status-log superseded");
    }
    Some(res)
}

/// The log's current line is an open decision the run has moved past: the
/// run record was written after the decision was raised.
pub(crate) fn run_moved_past_decision(f: &Facts) -> bool {
    let (Some(d), Some(run)) = (f.fold.open.last(), &f.run) else {
        return false;
    };
    let raised = d.at.or(f.log_mtime);
    matches!((raised, run.mtime), (Some(raised), Some(run_at)) if run_at > raised)
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
