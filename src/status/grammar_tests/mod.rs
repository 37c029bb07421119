//! The fast status parser and folds held to the plain grammar
//! ([`naive`]): edge cases written out, and property tests over lines and
//! logs built from the pieces the grammar turns on.

pub(crate) mod naive;

use proptest::prelude::*;

use crate::status::parse::{self, ParsedRef, Quick};
use crate::status::{Fold, Verb};

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
    // A plain word that a non-ASCII character after it lower-cases
    // into the paused word ("hoo" and the Kelvin sign read "hook").
    "hoo",
    "\u{212a}",
    "-",
    "working-",
    "A-Very-Long-Paused-Word",
    "hold",
    "resolved",
    "Needs-Decision",
    "needs-decisio",
    "blocked\r",
    "x",
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

/// Lines at the edges of the fast parser's plain reading, each read
/// by both parsers under several paused words.
#[test]
fn the_fast_parser_reads_the_edges_as_the_naive_one() {
    let lines = [
        "hoo\u{212a}: a Kelvin sign lower-cases into the paused word",
        "HOO\u{212a} [at=5]: again",
        "hook: plain",
        "hook",
        "hoo : spaced",
        "hoo\u{a0}: NBSP",
        "on hold: two words",
        "on hold [at=7]: two words, a tag",
        "on: hold",
        "working",
        "working-: almost",
        "working : spaced",
        "working\t: tab",
        "working [at=5]  [key=a] : x",
        "working [at=5] x: y",
        "working [at=5][at=x]: y",
        "working [ at = 6 ] [key= k ]: y",
        "working [key=a b]: y",
        "working [key=]: y",
        "working [at]: y",
        "working [=5]: y",
        "working [at=5=6]: y",
        "working [at=1234567890123]: too long",
        "working [at=123456789012]: twelve digits",
        "blocked [key=a]: [key=b] inner",
        "blocked: [key=b c] inner",
        "blocked: [key=b",
        "done [at=5: unclosed",
        "done [key=x: unclosed key",
        "done [[at=5]]: nested",
        "a-very-long-paused-word: long",
        "A-VERY-LONG-PAUSED-WORD [at=9]: long",
        "a-very-long-paused-wordx: longer",
        "needs-decision-: no",
        "NEEDS-DECISION [key=k]: yes",
        "free prose from a worker",
        "thinking: hard",
        "thinking\u{212a}: hard",
        "\u{c4}rger: umlaut",
        "-: dash",
        "done\r",
        "done: x\r\r",
    ];
    for paused in [
        "paused",
        "hook",
        "on hold",
        "a-very-long-paused-word",
        "\u{e4}rger",
    ] {
        for l in lines {
            assert_eq!(
                naive::parse(l, paused),
                parse::parse_str(l, paused),
                "{l:?} with {paused:?}"
            );
        }
    }
}

/// Logs at the edges of the view fold's shortcuts (a paused word that
/// starts with a decision's verb, a verb cut short by the line's end, a
/// line end of `\r\n`), each read by the view fold and the old fold.
#[test]
fn the_view_fold_reads_the_edges_as_the_naive_one() {
    let logs = [
        "needs-decision [key=a]: which\nblocked hold: the paused word\n",
        "blocked [key=a]: x\nresolved later [key=a]: a paused word again\n",
        "blocked [key=a]: x\nresolved later: the paused word, no key\nworking: on\n",
        "blocked\nresolved\nneeds-decision\nblocked:\nresolved:\n",
        "Blocked [key=a]: x\r\nRESOLVED [key=a]: y\r\n",
        "needs-decisionx: not a verb\nblockedx: not one\nresolvedx: nor this\n",
        "needs-decisio: short\nneeds-decision\u{a0}[key=b]: NBSP\n",
        "blocked\u{a0}: NBSP after the verb\nworking: on\n",
        "needs\rdecision [key=c]: a CR where the dash is\n",
        " blocked [key=d]: leading space\n",
        "note: n\nbusy: b\nran: r\n",
    ];
    for paused in [
        "paused",
        "blocked hold",
        "Resolved later",
        "hold",
        "on hold",
    ] {
        for log in logs {
            let want = naive::fold(log.as_bytes(), paused);
            let got = Fold::for_view(log.as_bytes(), paused);
            assert_eq!(
                (&got.open, &got.last_state, got.last_at, got.any_line),
                (&want.open, &want.last_state, want.last_at, want.lines > 0),
                "{log:?} with {paused:?}"
            );
        }
    }
}

