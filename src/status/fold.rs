//! The fold (SPEC §3.3): open decisions by key and the current line.
//!
//! Linear in the size of the log: open decisions are kept in the order
//! they were (re)opened, a few in a short list, more in slots with an
//! index from key to slot ([`OpenKeys`]), so opening, reopening and
//! resolving cost the same however many decisions are open. A log of
//! 200,000 distinct open decisions folds as fast, per line, as a log with
//! one.
//!
//! Every line is scanned only as far as the fold needs (its verb and key),
//! and only the lines kept are read whole. [`Fold::for_view`] reads less
//! still, for a view that needs no line counts.

use std::collections::HashMap;

use super::parse::{
    LineRef, Opening, ParsedRef, Quick, Verbs, decision_opening, parse_with, quick, scan,
    scan_rest, verb_byte, without_eol,
};
use super::*;

/// The offsets of the '\n' bytes of a text, in order. Status lines are
/// short, so the bytes are looked at eight at a time in a word, one pass
/// over the text (a vector search per line costs more in set-up than it
/// saves).
struct Newlines<'b> {
    /// The text's whole words, and the few bytes after them.
    words: &'b [[u8; 8]],
    tail: &'b [u8],
    /// The word `found` was read from (`words.len()`: the tail).
    word: usize,
    /// The high bit of each '\n' byte of that word not yet handed out.
    found: u64,
}

/// The high bit of each byte of `w` that is a '\n', and only those.
#[inline]
fn newline_bits(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let w = w ^ (ONES * u64::from(b'\n'));
    // The high bit of each byte of `w` that is zero, and only those.
    !(((w & LOW7) + LOW7) | w | LOW7)
}

impl<'b> Newlines<'b> {
    fn new(bytes: &'b [u8]) -> Newlines<'b> {
        let (words, tail) = bytes.as_chunks::<8>();
        let mut n = Newlines {
            words,
            tail,
            word: 0,
            found: 0,
        };
        n.found = n.bits(0);
        n
    }

    /// The newline bits of word `k` (the tail padded with bytes that are
    /// no '\n'; past it, none).
    #[inline]
    fn bits(&self, k: usize) -> u64 {
        if let Some(w) = self.words.get(k) {
            return newline_bits(u64::from_le_bytes(*w));
        }
        if k > self.words.len() {
            return 0;
        }
        let mut w = [0u8; 8];
        w[..self.tail.len()].copy_from_slice(self.tail);
        newline_bits(u64::from_le_bytes(w))
    }
}

impl Iterator for Newlines<'_> {
    type Item = usize;

    // Called once a line: a call costs as much as the rest of it.
    #[allow(clippy::inline_always, reason = "measured: a call a line")]
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        while self.found == 0 {
            self.word += 1;
            self.found = match self.words.get(self.word) {
                Some(w) => newline_bits(u64::from_le_bytes(*w)),
                None if self.word == self.words.len() && !self.tail.is_empty() => {
                    self.bits(self.word)
                }
                None => return None,
            };
        }
        let i = self.word * 8 + (self.found.trailing_zeros() / 8) as usize;
        self.found &= self.found - 1;
        Some(i)
    }
}

/// Open keys at most looked up one by one; past this many, by hash.
const FEW: usize = 8;

/// The open decisions of a fold, in the order they were (re)opened, each
/// with the line that (re)opened it. While few are open (most logs) they
/// sit in a short list kept in that order, with no allocation; once more
/// are, the line of each opening sits in slots, a closed or reopened one
/// leaving an empty slot behind, and a hash map points at each open key's
/// slot — so opening, reopening and resolving cost the same however many
/// are open.
enum OpenKeys<'a> {
    Few {
        open: [(&'a str, &'a str); FEW],
        len: usize,
    },
    Many {
        slots: Vec<Option<&'a str>>,
        by_key: HashMap<&'a str, usize, foldhash::quality::RandomState>,
    },
}

impl Default for OpenKeys<'_> {
    fn default() -> Self {
        OpenKeys::Few {
            open: [("", ""); FEW],
            len: 0,
        }
    }
}

impl<'a> OpenKeys<'a> {
    /// Closes `key` if it is open.
    fn close(&mut self, key: &str) {
        match self {
            OpenKeys::Few { open, len } => {
                // Keys are short: compared in place, not by a call.
                let same = |k: &str| {
                    k.len() == key.len() && k.bytes().zip(key.bytes()).all(|(a, b)| a == b)
                };
                if let Some(p) = open[..*len].iter().position(|(k, _)| same(k)) {
                    open.copy_within(p + 1..*len, p);
                    *len -= 1;
                }
            }
            OpenKeys::Many { slots, by_key } => {
                if let Some(i) = by_key.remove(key) {
                    slots[i] = None;
                }
            }
        }
    }

