//! Meta (docs/spec/meta.md): `key=value` lines; render→parse is a fixed point, and
//! the typed reading every tool shares trims each value and treats an
//! empty one as missing.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::{Outcome, bytes, fuzz, lines_of};
use firstmate::meta::{KeyValues, TaskMeta};

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
    let m = KeyValues::parse(b);
    let once = m.to_bytes();
    let again = KeyValues::parse(&once);
    prop_assert_eq!(&again, &m, "render→parse is not a fixed point");
    prop_assert_eq!(&again.to_bytes(), &once);
    for (k, v) in m.entries() {
        prop_assert!(!k.is_empty() && !k.contains('='));
        prop_assert!(!v.contains(['\n', '\r']));
    }
    let t = TaskMeta::from_raw(m.clone());
    for (key, typed) in [
        ("pane", &t.pane),
        ("tmux_socket", &t.tmux_socket),
        ("harness", &t.harness),
        ("branch", &t.branch),
        ("pr", &t.pr),
    ] {
        let want = Some(m.str(key).trim()).filter(|v| !v.is_empty());
        prop_assert_eq!(typed.as_deref(), want, "{}", key);
    }
    prop_assert_eq!(&t, &TaskMeta::parse(&once));
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
        let mut m = KeyValues::default();
        for (k, v) in &pairs {
            m.set(k, v);
        }
        let back = KeyValues::parse(&m.to_bytes());
        for (k, _) in &pairs {
            let last = pairs.iter().rev().find(|(k2, _)| k2 == k).unwrap();
            let want = last.1.replace(['\n', '\r'], " ");
            prop_assert_eq!(back.get(k), Some(want.as_str()));
        }
        Ok(())
    });
}
