//! The `[harness.<name>]` table of the config: every key optional, parsed
//! by the config loader (regexes compiled there) and merged over a
//! built-in by [`super::profile`].

use std::collections::BTreeMap;

use regex::Regex;
use serde::{Deserialize, Deserializer};

use super::Approval;

/// The `[harness.<name>]` tables of a config, by name.
pub type Overrides = BTreeMap<String, HarnessOverride>;

/// A `[harness.<name>]` table: every key optional. A regex key written as
/// `""` switches the built-in regex off (`Some(None)`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, expecting = "a table")]
pub struct HarnessOverride {
    pub launch: Option<Vec<String>>,
    pub interrupt: Option<Vec<String>>,
    pub exit: Option<String>,
    #[serde(deserialize_with = "pattern")]
    pub busy_regex: Option<Option<Regex>>,
    /// Whether the busy line shows for the whole of every turn, so a screen
    /// that reads idle overrules a busy record (a turn stopped from the
    /// keyboard runs no hook). Built-in: claude only; a `busy_regex` of
    /// one's own resets it to false unless this says otherwise.
    pub busy_whole_turn: Option<bool>,
    pub agent_commands: Option<Vec<String>>,
    #[serde(deserialize_with = "pattern")]
    pub composer_regex: Option<Option<Regex>>,
    pub approval: Option<Approval>,
    /// Replaces the built-in's (empty) list.
    pub env: Option<Vec<String>>,
    pub hooks: Option<bool>,
    /// The argv that resumes a session (`{session}`: its id); `[]` means
    /// none (a restore starts the agent afresh).
    pub resume: Option<Vec<String>>,
    /// The delivery leg (`hook`, `queue`, `typed`); `typed` turns the
    /// built-in's leg off.
    pub leg: Option<crate::leg::Leg>,
}

impl PartialEq for HarnessOverride {
    fn eq(&self, other: &Self) -> bool {
        fn src(r: Option<&Option<Regex>>) -> Option<Option<&str>> {
            r.map(|r| r.as_ref().map(Regex::as_str))
        }
        self.launch == other.launch
            && self.interrupt == other.interrupt
            && self.exit == other.exit
            && src(self.busy_regex.as_ref()) == src(other.busy_regex.as_ref())
            && self.busy_whole_turn == other.busy_whole_turn
            && self.agent_commands == other.agent_commands
            && src(self.composer_regex.as_ref()) == src(other.composer_regex.as_ref())
            && self.approval == other.approval
            && self.env == other.env
            && self.hooks == other.hooks
            && self.resume == other.resume
            && self.leg == other.leg
    }
}

/// A regex key: `""` is "off", anything else must compile. A regex that
/// does not compile would silently turn busy or composer detection off, so
/// it is refused.
fn pattern<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<Regex>>, D::Error> {
    let src = String::deserialize(d)?;
    if src.is_empty() {
        return Ok(Some(None));
    }
    Regex::new(&src).map(|re| Some(Some(re))).map_err(|e| {
        // The regex crate's message ends with the one-line reason.
        let why = e.to_string();
        let why = why.lines().last().unwrap_or("").trim();
        serde::de::Error::custom(format!(
            "not a valid regular expression: {}",
            why.trim_start_matches("error: ")
        ))
    })
}
