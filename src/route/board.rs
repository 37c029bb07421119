//! Changes and dispatches of a board wherever it lives (docs/remote.md,
//! "The board of another host"): the typed requests, the typed reports
//! and their one renderer, and the use cases `fm-board` calls. This
//! home's board is changed here; a host's board through the far entry
//! ([`super::far`]), which runs the same use case there and keeps the
//! report under the board's keys (`state/.board.seen`).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Place;
use super::keys::{self, Keeper, Keys};
use super::wire::{self, Envelope, FarRequest};
use crate::board::dispatch::{self, Outcome};
use crate::board::ops;
use crate::board::store::NewTask;
use crate::board::{BoardId, Status, Task, apply};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;

/// A board change, its arguments checked, as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "write", rename_all = "kebab-case")]
pub(crate) enum BoardWrite {
    /// A new task.
    Add(NewTask),
    /// An operation on a task, by `actor`.
    Change {
        task: BoardId,
        op: ops::Op,
        actor: String,
    },
}

/// What a dispatch asks for: nothing but the board's pending work.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DispatchRequest {}

/// A task a change or a dispatch released (its blockers all finished).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Released {
    pub id: BoardId,
    pub status: Status,
}

fn released(tasks: &[Task]) -> Vec<Released> {
    tasks
        .iter()
        .map(|t| Released {
            id: t.id,
            status: t.status,
        })
        .collect()
}

/// What a change did: the task as it is now, the tasks it released, and
/// what to warn about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changed {
    pub task: Task,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub released: Vec<Released>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Changed {
    /// `<id> <status>` then `released <id> <status>` per released task;
    /// with `json`, the task's object as one line.
    pub fn text(&self, json: bool) -> Result<String> {
        if json {
            return Ok(format!("{}\n", crate::output::json_line(&self.task)?));
        }
        let mut s = format!("{} {}\n", self.task.id, self.task.status);
        for r in &self.released {
            let _ = writeln!(s, "released {} {}", r.id, r.status);
        }
        Ok(s)
    }
}

/// One line of a dispatch report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dispatched {
    pub task: BoardId,
    /// `dispatched`, `resent`, `failed` (circuit breaker) or `error`.
    pub action: String,
    pub assignee: String,
    pub seq: Option<u64>,
    pub dispatches: u32,
    pub doorbell: Option<String>,
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub released: Vec<Released>,
}

impl From<&Outcome> for Dispatched {
    fn from(o: &Outcome) -> Dispatched {
        Dispatched {
            task: o.task,
            action: o.action.to_string(),
            assignee: o.assignee.clone(),
            seq: o.seq,
            dispatches: o.dispatches,
            doorbell: o.doorbell.clone(),
            detail: o.detail.clone(),
            released: released(&o.released),
        }
    }
}

/// What a dispatch did, and what to warn about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DispatchReport {
    pub outcomes: Vec<Dispatched>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl DispatchReport {
    fn of(outcomes: &[Outcome]) -> DispatchReport {
        DispatchReport {
            outcomes: outcomes.iter().map(Dispatched::from).collect(),
            warnings: Vec::new(),
        }
    }

    /// 1 when a task could not be dispatched (an `error` line), else 0.
    pub fn code(&self) -> u8 {
        u8::from(self.outcomes.iter().any(|o| o.action == "error"))
    }

    /// One line per task (`dispatched T-001 w1 001.msg · dispatch 1/3 ·
    /// doorbell rang`, `failed …`, `error …`, then its releases), or
    /// `nothing to dispatch`; with `json`, the array of outcomes as one
    /// line.
    pub fn text(&self, json: bool) -> Result<String> {
        if json {
            #[derive(Serialize)]
            struct Line<'a> {
                task: BoardId,
                action: &'a str,
                assignee: &'a str,
                seq: Option<u64>,
                dispatches: u32,
                doorbell: Option<&'a str>,
                detail: Option<&'a str>,
            }
            let lines: Vec<Line> = self
                .outcomes
                .iter()
                .map(|o| Line {
                    task: o.task,
                    action: &o.action,
                    assignee: &o.assignee,
                    seq: o.seq,
                    dispatches: o.dispatches,
                    doorbell: o.doorbell.as_deref(),
                    detail: o.detail.as_deref(),
                })
                .collect();
            return Ok(format!("{}\n", crate::output::json_line(&lines)?));
        }
        let mut s = String::new();
        for o in &self.outcomes {
            let _ = match o.action.as_str() {
                "dispatched" | "resent" => writeln!(
                    s,
                    "{} {} {} {} \u{b7} dispatch {}/3 \u{b7} doorbell {}",
                    o.action,
                    o.task,
                    o.assignee,
                    crate::fsx::numbered_name(o.seq.unwrap_or(0), "msg"),
                    o.dispatches,
                    o.doorbell.as_deref().unwrap_or("-")
                ),
                "failed" => writeln!(
                    s,
                    "failed {} {} \u{b7} {}",
                    o.task,
                    o.assignee,
                    o.detail.as_deref().unwrap_or("")
                ),
                _ => writeln!(
                    s,
                    "error {} {} \u{b7} {}",
                    o.task,
                    o.assignee,
                    o.detail.as_deref().unwrap_or("")
                ),
            };
            for r in &o.released {
                let _ = writeln!(s, "released {} {}", r.id, r.status);
            }
        }
        if s.is_empty() {
            s.push_str("nothing to dispatch\n");
        }
        Ok(s)
    }
}

