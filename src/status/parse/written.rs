//! Lines as `fm-status` writes them, read in one pass: the decision
//! opening, the written key and stamp, the whole written line.

use super::*;

/// What the opening of a line that starts with a verb byte says of it as
/// a decision's line ([`decision_opening`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opening {
    /// Its plain word is this decision verb, ending here.
    Decision(usize, Verb),
    /// Its plain word is no decision verb: the line opens, reopens and
    /// resolves nothing (its verb is that word, or no fixed verb at all).
    Other,
}

/// Whether the plain word opening `b` is `needs-decision`, `blocked` or
/// `resolved` (any case), by comparing whole words of its first bytes.
#[inline]
pub(crate) fn decision_opening(b: &[u8]) -> Opening {
    // `| 0x20` lower-cases a letter (and maps no other byte onto one).
    const LETTERS: u64 = 0x2020_2020_2020_2020;
    // Eight bytes from `at`, past the line's end zero (lower-cased: a
    // space, no verb's byte), so a short line is told by whole words too.
    let word = |at: usize| {
        let rest = b.get(at..).unwrap_or_default();
        if let Some(w) = rest.first_chunk::<8>() {
            return u64::from_le_bytes(*w);
        }
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        u64::from_le_bytes(w)
    };
    let ends = |n: usize| b.get(n).is_none_or(|&c| !verb_byte(c));
    let x = word(0);
    let lower = x | LETTERS;
    if lower == u64::from_le_bytes(*b"resolved") {
        return if ends(8) {
            Opening::Decision(8, Verb::Resolved)
        } else {
            Opening::Other
        };
    }
    if lower & 0x00ff_ffff_ffff_ffff == u64::from_le_bytes(*b"blocked\0") {
        return if ends(7) {
            Opening::Decision(7, Verb::Blocked)
        } else {
            Opening::Other
        };
    }
    // The '-' of `needs-de` compared as it is.
    if x | 0x2020_0020_2020_2020 == u64::from_le_bytes(*b"needs-de") {
        let y = word(6);
        return if y | LETTERS == u64::from_le_bytes(*b"decision") && ends(14) {
            Opening::Decision(14, Verb::NeedsDecision)
        } else {
            Opening::Other
        };
    }
    Opening::Other
}

/// The key of a line written as `fm-status` writes it — its verb
/// (`line[..verb_end]`), then only spaces, `[at=<digits>]` and
/// `[key=<key>]` tags, the colon, and text opening with a printable ASCII
/// byte other than `[` — in one pass over its head: `Some(key)` as
/// [`scan_rest`] would give it, `None` for any other line (which
/// [`scan_rest`] reads).
#[inline]
pub(crate) fn written_key(line: &[u8], verb_end: usize) -> Option<&[u8]> {
    written::<false>(line, verb_end).map(|h| h.key.map_or(&b"default"[..], |k| &line[k]))
}

/// The stamp of a line written as `fm-status` writes it (its verb is
/// `line[..verb_end]`, a verb [`quick_bytes`] found): `Some(at)` where
/// [`parse_written`] would read the line as a status line with that `at`,
/// `None` for any other line (left to [`parse_written`]). Read from the
/// bytes: the head is ASCII, and the text is not looked at past its first
/// byte.
#[inline]
pub(crate) fn written_at(line: &[u8], verb_end: usize) -> Option<Option<u64>> {
    written::<true>(line, verb_end).map(|h| h.at)
}

/// A head as `fm-status` writes it, read by [`written`]: where its key
/// is, its stamp (when asked for), and where its text starts.
pub(super) struct Written {
    key: Option<std::ops::Range<usize>>,
    at: Option<u64>,
    text: usize,
}

