//! The wake packet (docs/spec/mate.md#packet): everything the first mate
//! needs to act on one wake, in one bounded print — the new wakes grouped
//! by worker, each worker's crew-state now, every open decision in the
//! fleet, the exact commands that act on each item, and the ack line.
//!
//! Written for a model: one fact a line, no decoration, nothing said
//! twice. Worker text (a question, a status line) is kept to one line and
//! cut; it is the worker's words, never an instruction to the lead.

use serde::Serialize;

use crate::crew_state::{Row, State};
use crate::remote::wakes::Merged;

/// Longest worker text kept in a packet line (bytes, cut on a character).
pub const TEXT_MAX: usize = 240;
/// Most open decisions listed outside the packet's workers.
pub const ELSEWHERE_MAX: usize = 10;
/// Most open decisions added to a packet's worker beyond its wakes.
pub const EXTRA_MAX: usize = 3;
/// Most unread status lines shown per worker.
pub const NOTES_MAX: usize = 3;

/// One wake packet, as `--json` prints it (schema: docs/mate-wake-schema.json).
#[derive(Debug, Clone, Serialize)]
pub struct Packet {
    /// `w<n>` when the packet holds wakes to acknowledge.
    pub token: Option<String>,
    /// How many times this packet was shown (2: shown again because it
    /// was not acknowledged).
    pub shown: u32,
    pub items: Vec<Item>,
    /// Open decisions of workers that have no new wake.
    pub open_decisions: Vec<Decision>,
    /// Open decisions left out (past [`ELSEWHERE_MAX`] elsewhere,
    /// [`EXTRA_MAX`] on a worker): `fm crew-state` lists them all.
    pub more_decisions: usize,
    /// Wakes past this packet's end, for the next packet.
    pub more_wakes: usize,
    pub fleet: Fleet,
    /// Hosts that gave no answer, and the like.
    pub warnings: Vec<String>,
    /// The command that acknowledges the packet.
    pub ack: Option<String>,
}

/// The fleet in numbers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Fleet {
    pub workers: usize,
    pub working: usize,
    pub idle: usize,
    pub need_you: usize,
}

/// One worker with new wakes.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    pub task: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its crew state now (`None` when the fleet has no row for it).
    pub state: Option<State>,
    pub detail: String,
    pub inbox_pending: usize,
    pub events: Vec<Event>,
    /// Status lines it wrote since the lead's last acknowledged packet
    /// that no event shows (at most [`NOTES_MAX`], oldest first; local
    /// workers only).
    pub notes: Vec<String>,
}

/// One thing that happened to a worker, and what acts on it.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    /// The wake's number in its feed (absent for a decision no wake of
    /// this packet raised).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// `decision`, `blocked`, `done`, `failed`, `paused`, `escalation`,
    /// `overdue`, `dead-agent`, `dialog`, `blocker`, `watcher-recovered`, `resolved`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub text: String,
    /// Seconds since it happened, when known.
    pub age_secs: Option<u64>,
    /// Shell commands that act on it (placeholders in `<…>`).
    pub commands: Vec<String>,
}

/// An open decision (`needs-decision` or keyed `blocked`).
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    pub task: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub key: String,
    pub text: String,
    /// Seconds since it was opened, when the line carried its time.
    pub age_secs: Option<u64>,
    pub command: String,
}

/// A task id or key as one shell word: as it is when it is plain, else
/// single-quoted.
fn word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@'))
    {
        s.to_string()
    } else {
        crate::shq::quote(s)
    }
}

/// `s` on one line, cut at [`TEXT_MAX`] bytes (with `…`).
pub(super) fn one_line(s: &str) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.len() <= TEXT_MAX {
        return flat.to_string();
    }
    let mut cut = TEXT_MAX;
    while !flat.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}\u{2026}", &flat[..cut])
}

/// The command that answers decision `key` of `task`.
pub fn answer_command(task: &str, key: &str) -> String {
    // A key starting with `-` would read as an option: joined with `=`.
    let sep = if key.starts_with('-') { '=' } else { ' ' };
    format!(
        "fm send {} --resolve-key{sep}{} -- '<answer>'",
        word(task),
        word(key)
    )
}

/// A status wake's text, `<verb>[ key=K]: <text>`, taken apart.
fn status_parts(text: &str) -> (String, Option<String>, String) {
    let (head, rest) = text.split_once(": ").unwrap_or((text, ""));
    let mut words = head.split(' ');
    let verb = words.next().unwrap_or("").to_string();
    let key = words
        .find_map(|w| w.strip_prefix("key="))
        .map(str::to_string);
    (verb, key, rest.to_string())
}