    /// Opens `key` (closed first) with its line.
    fn open(&mut self, key: &'a str, line: &'a str) {
        match self {
            OpenKeys::Few { open, len } if *len < FEW => {
                open[*len] = (key, line);
                *len += 1;
            }
            OpenKeys::Few { open, len } => {
                let mut slots: Vec<Option<&str>> = Vec::with_capacity(2 * FEW);
                let mut by_key = HashMap::default();
                for (k, l) in &open[..*len] {
                    by_key.insert(*k, slots.len());
                    slots.push(Some(*l));
                }
                by_key.insert(key, slots.len());
                slots.push(Some(line));
                *self = OpenKeys::Many { slots, by_key };
            }
            OpenKeys::Many { slots, by_key } => {
                by_key.insert(key, slots.len());
                slots.push(Some(line));
            }
        }
    }

    /// The lines of the open decisions, oldest first.
    fn lines(&self) -> impl Iterator<Item = &'a str> + '_ {
        let (few, many): (&[(&str, &str)], &[Option<&str>]) = match self {
            OpenKeys::Few { open, len } => (&open[..*len], &[]),
            OpenKeys::Many { slots, .. } => (&[], slots),
        };
        few.iter()
            .map(|(_, l)| *l)
            .chain(many.iter().flatten().copied())
    }
}

/// An open decision: what is waiting on someone above the worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Decision {
    pub key: String,
    pub verb: String,
    pub text: String,
    pub at: Option<u64>,
}

/// The fold of a whole log (SPEC §3.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fold {
    /// Open decisions, oldest first.
    pub open: Vec<Decision>,
    /// The newest line with a state verb, whatever is open.
    pub last_state: Option<StatusLine>,
    /// Valid status lines seen.
    pub lines: usize,
    /// Non-blank lines that are not valid status lines.
    pub malformed: usize,
    /// The `at=` stamp of the newest valid status line (`None` when it has
    /// none, or when there is no valid line: see [`Fold::any_line`]).
    pub(crate) last_at: Option<u64>,
    /// The log holds a valid status line.
    pub(crate) any_line: bool,
}

impl Fold {
    /// Folds the complete lines of a log (a torn final line is ignored).
    /// Every line is read as far as the fold needs ([`scan`]: its verb
    /// and key); only the lines it keeps (open decisions, the newest state
    /// line, the newest line for its stamp) are read whole and copied out.
    /// Text that is valid UTF-8 is read in place, anything else decoded
    /// lossily first.
    pub fn from_bytes(bytes: &[u8], paused: &str) -> Fold {
        let bytes = crate::fsx::complete_lines(bytes);
        let text = match std::str::from_utf8(bytes) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        let paused_lower = super::parse::lower_cow(paused);
        let verbs = Verbs::new(&paused_lower);
        let mut f = Fold::default();
        let mut open = OpenKeys::default();
        let mut last_state: Option<&str> = None;
        let mut last_line: Option<&str> = None;
        let mut start = 0;
        for end in Newlines::new(text.as_bytes()) {
            // A '\n' byte ends a character: both ends are boundaries.
            let line = &text[start..end];
            start = end + 1;
            if line.bytes().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            let Some((kind, key)) = scan(line, &verbs) else {
                f.malformed += 1;
                continue;
            };
            f.lines += 1;
            last_line = Some(line);
            if kind.opens() || kind == Verb::Resolved {
                open.close(key);
            }
            if kind.opens() {
                open.open(key, line);
            }
            if kind.is_state() {
                last_state = Some(line);
            }
        }
        // The lines kept, read whole: `scan` took each for a status line.
        let whole = |line| match parse_with(line, &verbs) {
            ParsedRef::Line(l) => Some(l),
            ParsedRef::Prose | ParsedRef::Invalid(_) => None,
        };
        f.any_line = last_line.is_some();
        f.last_at = last_line.and_then(whole).and_then(|l| l.at);
        f.open = open
            .lines()
            .filter_map(whole)
            .map(|l| l.decision())
            .collect();
        f.last_state = last_state.and_then(whole).map(LineRef::to_owned_line);
        f
    }

