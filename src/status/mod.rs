//! The status log (docs/spec/status.md): `state/<id>.status`, appended by workers by hand
//! (`echo … >>`) or with `fm-status` (through [`Append`], with its event),
//! read by crew-state and the watcher. [`busy`] owns the busy record
//! `state/<id>.busy` (docs/spec/crew-state.md#busy-record).
//!
//! The parser accepts anything: a line it cannot read as a status line is
//! prose and never changes state; invalid UTF-8 is decoded lossily. The fold
//! is a pure function of the lines: decisions opened by `needs-decision` or
//! `blocked` stay open until a `resolved` line with their key.

use serde::Serialize;

mod append;
pub mod busy;
mod fold;
#[cfg(test)]
pub(crate) mod grammar_tests;
mod newlines;
mod parse;

pub use append::*;
pub use fold::*;
pub use parse::*;

/// A word status lines name again and again — a verb, the `default` key —
/// held as the fixed word itself (no allocation) when it is one, and
/// owned when it is not.
pub type Word = std::borrow::Cow<'static, str>;

/// Longest text `fm-status` appends.
pub(crate) const MAX_TEXT: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verb {
    Working,
    NeedsDecision,
    Blocked,
    Paused,
    Done,
    Failed,
    Resolved,
    Note,
}

impl Verb {
    /// Every verb.
    const ALL: [Verb; 8] = [
        Verb::Working,
        Verb::NeedsDecision,
        Verb::Blocked,
        Verb::Paused,
        Verb::Done,
        Verb::Failed,
        Verb::Resolved,
        Verb::Note,
    ];

    /// The verb for `word` (already lower-cased): the verb whose own word
    /// ([`Verb::word`]) it is, else paused when it is the configured
    /// `paused` word.
    pub fn from_word(word: &str, paused: &str) -> Option<Verb> {
        Verb::ALL
            .into_iter()
            .find(|v| v.word() == word)
            .or_else(|| (word == paused).then_some(Verb::Paused))
    }

    /// The verb's own word (the paused verb's fixed one, `paused`).
    pub(crate) fn word(self) -> &'static str {
        match self {
            Verb::Working => "working",
            Verb::NeedsDecision => "needs-decision",
            Verb::Blocked => "blocked",
            Verb::Paused => "paused",
            Verb::Done => "done",
            Verb::Failed => "failed",
            Verb::Resolved => "resolved",
            Verb::Note => "note",
        }
    }

    /// Opens a decision under its key.
    pub(crate) fn opens(self) -> bool {
        matches!(self, Verb::NeedsDecision | Verb::Blocked)
    }

    /// Counts as "the current line" when no decision is open.
    pub(crate) fn is_state(self) -> bool {
        matches!(
            self,
            Verb::Working | Verb::Paused | Verb::Done | Verb::Failed
        )
    }

    /// The watcher surfaces lines with these verbs as `status` wakes.
    pub fn wakes(self) -> bool {
        matches!(
            self,
            Verb::NeedsDecision | Verb::Blocked | Verb::Paused | Verb::Done | Verb::Failed
        )
    }
}

/// One parsed status line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusLine {
    /// The verb word as written, lower-cased (the configured paused word stays as written).
    pub verb: Word,
    #[serde(skip)]
    pub kind: Verb,
    pub key: Word,
    pub text: String,
    pub at: Option<u64>,
}

/// What a single line of the log is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Line(StatusLine),
    /// Blank, no colon, or an unknown verb: kept, never changes state.
    Prose,
    /// A known verb with a malformed key: ignored by the fold, counted.
    Invalid(String),
}

/// Whether task `id`'s last status says `done` (no log, or one that
/// cannot be read: not done). `fm restore` skips such a task with nothing
/// to resume, and `fm doctor` does not count its pane as lost.
pub fn finished(home: &crate::home::Home, id: &crate::task_id::TaskId, paused_verb: &str) -> bool {
    let bytes = crate::fsx::read_optional(&home.status(id))
        .ok()
        .flatten()
        .unwrap_or_default();
    Fold::from_bytes(&bytes, paused_verb)
        .last_state
        .is_some_and(|s| s.kind == Verb::Done)
}

