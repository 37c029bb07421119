//! The fold (docs/spec/status.md#fold): open decisions by key and the current line.
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
//! still, for a view that needs no line counts: the log as bytes, a line
//! checked for UTF-8 only when it is read as text. Line ends are found 64
//! bytes at a time by vector compares ([`Newlines`]).

use std::collections::HashMap;

use super::newlines::Newlines;
use super::parse::{
    LineRef, Opening, ParsedRef, Quick, Verbs, decision_opening, parse_with, parse_written, quick,
    quick_bytes, scan, scan_rest, verb_byte, without_eol, without_eol_bytes, written_at,
    written_key,
};
use super::*;

/// Open keys at most looked up one by one; past this many, by hash.
const FEW: usize = 8;

/// The open decisions of a fold, in the order they were (re)opened, each
/// with the line that (re)opened it. While few are open (most logs) they
/// sit in a short list kept in that order, with no allocation; once more
/// are, the line of each opening sits in slots, a closed or reopened one
/// leaving an empty slot behind, and a hash map points at each open key's
/// slot — so opening, reopening and resolving cost the same however many
/// are open.
enum OpenKeys<'a, T: ?Sized = str> {
    Few {
        open: [(&'a T, &'a T); FEW],
        len: usize,
    },
    Many {
        slots: Vec<Option<&'a T>>,
        by_key: HashMap<&'a T, usize, foldhash::quality::RandomState>,
    },
}

impl<'a, T: ?Sized> Default for OpenKeys<'a, T>
where
    &'a T: Default,
{
    fn default() -> Self {
        OpenKeys::Few {
            open: [(<&T>::default(), <&T>::default()); FEW],
            len: 0,
        }
    }
}

