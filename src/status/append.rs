//! The line `fm-status` appends, validated before anything is written.

use super::*;
use crate::error::{Error, Result};

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
            "unknown verb {verb:?} (working, needs-decision, blocked, {paused}, done, failed, resolved, note)"
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
                "malformed key {k:?} (letters, digits, '.', '_', '-')"
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
            "the line would be read as prose, not a status line (verb {word:?})"
        ))),
    }
}
