//! The general reading of a line: the first colon outside brackets, the
//! tags walked one by one, the key at the head of the text. What the
//! written-line shortcuts hand back to when a line is not as `fm-status`
//! writes it.

use super::*;

/// Where the text starts: the byte index of the first colon not inside a
/// `[...]` tag, and whether the brackets before it balanced. When no colon
/// sits outside brackets (an unclosed `[`, as in `done [at=17: shipped`),
/// the first colon is the real one, and `false` says the tags before it
/// cannot be trusted.
pub(super) fn real_colon(s: &str) -> Option<(usize, bool)> {
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

/// Walks the `[name=value]` tags of `s` in order, calling `f` for each;
/// `false` if `s` holds anything else.
pub(super) fn tags<'a>(s: &'a str, mut f: impl FnMut(&'a str, &'a str)) -> bool {
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
pub(super) fn ascii_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ')
}

/// `str::trim_start`, by byte while the text is ASCII.
#[inline]
pub(super) fn trim_start(s: &str) -> &str {
    let b = s.as_bytes();
    // Most text starts with a printable ASCII byte: nothing to trim.
    if b.first().is_none_or(|&c| c.is_ascii() && !ascii_space(c)) {
        return s;
    }
    // Text after a colon: one space, then a printable ASCII byte.
    if b[0] == b' ' && b.get(1).is_some_and(|&c| c.is_ascii() && !ascii_space(c)) {
        return &s[1..];
    }
    let i = b.iter().position(|&c| !ascii_space(c)).unwrap_or(b.len());
    match b.get(i) {
        Some(c) if !c.is_ascii() => s[i..].trim_start(),
        _ => &s[i..],
    }
}

/// `str::trim_end`, by byte while the text is ASCII.
#[inline]
pub(super) fn trim_end(s: &str) -> &str {
    let b = s.as_bytes();
    if b.last().is_none_or(|&c| c.is_ascii() && !ascii_space(c)) {
        return s;
    }
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
pub(super) fn trim(s: &str) -> &str {
    trim_end(trim_start(s))
}

pub(super) fn parse_at(v: &str) -> Option<u64> {
    parse_at_bytes(v.as_bytes())
}

/// [`parse_at`] of bytes.
pub(super) fn parse_at_bytes(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 12 {
        return None;
    }
    // At most 12 digits: no overflow.
    v.iter().try_fold(0u64, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0'))
    })
}

/// What [`plain`] read.
pub(super) enum Plain<'a> {
    /// A plain head: the verb (`line[..verb_end]`), the tags' key and
    /// stamp, and where the colon is; the text after it is still to read.
    Head {
        verb_end: usize,
        kind: Verb,
        key: Option<&'a str>,
        at: Option<u64>,
        colon: usize,
    },
    Prose,
    /// Not plain (or a malformed key): for [`general`] to read.
    Other,
}

/// A plainly written line's head, in one scan: a verb of ASCII letters
/// and '-' at its very start, then only spaces and `[...]` tags holding
/// neither '[' nor ':', then the colon — or a plain word that is no verb,
/// which makes the line prose whatever follows. Any other line is
/// [`Plain::Other`], for [`general`]; for the lines it answers, it answers
/// as [`general`] would. `AT`: read the `at=` stamp (the fold reads it
/// only on the lines it keeps).
#[inline]
pub(super) fn plain<'a, const AT: bool>(line: &'a str, verbs: &Verbs) -> Plain<'a> {
    let b = line.as_bytes();
    let verb_end = b.iter().position(|&c| !verb_byte(c)).unwrap_or(b.len());
    if verb_end == 0 {
        return Plain::Other;
    }
    let Some(kind) = verbs.plain(&line[..verb_end]) else {
        // The verb the general reading finds is this word, or this word
        // and more: an ASCII byte that is not a verb's (whitespace, a
        // digit, punctuation) stays in it lower-cased, so it is no plain
        // word. Only a non-ASCII character could lower-case into one.
        let next_ascii = b.get(verb_end).is_none_or(u8::is_ascii);
        return if verbs.paused_plain && next_ascii {
            Plain::Prose
        } else {
            Plain::Other
        };
    };
    head::<AT>(line, verb_end, kind)
}

