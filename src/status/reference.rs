//! The status parser and fold as they were before they were made fast,
//! kept for tests only: the answer the fast ones must give on any log.

#![allow(dead_code)]

use std::collections::HashMap;

use super::parse::{LineRef, ParsedRef};
use super::*;

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
pub(super) fn parse_str<'a>(line: &'a str, paused_lower: &str) -> ParsedRef<'a> {
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

/// The fold of a whole log, the old way.
pub(super) fn fold(bytes: &[u8], paused: &str) -> Fold {
    let text = String::from_utf8_lossy(crate::fsx::complete_lines(bytes));
    let paused_lower = paused.to_lowercase();
    let mut f = Fold::default();
    // Slots in (re)opening order; a closed or reopened decision leaves
    // an empty slot behind. `by_key` points at each open key's slot.
    let mut slots: Vec<Option<LineRef>> = Vec::new();
    let mut by_key: HashMap<&str, usize> = HashMap::new();
    let mut last_state: Option<LineRef> = None;
    for line in text.split('\n') {
        if line.bytes().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match parse_str(line, &paused_lower) {
            ParsedRef::Prose | ParsedRef::Invalid(_) => f.malformed += 1,
            ParsedRef::Line(l) => {
                f.lines += 1;
                f.last_at = l.at;
                if (l.kind.opens() || l.kind == Verb::Resolved)
                    && let Some(i) = by_key.remove(l.key)
                {
                    slots[i] = None;
                }
                if l.kind.opens() {
                    by_key.insert(l.key, slots.len());
                    slots.push(Some(l));
                }
                if l.kind.is_state() {
                    last_state = Some(l);
                }
            }
        }
    }
    f.open = slots.iter().flatten().map(LineRef::decision).collect();
    f.last_state = last_state.map(LineRef::to_owned_line);
    f
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Pieces a line is made of: verbs in any case, the configured paused
    /// word, tags good and bad, colons, brackets, keys, Unicode and ASCII
    /// whitespace (the vertical tab and NBSP among them), CR.
    const PIECES: &[&str] = &[
        "working",
        "WORKING",
        "Working",
        "needs-decision",
        "Blocked",
        "done",
        "failed",
        "resolved",
        "note",
        "paused",
        "hold",
        "HOLD",
        "\u{c4}rger",
        "thinking",
        " ",
        "  ",
        "\t",
        "\u{b}",
        "\u{c}",
        "\u{a0}",
        "\u{3000}",
        "\u{85}",
        "\r",
        ":",
        "::",
        "[",
        "]",
        "[at=17]",
        "[at=1234567890123]",
        "[at=10:30]",
        "[at=]",
        "[ at = 5 ]",
        "[key=a]",
        "[key=k1]",
        "[key=bad key]",
        "[key=]",
        "[key= b ]",
        "[key=\u{e9}]",
        "[x]",
        "[x=y=z]",
        "key=",
        "step",
        "text",
        "\u{e9}",
        "\u{1f6a2}",
        "=",
    ];

    fn line() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 0..9).prop_map(|v| v.concat())
    }

    /// A log: lines, then maybe raw bytes that are not UTF-8 and a torn tail.
    fn log() -> impl Strategy<Value = Vec<u8>> {
        (
            prop::collection::vec(line(), 0..40),
            prop::collection::vec(any::<u8>(), 0..6),
            any::<bool>(),
        )
            .prop_map(|(lines, raw, torn)| {
                let mut out = Vec::new();
                for (i, l) in lines.iter().enumerate() {
                    out.extend_from_slice(l.as_bytes());
                    if i == lines.len() / 2 {
                        out.extend_from_slice(&raw);
                    }
                    out.push(b'\n');
                }
                if torn {
                    out.extend_from_slice(b"done: torn");
                }
                out
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn the_fast_parser_reads_every_line_as_the_old_one(
            l in line(),
            paused in prop::sample::select(&["paused", "hold", "\u{e4}rger"][..]),
        ) {
            prop_assert_eq!(parse_str(&l, paused), super::super::parse::parse_str(&l, paused));
        }

        #[test]
        fn the_fast_fold_reads_every_log_as_the_old_one(
            bytes in log(),
            paused in prop::sample::select(&["paused", "Hold", "\u{c4}rger"][..]),
        ) {
            prop_assert_eq!(fold(&bytes, paused), Fold::from_bytes(&bytes, paused));
        }
    }
}
