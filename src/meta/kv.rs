//! The `key=value` line format of `state/<id>.meta` (docs/spec/meta.md) and of the
//! run record `state/<id>.run` (docs/spec/crew-state.md#run-record), kept as written.
//!
//! Parsing is forgiving: the value may contain `=`, the last occurrence of
//! a key wins, other lines are ignored. Every key is kept in file order,
//! known or not, so a writer that changes its own keys preserves everyone
//! else's. Values are kept exactly as written; [`super::TaskMeta`] is where
//! they are trimmed and typed.

/// Every entry of a `key=value` file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyValues {
    /// Keys in file order of first appearance, values from their last.
    entries: Vec<(String, String)>,
}

impl KeyValues {
    pub fn parse(bytes: &[u8]) -> KeyValues {
        let text = String::from_utf8_lossy(bytes);
        let mut m = KeyValues::default();
        for line in text.lines() {
            if let Some((k, v)) = line.split_once('=') {
                let k = k.trim();
                if !k.is_empty() && !k.starts_with('#') {
                    m.set(k, v);
                }
            }
        }
        m
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `key`, or `""`.
    pub fn str(&self, key: &str) -> &str {
        self.get(key).unwrap_or("")
    }

    /// Sets `key` (a newline in the value becomes a space: one line per key).
    pub fn set(&mut self, key: &str, value: &str) {
        let value = if value.contains(['\n', '\r']) {
            value.replace(['\n', '\r'], " ")
        } else {
            value.to_string()
        };
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(e) => e.1 = value,
            None => self.entries.push((key.to_string(), value)),
        }
    }

    pub(crate) fn remove(&mut self, key: &str) {
        self.entries.retain(|(k, _)| k != key);
    }

    pub fn entries(&self) -> &[(String, String)] {
        &self.entries
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = String::new();
        for (k, v) in &self.entries {
            out.push_str(k);
            out.push('=');
            out.push_str(v);
            out.push('\n');
        }
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_key_wins_and_values_keep_equals() {
        let m = KeyValues::parse(b"pane=%1\nrepo=a=b\npane=%7\njunk line\n=x\n");
        assert_eq!(m.get("pane"), Some("%7"));
        assert_eq!(m.get("repo"), Some("a=b"));
        assert_eq!(m.entries().len(), 2);
    }
}
