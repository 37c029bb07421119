//! Task ids (docs/spec/home.md#task-ids): the only names that ever become path components
//! under `data/` and `state/`. A [`TaskId`] can only be built by validation,
//! so holding one proves the string is safe to join into a path and names
//! none of the home's own places ([`RESERVED_NAMES`]).

use std::fmt;

use crate::error::{Error, Result};

/// Longest id accepted: one leading character plus 63 more.
pub(crate) const MAX_LEN: usize = 64;

/// Names the layout itself puts directly under `data/` or `state/`
/// (`data/board/`, `state/archive/`, `state/events.jsonl`,
/// `state/wakes.log`). A task whose id is one of them would share that
/// place — `fm-control board teardown` would archive the task board — so
/// [`TaskId::parse`] refuses them, in any letter case (a case-folding
/// filesystem makes `Board` and `board` one name). A name added to the
/// layout at that level is added here.
pub(crate) const RESERVED_NAMES: &[&str] = &["board", "archive", "events", "wakes", "grants"];

/// Whether `id` is one of [`RESERVED_NAMES`], ignoring ASCII case.
pub(crate) fn is_reserved(id: &str) -> bool {
    RESERVED_NAMES.iter().any(|r| r.eq_ignore_ascii_case(id))
}

/// Shared, not copied: a fleet view hands each task's id from its listing
/// to its facts, its row and the next frame.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(std::sync::Arc<str>);

impl serde::Serialize for TaskId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl TaskId {
    /// Validates `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$` without `..`, and
    /// refuses the names the home reserves, in any letter case.
    pub fn parse(raw: &str) -> Result<TaskId> {
        let bad = |reason| {
            Err(Error::InvalidId {
                id: raw.to_string(),
                reason,
            })
        };
        let bytes = raw.as_bytes();
        if bytes.is_empty() {
            return bad("empty");
        }
        if bytes.len() > MAX_LEN {
            return bad("longer than 64 characters");
        }
        if !bytes[0].is_ascii_alphanumeric() {
            return bad("must start with a letter or digit");
        }
        // One pass: the allowed bytes, and no two dots in a row.
        let mut dots = false;
        let mut last_dot = false;
        for &b in bytes {
            if !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
                return bad("only letters, digits, '.', '_' and '-' are allowed");
            }
            dots |= last_dot && b == b'.';
            last_dot = b == b'.';
        }
        if dots {
            return bad("must not contain '..'");
        }
        if is_reserved(raw) {
            return bad(
                "reserved: the home uses that name itself (data/board/, state/archive/, state/events.jsonl, state/wakes.log)",
            );
        }
        Ok(TaskId(raw.into()))
    }

    /// Like [`TaskId::parse`] for an OS string argument (non-UTF-8 is invalid).
    pub(crate) fn parse_os(raw: &std::ffi::OsStr) -> Result<TaskId> {
        match raw.to_str() {
            Some(s) => TaskId::parse(s),
            None => Err(Error::InvalidId {
                id: raw.to_string_lossy().into_owned(),
                reason: "not valid UTF-8",
            }),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for TaskId {
    type Err = Error;
    fn from_str(s: &str) -> Result<TaskId> {
        TaskId::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_ids() {
        for ok in ["a", "A1", "fix-login", "v1.2_x", "9", &"a".repeat(64)] {
            assert!(TaskId::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_hostile_ids() {
        let long = "a".repeat(65);
        for bad in [
            "", "../x", "a/b", ".hidden", "-x", "a b", "é", "a..b", &long, "a\0b", "a\nb",
        ] {
            let err = TaskId::parse(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
        }
    }

    proptest::proptest! {
        /// The one-pass check accepts exactly what the rule says, and
        /// names the first rule an id breaks.
        #[test]
        fn an_id_is_accepted_exactly_by_the_rule(raw in "[a-c.\\-_/ \u{e9}0-9]{0,6}") {
            let rule = !raw.is_empty()
                && raw.as_bytes()[0].is_ascii_alphanumeric()
                && raw.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
                && !raw.contains("..");
            let got = TaskId::parse(&raw);
            proptest::prop_assert_eq!(got.is_ok(), rule);
            if let Err(e) = got {
                let charset = raw.bytes().any(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')));
                if !raw.is_empty() && raw.as_bytes()[0].is_ascii_alphanumeric() && charset {
                    proptest::prop_assert!(e.to_string().contains("only letters"), "{}", e);
                }
            }
        }
    }

    #[test]
    fn refuses_the_names_the_home_reserves_in_any_case() {
        for bad in [
            "board", "Board", "BOARD", "archive", "events", "wakes", "WAKES", "grants", "Grants",
        ] {
            let err = TaskId::parse(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
            assert!(err.to_string().contains("reserved"), "{err}");
        }
        for ok in ["board1", "my-board", "events.x", "archived"] {
            assert!(TaskId::parse(ok).is_ok(), "{ok}");
        }
    }
}