    /// What a view of the task needs of its log — the open decisions,
    /// the newest state line, the newest line's stamp and whether there is
    /// a status line — reading each line only as far as that needs: a
    /// line is read whole only when its opening word may be a decision's
    /// verb ([`quick`]), and the newest lines from the end until the
    /// newest state line is found. `lines` and `malformed` are not
    /// counted (left at 0); everything else is as [`Fold::from_bytes`]
    /// gives it.
    pub(crate) fn for_view(bytes: &[u8], paused: &str) -> Fold {
        let bytes = crate::fsx::complete_lines(bytes);
        let text = match std::str::from_utf8(bytes) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        let paused_lower = super::parse::lower_cow(paused);
        let verbs = Verbs::new(&paused_lower);
        let mut open = OpenKeys::default();
        let mut start = 0;
        for end in Newlines::new(text.as_bytes()) {
            let first = text.as_bytes()[start];
            let line = &text[start..end];
            start = end + 1;
            // A line opening with a plain word decides something only when
            // that word is a decision's verb (its verb is that word, or no
            // fixed verb at all): one starting with any other letter
            // decides nothing, whatever follows.
            if verb_byte(first) {
                if !matches!(first | 0x20, b'n' | b'b' | b'r') {
                    continue;
                }
                match decision_opening(line.as_bytes()) {
                    Opening::Decision(w, v) => {
                        // Written as fm-status writes it, or read whole
                        // (the line may still turn out to be prose, or a
                        // paused word that starts so).
                        let line = without_eol(line);
                        let found = match written_key(line, w) {
                            Some(key) => Some((v, key)),
                            None => scan_rest(line, &verbs, w, v),
                        };
                        if let Some((kind, key)) = found
                            && (kind.opens() || kind == Verb::Resolved)
                        {
                            open.close(key);
                            if kind.opens() {
                                open.open(key, line);
                            }
                        }
                        continue;
                    }
                    Opening::Other => continue,
                    Opening::Unsure => {}
                }
            }
            let line = without_eol(line);
            let found = match quick(line, &verbs) {
                (w, Quick::Verb(v)) if v.opens() || v == Verb::Resolved => {
                    scan_rest(line, &verbs, w, v)
                }
                (_, Quick::Prose | Quick::Verb(_)) => continue,
                (_, Quick::Unknown) => scan(line, &verbs),
            };
            if let Some((kind, key)) = found
                && (kind.opens() || kind == Verb::Resolved)
            {
                open.close(key);
                if kind.opens() {
                    open.open(key, line);
                }
            }
        }
        // From the end: the newest status line, and the newest state line.
        let mut last_line: Option<&str> = None;
        let mut last_state: Option<&str> = None;
        let mut end = text.len();
        while end > 0 {
            // `end` is just past a line's '\n' (the text ends with one).
            let body = &text[..end - 1];
            let begin = memchr::memrchr(b'\n', body.as_bytes()).map_or(0, |i| i + 1);
            let line = without_eol(&body[begin..]);
            end = begin;
            let found = match quick(line, &verbs) {
                (_, Quick::Prose) => continue,
                (_, Quick::Verb(v)) if !v.is_state() && last_line.is_some() => continue,
                (w, Quick::Verb(v)) => scan_rest(line, &verbs, w, v),
                (_, Quick::Unknown) => scan(line, &verbs),
            };
            let Some((kind, _)) = found else {
                continue;
            };
            last_line.get_or_insert(line);
            if kind.is_state() {
                last_state = Some(line);
                break;
            }
        }
        let whole = |line| match parse_with(line, &verbs) {
            ParsedRef::Line(l) => Some(l),
            ParsedRef::Prose | ParsedRef::Invalid(_) => None,
        };
        Fold {
            open: open
                .lines()
                .filter_map(whole)
                .map(|l| l.decision())
                .collect(),
            last_state: last_state.and_then(whole).map(LineRef::to_owned_line),
            lines: 0,
            malformed: 0,
            last_at: last_line.and_then(whole).and_then(|l| l.at),
            any_line: last_line.is_some(),
        }
    }

    /// The current line: the newest open decision, else the newest state line.
    pub fn current(&self) -> Option<Current> {
        self.current_ref().map(|c| Current {
            verb: c.verb.to_string(),
            key: c.key.to_string(),
            text: c.text.to_string(),
            at: c.at,
        })
    }

    /// [`Fold::current`], borrowed from the fold.
    pub fn current_ref(&self) -> Option<CurrentRef<'_>> {
        if let Some(d) = self.open.last() {
            return Some(CurrentRef {
                verb: &d.verb,
                key: &d.key,
                text: &d.text,
                at: d.at,
            });
        }
        self.last_state.as_ref().map(|l| CurrentRef {
            verb: &l.verb,
            key: &l.key,
            text: &l.text,
            at: l.at,
        })
    }
}

/// [`Current`] borrowed from its fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CurrentRef<'a> {
    pub verb: &'a str,
    pub key: &'a str,
    pub text: &'a str,
    pub at: Option<u64>,
}

/// The current line as reported (`{verb, key, text, at}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Current {
    pub verb: String,
    pub key: String,
    pub text: String,
    pub at: Option<u64>,
}
