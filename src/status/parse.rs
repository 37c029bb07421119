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
fn trim_end(s: &str) -> &str {
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
fn trim(s: &str) -> &str {
    trim_end(trim_start(s))
}

fn parse_at(v: &str) -> Option<u64> {
    parse_at_bytes(v.as_bytes())
}

/// [`parse_at`] of bytes.
fn parse_at_bytes(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 12 {
        return None;
    }
    // At most 12 digits: no overflow.
    v.iter().try_fold(0u64, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0'))
    })
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
            verb: verb_word(self.verb, self.kind),
            kind: self.kind,
            key: key_word(self.key),
            text: self.text.to_string(),
            at: self.at,
        }
    }

    pub(super) fn decision(&self) -> Decision {
        Decision {
            key: self.key.to_string(),
            verb: verb_word(self.verb, self.kind),
            text: self.text.to_string(),
            at: self.at,
        }
    }
}

/// `word` lower-cased (by ASCII's rules when it is ASCII: the same, with
/// less work).
pub(crate) fn lower(word: &str) -> String {
    if word.is_ascii() {
        word.to_ascii_lowercase()
    } else {
        word.to_lowercase()
    }
}

/// `verb` (of kind `kind`) lower-cased as a line keeps it: the kind's own
/// word when it is that word in any case, with no allocation.
fn verb_word(verb: &str, kind: Verb) -> Word {
    let fixed = kind.word();
    if verb.eq_ignore_ascii_case(fixed) {
        Word::Borrowed(fixed)
    } else {
        Word::Owned(lower(verb))
    }
}

/// A key as a line keeps it: the `default` key as the word itself, with no
/// allocation.
pub(crate) fn key_word(key: &str) -> Word {
    if key == "default" {
        Word::Borrowed("default")
    } else {
        Word::Owned(key.to_string())
    }
}

/// `word` lower-cased, borrowed when it already is.
pub(crate) fn lower_cow(word: &str) -> std::borrow::Cow<'_, str> {
    if word
        .bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
    {
        std::borrow::Cow::Borrowed(word)
    } else {
        std::borrow::Cow::Owned(lower(word))
    }
}

/// [`Parsed`] borrowing from its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParsedRef<'a> {
    Line(LineRef<'a>),
    Prose,
    Invalid(String),
}

/// Which bytes a plain verb is made of: ASCII letters and '-'.
static VERB_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = (c as u8).is_ascii_alphabetic() || c == b'-' as usize;
        c += 1;
    }
    t
};

/// What a byte is inside a plain line's tag.
#[derive(Clone, Copy)]
enum HeadByte {
    Other,
    Eq,
    Close,
    /// '[' or ':': not a plain line.
    Stop,
}

static HEAD_BYTE: [HeadByte; 256] = {
    let mut t = [HeadByte::Other; 256];
    t[b'=' as usize] = HeadByte::Eq;
    t[b']' as usize] = HeadByte::Close;
    t[b'[' as usize] = HeadByte::Stop;
    t[b':' as usize] = HeadByte::Stop;
    t
};

/// Which bytes a key is made of ([`valid_key`]).
static KEY_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
        c += 1;
    }
    t
};

/// Whether `b` may be part of a key ([`valid_key`]).
#[inline]
fn key_byte(b: u8) -> bool {
    KEY_BYTE[usize::from(b)]
}

/// Whether `b` may be part of a plain verb.
#[inline]
pub(crate) fn verb_byte(b: u8) -> bool {
    VERB_BYTE[usize::from(b)]
}

/// Four bytes of a plain word from `at`, lower-cased: `| 0x20` lower-cases
/// an ASCII letter and leaves '-' as it is, and maps no other byte of a
/// plain word onto those, so two plain words are equal ignoring ASCII case
/// exactly when their lower-cased bytes are.
#[inline]
fn lower4(w: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([w[at], w[at + 1], w[at + 2], w[at + 3]]) | 0x2020_2020
}

/// [`lower4`], eight bytes.
#[inline]
fn lower8(w: &[u8], at: usize) -> u64 {
    u64::from_le_bytes([
        w[at],
        w[at + 1],
        w[at + 2],
        w[at + 3],
        w[at + 4],
        w[at + 5],
        w[at + 6],
        w[at + 7],
    ]) | 0x2020_2020_2020_2020
}

/// [`lower4`] of a fixed word.
const fn word4(w: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([w[at], w[at + 1], w[at + 2], w[at + 3]])
}