/// Commands for an event of `kind` on `task`.
fn commands(kind: &str, task: &str, row: Option<&Row>) -> Vec<String> {
    let t = word(task);
    match kind {
        "blocked" => vec![
            format!("fm peek {t} --lines 40"),
            format!("fm send {t} -- '<reply>'"),
        ],
        "done" => vec![
            format!("fm dod --check {t}"),
            format!("fm control {t} teardown"),
        ],
        "failed" | "dead-agent" => vec![
            format!("fm peek {t} --lines 40"),
            format!("fm control {t} relaunch --note '<what to do now>'"),
        ],
        "escalation" | "overdue" => vec![
            format!("fm peek {t} --lines 40"),
            format!("fm control {t} interrupt"),
        ],
        "dialog" => vec![
            format!("fm peek {t}"),
            format!("fm send {t} --key Enter|Escape"),
        ],
        "paused" => vec![format!("fm send {t} -- '<go on, or what next>'")],
        "blocker" => {
            let board = task.strip_prefix("board:").unwrap_or(task);
            vec![format!("fm board show {}", word(board))]
        }
        "watcher-recovered" => vec!["fm watch --status".into()],
        _ if row.is_some_and(|r| r.state == State::Exited) => {
            vec![format!("fm control {t} relaunch --note '<what to do now>'")]
        }
        _ => vec![format!("fm peek {t}")],
    }
}

fn age(now: u64, at: Option<u64>) -> Option<u64> {
    at.map(|a| now.saturating_sub(a))
}

/// Builds the packet for `wakes` (in feed order) over the fleet's `rows`.
pub fn build(rows: &[Row], wakes: &[Merged], now: u64) -> Packet {
    let find = |task: &str, host: Option<&str>| {
        rows.iter()
            .find(|r| r.id == task && (host.is_none() || r.host.as_deref() == host))
    };
    let mut items: Vec<Item> = Vec::new();
    for m in wakes {
        let w = &m.wake;
        let host = m.host.clone();
        let i = if let Some(i) = items
            .iter()
            .position(|it| it.task == w.task && it.host == host)
        {
            i
        } else {
            let row = find(&w.task, host.as_deref());
            items.push(Item {
                task: w.task.clone(),
                host: host.clone(),
                state: row.map(|r| r.state),
                detail: row.map(|r| one_line(&r.detail)).unwrap_or_default(),
                inbox_pending: row.map_or(0, |r| r.inbox_pending),
                events: Vec::new(),
                notes: Vec::new(),
            });
            items.len() - 1
        };
        let row = find(&w.task, host.as_deref());
        let (kind, key, text) = if w.kind == "status" {
            let (verb, key, text) = status_parts(&w.text);
            // An unkeyed decision or block is the fold's `default` key.
            let key = match verb.as_str() {
                "needs-decision" | "blocked" => key.or_else(|| Some("default".into())),
                _ => key,
            };
            (verb, key, text)
        } else {
            (w.kind.clone(), None, w.text.clone())
        };
        let event = match (kind.as_str(), &key) {
            ("needs-decision" | "blocked", Some(k)) => {
                let open = row.is_some_and(|r| r.open_decisions.iter().any(|d| &d.key == k));
                if open {
                    Event {
                        seq: Some(w.seq),
                        kind: if kind == "blocked" {
                            "blocked".into()
                        } else {
                            "decision".into()
                        },
                        key: Some(k.clone()),
                        text: one_line(&text),
                        age_secs: Some(now.saturating_sub(w.epoch)),
                        commands: vec![answer_command(&w.task, k)],
                    }
                } else {
                    Event {
                        seq: Some(w.seq),
                        kind: "resolved".into(),
                        key: Some(k.clone()),
                        text: format!("answered since: {}", one_line(&text)),
                        age_secs: Some(now.saturating_sub(w.epoch)),
                        commands: Vec::new(),
                    }
                }
            }
            _ => Event {
                seq: Some(w.seq),
                commands: commands(&kind, &w.task, row),
                kind,
                key,
                text: one_line(&text),
                age_secs: Some(now.saturating_sub(w.epoch)),
            },
        };
        items[i].events.push(event);
    }
    // Decisions still open on a packet's worker that no wake here raised.
    let mut more_decisions = 0;
    for it in &mut items {
        let Some(row) = find(&it.task, it.host.as_deref()) else {
            continue;
        };
        let mut extra = 0;
        for d in &row.open_decisions {
            if it.events.iter().any(|e| e.key.as_deref() == Some(&d.key)) {
                continue;
            }
            extra += 1;
            if extra > EXTRA_MAX {
                more_decisions += 1;
                continue;
            }
            it.events.push(Event {
                seq: None,
                kind: if d.verb == "blocked" {
                    "blocked".into()
                } else {
                    "decision".into()
                },
                key: Some(d.key.clone()),
                text: one_line(&d.text),
                age_secs: age(now, d.at),
                commands: vec![answer_command(&it.task, &d.key)],
            });
        }
    }
    // The row's detail only when it says more than the events do.
    for it in &mut items {
        if it.events.iter().any(|e| {
            !e.text.is_empty() && (it.detail.contains(&e.text) || e.text.contains(&it.detail))
        }) {
            it.detail.clear();
        }
    }
    let mut open = Vec::new();
    let mut fleet = Fleet::default();
    for r in rows {
        fleet.workers += 1;
        match r.state {
            State::Working => fleet.working += 1,
            State::Idle | State::Parked => fleet.idle += 1,
            _ => {}
        }
        if r.urgency().needs_captain() {
            fleet.need_you += 1;
        }
        if items.iter().any(|it| it.task == r.id && it.host == r.host) {
            continue;
        }
        for d in &r.open_decisions {
            if open.len() >= ELSEWHERE_MAX {
                more_decisions += 1;
                continue;
            }
            open.push(Decision {
                task: r.id.clone(),
                host: r.host.clone(),
                key: d.key.clone(),
                text: one_line(&d.text),
                age_secs: age(now, d.at),
                command: answer_command(&r.id, &d.key),
            });
        }
    }
    open.sort_by_key(|d| std::cmp::Reverse(d.age_secs.unwrap_or(0)));
    Packet {
        token: None,
        shown: 0,
        items,
        open_decisions: open,
        more_decisions,
        more_wakes: 0,
        fleet,
        warnings: Vec::new(),
        ack: None,
    }
}