/// A new key for a write on a host's board.
fn board_key(key: Option<&str>) -> String {
    key.map_or_else(|| crate::remote::call::new_key_for("board"), str::to_string)
}

/// Makes `write` on the board of `place` under idempotency key `key`: a
/// key served before gives its kept report and changes nothing.
pub(crate) fn change(
    home: &Home,
    cfg: &Config,
    place: &Place,
    write: &BoardWrite,
    key: Option<&str>,
    now: u64,
) -> Result<Changed> {
    if let Some(k) = key {
        keys::validate(k)?;
    }
    match place {
        Place::Host(host) => wire::call(
            home,
            host,
            &Envelope::new(board_key(key), String::new(), write.clone()),
            &[],
        ),
        Place::Here => change_here(home, cfg, write, key, now),
    }
}

/// The change on this home's board (the library records its events and,
/// for a blocker comment, the wake).
pub(crate) fn change_here(
    home: &Home,
    cfg: &Config,
    write: &BoardWrite,
    key: Option<&str>,
    now: u64,
) -> Result<Changed> {
    let asked = format!("{write:?}");
    let kept = keys::keyed(
        home,
        Keys::Board,
        key,
        "board",
        &[asked.as_bytes()],
        |_| match write {
            BoardWrite::Add(new) => Ok(Changed {
                task: apply::add(home, new.clone(), now)?,
                released: Vec::new(),
                warnings: Vec::new(),
            }),
            BoardWrite::Change { task, op, actor } => {
                let c = apply::change(home, cfg, *task, op, actor, now)?;
                Ok(Changed {
                    task: c.after,
                    released: released(&c.released),
                    warnings: Vec::new(),
                })
            }
        },
    )?;
    let mut report = kept.report;
    if let Some(e) = kept.not_kept {
        report.warnings.push(keys::not_kept("board changed", &e));
    }
    Ok(report)
}

/// Dispatches the board of `place` under idempotency key `key`.
pub fn dispatch(
    home: &Home,
    cfg: &Config,
    place: &Place,
    key: Option<&str>,
    now: u64,
) -> Result<DispatchReport> {
    if let Some(k) = key {
        keys::validate(k)?;
    }
    match place {
        Place::Host(host) => wire::call(
            home,
            host,
            &Envelope::new(board_key(key), String::new(), DispatchRequest::default()),
            &[],
        ),
        Place::Here => dispatch_here(home, cfg, key, now),
    }
}

