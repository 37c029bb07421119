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
    let mut first = None;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b':' if depth == 0 => return Some((i, true)),
            b':' => {
                first.get_or_insert(i);
            }
            _ => {}
        }
    }
    first.map(|i| (i, false))
}

/// The head of a plainly written line in one scan: a verb of ASCII
/// letters and '-' at its very start, then only spaces and `[...]` tags
/// holding neither '[' nor ':', then the colon. Gives the verb, the tags'
/// part (from the first '[' to the colon) and the colon's index, as
/// [`real_colon`] and the split after it would; `None` for any other
/// line, which the general scan reads.
fn plain_head(line: &str) -> Option<(&str, &str, usize)> {
    let b = line.as_bytes();
    let verb_end = b
        .iter()
        .position(|&c| !(c.is_ascii_alphabetic() || c == b'-'))?;
    if verb_end == 0 {
        return None;
    }
    let mut i = verb_end;
    let mut first_tag = None;
    loop {
        match *b.get(i)? {
            b' ' => i += 1,
            b':' => break,
            b'[' => {
                first_tag.get_or_insert(i);
                i += 1;
                loop {
                    match *b.get(i)? {
                        b']' => break,
                        b'[' | b':' => return None,
                        _ => i += 1,
                    }
                }
                i += 1;
            }
            _ => return None,
        }
    }
    let tag_part = first_tag.map_or("", |t| &line[t..i]);
    Some((&line[..verb_end], tag_part, i))
}

/// Walks the `[name=value]` tags of `s` in order, calling `f` for each;
/// `false` if `s` holds anything else.
fn tags<'a>(s: &'a str, mut f: impl FnMut(&'a str, &'a str)) -> bool {
    let mut rest = trim(s);
    while !rest.is_empty() {
        let Some(inner) = rest.strip_prefix('[') else {
            return false;
        };
        let Some(end) = inner.bytes().position(|b| b == b']') else {
            return false;
        };
        let tag = &inner[..end];
        let (name, value) = match tag.bytes().position(|b| b == b'=') {
            Some(i) => (&tag[..i], &tag[i + 1..]),
            None => (tag, ""),
        };
        f(trim(name), trim(value));
        rest = trim_start(&inner[end + 1..]);
    }
    true
}

/// Whether `b` is an ASCII byte `char::is_whitespace` holds for (which,
/// unlike `u8::is_ascii_whitespace`, includes the vertical tab).
#[inline]
fn ascii_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ')
}

/// `str::trim_start`, by byte while the text is ASCII.
#[inline]
fn trim_start(s: &str) -> &str {
    let b = s.as_bytes();
    let i = b.iter().position(|&c| !ascii_space(c)).unwrap_or(b.len());
    match b.get(i) {
        Some(c) if !c.is_ascii() => s[i..].trim_start(),
        _ => &s[i..],
    }
}

/// `str::trim_end`, by byte while the text is ASCII.
#[inline]
fn trim_end(s: &str) -> &str {
    let b = s.as_bytes();
    let n = b
        .iter()
        .rposition(|&c| !ascii_space(c))
        .map_or(0, |i| i + 1);
    match n.checked_sub(1).map(|i| b[i]) {
        Some(c) if !c.is_ascii() => s[..n].trim_end(),
        _ => &s[..n],
    }
}

/// `str::trim`, by byte while the text is ASCII.
#[inline]
fn trim(s: &str) -> &str {
    trim_end(trim_start(s))
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
    // The fixed verbs are ASCII: only an ASCII word of at most their
    // length can be one, compared lower-cased on the stack.
    let mut buf = [0u8; 14];
    if word.len() <= buf.len() && word.is_ascii() {
        let lower = &mut buf[..word.len()];
        for (d, s) in lower.iter_mut().zip(word.bytes()) {
            *d = s.to_ascii_lowercase();
        }
        let fixed = match &*lower {
            b"working" => Some(Verb::Working),
            b"needs-decision" => Some(Verb::NeedsDecision),
            b"blocked" => Some(Verb::Blocked),
            b"done" => Some(Verb::Done),
            b"failed" => Some(Verb::Failed),
            b"resolved" => Some(Verb::Resolved),
            b"note" => Some(Verb::Note),
            b"paused" => Some(Verb::Paused),
            _ => None,
        };
        if fixed.is_some() {
            return fixed;
        }
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
    let b = line.as_bytes();
    let end = b
        .iter()
        .rposition(|&c| c != b'\r' && c != b'\n')
        .map_or(0, |i| i + 1);
    let line = &line[..end];
    let (verb, tag_part, colon, balanced) = if let Some((verb, tag_part, colon)) = plain_head(line)
    {
        (verb, tag_part, colon, true)
    } else {
        let Some((colon, balanced)) = real_colon(line) else {
            return ParsedRef::Prose;
        };
        let head = &line[..colon];
        let (verb_part, tag_part) = match head.bytes().position(|b| b == b'[') {
            Some(i) => (&head[..i], &head[i..]),
            None => (head, ""),
        };
        (trim(verb_part), tag_part, colon, balanced)
    };
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
    let mut body = trim_start(&line[colon + 1..]);
    if let Some(after) = body.strip_prefix("[key=")
        && let Some(end) = after.find(']')
    {
        let value = trim(&after[..end]);
        if !valid_key(value) {
            return ParsedRef::Invalid(format!("malformed key {value:?}"));
        }
        key.get_or_insert(value);
        body = trim_start(&after[end + 1..]);
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