/// Logs whose newest status line is no state line, written as
/// fm-status writes it (its stamp read from the head alone), with bytes
/// that are not UTF-8 in that line's text or elsewhere: the view fold
/// reads each as the old fold reads it decoded.
#[test]
fn the_view_fold_reads_the_newest_stamp_as_the_naive_one() {
    let logs: [&[u8]; 6] = [
        b"working [at=1]: on\nnote [at=5]: bad \xff byte\n",
        b"working [at=1]: on\nnote: no stamp \xfe\n",
        b"needs-decision [key=a]: q\xfe\nnote [at=7]: x\n",
        b"working [at=1]: \xff\nresolved [at=9] [key=a]: y\nfree prose\n",
        b"note [at=3]: only notes\nnote [at=4]: \xc3\n",
        b"blocked [key=b] [at=2]: held\nnote [at=]: empty stamp\n",
    ];
    for paused in ["paused", "hold"] {
        for log in logs {
            let want = naive::fold(log, paused);
            let got = Fold::for_view(log, paused);
            assert_eq!(
                (&got.open, &got.last_state, got.last_at, got.any_line),
                (&want.open, &want.last_state, want.last_at, want.lines > 0),
                "{:?} with {paused:?}",
                String::from_utf8_lossy(log)
            );
        }
    }
}

/// The written head read at once: where it gives a key, it is the key
/// read whole; the plainly written forms get one.
#[test]
fn the_written_key_reads_the_edges_as_the_whole_line() {
    let lines = [
        ("needs-decision [key=a]: x", true),
        ("needs-decision [key=a]:", true),
        ("needs-decision [key=a]:   y", true),
        ("blocked [key=k-1.x_2]: y", true),
        ("resolved [at=5] [key=a]: y", true),
        ("needs-decision [key=a]:  [key=b] x", false),
        ("needs-decision [key=a]: \u{e9}", false),
        ("needs-decision [key=a]: \t", false),
        ("needs-decision [key=]: x", false),
        ("needs-decision [key=a b]: x", false),
        ("needs-decision [key=a]x: y", false),
        ("needs-decision [key=a] : y", true),
        ("needs-decision  [key=a]: y", true),
        ("needs-decision [key=a", false),
    ];
    for (l, plain) in lines {
        let w = l.find([' ', ':']).unwrap_or(l.len());
        let got = parse::written_key(l.as_bytes(), w);
        assert_eq!(got.is_some(), plain, "{l:?}");
        let whole = match naive::parse(l, "paused") {
            ParsedRef::Line(x) => Some(x.key.as_bytes()),
            ParsedRef::Prose | ParsedRef::Invalid(_) => None,
        };
        if got.is_some() {
            assert_eq!(got, whole, "{l:?}");
        }
    }
}