/// The head of a line after its verb (`b[..verb_end]`) when it is only
/// spaces, `[at=<digits>]` and `[key=<key>]` tags, the colon, spaces and
/// text opening with a printable ASCII byte other than `[` (or none);
/// `None` for any other. `AT`: read the stamp (the last good one wins, as
/// [`head`] reads it).
// Inlined into each reader of a line (a call a line costs as much as this
// head's own work); the general loop is a call of its own.
#[allow(clippy::inline_always, reason = "measured: a call a decision line")]
#[inline(always)]
pub(super) fn written<const AT: bool>(b: &[u8], verb_end: usize) -> Option<Written> {
    // The head fm-status writes a decision with, ` [key=<key>]:`, read at
    // once; any other head by the loop.
    if let Some(k) = b.get(verb_end..).and_then(|r| r.strip_prefix(b" [key=")) {
        let n = k.iter().position(|&c| !key_byte(c)).unwrap_or(k.len());
        if n > 0 && k.get(n..n + 2) == Some(b"]:") {
            let from = verb_end + 6;
            return written_text(b, from + n + 2).map(|text| Written {
                key: Some(from..from + n),
                at: None,
                text,
            });
        }
    }
    written_tags::<AT>(b, verb_end)
}

/// [`written`]'s general reading: the head's tags one by one.
#[inline(never)]
pub(super) fn written_tags<const AT: bool>(b: &[u8], verb_end: usize) -> Option<Written> {
    let mut i = verb_end;
    let mut key = None;
    let mut at = None;
    loop {
        match *b.get(i)? {
            b':' => break,
            b' ' => i += 1,
            b'[' => {
                let rest = &b[i + 1..];
                if let Some(v) = rest.strip_prefix(b"key=") {
                    let n = v.iter().position(|&c| !key_byte(c)).unwrap_or(v.len());
                    if n == 0 || v.get(n) != Some(&b']') {
                        return None;
                    }
                    key = Some(i + 5..i + 5 + n);
                    i += 6 + n;
                } else if let Some(v) = rest.strip_prefix(b"at=") {
                    let n = v
                        .iter()
                        .position(|c| !c.is_ascii_digit())
                        .unwrap_or(v.len());
                    if v.get(n) != Some(&b']') {
                        return None;
                    }
                    if AT {
                        at = parse_at_bytes(&v[..n]).or(at);
                    }
                    i += 5 + n;
                } else {
                    return None;
                }
            }
            _ => return None,
        }
    }
    written_text(b, i + 1).map(|text| Written { key, at, text })
}

/// Where the text after a written head's colon (at `from`) starts: past
/// its spaces, at a printable ASCII byte other than `[`, or at the line's
/// end; `None` when anything else follows the spaces.
#[inline]
pub(super) fn written_text(b: &[u8], from: usize) -> Option<usize> {
    let mut j = from;
    while b.get(j) == Some(&b' ') {
        j += 1;
    }
    match b.get(j) {
        None => Some(j),
        Some(&c) if c != b'[' && (b'!'..=b'~').contains(&c) => Some(j),
        Some(_) => None,
    }
}

/// The whole reading of a line written as `fm-status` writes it, in one
/// pass: its plain verb (`line[..verb_end]`, of `kind`, as [`quick`]
/// found it), then only spaces and `[at=<digits>]` and `[key=<key>]`
/// tags, the colon, spaces and text opening with a printable ASCII byte
/// other than `[` (or none) — `Some` as [`parse_with`] reads it; `None`
/// for any other line, which [`parse_with`] reads.
#[inline]
pub(crate) fn written_line(line: &str, verb_end: usize, kind: Verb) -> Option<LineRef<'_>> {
    // Every offset `written` gives falls after an ASCII byte: a boundary.
    let h = written::<true>(line.as_bytes(), verb_end)?;
    Some(LineRef {
        verb: &line[..verb_end],
        kind,
        key: h.key.map_or("default", |k| &line[k]),
        text: &line[h.text..],
        at: h.at,
    })
}

/// [`parse_with`] of a line, by [`written_line`] when it is written so.
#[inline]
pub(crate) fn parse_written<'a>(line: &'a str, verbs: &Verbs) -> ParsedRef<'a> {
    let bare = without_eol(line);
    if let (w, Quick::Verb(kind)) = quick(bare, verbs)
        && let Some(l) = written_line(bare, w, kind)
    {
        return ParsedRef::Line(l);
    }
    parse_with(line, verbs)
}
