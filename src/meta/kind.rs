//! What a task is (docs/spec/meta.md, docs/spec/dod.md#blocks): its kind — ship, scout or
//! secondmate —
//! and a ship's delivery mode. Meta's `kind` and `mode` keys, a brief's
//! frontmatter, `fm-brief --mode` and `fm-dod <mode>` all take these words.

use std::fmt;

use crate::error::{Error, Result};

/// A task's kind. An empty word is a ship (docs/spec/meta.md); a word that is none
/// of the three is kept as written, and counts as neither ship nor scout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Ship,
    Scout,
    Secondmate,
    Other(String),
}

impl Kind {
    pub fn parse(word: &str) -> Kind {
        match word {
            "" | "ship" => Kind::Ship,
            "scout" => Kind::Scout,
            "secondmate" => Kind::Secondmate,
            other => Kind::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Kind::Ship => "ship",
            Kind::Scout => "scout",
            Kind::Secondmate => "secondmate",
            Kind::Other(w) => w,
        }
    }

    /// Ships and scouts work in a worktree of their own.
    pub(crate) fn has_worktree(&self) -> bool {
        matches!(self, Kind::Ship | Kind::Scout)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a ship task delivers (docs/spec/dod.md#blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Mode {
    #[serde(rename = "no-mistakes")]
    NoMistakes,
    #[serde(rename = "direct-PR")]
    DirectPr,
    #[serde(rename = "local-only")]
    LocalOnly,
}

pub const MODES: &str = "no-mistakes, direct-PR, local-only";

impl Mode {
    pub(crate) const ALL: [Mode; 3] = [Mode::NoMistakes, Mode::DirectPr, Mode::LocalOnly];

    /// Parses a mode name exactly as written in the spec (exit 2 otherwise).
    pub fn parse(s: &str) -> Result<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                Error::usage(format!(
                    "unknown mode {} (expected one of {MODES})",
                    crate::error::quoted(s)
                ))
            })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::NoMistakes => "no-mistakes",
            Mode::DirectPr => "direct-PR",
            Mode::LocalOnly => "local-only",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_kind_is_a_ship_and_unknown_words_are_kept() {
        assert_eq!(Kind::parse(""), Kind::Ship);
        assert_eq!(Kind::parse("scout"), Kind::Scout);
        assert_eq!(Kind::parse("barge").as_str(), "barge");
        assert!(!Kind::parse("barge").has_worktree());
    }

    #[test]
    fn modes_parse_exactly() {
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.as_str()).unwrap(), m);
        }
        for bad in ["direct-pr", "yolo", "", "local"] {
            assert_eq!(Mode::parse(bad).unwrap_err().exit_code(), 2);
        }
    }
}