/// The rest of a plain head after its verb (`line[..verb_end]`, of
/// `kind`): spaces and tags up to the colon ([`plain`]).
#[inline]
pub(super) fn head<const AT: bool>(line: &str, verb_end: usize, kind: Verb) -> Plain<'_> {
    let b = line.as_bytes();
    let mut at = None;
    let mut key: Option<&str> = None;
    let mut i = verb_end;
    let colon = loop {
        match b.get(i) {
            Some(b' ') => i += 1,
            Some(b':') => break i,
            Some(b'[') => {
                // The tags fm-status writes, `[key=<key>]` and
                // `[at=<digits>]`, read at once; any other as below.
                let rest = &b[i + 1..];
                if rest.first_chunk::<4>() == Some(b"key=") {
                    let v = &rest[4..];
                    let n = v.iter().position(|&c| !key_byte(c)).unwrap_or(v.len());
                    if n > 0 && v.get(n) == Some(&b']') {
                        key = Some(&line[i + 5..i + 5 + n]);
                        i += 6 + n;
                        continue;
                    }
                } else if rest.first_chunk::<3>() == Some(b"at=") {
                    let v = &rest[3..];
                    let n = v
                        .iter()
                        .position(|c| !c.is_ascii_digit())
                        .unwrap_or(v.len());
                    if v.get(n) == Some(&b']') {
                        if AT {
                            at = parse_at(&line[i + 4..i + 4 + n]).or(at);
                        }
                        i += 5 + n;
                        continue;
                    }
                }
                // The tag runs to a ']' with no '[' or ':' before it.
                let open = i + 1;
                let mut eq = usize::MAX;
                i = open;
                loop {
                    let Some(&c) = b.get(i) else {
                        return Plain::Other;
                    };
                    match HEAD_BYTE[usize::from(c)] {
                        HeadByte::Other => {}
                        HeadByte::Eq => eq = eq.min(i),
                        HeadByte::Close => break,
                        HeadByte::Stop => return Plain::Other,
                    }
                    i += 1;
                }
                let tag = &line[open..i];
                i += 1;
                // A tag `[name=value]`, both trimmed; no '=' is a name.
                let (name, value) = if eq == usize::MAX {
                    (tag, "")
                } else {
                    (&line[open..eq], &line[eq + 1..i - 1])
                };
                match trim(name) {
                    "at" if AT => at = parse_at(trim(value)).or(at),
                    "key" => {
                        let value = trim(value);
                        if !valid_key(value) {
                            return Plain::Other;
                        }
                        key = Some(value);
                    }
                    _ => {}
                }
            }
            _ => return Plain::Other,
        }
    };
    Plain::Head {
        verb_end,
        kind,
        key,
        at,
        colon,
    }
}

/// The key of a line whose head ends at `colon`, as [`body`] gives it.
#[inline]
pub(super) fn body_key<'a>(line: &'a str, colon: usize, key: Option<&'a str>) -> Option<&'a str> {
    let b = line.as_bytes();
    // Text that opens with a printable ASCII byte other than '[', after
    // its spaces, has no key at its head.
    let mut i = colon + 1;
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    match b.get(i) {
        None => Some(key.unwrap_or("default")),
        Some(&c) if c != b'[' && c.is_ascii() && !ascii_space(c) => Some(key.unwrap_or("default")),
        Some(_) => body(line, colon, key).map(|(key, _)| key),
    }
}

/// The key and the text of a line whose head ends at `colon`: a `[key=…]`
/// at the head of the text is the key when the tags gave none. `None`
/// when that key is malformed.
#[inline]
pub(super) fn body<'a>(
    line: &'a str,
    colon: usize,
    key: Option<&'a str>,
) -> Option<(&'a str, &'a str)> {
    let text = trim_start(&line[colon + 1..]);
    if let Some(after) = text.strip_prefix("[key=")
        && let Some(end) = after.find(']')
    {
        let value = trim(&after[..end]);
        if !valid_key(value) {
            return None;
        }
        return Some((key.unwrap_or(value), trim_start(&after[end + 1..])));
    }
    Some((key.unwrap_or("default"), text))
}

/// Any line: the verb before the first colon outside brackets (or the
/// first colon, when the brackets do not balance), then its tags.
pub(super) fn general<'a>(line: &'a str, verbs: &Verbs) -> ParsedRef<'a> {
    let Some((colon, balanced)) = real_colon(line) else {
        return ParsedRef::Prose;
    };
    let head = &line[..colon];
    let (verb_part, tag_part) = match head.bytes().position(|b| b == b'[') {
        Some(i) => (&head[..i], &head[i..]),
        None => (head, ""),
    };
    let verb = trim(verb_part);
    let Some(kind) = verbs.of(verb) else {
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
    let mut text = trim_start(&line[colon + 1..]);
    if let Some(after) = text.strip_prefix("[key=")
        && let Some(end) = after.find(']')
    {
        let value = trim(&after[..end]);
        if !valid_key(value) {
            return ParsedRef::Invalid(format!("malformed key {value:?}"));
        }
        key.get_or_insert(value);
        text = trim_start(&after[end + 1..]);
    }
    ParsedRef::Line(LineRef {
        verb,
        kind,
        key: key.unwrap_or("default"),
        text,
        at,
    })
}
