//! Sending to a task wherever it lives (docs/spec/send.md): the typed request,
//! the typed report, and the one use case `fm-send`, `fm top` and the far
//! entry call. Here, the message is recorded and the doorbell rung
//! ([`crate::inbox::send`]); on a host, the request travels to the far
//! entry ([`super::far`]), which runs this same use case there.

use serde::{Deserialize, Serialize};

use super::keys::{self, Keys};
use super::{Place, Task};
use crate::clock;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::Tool;
use crate::home::Home;
use crate::inbox::{self, Outgoing, Ring, Sent};
use crate::status;
use crate::tmux::deliver::Outcome;
use crate::tmux::recipient::Recipient;

/// What a send asks for. The body travels beside the JSON on the far
/// entry's stdin, byte-exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendRequest {
    /// Sender recorded in the header and the event.
    pub from: String,
    #[serde(skip)]
    pub body: Vec<u8>,
    /// Record only; the watcher rings later.
    #[serde(default)]
    pub quiet: bool,
    #[serde(default)]
    pub fire_and_forget: bool,
    #[serde(default)]
    pub dedupe: bool,
    /// Status-log decision keys to resolve once the record is written.
    #[serde(default)]
    pub resolve: Vec<String>,
    /// The text the `resolved` lines carry; none: the body.
    #[serde(default)]
    pub answer: Option<String>,
    /// The tool the events are recorded under.
    pub tool: Tool,
}

/// A decision key the send could not resolve, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unresolved {
    pub key: String,
    pub why: String,
}

/// What a send did: the record, the doorbell, and what to warn about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendReport {
    pub task: String,
    pub seq: u64,
    pub path: String,
    /// The doorbell's outcome word (`rang`, `quiet`, …; `ringing` in a
    /// provisional report kept while the ring runs).
    pub doorbell: String,
    /// The delivery leg that took the doorbell (docs/spec/ring.md#legs);
    /// absent when it was typed or did not ring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leg: Option<String>,
    /// Where an identical body already sat (`--dedupe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<String>,
    /// What stderr says about a ring that did not land.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<Unresolved>,
    /// Warnings of the side that wrote (a key not kept, an owed ring not
    /// recorded), one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl SendReport {
    fn of(sent: &Sent, doorbell: &str) -> SendReport {
        SendReport {
            task: sent.task.clone(),
            seq: sent.seq,
            path: sent.path.display().to_string(),
            doorbell: doorbell.to_string(),
            leg: sent.leg.map(|l| l.as_str().to_string()),
            duplicate: sent.duplicate.map(|d| d.as_str().to_string()),
            note: None,
            unresolved: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The record and the doorbell, without the task:
    /// `queued 001.msg · doorbell rang` ([`inbox::sent_line`]).
    pub fn record_line(&self) -> String {
        inbox::sent_line(
            None,
            self.seq,
            &self.doorbell,
            self.leg.as_deref(),
            self.duplicate.as_deref(),
        )
    }

    /// The JSON line `fm-send --json` prints: the record as
    /// [`crate::inbox::Sent`] serializes it.
    pub fn json(&self) -> impl Serialize + '_ {
        #[derive(Serialize)]
        struct Line<'a> {
            task: &'a str,
            seq: u64,
            path: &'a str,
            doorbell: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            leg: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            duplicate: Option<&'a str>,
        }
        Line {
            task: &self.task,
            seq: self.seq,
            path: &self.path,
            doorbell: &self.doorbell,
            leg: self.leg.as_deref(),
            duplicate: self.duplicate.as_deref(),
        }
    }
}

/// `queued <task> 001.msg · doorbell rang[ · duplicate of a … record]`
/// ([`inbox::sent_line`]).
impl std::fmt::Display for SendReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let task = Some(self.task.as_str());
        let line = inbox::sent_line(
            task,
            self.seq,
            &self.doorbell,
            self.leg.as_deref(),
            self.duplicate.as_deref(),
        );
        f.write_str(&line)
    }
}

/// Sends `req` to `task` under idempotency key `key`, here or on its
/// host. Only a record that could not be written is an error.
pub fn send(
    home: &Home,
    cfg: &Config,
    task: &Task,
    req: &SendRequest,
    key: Option<&str>,
) -> Result<SendReport> {
    if let Some(k) = key {
        crate::remote::kept::validate(k)?;
    }
    inbox::validate_body(cfg, &req.body)?;
    match task.place() {
        Place::Host(host) => {
            let key = key.map_or_else(|| crate::remote::call::new_key(task.id()), str::to_string);
            super::wire::call(
                home,
                host,
                &super::wire::Envelope::new(key, task.id().to_string(), req.clone()),
                &req.body,
            )
        }
        Place::Here => {
            let r = Recipient::load(home, cfg, task.id())?;
            send_here(home, cfg, task, req, key, Ring::Now(&r))
        }
    }
}

