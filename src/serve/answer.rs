//! Answering a decision from the cockpit, once (docs/spec/serve.md#answer-once).
//!
//! The answer is `fm top`'s `r`: the same send, `decision KEY: ANSWER` to
//! the worker's inbox and the keyed `resolved` line, here or on the
//! task's host ([`crate::top::send_keyed`]). What this module adds is
//! "once", for a captain with two devices and a flaky phone network:
//!
//! - The decision is named by its line's identity: a hash of the task,
//!   the key, the line's time and its text, so a key asked again later
//!   is a new decision. The send's idempotency key is made from it: a
//!   retry of the same submission gets the report kept by the first
//!   (nothing is written twice, here or on a host).
//! - Each answer given here is recorded in
//!   `state/.serve-answers/<task>/key-<key>`: the line identity, the form's
//!   one-time `once` nonce and the answer. The same nonce and answer again
//!   is the retry above (`answered`); anything else for that line is
//!   `already-answered` with the answer recorded, and nothing is sent.
//! - A decision that is no longer open and was not answered here was
//!   resolved by someone else (`fm top`, `fm-send --key`):
//!   `resolved-meanwhile`, nothing sent.
//! - A per-task lock file (`state/.serve-answers/<task>/.lock`, a name
//!   no record takes) is held across the check and the send, so two
//!   submissions at once (two requests, or two `fm serve` processes)
//!   record one answer.
//!
//! A directory per task, records under a prefix: both a task id and a
//! key may hold `.`, so `<task>.<key>` names would let task `a` key `b.c`
//! and task `a.b` key `c` share one record, and key `lock` be the lock.

use std::path::PathBuf;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::home::Home;
use crate::task_id::TaskId;
use crate::{clock, fsx, status};

/// What an answer came to; [`Outcome::word`] is the page's `data-outcome`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Sent and resolved (or a retry of that: the kept report's line).
    Answered(String),
    /// Answered before through the cockpit; the answer recorded.
    AlreadyAnswered(String),
    /// Resolved by someone else, or no longer open.
    ResolvedMeanwhile(String),
    /// Not sent: why.
    Refused(String),
}

impl Outcome {
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Answered(_) => "answered",
            Outcome::AlreadyAnswered(_) => "already-answered",
            Outcome::ResolvedMeanwhile(_) => "resolved-meanwhile",
            Outcome::Refused(_) => "refused",
        }
    }

    pub fn text(&self) -> String {
        match self {
            Outcome::Answered(line) => format!("answered: {line}"),
            Outcome::AlreadyAnswered(a) => format!("already answered: {a}"),
            Outcome::ResolvedMeanwhile(why) => format!("resolved meanwhile: {why}"),
            Outcome::Refused(why) => format!("refused: {why}"),
        }
    }
}

/// A submitted answer form.
#[derive(Debug, Clone)]
pub struct Submission<'a> {
    pub id: &'a str,
    pub key: &'a str,
    pub once: &'a str,
    /// The line identity the page was rendered for, if it sent one.
    pub line: Option<&'a str>,
    pub answer: &'a str,
}

/// Longest wait for another submission's lock.
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// Longest answer taken (the form's body is bounded as well).
pub const MAX_ANSWER: usize = 16 * 1024;

/// The identity of decision `key` of task `id` asked at `at` with `text`.
pub fn line_identity(id: &str, key: &str, at: Option<u64>, text: &str) -> String {
    let h = Sha256::new()
        .chain_update(id)
        .chain_update([0])
        .chain_update(key)
        .chain_update([0])
        .chain_update(at.map(|a| a.to_string()).unwrap_or_default())
        .chain_update([0])
        .chain_update(text)
        .finalize();
    super::auth::hex(&h[..16])
}

/// Task `id`'s directory of answers.
fn dir(home: &Home, id: &TaskId) -> PathBuf {
    home.state_dir().join(".serve-answers").join(id.as_str())
}

/// The record of decision `key` in `dir`.
fn record_path(dir: &std::path::Path, key: &str) -> PathBuf {
    dir.join(format!("key-{key}"))
}

fn token_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The record of an answer given here.
struct Record {
    line: String,
    once: String,
    answer: String,
}

impl Record {
    fn parse(bytes: &[u8]) -> Option<Record> {
        let text = String::from_utf8_lossy(bytes);
        let (head, answer) = text.split_once('\n')?;
        let (line, once) = head.split_once('\t')?;
        Some(Record {
            line: line.into(),
            once: once.into(),
            answer: answer.into(),
        })
    }

    fn render(&self) -> String {
        format!("{}\t{}\n{}", self.line, self.once, self.answer)
    }
}

/// The answer the cockpit recorded for decision `key` of task `id`, if any
/// (shown on the page of a decision no longer open).
pub fn recorded(home: &Home, id: &TaskId, key: &str) -> Option<String> {
    if !status::valid_key(key) {
        return None;
    }
    let bytes = fsx::read_optional(&record_path(&dir(home, id), key)).ok()??;
    Record::parse(&bytes).map(|r| r.answer)
}

