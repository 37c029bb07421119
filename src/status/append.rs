//! Appending to the status log (docs/spec/status.md#fm-status): the line `fm-status` and
//! `fm-send --resolve-key` append, validated before anything is written,
//! and the one place that writes it with its `status.appended` event.
//! [`resolve_answered`] is the captain answering a decision (`fm-send
//! --resolve-key`, `fm top`'s `r`): `resolved [key=K]: answered: <head>`.

use super::*;
use crate::error::{Error, Result};
use crate::events::{Entry, Event, Tool};
use crate::fsx;
use crate::home::Home;
use crate::task_id::TaskId;

/// Builds the line `fm-status` appends, validating it first (exit 2 on refusal).
pub fn format_append(
    verb: &str,
    at: u64,
    key: Option<&str>,
    text: &str,
    paused: &str,
) -> Result<String> {
    let word = verb.trim().to_lowercase();
    if Verb::from_word(&word, &paused.to_lowercase()).is_none() {
        return Err(Error::usage(format!(
            "unknown verb {} (working, needs-decision, blocked, {paused}, done, failed, resolved, note)",
            crate::error::quoted(verb)
        )));
    }
    if text.trim().is_empty() {
        return Err(Error::usage("empty status text"));
    }
    if text.contains(['\n', '\r']) {
        return Err(Error::usage(
            "status text must be one line (it contains a newline)",
        ));
    }
    if text.len() > MAX_TEXT {
        return Err(Error::usage(format!(
            "status text is {} bytes; the limit is {MAX_TEXT}",
            text.len()
        )));
    }
    let key_tag = match key {
        Some(k) if valid_key(k) => format!(" [key={k}]"),
        Some(k) => {
            return Err(Error::usage(format!(
                "malformed key {} (letters, digits, '.', '_', '-')",
                crate::error::quoted(k)
            )));
        }
        None => String::new(),
    };
    let line = format!("{word} [at={at}]{key_tag}: {text}\n");
    // Never write a line our own parser would not read back as a status
    // line (e.g. text opening with a malformed `[key=…]` tag).
    match parse_line(line.trim_end_matches('\n').as_bytes(), paused) {
        Parsed::Line(_) => Ok(line),
        Parsed::Invalid(why) => Err(Error::usage(format!(
            "the line would be unreadable: {why} (a [key=…] at the start of the text is read as the line's key)"
        ))),
        Parsed::Prose => Err(Error::usage(format!(
            "the line would be read as prose, not a status line (verb {})",
            crate::error::quoted(&word)
        ))),
    }
}

/// A validated line for `state/<id>.status`, with what its event records:
/// the verb as given (lower-cased) and the key (`default` when none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Append {
    line: String,
    verb: String,
    key: String,
}

impl Append {
    /// Validates the line ([`format_append`]; exit 2 on refusal).
    pub(crate) fn new(
        verb: &str,
        at: u64,
        key: Option<&str>,
        text: &str,
        paused: &str,
    ) -> Result<Append> {
        Ok(Append {
            line: format_append(verb, at, key, text, paused)?,
            verb: verb.to_lowercase(),
            key: key.unwrap_or("default").to_string(),
        })
    }

    /// Appends the line (docs/spec/files.md#append: one `write`, never torn across a page
    /// boundary) and records `status.appended` by `actor` under `tool`.
    pub(crate) fn write(
        &self,
        home: &Home,
        id: &TaskId,
        tool: Tool,
        actor: &str,
        now: u64,
    ) -> Result<()> {
        fsx::ensure_dir(&home.state_dir())?;
        fsx::append_line_in_page(&home.status(id), self.line.as_bytes())?;
        let event = Event::StatusAppended {
            verb: self.verb.clone(),
            key: self.key.clone(),
        };
        Entry::new(now, tool, id.as_str(), event)
            .by(actor)
            .record(home);
        Ok(())
    }
}

/// The text of a `resolved` line for an answer: `answered: ` and the
/// answer's first 120 bytes, control characters as spaces.
pub(crate) fn answered_text(answer: &[u8]) -> String {
    let head = String::from_utf8_lossy(&answer[..answer.len().min(120)])
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>();
    format!("answered: {}", head.trim())
}

/// The captain's answer to one decision, and who gives it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answer<'a> {
    pub key: &'a str,
    /// The answer as sent; the line keeps its head ([`answered_text`]).
    pub body: &'a [u8],
    pub tool: Tool,
    pub actor: &'a str,
}

/// Closes the answered decision of `id` with `resolved [at=now] [key=K]:
/// answered: <head of the answer>`.
pub(crate) fn resolve_answered(
    home: &Home,
    paused: &str,
    id: &TaskId,
    a: &Answer,
    now: u64,
) -> Result<()> {
    Append::new("resolved", now, Some(a.key), &answered_text(a.body), paused)?
        .write(home, id, a.tool, a.actor, now)
}
