//! The status grammar read the plain way (docs/spec/status.md#grammar, #fold): each line
//! decoded, split at its first colon outside brackets, its tags walked one
//! by one, and the fold a list of open decisions. Slow and obviously
//! right: the answer the fast parser and folds must give on any log.

use crate::status::parse::{LineRef, ParsedRef};
use crate::status::{Fold, Verb, valid_key};

/// Where the head of `line` ends: its first colon outside brackets, or
/// (brackets unbalanced) its first colon; and whether it was the former.
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

/// The verb of `word`; `paused_lower` is the configured paused word,
/// lower-cased.
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
pub(super) fn parse<'a>(line: &'a str, paused_lower: &str) -> ParsedRef<'a> {
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
        // any malformed stamp (docs/spec/status.md#grammar) — unless it is a key: a decision
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

/// The fold of a whole log: every line decoded, parsed whole, and the
/// open decisions kept in a plain list in (re)opening order.
pub(crate) fn fold(bytes: &[u8], paused: &str) -> Fold {
    let text = String::from_utf8_lossy(crate::fsx::complete_lines(bytes));
    let paused_lower = paused.to_lowercase();
    let mut f = Fold::default();
    let mut open: Vec<LineRef> = Vec::new();
    let mut last_state: Option<LineRef> = None;
    for line in text.split('\n') {
        if line.bytes().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match parse(line, &paused_lower) {
            ParsedRef::Prose | ParsedRef::Invalid(_) => f.malformed += 1,
            ParsedRef::Line(l) => {
                f.lines += 1;
                f.last_at = l.at;
                if l.kind.opens() || l.kind == Verb::Resolved {
                    open.retain(|o| o.key != l.key);
                }
                if l.kind.opens() {
                    open.push(l);
                }
                if l.kind.is_state() {
                    last_state = Some(l);
                }
            }
        }
    }
    f.open = open.iter().map(LineRef::decision).collect();
    f.last_state = last_state.map(LineRef::to_owned_line);
    f.any_line = f.lines > 0;
    f
}