/// [`lower8`] of a fixed word.
const fn word8(w: &[u8], at: usize) -> u64 {
    u64::from_le_bytes([
        w[at],
        w[at + 1],
        w[at + 2],
        w[at + 3],
        w[at + 4],
        w[at + 5],
        w[at + 6],
        w[at + 7],
    ])
}

/// The fixed verb a plain word is (ASCII case ignored): by its length,
/// then one or two compares of overlapping words.
fn fixed_verb(w: &[u8]) -> Option<Verb> {
    let two4 =
        |a: &[u8]| (lower4(w, 0), lower4(w, w.len() - 4)) == (word4(a, 0), word4(a, a.len() - 4));
    match w.len() {
        4 => match lower4(w, 0) {
            x if x == word4(b"done", 0) => Some(Verb::Done),
            x if x == word4(b"note", 0) => Some(Verb::Note),
            _ => None,
        },
        6 if two4(b"failed") => Some(Verb::Failed),
        6 if two4(b"paused") => Some(Verb::Paused),
        7 if two4(b"working") => Some(Verb::Working),
        7 if two4(b"blocked") => Some(Verb::Blocked),
        8 if lower8(w, 0) == word8(b"resolved", 0) => Some(Verb::Resolved),
        14 if (lower8(w, 0), lower8(w, 6))
            == (word8(b"needs-decision", 0), word8(b"needs-decision", 6)) =>
        {
            Some(Verb::NeedsDecision)
        }
        _ => None,
    }
}

/// The words a log is read with: the fixed verbs and the configured paused
/// word, lower-cased, made ready once for a whole log.
pub(crate) struct Verbs<'p> {
    paused_lower: &'p str,
    /// The paused word is a plain verb (ASCII letters and '-'): then a
    /// line opening with a plain word that is no verb is prose.
    paused_plain: bool,
}

impl<'p> Verbs<'p> {
    pub(crate) fn new(paused_lower: &'p str) -> Verbs<'p> {
        let b = paused_lower.as_bytes();
        Verbs {
            paused_lower,
            paused_plain: !b.is_empty() && b.iter().all(|&c| verb_byte(c)),
        }
    }

    /// The verb of a plain word (ASCII letters and '-').
    #[inline]
    fn plain(&self, word: &str) -> Option<Verb> {
        self.plain_bytes(word.as_bytes())
    }

    /// [`Verbs::plain`] of a plain word's bytes.
    #[inline]
    fn plain_bytes(&self, word: &[u8]) -> Option<Verb> {
        fixed_verb(word).or_else(|| {
            (self.paused_plain && word.eq_ignore_ascii_case(self.paused_lower.as_bytes()))
                .then_some(Verb::Paused)
        })
    }

    /// The verb of `word` (any text) without allocating.
    fn of(&self, word: &str) -> Option<Verb> {
        if word.bytes().all(verb_byte) {
            return self.plain(word);
        }
        // Only a word lower-cased by Unicode's rules can be the paused
        // word now (the fixed verbs are plain).
        let is_paused = if word.is_ascii() {
            word.eq_ignore_ascii_case(self.paused_lower)
        } else {
            word.to_lowercase() == self.paused_lower
        };
        is_paused.then_some(Verb::Paused)
    }
}

/// Parses one line (without its `\n`) of already-decoded text. Never
/// fails, never panics; `paused_lower` is the configured paused word,
/// lower-cased.
pub(crate) fn parse_str<'a>(line: &'a str, paused_lower: &str) -> ParsedRef<'a> {
    parse_with(line, &Verbs::new(paused_lower))
}

/// [`parse_str`] with the words made ready ([`Verbs`]).
pub(crate) fn parse_with<'a>(line: &'a str, verbs: &Verbs) -> ParsedRef<'a> {
    let line = without_eol(line);
    match plain::<true>(line, verbs) {
        Plain::Head {
            verb_end,
            kind,
            key,
            at,
            colon,
        } => match body(line, colon, key) {
            Some((key, text)) => ParsedRef::Line(LineRef {
                verb: &line[..verb_end],
                kind,
                key,
                text,
                at,
            }),
            None => general(line, verbs),
        },
        Plain::Prose => ParsedRef::Prose,
        Plain::Other => general(line, verbs),
    }
}