/// Answers `s`, once. Blocking: it reads the task's row and rings the
/// worker's doorbell.
pub fn answer(home: &Home, cfg: &Config, s: &Submission) -> Outcome {
    let refused = |why: String| Outcome::Refused(why);
    let Ok(tid) = TaskId::parse(s.id) else {
        return refused(format!("no such task id {:?}", s.id));
    };
    if !status::valid_key(s.key) {
        return refused("malformed decision key".into());
    }
    if !token_ok(s.once) || s.line.is_some_and(|l| !token_ok(l)) {
        return refused("malformed form (once/line)".into());
    }
    let answer = s.answer.trim();
    if answer.is_empty() || answer.len() > MAX_ANSWER {
        return refused(format!("an answer is 1 to {MAX_ANSWER} bytes"));
    }
    match answer_locked(home, cfg, &tid, s, answer) {
        Ok(o) => o,
        Err(e) => refused(crate::error::describe(&e)),
    }
}

fn answer_locked(
    home: &Home,
    cfg: &Config,
    tid: &TaskId,
    s: &Submission,
    answer: &str,
) -> crate::error::Result<Outcome> {
    let d = dir(home, tid);
    fsx::ensure_dir(&d)?;
    let _lock = fsx::lock(&d.join(".lock"), LOCK_WAIT)?;
    let rec_path = record_path(&d, s.key);
    let record = fsx::read_optional(&rec_path)?.and_then(|b| Record::parse(&b));
    let (rows, _) = crate::route::fleet::rows(home, cfg, std::slice::from_ref(tid), clock::now());
    let open = rows
        .iter()
        .flat_map(|r| &r.open_decisions)
        .find(|d| d.key == s.key);
    let line = match (open, s.line, &record) {
        (Some(d), _, _) => line_identity(tid.as_str(), s.key, d.at, &d.text),
        (None, Some(l), _) => l.to_string(),
        (None, None, Some(r)) => r.line.clone(),
        (None, None, None) => {
            return Ok(Outcome::ResolvedMeanwhile(format!(
                "decision {} is not open",
                s.key
            )));
        }
    };
    // A page rendered for an earlier asking of the same key.
    if open.is_some() && s.line.is_some_and(|l| l != line) {
        return Ok(Outcome::ResolvedMeanwhile(format!(
            "decision {} was answered and asked again; reload its page",
            s.key
        )));
    }
    if let Some(r) = record.as_ref().filter(|r| r.line == line) {
        if r.once != s.once || r.answer != answer {
            return Ok(Outcome::AlreadyAnswered(r.answer.clone()));
        }
        // The same submission again: the kept report, nothing written.
        return Ok(match send(home, cfg, tid, s.key, answer, &line)? {
            Ok(rep) => Outcome::Answered(rep),
            Err(_) => Outcome::AlreadyAnswered(r.answer.clone()),
        });
    }
    if open.is_none() {
        return Ok(Outcome::ResolvedMeanwhile(format!(
            "decision {} was resolved elsewhere",
            s.key
        )));
    }
    let sent = send(home, cfg, tid, s.key, answer, &line)?;
    let rec = Record {
        line,
        once: s.once.into(),
        answer: answer.into(),
    };
    fsx::atomic_write(&rec_path, rec.render().as_bytes())?;
    Ok(match sent {
        Ok(rep) => Outcome::Answered(rep),
        Err(why) => Outcome::ResolvedMeanwhile(why),
    })
}

/// The send under the line's idempotency key: `Ok(Ok(line))` when the
/// decision was resolved, `Ok(Err(why))` when the message went but the
/// key was resolved by someone else first.
fn send(
    home: &Home,
    cfg: &Config,
    tid: &TaskId,
    key: &str,
    answer: &str,
    line: &str,
) -> crate::error::Result<Result<String, String>> {
    let body = format!("decision {key}: {answer}");
    let idem = format!("serve-{line}");
    let rep = crate::top::send_keyed(
        home,
        cfg,
        tid.as_str(),
        &body,
        Some((key, answer)),
        Some(&idem),
    )?;
    Ok(match rep.unresolved.first() {
        Some(u) => Err(u.why.clone()),
        None => Ok(rep.record_line()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_different_decisions_never_share_a_file() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let t = |s: &str| TaskId::parse(s).unwrap();
        let path = |id: &str, key: &str| record_path(&dir(&home, &t(id)), key);
        assert_ne!(path("a", "b.c"), path("a.b", "c"));
        let lock = dir(&home, &t("a")).join(".lock");
        for key in ["lock", ".lock", "..", "."] {
            assert_ne!(path("a", key), lock, "{key}");
            assert_eq!(
                path("a", key).parent(),
                Some(dir(&home, &t("a")).as_path()),
                "{key}"
            );
        }
    }
}
