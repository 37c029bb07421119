//! Fuzzing every parser of files that other processes (or people) write:
//! status lines, inbox records, meta, frontmatter (briefs and responses),
//! the brief check, config, the ladder files, the busy record and event
//! lines.
//!
//! Each target runs `FM_FUZZ_CASES` cases (default 2,000, so the normal test
//! run stays fast) and checks two things: the parser never panics on the
//! input, and — where the format has one — a round-trip or invariant holds
//! (what the tools render parses back exactly). Inputs come from raw bytes
//! and from structured generators that look like the real format, so the
//! interesting branches are reached. docs/fuzzing.md has the long-run
//! command and the measured figures.

use std::path::Path;
use std::time::Instant;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};

use firstmate::config::Config;
use firstmate::status::{self, Fold, Parsed, Verb};
use firstmate::{TaskId, brief, clock, deliver, events, frontmatter, inbox, ladder_files, meta};

type Outcome = Result<(), TestCaseError>;

/// Cases per target: `FM_FUZZ_CASES`, default 2,000.
fn cases() -> u32 {
    std::env::var("FM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(2_000)
}

/// Runs `check` on `cases()` values of `strategy`; a panic inside `check`
/// is caught, shrunk and reported as a failure. Prints the count and time.
fn fuzz<S: Strategy>(name: &str, strategy: S, check: impl Fn(S::Value) -> Outcome) {
    let n = cases();
    let mut runner = TestRunner::new(RunnerConfig {
        cases: n,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let start = Instant::now();
    if let Err(e) = runner.run(&strategy, check) {
        panic!("fuzz {name}: {e}");
    }
    eprintln!(
        "fuzz {name}: {n} cases in {:.2}s",
        start.elapsed().as_secs_f64()
    );
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..max)
}

/// Lines of `line` joined by `\n`, optionally with a torn (unterminated) tail.
fn lines_of(line: BoxedStrategy<String>, max: usize) -> impl Strategy<Value = Vec<u8>> {
    (vec(line, 0..max), any::<bool>()).prop_map(|(ls, torn)| {
        let mut out = ls.join("\n");
        if !torn && !out.is_empty() {
            out.push('\n');
        }
        out.into_bytes()
    })
}

// --- status lines (SPEC §3) ---

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
                    prop_assert_eq!(p.key.as_str(), "default");
                }
            }
            Ok(())
        },
    );
}

// --- inbox records (SPEC §5.1) ---

fn record_ish() -> impl Strategy<Value = Vec<u8>> {
    let header = prop_oneof![
        Just("schema=fm-inbox.v1".to_string()),
        "at=[0-9TZ:-]{0,22}",
        "from=[^\n]{0,12}",
        Just("delivery=fire-and-forget".to_string()),
        "delivery=[a-z-]{0,16}",
        "[a-z]{0,6}=?[^\n]{0,8}",
        Just("--".to_string()),
        Just("-- ".to_string()),
        Just("---".to_string()),
        Just(String::new()),
    ];
    (vec(header, 0..7), any::<bool>(), bytes(64)).prop_map(|(hs, sep, body)| {
        let mut out = hs.join("\n").into_bytes();
        out.extend_from_slice(if sep { b"\n--\n" } else { b"\n" });
        out.extend_from_slice(&body);
        out
    })
}

fn check_record(b: &[u8]) -> Outcome {
    if let Some(r) = inbox::parse(7, b) {
        prop_assert_eq!(r.seq, 7);
        prop_assert!(b.ends_with(&r.body), "body is not the file's tail");
        let head = &b[..b.len() - r.body.len()];
        prop_assert!(
            head == b"--\n" || head.ends_with(b"\n--\n"),
            "headers do not end at a `--` line"
        );
        let _ = r.first_line();
    }
    Ok(())
}

#[test]
fn inbox_records_from_raw_bytes() {
    fuzz("inbox/bytes", bytes(300), |b| check_record(&b));
}

#[test]
fn inbox_records_that_look_like_records() {
    fuzz("inbox/structured", record_ish(), |b| check_record(&b));
}

#[test]
fn rendered_records_parse_back_byte_exact() {
    let from = "[^\n\r]{1,40}";
    fuzz(
        "inbox/render-round-trip",
        (any::<u64>(), from, any::<bool>(), bytes(400)),
        |(epoch, from, ff, body)| {
            let at = clock::rfc3339(epoch);
            let bytes = inbox::render(&at, &from, ff, &body);
            let r = inbox::parse(1, &bytes).expect("a rendered record parses");
            prop_assert_eq!(&r.body, &body);
            prop_assert_eq!(&r.at, &at);
            prop_assert_eq!(&r.from, &from);
            prop_assert_eq!(r.fire_and_forget, ff);
            Ok(())
        },
    );
}

