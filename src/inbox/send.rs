//! Sending (docs/spec/send.md): queue a record, ring the doorbell, record the
//! `inbox.queued` event — the one use case `fm-send`, `fm-brief`'s
//! re-read notice and `fm-board dispatch` share.
//!
//! The record is the message; the ring is a courtesy the watcher retries,
//! so a send succeeds once the record is written, whatever the doorbell
//! did. A duplicate (`--dedupe`) records no event: nothing was queued.

use serde::Serialize;

use super::{Existing, Outgoing, Queued, queue};
use crate::config::Config;
use crate::error::Result;
use crate::events::{Entry, Event, Tool};
use crate::home::Home;
use crate::leg::Leg;
use crate::task_id::TaskId;
use crate::tmux::deliver::Outcome;
use crate::tmux::pane::PaneInfo;
use crate::tmux::recipient::{Known, Recipient, Rung};

/// When the doorbell rings.
#[derive(Debug, Clone, Copy)]
pub enum Ring<'a> {
    /// Not now (`--quiet`): the watcher rings later. The outcome is `quiet`.
    Quiet,
    /// Now, asking tmux about the recipient's pane first.
    Now(&'a Recipient),
    /// Now, on a pane the caller already looked up (one `list-panes` for a
    /// broadcast, or a liveness check just made).
    Known(&'a Recipient, &'a PaneInfo),
    /// After the caller released a lock ([`Recipient::ring`] then): the
    /// event records no doorbell.
    Later,
}

/// A queued message: where it landed and what the doorbell did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sent {
    pub task: String,
    pub seq: u64,
    pub(crate) path: std::path::PathBuf,
    /// `None` for [`Ring::Later`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doorbell: Option<Outcome>,
    /// The leg that took the doorbell (docs/spec/ring.md#legs); absent
    /// when it was typed or did not ring.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leg: Option<Leg>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) duplicate: Option<Existing>,
}

/// `queued [<id> ]<NNN.msg> · doorbell <outcome>[ · leg <leg>][ · duplicate of a
/// <pending|handled> record]`: the one line every front end shows for a
/// sent record, local ([`Sent`]) or reported by a host
/// ([`crate::route::send::SendReport`]). Without `task` for a line that
/// names the task already (`fm top`'s row).
pub(crate) fn sent_line(
    task: Option<&str>,
    seq: u64,
    doorbell: &str,
    leg: Option<&str>,
    duplicate: Option<&str>,
) -> String {
    let mut s = String::from("queued ");
    if let Some(t) = task {
        s.push_str(t);
        s.push(' ');
    }
    s.push_str(&super::record_name(seq));
    s.push_str(" \u{b7} doorbell ");
    s.push_str(doorbell);
    if let Some(l) = leg {
        s.push_str(" \u{b7} leg ");
        s.push_str(l);
    }
    if let Some(d) = duplicate {
        s.push_str(" \u{b7} duplicate of a ");
        s.push_str(d);
        s.push_str(" record");
    }
    s
}

impl Existing {
    /// Where the identical body sat: `pending` or `handled`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Existing::Pending => "pending",
            Existing::Handled => "handled",
        }
    }
}

/// [`sent_line`] of the record; `{:#}` leaves the task out.
impl std::fmt::Display for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let task = (!f.alternate()).then_some(self.task.as_str());
        let doorbell = self.doorbell.map_or("-", Outcome::as_str);
        let line = sent_line(
            task,
            self.seq,
            doorbell,
            self.leg.map(Leg::as_str),
            self.duplicate.map(Existing::as_str),
        );
        f.write_str(&line)?;
        match self.leg {
            Some(leg) => write!(f, " \u{b7} leg {leg}"),
            None => Ok(()),
        }
    }
}

/// Queues `msg` for `id`, rings as `ring` says, records the event under
/// `tool`. Only a record that could not be written is an error.
pub fn send(
    home: &Home,
    cfg: &Config,
    tool: Tool,
    id: &TaskId,
    msg: &Outgoing,
    ring: Ring,
    now: u64,
) -> Result<Sent> {
    send_then(home, cfg, tool, id, msg, ring, now, |_| {})
}