/// A written line read in one pass where it is written so: as the
/// whole reading reads it; the plainly written forms are.
#[test]
fn the_written_line_reads_the_edges_as_the_whole_reading() {
    let lines = [
        ("working [at=17]: step 1", true),
        ("needs-decision [key=a]: which", true),
        ("blocked [at=5] [key=k-1] [at=6]: held", true),
        ("done:", true),
        ("done:   shipped", true),
        ("note: 4", true),
        ("Working [AT=5]: x", false),
        ("working [at=]: no stamp", true),
        ("working [at=1234567890123]: too long a stamp", true),
        ("working [at=5 ]: spaced", false),
        ("working [key=]: bad", false),
        ("working: [key=a] keyed text", false),
        ("working:\tx", false),
        ("working: \u{e9}", false),
        ("working [x]: other tag", false),
        ("working [at=5]", false),
    ];
    for (l, plain) in lines {
        let verbs = parse::Verbs::new("paused");
        let (w, q) = parse::quick(l, &verbs);
        let Quick::Verb(kind) = q else {
            panic!("{l:?} opens with a verb");
        };
        let got = parse::written_line(l, w, kind);
        assert_eq!(got.is_some(), plain, "{l:?}");
        if let Some(x) = got {
            assert_eq!(ParsedRef::Line(x), naive::parse(l, "paused"), "{l:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// A line the one-pass reading reads is read as the whole reading
    /// reads it.
    #[test]
    fn the_written_line_is_the_line_read_whole(
        verb in prop::sample::select(&["working", "needs-decision", "Blocked", "RESOLVED", "note", "done", "hold"][..]),
        rest in line(),
        paused in prop::sample::select(&["paused", "hold", "on hold"][..]),
    ) {
        let l = format!("{verb}{rest}");
        let verbs = parse::Verbs::new(paused);
        let bare = parse::without_eol(&l);
        if let (w, Quick::Verb(kind)) = parse::quick(bare, &verbs)
            && let Some(x) = parse::written_line(bare, w, kind)
        {
            prop_assert_eq!(ParsedRef::Line(x), naive::parse(&l, paused), "{:?}", l);
        }
        prop_assert_eq!(parse::parse_written(&l, &verbs), naive::parse(&l, paused));
        // The stamp read from the head alone is the whole reading's.
        if let (w, Quick::Verb(_)) = parse::quick_bytes(bare.as_bytes(), &verbs)
            && let Some(at) = parse::written_at(bare.as_bytes(), w)
        {
            let ParsedRef::Line(x) = naive::parse(&l, paused) else {
                return Err(TestCaseError::fail(format!("{l:?} read as no line")));
            };
            prop_assert_eq!(x.at, at, "{:?}", l);
        }
    }

    #[test]
    fn the_fast_parser_reads_every_line_as_the_naive_one(
        l in line(),
        paused in prop::sample::select(&["paused", "hold", "\u{e4}rger", "hook", "on hold", "a-very-long-paused-word"][..]),
    ) {
        prop_assert_eq!(naive::parse(&l, paused), parse::parse_str(&l, paused));
    }

    #[test]
    fn the_fold_scan_reads_every_line_as_the_naive_parser(
        l in line(),
        paused in prop::sample::select(&["paused", "hold", "\u{e4}rger", "hook", "on hold"][..]),
    ) {
        let want = match naive::parse(&l, paused) {
            ParsedRef::Line(l) => Some((l.kind, l.key)),
            ParsedRef::Prose | ParsedRef::Invalid(_) => None,
        };
        prop_assert_eq!(parse::scan(&l, &parse::Verbs::new(paused)), want);
    }

    /// A line written as fm-status writes it gives the key the whole
    /// reading gives; any other line is left to it.
    #[test]
    fn the_written_key_is_the_key_read_whole(
        verb in prop::sample::select(&["needs-decision", "Blocked", "RESOLVED"][..]),
        rest in line(),
    ) {
        let l = format!("{verb}{rest}");
        let kind = match verb.to_ascii_lowercase().as_str() {
            "needs-decision" => Verb::NeedsDecision,
            "blocked" => Verb::Blocked,
            _ => Verb::Resolved,
        };
        let whole = match naive::parse(&l, "paused") {
            ParsedRef::Line(x) => Some((x.kind, x.key)),
            ParsedRef::Prose | ParsedRef::Invalid(_) => None,
        };
        if let Some(key) = parse::written_key(l.as_bytes(), verb.len()) {
            prop_assert_eq!(Some((kind, key)), whole.map(|(k, key)| (k, key.as_bytes())), "{:?}", l);
        }
    }

    /// Many keys opened, reopened and resolved in any order: the
    /// fold's short key list and its hash map give the old answer.
    #[test]
    fn the_fast_fold_keeps_many_keys_as_the_naive_one(
        ops in prop::collection::vec((0..4u8, 0..20u8), 0..80),
    ) {
        let mut log = String::new();
        for (i, (op, k)) in ops.iter().enumerate() {
            let verb = ["needs-decision", "blocked", "resolved", "working"][usize::from(*op)];
            log.push_str(&format!("{verb} [at={i}] [key=k{k}]: line {i}\n"));
        }
        prop_assert_eq!(naive::fold(log.as_bytes(), "paused"), Fold::from_bytes(log.as_bytes(), "paused"));
    }

    /// The view's fold reads every log as the whole fold, but for
    /// the counts it leaves out.
    #[test]
    fn the_view_fold_reads_every_log_as_the_naive_one(
        bytes in log(),
        paused in prop::sample::select(&["paused", "Hold", "\u{c4}rger", "HOOK", "on hold", "blocked hold", "Resolved  x"][..]),
    ) {
        let want = naive::fold(&bytes, paused);
        let got = Fold::for_view(&bytes, paused);
        prop_assert_eq!(&got.open, &want.open);
        prop_assert_eq!(&got.last_state, &want.last_state);
        prop_assert_eq!(got.last_at, want.last_at);
        prop_assert_eq!(got.any_line, want.lines > 0);
    }

    #[test]
    fn the_fast_fold_reads_every_log_as_the_naive_one(
        bytes in log(),
        paused in prop::sample::select(&["paused", "Hold", "\u{c4}rger", "HOOK", "on hold"][..]),
    ) {
        prop_assert_eq!(naive::fold(&bytes, paused), Fold::from_bytes(&bytes, paused));
    }
}
