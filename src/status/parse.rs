//! One line at a time: the verb, the bracket tags between verb and colon,
//! a key at the head of the text, and the text — borrowed from the line so
//! the fold copies out only what it keeps.

use super::*;

/// Where the text starts: the byte index of the first colon not inside a
/// `[...]` tag, and whether the brackets before it balanced. When no colon
/// sits outside brackets (an unclosed `[`, as in `done [at=17: shipped`),
/// the first colon is the real one, and `false` says the tags before it
/// cannot be trusted.
fn real_colon(s: &str) -> Option<(usize, bool)> {
    // Byte scan: '[', ']' and ':' are ASCII and never part of a multi-byte
    // UTF-8 sequence, so byte offsets here are char boundaries.
    let mut depth = 0usize;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b':' if depth == 0 => return Some((i, true)),
            _ => {}
        }
    }
    s.bytes().position(|b| b == b':').map(|i| (i, false))
}

/// Walks the `[name=value]` tags of `s` in order, calling `f` for each;
/// `false` if `s` holds anything else.
fn tags<'a>(s: &'a str, mut f: impl FnMut(&'a str, &'a str)) -> bool {
    let mut rest = s.trim();
    while !rest.is_empty() {
        let Some(inner) = rest.strip_prefix('[') else {
            return false;
        };
        let Some(end) = inner.bytes().position(|b| b == b']') else {
            return false;
        };
        let tag = &inner[..end];
        let (name, value) = tag.split_once('=').unwrap_or((tag, ""));
        f(name.trim(), value.trim());
        rest = inner[end + 1..].trim_start();
    }
    true
}

fn parse_at(v: &str) -> Option<u64> {
    if v.is_empty() || v.len() > 12 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

/// A status line borrowed from the text it was parsed from; the fold turns
/// only the lines it keeps into owned [`StatusLine`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineRef<'a> {
    /// The verb as written (trimmed, not yet lower-cased).
    pub verb: &'a str,
    pub kind: Verb,
    pub key: &'a str,
    pub text: &'a str,
    pub at: Option<u64>,
}

impl LineRef<'_> {
    pub(crate) fn to_owned_line(self) -> StatusLine {
        StatusLine {
            verb: self.verb.to_lowercase(),
            kind: self.kind,
            key: self.key.to_string(),
            text: self.text.to_string(),
            at: self.at,
        }
    }

    pub(super) fn decision(&self) -> Decision {
        Decision {
            key: self.key.to_string(),
            verb: self.verb.to_lowercase(),
            text: self.text.to_string(),
            at: self.at,
        }
    }
}

/// [`Parsed`] borrowing from its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParsedRef<'a> {
    Line(LineRef<'a>),
    Prose,
    Invalid(String),
}

/// The verb of `word` without allocating; `paused_lower` is the configured
/// paused word, lower-cased.
fn verb_of(word: &str, paused_lower: &str) -> Option<Verb> {
    const FIXED: [(&str, Verb); 8] = [
        ("working", Verb::Working),
        ("needs-decision", Verb::NeedsDecision),
        ("blocked", Verb::Blocked),
        ("done", Verb::Done),
        ("failed", Verb::Failed),
        ("resolved", Verb::Resolved),
        ("note", Verb::Note),
        ("paused", Verb::Paused),
    ];
    if let Some((_, v)) = FIXED.iter().find(|(w, _)| w.eq_ignore_ascii_case(word)) {
        return Some(*v);
    }
    let is_paused = if word.is_ascii() {
        word.eq_ignore_ascii_case(paused_lower)
    } else {
        word.to_lowercase() == paused_lower
    };
    is_paused.then_some(Verb::Paused)
}

/// Parses one line (without its `\n`) of already-decoded text. Never
/// fails, never panics; `paused_lower` is the configured paused word,
/// lower-cased.
pub(crate) fn parse_str<'a>(line: &'a str, paused_lower: &str) -> ParsedRef<'a> {
    let line = line.trim_end_matches(['\r', '\n']);
    let Some((colon, balanced)) = real_colon(line) else {
        return ParsedRef::Prose;
    };
    let head = &line[..colon];
    let (verb_part, tag_part) = match head.bytes().position(|b| b == b'[') {
        Some(i) => (&head[..i], &head[i..]),
        None => (head, ""),
    };
    let verb = verb_part.trim();
    let Some(kind) = verb_of(verb, paused_lower) else {
        return ParsedRef::Prose;
    };
    let mut at = None;
    let mut key: Option<&str> = None;
    let mut bad_key: Option<&str> = None;
    let readable = tags(tag_part, |name, value| match name {
        "at" => at = parse_at(value).or(at),
        "key" if valid_key(value) => key = Some(value),
        "key" => {
            bad_key.get_or_insert(value);
        }
        _ => {}
    });
    if !readable {
        // An unclosed tag (no colon outside brackets) loses its time, like
        // any malformed stamp (SPEC §3.1) — unless it is a key: a decision
        // filed under the wrong key is worse than an ignored line.
        if balanced || tag_part.contains("key=") {
            return ParsedRef::Invalid(format!("unreadable tags {:?}", tag_part.trim()));
        }
        at = None;
        key = None;
    }
    if let Some(value) = bad_key {
        return ParsedRef::Invalid(format!("malformed key {value:?}"));
    }
    let mut body = line[colon + 1..].trim_start();
    if let Some(after) = body.strip_prefix("[key=")
        && let Some(end) = after.find(']')
    {
        let value = after[..end].trim();
        if !valid_key(value) {
            return ParsedRef::Invalid(format!("malformed key {value:?}"));
        }
        key.get_or_insert(value);
        body = after[end + 1..].trim_start();
    }
    ParsedRef::Line(LineRef {
        verb,
        kind,
        key: key.unwrap_or("default"),
        text: body,
        at,
    })
}

/// Parses one line (without its `\n`). Never fails, never panics; invalid
/// UTF-8 is decoded lossily.
pub fn parse_line(raw: &[u8], paused: &str) -> Parsed {
    let text = String::from_utf8_lossy(raw);
    match parse_str(&text, &paused.to_lowercase()) {
        ParsedRef::Line(l) => Parsed::Line(l.to_owned_line()),
        ParsedRef::Prose => Parsed::Prose,
        ParsedRef::Invalid(why) => Parsed::Invalid(why),
    }
}