impl<'a, T: ?Sized + AsRef<[u8]> + Eq + std::hash::Hash> OpenKeys<'a, T> {
    /// Closes `key` if it is open.
    #[inline]
    fn close(&mut self, key: &T) {
        match self {
            OpenKeys::Few { open, len } => {
                // Keys are short: compared in place, not by a call.
                let key = key.as_ref();
                let same = |k: &T| {
                    let k = k.as_ref();
                    k.len() == key.len() && k.iter().zip(key).all(|(a, b)| a == b)
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
    #[inline]
    fn open(&mut self, key: &'a T, line: &'a T) {
        match self {
            OpenKeys::Few { open, len } if *len < FEW => {
                open[*len] = (key, line);
                *len += 1;
            }
            OpenKeys::Few { open, len } => {
                let mut slots: Vec<Option<&T>> = Vec::with_capacity(2 * FEW);
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

    /// How many are open.
    fn len(&self) -> usize {
        match self {
            OpenKeys::Few { len, .. } => *len,
            OpenKeys::Many { by_key, .. } => by_key.len(),
        }
    }

    /// The lines of the open decisions, oldest first.
    fn lines(&self) -> impl Iterator<Item = &'a T> + '_ {
        let (few, many): (&[(&T, &T)], &[Option<&T>]) = match self {
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
    pub verb: Word,
    pub text: String,
    pub at: Option<u64>,
}

/// The fold of a whole log (docs/spec/status.md#fold).
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
    ///
    /// The log is read as bytes, not decoded first: a line is checked for
    /// UTF-8 only when it is read as text (its opening is no decision
    /// verb's written head, or it is kept). A line that is not UTF-8 then
    /// makes the whole log read again decoded lossily, as
    /// [`Fold::from_bytes`] reads it — a '\n' ends a character either
    /// way, so every line reads as it would in the decoded log.
    pub(crate) fn for_view(bytes: &[u8], paused: &str) -> Fold {
        let bytes = crate::fsx::complete_lines(bytes);
        let paused_lower = super::parse::lower_cow(paused);
        let verbs = Verbs::new(&paused_lower);
        view(bytes, &verbs).unwrap_or_else(|| {
            let text = String::from_utf8_lossy(bytes);
            view(text.as_bytes(), &verbs).expect("decoded text is UTF-8")
        })
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

/// How many line starts the view fold keeps from its forward pass for its
/// walk back from the end (most logs end a few lines after their newest
/// state line).
const KEPT_STARTS: usize = 16;

/// [`Fold::for_view`] of complete lines; `None` when a line it reads as
/// text is not UTF-8.
fn view<'t>(text: &'t [u8], verbs: &Verbs) -> Option<Fold> {
    let mut open: OpenKeys<'t, [u8]> = OpenKeys::default();
    // The starts of the last lines, by line number modulo KEPT_STARTS.
    let mut starts = [0usize; KEPT_STARTS];
    let mut count = 0usize;
    let mut start = 0;
    let mut apply = |found: Option<(Verb, &'t [u8])>, line: &'t [u8]| {
        if let Some((kind, key)) = found
            && (kind.opens() || kind == Verb::Resolved)
        {
            open.close(key);
            if kind.opens() {
                open.open(key, line);
            }
        }
    };
    for end in Newlines::new(text) {
        let line = &text[start..end];
        starts[count % KEPT_STARTS] = start;
        count += 1;
        start = end + 1;
        let Some(&first) = line.first() else {
            continue;
        };
        // A line opening with a plain word decides something only when
        // that word is a decision's verb (its verb is that word, or no
        // fixed verb at all): one starting with any other letter
        // decides nothing, whatever follows.
        if verb_byte(first) {
            if matches!(first | 0x20, b'n' | b'b' | b'r')
                && let Opening::Decision(w, v) = decision_opening(line)
            {
                // Written as fm-status writes it, or read whole (the
                // line may still turn out to be prose, or a paused word
                // that starts so).
                let line = without_eol_bytes(line);
                let found = match written_key(line, w) {
                    Some(key) => Some((v, key)),
                    None => {
                        scan_rest(as_text(line)?, verbs, w, v).map(|(k, key)| (k, key.as_bytes()))
                    }
                };
                apply(found, line);
            }
            continue;
        }
        let line = without_eol(as_text(line)?);
        let found = match quick(line, verbs) {
            (w, Quick::Verb(v)) if v.opens() || v == Verb::Resolved => scan_rest(line, verbs, w, v),
            (_, Quick::Prose | Quick::Verb(_)) => continue,
            (_, Quick::Unknown) => scan(line, verbs),
        };
        apply(found.map(|(k, key)| (k, key.as_bytes())), line.as_bytes());
    }
    // From the end: the newest status line, and the newest state line,
    // each read whole once (the lines it passes by on the way are read
    // only as far as their opening word).
    // The newest status line's stamp (`Some` once there is one).
    let mut last_at: Option<Option<u64>> = None;
    let mut last_state: Option<LineRef<'t>> = None;
    let mut end = text.len();
    let mut back = 0;
    while end > 0 {
        // `end` is just past a line's '\n' (the text ends with one).
        back += 1;
        let begin = if back <= count.min(KEPT_STARTS) {
            starts[(count - back) % KEPT_STARTS]
        } else {
            memchr::memrchr(b'\n', &text[..end - 1]).map_or(0, |i| i + 1)
        };
        let raw = &text[begin..end - 1];
        end = begin;
        let bare = without_eol_bytes(raw);
        match quick_bytes(bare, verbs) {
            (_, Quick::Prose) => continue,
            (_, Quick::Verb(v)) if !v.is_state() && last_at.is_some() => continue,
            // The newest status line, no state line: only its stamp is
            // needed, read from its head when it is written so.
            (w, Quick::Verb(v)) if !v.is_state() => {
                if let Some(at) = written_at(bare, w) {
                    last_at = Some(at);
                    continue;
                }
            }
            (_, Quick::Verb(_) | Quick::Unknown) => {}
        }
        let ParsedRef::Line(line) = parse_written(as_text(raw)?, verbs) else {
            continue;
        };
        last_at.get_or_insert(line.at);
        if line.kind.is_state() {
            last_state = Some(line);
            break;
        }
    }
    let mut decisions = Vec::with_capacity(open.len());
    for line in open.lines() {
        if let ParsedRef::Line(l) = parse_written(as_text(line)?, verbs) {
            decisions.push(l.decision());
        }
    }
    Some(Fold {
        open: decisions,
        last_state: last_state.map(LineRef::to_owned_line),
        lines: 0,
        malformed: 0,
        last_at: last_at.flatten(),
        any_line: last_at.is_some(),
    })
}

/// A line's bytes as text; `None` when they are not UTF-8.
#[inline]
fn as_text(line: &[u8]) -> Option<&str> {
    std::str::from_utf8(line).ok()
}
