use super::*;

#[test]
fn escapes_become_visible_and_plain_text_is_untouched() {
    let osc52 = "\x1b]52;c;ZWNobyBoaQ==\x07done";
    assert_eq!(sanitize(osc52), "\\x1b]52;c;ZWNobyBoaQ==\\x07done");
    assert_eq!(sanitize("a\x1b[2Jb\rc\nd"), "a\\x1b[2Jb\\x0dc\\x0ad");
    assert_eq!(
        sanitize("\u{9b}31m \u{202e}txt \x7f"),
        "\\u{9b}31m \\u{202e}txt \\x7f"
    );
    assert!(matches!(sanitize("plain · é\ttab"), Cow::Borrowed(_)));
    let once = sanitize(osc52).into_owned();
    assert_eq!(sanitize(&once), once);
}

#[test]
fn text_holds_only_its_own_colour() {
    let mut t = Text::new();
    t.paint("done", Sgr::Blue, true).push(" \x1b[8mhidden");
    assert_eq!(t, "\x1b[34mdone\x1b[0m \\x1b[8mhidden");
    let mut plain = Text::new();
    plain.paint("done", Sgr::Blue, false).pad(2).trim_end();
    assert_eq!(plain, "done");
}

#[test]
fn json_keeps_the_exact_text_escaped() {
    let v = serde_json::json!({"text": "a\x1b]52;c;x\x07\u{9b}\u{7f}\u{202e}z"});
    let line = json_line(&v).unwrap();
    assert!(!line.chars().any(is_unsafe), "{line}");
    assert!(line.contains("\\u001b") && line.contains("\\u009b") && line.contains("\\u202e"));
    let back: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(back, v);
}

mod printable_tests {
    use super::printable_ascii;

    proptest::proptest! {
        #[test]
        fn words_at_a_time_say_what_each_byte_says(b in proptest::collection::vec(proptest::num::u8::ANY, 0..40)) {
            proptest::prop_assert_eq!(printable_ascii(&b), b.iter().all(|c| matches!(c, b' '..=b'~')));
        }

        #[test]
        fn printable_text_with_one_odd_byte_anywhere_is_caught(
            n in 0usize..40,
            at in 0usize..40,
            odd in proptest::sample::select(&[0u8, 9, 10, 0x1b, 0x1f, 0x7f, 0x80, 0x9b, 0xc2, 0xff][..]),
        ) {
            let mut b = vec![b'x'; n.max(1)];
            let at = at % b.len();
            b[at] = odd;
            proptest::prop_assert!(!printable_ascii(&b));
            b[at] = b'~';
            proptest::prop_assert!(printable_ascii(&b));
        }
    }
}