/// True for a valid key slug.
pub fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(text: &str) -> Fold {
        Fold::from_bytes(text.as_bytes(), "paused")
    }

    fn line(s: &str) -> StatusLine {
        match parse_line(s.as_bytes(), "paused") {
            Parsed::Line(l) => l,
            other => panic!("{s:?} → {other:?}"),
        }
    }

    #[test]
    fn a_verb_is_named_by_its_word_and_paused_also_by_the_configured_one() {
        for v in Verb::ALL {
            assert_eq!(Verb::from_word(v.word(), "hold"), Some(v));
        }
        assert_eq!(Verb::from_word("hold", "hold"), Some(Verb::Paused));
        assert_eq!(Verb::from_word("paused", "hold"), Some(Verb::Paused));
        // A fixed word stays its verb, whatever the paused word is.
        assert_eq!(Verb::from_word("working", "working"), Some(Verb::Working));
        assert_eq!(Verb::from_word("hold", "paused"), None);
        assert_eq!(Verb::from_word("Working", "paused"), None);
    }

    #[test]
    fn grammar() {
        let l = line("Working [at=1700000000] [key=a]: compiling");
        assert_eq!(
            (&*l.verb, &*l.key, l.text.as_str(), l.at),
            ("working", "a", "compiling", Some(1_700_000_000))
        );
        let l = line("done: shipped: all of it");
        assert_eq!(l.text, "shipped: all of it");
        assert_eq!(l.key, "default");
        let l = line("blocked [at=10:30]: the door");
        assert_eq!((l.at, l.text.as_str()), (None, "the door"));
        let l = line("needs-decision: [key=k] pick one");
        assert_eq!((&*l.key, l.text.as_str()), ("k", "pick one"));
        let l = line("needs-decision [key=outer]: [key=inner] pick");
        assert_eq!((&*l.key, l.text.as_str()), ("outer", "pick"));
        let l = line("done [at=1234567890123]: too long a stamp");
        assert_eq!(l.at, None);
        assert_eq!(parse_line(b"just prose", "paused"), Parsed::Prose);
        assert_eq!(parse_line(b"thinking: hard", "paused"), Parsed::Prose);
        assert!(matches!(
            parse_line(b"blocked [key=bad key]: x", "paused"),
            Parsed::Invalid(_)
        ));
        // An unclosed tag: the first colon ends the head, the stamp is lost.
        let l = line("done [at=1796000100: shipped it");
        assert_eq!(
            (&*l.verb, &*l.key, l.text.as_str(), l.at),
            ("done", "default", "shipped it", None)
        );
        let l = line("working [at=5] [at=17: halfway");
        assert_eq!((l.text.as_str(), l.at), ("halfway", None));
        assert!(matches!(
            parse_line(b"blocked [key=db: which one", "paused"),
            Parsed::Invalid(_)
        ));
        assert!(matches!(
            parse_line(b"done [at=5] junk: x", "paused"),
            Parsed::Invalid(_)
        ));
        assert!(matches!(
            parse_line(b"blocked: [key=bad key] x", "paused"),
            Parsed::Invalid(_)
        ));
        assert!(matches!(
            parse_line(b"done \xff\xfe: bytes", "paused"),
            Parsed::Prose
        ));
        assert!(
            matches!(parse_line(b"done: \xff\xfe bytes", "paused"), Parsed::Line(l) if l.kind == Verb::Done)
        );
    }

    #[test]
    fn configured_paused_word() {
        assert!(
            matches!(parse_line(b"waiting: for CI", "waiting"), Parsed::Line(l) if l.kind == Verb::Paused)
        );
        assert_eq!(parse_line(b"waiting: for CI", "paused"), Parsed::Prose);
    }

    #[test]
    fn fold_rules_from_the_issue() {
        let f = fold("needs-decision [key=a]: which db?\ndone: finished\n");
        assert_eq!(f.open.len(), 1);
        assert_eq!(f.current().unwrap().verb, "needs-decision");
        let f = fold("needs-decision [key=a]: which db?\ndone: x\nresolved [key=a]: postgres\n");
        assert!(f.open.is_empty());
        assert_eq!(f.current().unwrap().verb, "done");
        let f = fold("blocked: no creds\nresolved: here they are\n");
        assert!(f.open.is_empty());
        let f = fold("blocked: no creds\npaused: waiting\n");
        assert_eq!(f.open.len(), 1);
        let f = fold("blocked [key=bad key]: x\n");
        assert!(f.open.is_empty());
        assert_eq!(f.malformed, 1);
        let f = fold("needs-decision: [key=k] text\n");
        assert_eq!(f.open[0].key, "k");
        let f = fold("working [at=10:30]: a\n");
        assert_eq!(f.current().unwrap().text, "a");
    }

    #[test]
    fn reopening_moves_a_decision_to_newest() {
        let f = fold("blocked [key=a]: 1\nblocked [key=b]: 2\nneeds-decision [key=a]: 3\n");
        let keys: Vec<_> = f.open.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(f.current().unwrap().text, "3");
    }

    /// `n` distinct decisions opened, every other one resolved, the rest
    /// reopened once: the shape that made the fold quadratic.
    fn many_decisions(n: usize) -> String {
        let mut s = String::new();
        for i in 0..n {
            s.push_str(&format!("needs-decision [key=k{i}]: question {i}\n"));
        }
        for i in (0..n).step_by(2) {
            s.push_str(&format!("resolved [key=k{i}]: answer\n"));
        }
        for i in (1..n).step_by(2) {
            s.push_str(&format!("blocked [key=k{i}]: again {i}\n"));
        }
        s
    }

    #[test]
    fn many_open_decisions_fold_in_order() {
        let f = fold(&many_decisions(10));
        let keys: Vec<_> = f.open.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["k1", "k3", "k5", "k7", "k9"]);
        assert!(f.open.iter().all(|d| d.verb == "blocked"));
        assert_eq!(f.current().unwrap().text, "again 9");
    }

    /// Ten times the decisions must cost about ten times the time, not a
    /// hundred: 20,000 distinct keys took 1.7 s when the fold was
    /// quadratic, and 200,000 took 89 s.
    #[test]
    fn the_fold_is_linear_in_distinct_open_decisions() {
        // The fastest of five folds of each size: a busy machine slows
        // some runs, rarely all five, so the ratio of the minima keeps the
        // factor of 10 a linear fold has (a quadratic one has 100). The
        // large log outgrows the caches the small one fits in, which alone
        // was seen to make it 40 times slower under load: the bound sits
        // between that and the quadratic factor.
        let time = |n: usize| {
            let log = many_decisions(n);
            (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let f = fold(&log);
                    assert_eq!(f.open.len(), n / 2);
                    t.elapsed()
                })
                .min()
                .unwrap_or_default()
        };
        time(2_000);
        let small = time(20_000).max(std::time::Duration::from_micros(500));
        let large = time(200_000);
        assert!(
            large < small * 70,
            "20k decisions {small:?}, 200k {large:?}: not linear"
        );
    }

    #[test]
    fn torn_tail_is_ignored() {
        let f = fold("working: a\ndone: b");
        assert_eq!(f.current().unwrap().verb, "working");
    }

    #[test]
    fn append_validation() {
        assert_eq!(
            format_append("done", 5, None, "ok", "paused").unwrap(),
            "done [at=5]: ok\n"
        );
        assert_eq!(
            format_append("blocked", 5, Some("k"), "x", "paused").unwrap(),
            "blocked [at=5] [key=k]: x\n"
        );
        for (verb, key, text) in [
            ("nope", None, "x"),
            ("done", None, " "),
            ("done", None, "a\nb"),
            ("done", Some("a b"), "x"),
        ] {
            assert_eq!(
                format_append(verb, 5, key, text, "paused")
                    .unwrap_err()
                    .exit_code(),
                2
            );
        }
        // Found by fuzzing: a head `[key=…]` the parser rejects was written anyway.
        for text in ["[key=]", "[key=a b] x", " [key=!] x"] {
            assert_eq!(
                format_append("working", 5, None, text, "paused")
                    .unwrap_err()
                    .exit_code(),
                2,
                "{text}"
            );
        }
        assert!(format_append("working", 5, None, "[key=ok] x", "paused").is_ok());
        assert!(format_append("working", 5, None, "[note] x", "paused").is_ok());
        assert!(format_append("done", 5, None, &"x".repeat(2000), "paused").is_ok());
        assert!(format_append("done", 5, None, &"x".repeat(2001), "paused").is_err());
    }
}