/// The fingerprint's parts of a send: what changes what is done.
pub(crate) fn parts(req: &SendRequest) -> Vec<Vec<u8>> {
    let flags = format!(
        "quiet={} fire-and-forget={} dedupe={}",
        req.quiet, req.fire_and_forget, req.dedupe
    );
    vec![
        req.from.clone().into_bytes(),
        flags.into_bytes(),
        req.resolve.join("\n").into_bytes(),
        req.answer.clone().unwrap_or_default().into_bytes(),
        req.body.clone(),
    ]
}

/// The local send: record, ring as `ring` says (unless quiet), resolve
/// the decision keys; under a key, the report is kept (provisionally
/// while the doorbell rings). A task that lives on a host is refused.
pub(crate) fn send_here(
    home: &Home,
    cfg: &Config,
    task: &Task,
    req: &SendRequest,
    key: Option<&str>,
    ring: Ring,
) -> Result<SendReport> {
    task.here()?;
    let id = task.id();
    // The fingerprint's parts are made only under a key: an unkeyed send
    // copies nothing.
    let parts = if key.is_some() {
        parts(req)
    } else {
        Vec::new()
    };
    let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let kept = keys::keyed(home, Keys::Task(id), key, "send", &parts, |keeper| {
        let now = clock::now();
        let msg = Outgoing {
            from: &req.from,
            body: &req.body,
            fire_and_forget: req.fire_and_forget,
            dedupe: req.dedupe,
        };
        let ring = if req.quiet { Ring::Quiet } else { ring };
        let rings = !matches!(ring, Ring::Quiet);
        let mut early = Vec::new();
        let sent = inbox::send_then(home, cfg, req.tool, id, &msg, ring, now, |queued| {
            if rings && let Err(e) = keeper.provisional(&SendReport::of(queued, "ringing")) {
                early.push(key_not_kept(&e));
            }
        })
        .map_err(|e| crate::error::naming(e, id.as_str()))?;
        let doorbell = sent.doorbell.unwrap_or(Outcome::Quiet);
        let mut report = SendReport::of(&sent, doorbell.as_str());
        report.note = note(doorbell, req.fire_and_forget);
        report.warnings = early;
        let answer = req.answer.as_deref().map_or(&req.body[..], str::as_bytes);
        for k in &req.resolve {
            let a = status::Answer {
                key: k,
                body: answer,
                tool: req.tool,
                actor: &req.from,
            };
            if let Err(e) = status::resolve_answered(home, &cfg.brief.paused_verb, id, &a, now) {
                report.unresolved.push(Unresolved {
                    key: k.clone(),
                    why: crate::error::describe(&e),
                });
            }
        }
        Ok(report)
    })?;
    let mut report = kept.report;
    if let Some(e) = kept.not_kept {
        report.warnings.push(key_not_kept(&e));
    }
    Ok(report)
}

fn key_not_kept(e: &Error) -> String {
    keys::not_kept("message recorded", e)
}

/// What stderr says about a ring that did not land (docs/spec/send.md).
pub fn note(outcome: Outcome, fire_and_forget: bool) -> Option<String> {
    let why = match outcome {
        Outcome::Rang | Outcome::Quiet => return None,
        Outcome::Dead => {
            return Some(
                "doorbell dead: the agent is not alive (pane gone or agent exited); the message is recorded but the watcher will not re-ring it (it raises a dead-agent wake)"
                    .into(),
            );
        }
        Outcome::Queued => {
            "doorbell queued: the agent is busy and its harness will see the message"
        }
        Outcome::Skipped => {
            "doorbell skipped: nothing was typed: the composer holds someone else's text, the pane is in tmux copy mode, or no composer the harness profile recognises is on the screen"
        }
        Outcome::RingLocked => {
            "doorbell queued: another ring of this task is in progress (ring lock held, by a ring under way or one stopped mid-way, such as an fm-send suspended with Ctrl-Z); nothing was typed"
        }
        Outcome::Booting => {
            "doorbell booting: the agent started moments ago and does not take input yet; nothing was submitted"
        }
        Outcome::Failed => "doorbell failed (tmux error or the Enter did not take)",
        Outcome::NoPane => "doorbell no-pane: meta records no pane for this task",
        Outcome::Dialog => {
            "doorbell dialog: a dialog owns the agent's keyboard and nothing was typed (fm-crew-state names it)"
        }
    };
    Some(if fire_and_forget {
        format!(
            "{why}; the message is recorded, and as fire-and-forget the watcher will not re-ring it"
        )
    } else {
        format!("{why}; the message is recorded and the watcher will re-ring it")
    })
}

impl super::wire::FarRequest for SendRequest {
    const OP: &'static str = "send";
}