#[test]
fn message_numbers_parse_or_refuse() {
    let seq = prop_oneof!["[0-9]{0,22}(\\.msg)?", "[^\n]{0,12}", "0*[1-9][0-9]{0,5}"];
    fuzz("inbox/seq", seq, |raw| {
        if let Ok(n) = inbox::parse_seq(&raw) {
            prop_assert!(n > 0);
            let stem = raw.strip_suffix(".msg").unwrap_or(&raw);
            prop_assert_eq!(stem.trim_start_matches('0'), n.to_string());
        }
        let _ = firstmate::fsx::parse_numbered(&raw, "msg");
        Ok(())
    });
}

// --- meta (SPEC §4) ---

fn meta_ish() -> BoxedStrategy<String> {
    prop_oneof![
        "[a-z_]{1,10}=[^\n]{0,20}",
        " ?#?[a-z ]{0,6}=?=?[^\n]{0,10}\r?",
        "[^\n=]{0,10}",
        Just(String::new()),
    ]
    .boxed()
}

fn check_meta(b: &[u8]) -> Outcome {
    let m = meta::Meta::parse(b);
    let once = m.to_bytes();
    let again = meta::Meta::parse(&once);
    prop_assert_eq!(&again, &m, "render→parse is not a fixed point");
    prop_assert_eq!(again.to_bytes(), once);
    for (k, v) in m.entries() {
        prop_assert!(!k.is_empty() && !k.contains('='));
        prop_assert!(!v.contains(['\n', '\r']));
    }
    Ok(())
}

#[test]
fn meta_from_raw_bytes() {
    fuzz("meta/bytes", bytes(300), |b| check_meta(&b));
}

#[test]
fn meta_that_looks_like_meta() {
    fuzz("meta/structured", lines_of(meta_ish(), 12), |b| {
        check_meta(&b)
    });
}

#[test]
fn meta_set_values_read_back() {
    let pairs = vec(("[a-z_]{1,10}", any::<String>()), 0..8);
    fuzz("meta/set-round-trip", pairs, |pairs| {
        let mut m = meta::Meta::default();
        for (k, v) in &pairs {
            m.set(k, v);
        }
        let back = meta::Meta::parse(&m.to_bytes());
        for (k, _) in &pairs {
            let last = pairs.iter().rev().find(|(k2, _)| k2 == k).unwrap();
            let want = last.1.replace(['\n', '\r'], " ");
            prop_assert_eq!(back.get(k), Some(want.as_str()));
        }
        Ok(())
    });
}

// --- frontmatter, brief check, responses (SPEC §7.2, §7.4, §11.2) ---

fn markdown_ish() -> BoxedStrategy<String> {
    prop_oneof![
        Just("---".to_string()),
        "[a-zA-Z_-]{0,10}: ?[^\n]{0,16}",
        "[a-z]{1,6}: \"[^\n]{0,10}",
        "[a-z]{1,6}: '[^\n]{0,10}",
        proptest::sample::select(vec![
            "# Task",
            "## Captain's intent",
            "## Firstmate spec",
            "# Definition of done",
            "# Charter",
            "Delivery contract: mode=local-only",
            "Delivery contract: mode=direct-PR",
            "{TASK}",
            "{FIRSTMATE_SPEC}",
            "```",
            "~~~~",
            "   ```rust",
            "Captain: do it",
            "kind: secondmate",
            "kind: scout",
            "mode: no-mistakes",
            "",
        ])
        .prop_map(str::to_string),
        " {0,4}#{1,7}[ \t]?[^\n]{0,16}",
        "[^\n]{0,24}",
    ]
    .boxed()
}

fn check_markdown(text: &str) -> Outcome {
    if let Ok((fields, body)) = frontmatter::parse(text) {
        prop_assert!(text.ends_with(body));
        for (k, _) in &fields {
            prop_assert!(!k.is_empty());
        }
    }
    for mode in [None, Some(firstmate::dod::Mode::LocalOnly)] {
        let _ = brief::check::problems(text, mode);
    }
    let id = TaskId::parse("t1").unwrap();
    if let Ok(r) = firstmate::response::problems(text, &id) {
        prop_assert_eq!(r.id.as_str(), "t1");
        prop_assert!(firstmate::response::STATUSES.contains(&r.status.as_str()));
    }
    Ok(())
}

#[test]
fn frontmatter_briefs_and_responses_from_raw_bytes() {
    fuzz("frontmatter/bytes", bytes(300), |b| {
        let text = String::from_utf8_lossy(&b);
        check_markdown(&text)?;
        check_markdown(&format!("---\n{text}"))
    });
}