/// What [`parse_with`] says of the line, as far as the fold needs it on
/// every line: its verb and key when it is a status line, `None` when it
/// is prose or invalid. The stamp and the text are left for the lines the
/// fold keeps.
#[inline]
pub(crate) fn scan<'a>(line: &'a str, verbs: &Verbs) -> Option<(Verb, &'a str)> {
    let line = without_eol(line);
    match plain::<false>(line, verbs) {
        Plain::Head {
            kind, key, colon, ..
        } => match body(line, colon, key) {
            Some((key, _)) => Some((kind, key)),
            None => None,
        },
        Plain::Prose => None,
        Plain::Other => match general(line, verbs) {
            ParsedRef::Line(l) => Some((l.kind, l.key)),
            ParsedRef::Prose | ParsedRef::Invalid(_) => None,
        },
    }
}

/// What a line's opening word alone says of it ([`quick`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quick {
    /// Prose whatever follows.
    Prose,
    /// A status line of this verb if the rest reads (its head, tags and
    /// key), prose or invalid otherwise.
    Verb(Verb),
    /// Only reading it whole tells.
    Unknown,
}

/// What the plain word opening `line` says of it, in a few instructions
/// a line, and where that word ends: the verb the general reading finds
/// is that word, or that word and more — an ASCII byte that is no verb's
/// stays in it lower-cased, so then it is no plain word, neither a fixed
/// verb nor a plain paused word. Only with a paused word that is not
/// plain, or a non-ASCII character after the word (which could lower-case
/// into a letter), is the answer [`Quick::Unknown`].
#[inline]
pub(crate) fn quick(line: &str, verbs: &Verbs) -> (usize, Quick) {
    quick_bytes(line.as_bytes(), verbs)
}

/// [`quick`] of a line's bytes (which need not be UTF-8 past the word).
#[inline]
pub(crate) fn quick_bytes(b: &[u8], verbs: &Verbs) -> (usize, Quick) {
    let w = b.iter().position(|&c| !verb_byte(c)).unwrap_or(b.len());
    if w == 0 || !verbs.paused_plain || !b.get(w).is_none_or(u8::is_ascii) {
        return (w, Quick::Unknown);
    }
    match verbs.plain_bytes(&b[..w]) {
        Some(v) => (w, Quick::Verb(v)),
        None => (w, Quick::Prose),
    }
}

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
struct Written {
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
fn written<const AT: bool>(b: &[u8], verb_end: usize) -> Option<Written> {
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
fn written_tags<const AT: bool>(b: &[u8], verb_end: usize) -> Option<Written> {
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
fn written_text(b: &[u8], from: usize) -> Option<usize> {
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

/// [`scan`] of a line without its line end ([`without_eol`]) that
/// [`quick`] found to be a status line of `kind` if the rest reads, its
/// verb ending at `verb_end`.
#[inline]
pub(crate) fn scan_rest<'a>(
    line: &'a str,
    verbs: &Verbs,
    verb_end: usize,
    kind: Verb,
) -> Option<(Verb, &'a str)> {
    match head::<false>(line, verb_end, kind) {
        Plain::Head {
            kind, key, colon, ..
        } => body_key(line, colon, key).map(|key| (kind, key)),
        Plain::Prose => None,
        Plain::Other => match general(line, verbs) {
            ParsedRef::Line(l) => Some((l.kind, l.key)),
            ParsedRef::Prose | ParsedRef::Invalid(_) => None,
        },
    }
}

/// [`without_eol`] of a line's bytes.
#[inline]
pub(crate) fn without_eol_bytes(b: &[u8]) -> &[u8] {
    match b.last() {
        Some(b'\r' | b'\n') => {
            let end = b
                .iter()
                .rposition(|&c| c != b'\r' && c != b'\n')
                .map_or(0, |i| i + 1);
            &b[..end]
        }
        _ => b,
    }
}

/// The line without the '\r' and '\n' at its end.
#[inline]
pub(crate) fn without_eol(line: &str) -> &str {
    // What is dropped is ASCII: the end is a boundary.
    &line[..without_eol_bytes(line.as_bytes()).len()]
}

/// What [`plain`] read.
enum Plain<'a> {
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
fn plain<'a, const AT: bool>(line: &'a str, verbs: &Verbs) -> Plain<'a> {
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
fn head<const AT: bool>(line: &str, verb_end: usize, kind: Verb) -> Plain<'_> {
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
fn body_key<'a>(line: &'a str, colon: usize, key: Option<&'a str>) -> Option<&'a str> {
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
fn body<'a>(line: &'a str, colon: usize, key: Option<&'a str>) -> Option<(&'a str, &'a str)> {
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
fn general<'a>(line: &'a str, verbs: &Verbs) -> ParsedRef<'a> {
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
