//! Inbox records (docs/spec/inbox.md#record) and message numbers.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::{Outcome, bytes, fuzz};
use firstmate::{clock, inbox};

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