#[test]
fn frontmatter_briefs_and_responses_that_look_like_briefs() {
    let doc = (any::<bool>(), lines_of(markdown_ish(), 30));
    fuzz("frontmatter/structured", doc, |(fm, b)| {
        let text = String::from_utf8_lossy(&b);
        let text = if fm {
            format!("---\n{text}")
        } else {
            text.into_owned()
        };
        check_markdown(&text)
    });
}

#[test]
fn frontmatter_round_trips_any_value() {
    let fields = vec(("[A-Za-z0-9_-]{1,12}", any::<String>()), 0..6);
    fuzz(
        "frontmatter/render-round-trip",
        (fields, any::<String>()),
        |(fields, body)| {
            let refs: Vec<(&str, String)> = fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect();
            let text = format!("{}{body}", frontmatter::render(&refs));
            let (got, rest) = frontmatter::parse(&text).map_err(TestCaseError::fail)?;
            prop_assert_eq!(&got, &fields);
            prop_assert_eq!(rest, body.as_str());
            Ok(())
        },
    );
}

#[test]
fn rendered_responses_validate() {
    let status = proptest::sample::select(firstmate::response::STATUSES.to_vec());
    fuzz(
        "response/render-round-trip",
        (status, any::<u64>(), any::<String>()),
        |(status, epoch, body)| {
            let id = TaskId::parse("t1").unwrap();
            let ts = clock::rfc3339(epoch % 253_402_300_800);
            let text = firstmate::response::render(&id, status, &ts, &body);
            let r = firstmate::response::problems(&text, &id)
                .map_err(|p| TestCaseError::fail(p.join("; ")))?;
            prop_assert_eq!(r.status.as_str(), status);
            prop_assert_eq!(&r.timestamp, &ts);
            let mut want = body.trim_start_matches('\n').to_string();
            if !want.is_empty() && !want.ends_with('\n') {
                want.push('\n');
            }
            prop_assert_eq!(r.body, want);
            Ok(())
        },
    );
}

// --- config (SPEC §1.4) ---