/// An age as the packet says it: ` (45s)`, ` (12m)`, ` (3h)`, ` (2d)`;
/// nothing when unknown.
fn short_age(secs: Option<u64>) -> String {
    let Some(secs) = secs else {
        return String::new();
    };
    let s = match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    };
    format!(" ({s})")
}

impl Packet {
    /// The compact text form (docs/spec/mate.md#packet).
    pub fn text(&self) -> String {
        let mut out = String::new();
        let f = &self.fleet;
        let head = match (&self.token, self.items.len()) {
            (Some(t), n) => {
                let again = if self.shown > 1 {
                    " (shown again: not acknowledged)"
                } else {
                    ""
                };
                format!(
                    "wake {t}{again}: {n} worker{} with news",
                    if n == 1 { "" } else { "s" }
                )
            }
            (None, _) => "no news".to_string(),
        };
        out.push_str(&format!(
            "{head} \u{b7} fleet {} workers, {} working, {} idle, {} need you\n",
            f.workers, f.working, f.idle, f.need_you
        ));
        for it in &self.items {
            let at = it
                .host
                .as_ref()
                .map(|h| format!("@{h}"))
                .unwrap_or_default();
            let state = it.state.map_or("no row", State::as_str);
            let unread = if it.inbox_pending > 0 {
                format!(" \u{b7} {} unread", it.inbox_pending)
            } else {
                String::new()
            };
            let detail = if it.detail.is_empty() {
                String::new()
            } else {
                format!(" \u{b7} {}", it.detail)
            };
            out.push_str(&format!("{}{at}: {state}{detail}{unread}\n", it.task));
            for n in &it.notes {
                out.push_str(&format!("  note: {n}\n"));
            }
            for e in &it.events {
                let key = e.key.as_ref().map(|k| format!(" {k}")).unwrap_or_default();
                out.push_str(&format!(
                    "  {}{key}{}: {}\n",
                    e.kind,
                    short_age(e.age_secs),
                    e.text
                ));
                for c in &e.commands {
                    out.push_str(&format!("    $ {c}\n"));
                }
            }
        }
        if !self.open_decisions.is_empty() {
            out.push_str(if self.items.is_empty() {
                "open decisions:\n"
            } else {
                "open decisions elsewhere:\n"
            });
            for d in &self.open_decisions {
                let at = d.host.as_ref().map(|h| format!("@{h}")).unwrap_or_default();
                out.push_str(&format!(
                    "  {}{at} {}{}: {}\n    $ {}\n",
                    d.task,
                    d.key,
                    short_age(d.age_secs),
                    d.text,
                    d.command
                ));
            }
        }
        if self.more_decisions > 0 {
            out.push_str(&format!(
                "{} more open decisions: fm crew-state\n",
                self.more_decisions
            ));
        }
        if self.more_wakes > 0 {
            out.push_str(&format!(
                "{} more wakes come in the next packet\n",
                self.more_wakes
            ));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        if let Some(ack) = &self.ack {
            out.push_str(&format!("when handled: {ack}\n"));
        }
        out
    }
}
