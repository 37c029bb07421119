//! The audit trail (SPEC §12): `state/events.jsonl`, one JSON object per
//! line, appended by every mutating command through [`crate::fsx`].
//!
//! An event append never undoes or fails the action it records: failures
//! are returned as a warning string for the caller to print.

use serde_json::{Map, Value};

use crate::home::Home;

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    fields: Map<String, Value>,
}

impl Event {
    /// A new event: `ts` now, `tool`, `task` (may be empty), `action`, and
    /// `actor` defaulting to `captain`.
    pub fn new(tool: &str, task: &str, action: &str) -> Event {
        Event::at(crate::clock::now(), tool, task, action)
    }

    pub fn at(ts: u64, tool: &str, task: &str, action: &str) -> Event {
        let mut fields = Map::new();
        fields.insert("ts".into(), ts.into());
        fields.insert("tool".into(), tool.into());
        fields.insert("task".into(), task.into());
        fields.insert("action".into(), action.into());
        fields.insert("actor".into(), "captain".into());
        Event { fields }
    }

    pub fn actor(mut self, actor: &str) -> Event {
        if !actor.is_empty() {
            self.fields.insert("actor".into(), actor.into());
        }
        self
    }

    pub fn field(mut self, key: &str, value: impl Into<Value>) -> Event {
        self.fields.insert(key.into(), value.into());
        self
    }

    pub fn to_line(&self) -> String {
        let mut s = Value::Object(self.fields.clone()).to_string();
        s.push('\n');
        s
    }

    /// Appends to `state/events.jsonl`. Returns a warning on failure,
    /// worded `<tool>: warning: …` after the event's own `tool` (SPEC §14).
    pub fn append(&self, home: &Home) -> Option<String> {
        let path = home.events();
        let res = crate::fsx::ensure_dir(&home.state_dir())
            .and_then(|()| crate::fsx::append_line(&path, self.to_line().as_bytes()));
        let tool = self
            .fields
            .get("tool")
            .and_then(Value::as_str)
            .unwrap_or("fm");
        res.err().map(|e| {
            let action = self
                .fields
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or("");
            format!("{tool}: warning: event {action} not recorded: {e}")
        })
    }

    /// Appends and prints any warning to stderr.
    pub fn record(&self, home: &Home) {
        if let Some(w) = self.append(home) {
            eprintln!("{w}");
        }
    }
}

/// A parsed event line (for `--trace` and audits).
pub fn parse_line(line: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice::<Value>(line).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_line_is_one_json_object() {
        let e = Event::at(5, "fm-send", "t1", "inbox.queued")
            .actor("bob")
            .field("seq", 3);
        let line = e.to_line();
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        let m = parse_line(line.trim_end().as_bytes()).unwrap();
        assert_eq!(m["actor"], "bob");
        assert_eq!(m["seq"], 3);
        assert_eq!(m["ts"], 5);
    }

    #[test]
    fn a_failed_append_warns_in_the_tools_name() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        std::fs::create_dir_all(home.events()).unwrap();
        let w = Event::new("fm-ack", "t1", "inbox.acked")
            .append(&home)
            .unwrap();
        assert!(
            w.starts_with("fm-ack: warning: event inbox.acked not recorded: "),
            "{w}"
        );
    }
}