fn toml_ish() -> impl Strategy<Value = String> {
    let section = prop_oneof![
        proptest::sample::select(vec![
            "[tmux]",
            "[paths]",
            "[brief]",
            "[send]",
            "[watch]",
            "[control]",
            "[harness]",
            "[harness.mine]",
            "[[harness]]",
            "[harness.x.y]",
        ])
        .prop_map(str::to_string),
        "\\[[a-z._\"]{0,14}\\]",
    ];
    let key = prop_oneof![
        proptest::sample::select(vec![
            "session",
            "socket",
            "worktrees",
            "delegator",
            "paused_verb",
            "tools",
            "max_intent_bytes",
            "settle_ms",
            "max_body_bytes",
            "grace_secs",
            "on_wake",
            "launch",
            "interrupt",
            "busy_regex",
            "composer_regex",
            "exit_wait_secs",
            "harness",
        ])
        .prop_map(str::to_string),
        "[a-z_.\"]{1,12}",
    ];
    let value = prop_oneof![
        "\"[^\"\\\\\n]{0,10}\"",
        "-?[0-9]{1,22}",
        Just("[]".to_string()),
        "\\[(\"[a-z{}]{0,6}\", ?){0,3}\\]",
        "\\[[0-9, ]{0,8}\\]",
        Just("true".to_string()),
        Just("{}".to_string()),
        Just("{ a = 1 }".to_string()),
        "[0-9.e+-]{1,8}",
        "'[^'\n]{0,8}'",
        "[^\n]{0,8}",
    ];
    let line = prop_oneof![
        section,
        (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        "#[^\n]{0,10}",
        Just(String::new()),
    ];
    vec(line, 0..16).prop_map(|ls| ls.join("\n"))
}

const ENV_VARS: &[&str] = &[
    "FM_WATCH_GRACE_SECS",
    "FM_TMUX_SOCKET",
    "FM_SEND_MAX_BODY_BYTES",
    "FM_BRIEF_TOOLS",
    "FM_CONTROL_EXIT_WAIT_SECS",
    "FM_NOPE",
];

fn check_config(text: Option<&str>, env: &[(String, String)]) -> Outcome {
    match Config::from_parts(Path::new("firstmate.toml"), text, env) {
        Ok(_) => {}
        Err(e) => {
            prop_assert_eq!(e.exit_code(), 3, "config error with a non-3 exit: {}", e);
            let msg = e.to_string();
            prop_assert!(
                msg.contains("firstmate.toml") || msg.contains("FM_"),
                "error names neither file nor variable: {}",
                msg
            );
        }
    }
    Ok(())
}

#[test]
fn config_from_raw_bytes() {
    fuzz("config/bytes", bytes(400), |b| {
        check_config(Some(&String::from_utf8_lossy(&b)), &[])
    });
}

#[test]
fn config_that_looks_like_toml() {
    let env = vec(
        (
            proptest::sample::select(ENV_VARS).prop_map(str::to_string),
            "[^\0]{0,8}",
        ),
        0..3,
    );
    fuzz("config/structured", (toml_ish(), env), |(text, env)| {
        check_config(Some(&text), &env)
    });
}

// --- ladder files (SPEC §6.2) and the busy record (SPEC §9.3) ---

#[test]
fn ladder_files_parse_or_refuse() {
    let ring = prop_oneof![
        bytes(64).boxed(),
        "[0-9]{0,4}\\.msg\t[0-9 ]{0,22}\t[0-9a ]{0,22}(\t.{0,3})?\r?\n?"
            .prop_map(String::into_bytes)
            .boxed(),
    ];
    fuzz("ladder/parse", ring, |b| {
        if let Some(s) = ladder_files::RingState::parse(&b) {
            prop_assert!(!s.record.is_empty());
            prop_assert_eq!(ladder_files::RingState::parse(&s.render()), Some(s));
        }
        Ok(())
    });
}

#[test]
fn ladder_ring_state_round_trips() {
    fuzz(
        "ladder/render-round-trip",
        (any::<u64>(), any::<u64>(), any::<u64>()),
        |(seq, count, last)| {
            let s = ladder_files::RingState {
                record: ladder_files::record_name(seq),
                count,
                last,
            };
            prop_assert_eq!(ladder_files::RingState::parse(&s.render()), Some(s));
            Ok(())
        },
    );
}

#[test]
fn busy_records_parse_or_read_as_not_busy() {
    let rec = prop_oneof![
        bytes(64).boxed(),
        "(busy|idle|BUSY|)[ \t]{0,2}[0-9a-z-]{0,22}[ \t]{0,2}[^\n]{0,8}\n?"
            .prop_map(String::into_bytes)
            .boxed(),
    ];
    fuzz(
        "busy/parse",
        (rec, proptest::option::of(any::<u64>())),
        |(b, m)| {
            let busy = deliver::busy_from_record(&b, m);
            if busy {
                prop_assert!(String::from_utf8_lossy(&b).trim_start().starts_with("busy"));
            }
            Ok(())
        },
    );
}

#[test]
fn busy_records_round_trip() {
    fuzz(
        "busy/render-round-trip",
        (any::<bool>(), any::<u64>(), any::<String>(), any::<u64>()),
        |(busy, at, source, mtime)| {
            let line = deliver::render_busy(busy, at, &source);
            prop_assert_eq!(line.split_whitespace().count(), 3, "{:?}", line);
            prop_assert_eq!(deliver::busy_from_record(line.as_bytes(), None), busy);
            prop_assert_eq!(
                deliver::busy_from_record(line.as_bytes(), Some(mtime)),
                busy && at >= mtime
            );
            Ok(())
        },
    );
}

// --- event lines (SPEC §12) and task ids (SPEC §1.3) ---

#[test]
fn event_lines_and_task_ids() {
    let raw = prop_oneof![
        bytes(120).boxed(),
        "\\{[^\n]{0,40}\\}?".prop_map(String::into_bytes).boxed()
    ];
    fuzz("events+ids/parse", raw, |b| {
        let _ = events::parse_line(&b);
        let s = String::from_utf8_lossy(&b);
        if let Ok(id) = TaskId::parse(&s) {
            prop_assert!(!id.as_str().contains("..") && !id.as_str().contains('/'));
            prop_assert!(id.as_str().len() <= 64 && !id.as_str().starts_with('.'));
        }
        Ok(())
    });
}

#[test]
fn event_lines_round_trip() {
    fuzz(
        "events/render-round-trip",
        (
            any::<u64>(),
            any::<String>(),
            any::<String>(),
            any::<String>(),
        ),
        |(ts, actor, key, value)| {
            let line = events::Event::at(ts, "fm-test", "t1", "x.y")
                .actor(&actor)
                .field(&format!("f{key}"), value.clone())
                .to_line();
            prop_assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
            let m = events::parse_line(line.trim_end().as_bytes()).expect("one JSON object");
            prop_assert_eq!(m["ts"].as_u64(), Some(ts));
            let want = if actor.is_empty() { "captain" } else { &actor };
            prop_assert_eq!(m["actor"].as_str(), Some(want));
            Ok(())
        },
    );
}
