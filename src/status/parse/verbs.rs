//! Byte tables and the verbs: which bytes may stand in a verb, a head or
//! a key, the fixed verbs read a word at a time, and the configured paused
//! word ([`Verbs`]).

use super::*;

/// Which bytes a plain verb is made of: ASCII letters and '-'.
pub(super) static VERB_BYTE: [bool; 256] = {
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
pub(super) enum HeadByte {
    Other,
    Eq,
    Close,
    /// '[' or ':': not a plain line.
    Stop,
}

pub(super) static HEAD_BYTE: [HeadByte; 256] = {
    let mut t = [HeadByte::Other; 256];
    t[b'=' as usize] = HeadByte::Eq;
    t[b']' as usize] = HeadByte::Close;
    t[b'[' as usize] = HeadByte::Stop;
    t[b':' as usize] = HeadByte::Stop;
    t
};

/// Which bytes a key is made of ([`valid_key`]).
pub(super) static KEY_BYTE: [bool; 256] = {
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
pub(super) fn key_byte(b: u8) -> bool {
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
pub(super) fn lower4(w: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([w[at], w[at + 1], w[at + 2], w[at + 3]]) | 0x2020_2020
}

/// [`lower4`], eight bytes.
#[inline]
pub(super) fn lower8(w: &[u8], at: usize) -> u64 {
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
pub(super) const fn word4(w: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([w[at], w[at + 1], w[at + 2], w[at + 3]])
}

/// [`lower8`] of a fixed word.
pub(super) const fn word8(w: &[u8], at: usize) -> u64 {
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
pub(super) fn fixed_verb(w: &[u8]) -> Option<Verb> {
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
    pub(super) paused_plain: bool,
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
    pub(super) fn plain(&self, word: &str) -> Option<Verb> {
        self.plain_bytes(word.as_bytes())
    }

    /// [`Verbs::plain`] of a plain word's bytes.
    #[inline]
    pub(super) fn plain_bytes(&self, word: &[u8]) -> Option<Verb> {
        fixed_verb(word).or_else(|| {
            (self.paused_plain && word.eq_ignore_ascii_case(self.paused_lower.as_bytes()))
                .then_some(Verb::Paused)
        })
    }

    /// The verb of `word` (any text) without allocating.
    pub(super) fn of(&self, word: &str) -> Option<Verb> {
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