/// The dispatch of this home's board. Under a key, a key already served
/// gives its report and does nothing; a new one runs the dispatch with
/// each task's step noted beside the key ([`dispatch::Journal`]), so a
/// run killed midway and retried under the same key finishes what it
/// began and acts on no task twice. Once the records are queued the
/// report is kept with the doorbells `ringing` and the key's lock
/// released (a retry during the rings gets it at once), then the final
/// report after the rings (docs/remote.md).
pub(crate) fn dispatch_here(
    home: &Home,
    cfg: &Config,
    key: Option<&str>,
    now: u64,
) -> Result<DispatchReport> {
    let kept = keys::keyed(home, Keys::Board, key, "dispatch", &[], |keeper| {
        let mut warnings = Vec::new();
        let mut outcomes = if keeper.is_keyed() {
            let mut journal = KeyJournal(keeper);
            dispatch::queue_all(home, cfg, now, Some(&mut journal), &mut warnings)?
        } else {
            dispatch::queue_all(home, cfg, now, None, &mut warnings)?
        };
        let mut ringing = DispatchReport::of(&outcomes);
        for o in ringing
            .outcomes
            .iter_mut()
            .filter(|o| matches!(o.action.as_str(), "dispatched" | "resent"))
        {
            o.doorbell = Some("ringing".into());
        }
        if let Err(e) = keeper.provisional(&ringing) {
            warnings.push(key_not_kept(&e));
        }
        warnings.extend(dispatch::ring_and_record(home, cfg, now, &mut outcomes));
        let mut report = DispatchReport::of(&outcomes);
        report.warnings = warnings;
        Ok(report)
    })?;
    let mut report = kept.report;
    if let Some(e) = kept.not_kept {
        report.warnings.push(key_not_kept(&e));
    }
    Ok(report)
}

fn key_not_kept(e: &Error) -> String {
    keys::not_kept("dispatched", e)
}

/// A keyed dispatch's notes, one per task, beside its key in the board's
/// keys (`<key>#T-NNN`, the note as JSON).
struct KeyJournal<'a>(&'a Keeper);

impl dispatch::Journal for KeyJournal<'_> {
    fn get(&mut self, task: BoardId) -> Result<Option<dispatch::Note>> {
        Ok(self
            .0
            .noted(&task.to_string())?
            .and_then(|n| serde_json::from_str(&n).ok()))
    }

    fn put(&mut self, task: BoardId, note: &dispatch::Note) -> Result<()> {
        let text = serde_json::to_string(note).map_err(|e| Error::External {
            program: "serde_json".into(),
            msg: e.to_string(),
        })?;
        self.0.note(&task.to_string(), text)
    }
}

impl FarRequest for BoardWrite {
    const OP: &'static str = "board";
}

impl FarRequest for DispatchRequest {
    const OP: &'static str = "dispatch";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_board_write_travels_as_data() {
        let w = BoardWrite::Change {
            task: BoardId(7),
            op: ops::Op::Comment {
                text: "--blocker x".into(),
                by: "w1".into(),
                blocker: false,
            },
            actor: "w1".into(),
        };
        let line = serde_json::to_string(&w).unwrap();
        assert_eq!(
            line,
            r#"{"write":"change","task":"T-007","op":{"op":"comment","text":"--blocker x","by":"w1","blocker":false},"actor":"w1"}"#
        );
        assert_eq!(serde_json::from_str::<BoardWrite>(&line).unwrap(), w);
    }

    #[test]
    fn a_dispatch_report_renders_its_lines_and_its_json() {
        let r = DispatchReport {
            outcomes: vec![Dispatched {
                task: BoardId(1),
                action: "dispatched".into(),
                assignee: "w1".into(),
                seq: Some(1),
                dispatches: 1,
                doorbell: Some("quiet".into()),
                detail: None,
                released: vec![Released {
                    id: BoardId(2),
                    status: Status::Pending,
                }],
            }],
            warnings: vec![],
        };
        let back: DispatchReport =
            serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        assert_eq!(
            r.text(false).unwrap(),
            "dispatched T-001 w1 001.msg \u{b7} dispatch 1/3 \u{b7} doorbell quiet\nreleased T-002 pending\n"
        );
        assert_eq!(
            r.text(true).unwrap(),
            "[{\"task\":\"T-001\",\"action\":\"dispatched\",\"assignee\":\"w1\",\"seq\":1,\"dispatches\":1,\"doorbell\":\"quiet\",\"detail\":null}]\n"
        );
        assert_eq!(r.code(), 0);
    }
}
