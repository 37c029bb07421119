//! Status lines (docs/spec/status.md): the parser, the fold, and lines `fm-status` appends.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::{Outcome, bytes, fuzz, lines_of};
use firstmate::status::{self, Fold, Parsed, Verb};

const VERBS: &[&str] = &[
    "working",
    "needs-decision",
    "blocked",
    "paused",
    "done",
    "failed",
    "resolved",
    "note",
    "Done",
    " BLOCKED ",
    "waiting",
    "thinking",
    "",
];

fn status_ish() -> BoxedStrategy<String> {
    let verb = prop_oneof![
        proptest::sample::select(VERBS).prop_map(str::to_string),
        "[a-zA-Z -]{0,12}",
    ];
    let tag = prop_oneof![
        (0u64..10_000_000_000_000).prop_map(|n| format!("[at={n}]")),
        "\\[at=[0-9:a-z]{0,14}\\]",
        "\\[key=[A-Za-z0-9._ -]{0,8}\\]",
        "\\[[a-z]{0,4}=?[^\\]\n]{0,8}\\]?",
        "[\\[\\]:]{1,3}",
    ];
    let head_key = prop_oneof![
        Just(String::new()),
        "\\[key=[A-Za-z0-9._ -]{0,8}\\] ?",
        "\\[key=[^\\]\n]{0,5}",
    ];
    let colon = prop_oneof![Just(":"), Just(": "), Just(""), Just("::"), Just(" : ")];
    (
        verb,
        vec(tag, 0..4),
        colon,
        head_key,
        "[^\n]{0,30}",
        "[ \t\r]{0,2}",
    )
        .prop_map(|(v, tags, c, hk, text, tail)| {
            format!("{v} {}{c}{hk}{text}{tail}", tags.join(" "))
        })
        .boxed()
}

fn check_status_line(raw: &[u8]) -> Outcome {
    if let Parsed::Line(l) = status::parse_line(raw, "waiting") {
        prop_assert!(status::valid_key(&l.key), "key {:?}", l.key);
        prop_assert!(l.at.is_none_or(|t| t < 1_000_000_000_000));
        prop_assert_eq!(l.text.trim_start(), l.text.as_str());
    }
    Ok(())
}

fn check_fold(log: &[u8]) -> Outcome {
    let f = Fold::from_bytes(log, "waiting");
    let complete = firstmate::fsx::complete_lines(log);
    let nonblank = complete
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .count();
    prop_assert_eq!(f.lines + f.malformed, nonblank);
    let mut keys: Vec<_> = f.open.iter().map(|d| d.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    prop_assert_eq!(keys.len(), f.open.len(), "an open key twice");
    match (f.open.last(), f.current()) {
        (Some(d), Some(c)) => prop_assert_eq!((&d.key, &d.text), (&c.key, &c.text)),
        (Some(_), None) => prop_assert!(false, "open decision but no current line"),
        (None, c) => prop_assert_eq!(c.is_some(), f.last_state.is_some()),
    }
    Ok(())
}

#[test]
fn status_lines_from_raw_bytes() {
    fuzz("status/bytes", bytes(256), |b| {
        check_status_line(&b)?;
        check_fold(&b)
    });
}

#[test]
fn status_lines_that_look_like_status_lines() {
    fuzz("status/structured", status_ish(), |s| {
        check_status_line(s.as_bytes())
    });
}

#[test]
fn status_logs_fold_consistently() {
    fuzz("status/fold", lines_of(status_ish(), 24), |log| {
        check_fold(&log)
    });
}

#[test]
fn appended_status_lines_parse_back() {
    let verb = proptest::sample::select(&VERBS[..8]);
    let key = proptest::option::of("[A-Za-z0-9._-]{1,12}");
    let text = prop_oneof!["[^\n\r]{1,60}", "\\[key=[^\\]\n\r]{0,6}\\][^\n\r]{0,20}"];
    fuzz(
        "status/append-round-trip",
        (verb, any::<u64>(), key, text),
        |(verb, at, key, text)| {
            let Ok(line) = status::format_append(verb, at, key.as_deref(), &text, "paused") else {
                return Ok(());
            };
            prop_assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
            let raw = line.trim_end_matches('\n').as_bytes();
            let Parsed::Line(p) = status::parse_line(raw, "paused") else {
                return Err(TestCaseError::fail(format!(
                    "fm-status wrote a line its own parser rejects: {line:?}"
                )));
            };
            prop_assert_eq!(Some(p.kind), Verb::from_word(verb, "paused"));
            let want_at = (at < 1_000_000_000_000).then_some(at);
            prop_assert_eq!(p.at, want_at);
            if let Some(k) = &key {
                prop_assert_eq!(&p.key, k);
            }
            if !text.trim_start().starts_with("[key=") {
                prop_assert_eq!(p.text.as_str(), text.trim_start());
                if key.is_none() {
                    prop_assert_eq!(&*p.key, "default");
                }
            }
            Ok(())
        },
    );
}
