//! What a profile says about reading its agent's screen: the busy line,
//! the composer and the line under it, the dialogs. `tmux::screen` reads a
//! captured screen with these [`Rules`]; this module only holds them, so
//! the profiles sit below the screen reader and never import it.

use regex::Regex;

/// A modal screen a harness can show (docs/spec/harness.md#dialogs): typed text never reaches
/// the composer while it is up and Enter answers it, so a doorbell is
/// never typed into one. `name` is what the captain is told.
#[derive(Debug, Clone)]
pub struct Dialog {
    pub name: String,
    pub regex: Regex,
}

impl PartialEq for Dialog {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.regex.as_str() == other.regex.as_str()
    }
}

impl serde::Serialize for Dialog {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Dialog", 2)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("regex", self.regex.as_str())?;
        st.end()
    }
}

/// What a harness profile says about reading its screen.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rules<'a> {
    /// Matched against the last few non-blank lines (the screen reader's
    /// tail).
    pub busy: Option<&'a Regex>,
    /// `busy` matches for the whole of every turn (the profile's
    /// `busy_whole_turn`), so a screen that reads idle overrules a busy
    /// record.
    pub busy_whole_turn: bool,
    /// The composer line; capture group 1 is its text.
    pub composer: Option<&'a Regex>,
    /// The line drawn right under the composer (after its continuation
    /// lines); when set, the composer counts only with it below.
    pub composer_below: Option<&'a Regex>,
    /// Modal screens, tried in order; any line of the screen may match.
    pub dialogs: &'a [Dialog],
}
