//! One line at a time: the verb, the bracket tags between verb and colon,
//! a key at the head of the text, and the text — borrowed from the line so
//! the fold copies out only what it keeps.

use super::*;

mod general;
mod verbs;
mod written;

use general::*;
pub(crate) use verbs::*;
pub(crate) use written::*;

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