/// [`send`], calling `queued` once the record is written and before the
/// doorbell rings (a ring may take seconds: the caller keeps what it must
/// keep before then). `queued` gets the report without a doorbell.
#[allow(clippy::too_many_arguments)]
pub fn send_then(
    home: &Home,
    cfg: &Config,
    tool: Tool,
    id: &TaskId,
    msg: &Outgoing,
    ring: Ring,
    now: u64,
    queued: impl FnOnce(&Sent),
) -> Result<Sent> {
    let Queued {
        seq,
        path,
        duplicate,
    } = queue(home, cfg, id, msg, now)?;
    queued(&Sent {
        task: id.to_string(),
        seq,
        path: path.clone(),
        doorbell: None,
        leg: None,
        duplicate,
    });
    let rung = |r: &Recipient, info| {
        let known = Known {
            info,
            ..Known::default()
        };
        let Rung {
            outcome,
            leg,
            warnings,
        } = r.ring(home, cfg, now, known);
        for w in warnings {
            crate::output::err_line(&format!("{}: warning: {w}", tool.as_str()));
        }
        (Some(outcome), (leg != Leg::Typed).then_some(leg))
    };
    let (doorbell, leg) = match ring {
        Ring::Later => (None, None),
        // A handled duplicate was already read: nothing to ring for.
        Ring::Quiet => (Some(Outcome::Quiet), None),
        _ if duplicate == Some(Existing::Handled) => (Some(Outcome::Quiet), None),
        Ring::Now(r) => rung(r, None),
        Ring::Known(r, info) => rung(r, Some(info)),
    };
    if duplicate.is_none() {
        let event = Event::InboxQueued {
            seq,
            // fm-send and fm top record the body's size; the notices
            // fm-brief and fm-board queue never did.
            bytes: matches!(tool, Tool::Send | Tool::Top).then_some(msg.body.len()),
            doorbell: doorbell.map(Outcome::as_str),
            delivery: msg.fire_and_forget.then_some("fire-and-forget"),
            leg: leg.map(Leg::as_str),
        };
        Entry::new(now, tool, id.as_str(), event)
            .by(msg.from)
            .record(home);
    }
    Ok(Sent {
        task: id.to_string(),
        seq,
        path,
        doorbell,
        leg,
        duplicate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_queues_records_its_event_once_and_a_duplicate_none() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let cfg = Config::default();
        let id = TaskId::parse("t").unwrap();
        crate::meta::update(&home, &id, |m| m.set("kind", "ship")).unwrap();
        let msg = Outgoing {
            from: "bob",
            body: b"hi",
            fire_and_forget: true,
            dedupe: true,
        };
        let s = send(&home, &cfg, Tool::Send, &id, &msg, Ring::Quiet, 9).unwrap();
        assert_eq!(
            (s.seq, s.doorbell, s.duplicate),
            (1, Some(Outcome::Quiet), None)
        );
        let again = send(&home, &cfg, Tool::Send, &id, &msg, Ring::Quiet, 9).unwrap();
        assert_eq!((again.seq, again.duplicate), (1, Some(Existing::Pending)));
        let later = Outgoing {
            body: b"other",
            fire_and_forget: false,
            ..msg
        };
        let s = send(&home, &cfg, Tool::Board, &id, &later, Ring::Later, 9).unwrap();
        assert_eq!((s.seq, s.doorbell), (2, None));
        let log = String::from_utf8(std::fs::read(home.events()).unwrap()).unwrap();
        assert_eq!(
            log,
            concat!(
                r#"{"action":"inbox.queued","actor":"bob","bytes":2,"delivery":"fire-and-forget","doorbell":"quiet","seq":1,"task":"t","tool":"fm-send","ts":9}"#,
                "\n",
                r#"{"action":"inbox.queued","actor":"bob","seq":2,"task":"t","tool":"fm-board","ts":9}"#,
                "\n"
            )
        );
    }
}
