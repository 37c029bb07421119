//! Task metadata (SPEC §4): `state/<id>.meta`, `key=value` lines.
//!
//! Parsing is forgiving (the value may contain `=`, the last occurrence of a
//! key wins, other lines are ignored). Writes go through [`update`]: under
//! `state/.meta-<id>.lock`, read, change only the caller's keys, atomic
//! replace — so keys another writer owns are preserved.

use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::task_id::TaskId;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// Keys in file order of first appearance, values from their last.
    entries: Vec<(String, String)>,
}

impl Meta {
    pub fn parse(bytes: &[u8]) -> Meta {
        let text = String::from_utf8_lossy(bytes);
        let mut m = Meta::default();
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

    /// Reads `state/<id>.meta`; `None` when it does not exist.
    pub fn load(home: &Home, id: &TaskId) -> Result<Option<Meta>> {
        Ok(fsx::read_optional(&home.meta(id))?.map(|b| Meta::parse(&b)))
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

    /// `kind`, with empty meaning `ship`.
    pub fn kind(&self) -> &str {
        match self.str("kind") {
            "" => "ship",
            k => k,
        }
    }

    pub fn set(&mut self, key: &str, value: &str) {
        let value = value.replace(['\n', '\r'], " ");
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(e) => e.1 = value,
            None => self.entries.push((key.to_string(), value)),
        }
    }

    pub fn remove(&mut self, key: &str) {
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

/// Read-modify-write of a task's meta under its lock. Creates `state/` and
/// the file if needed; returns the meta as written.
pub fn update(home: &Home, id: &TaskId, change: impl FnOnce(&mut Meta)) -> Result<Meta> {
    fsx::ensure_dir(&home.state_dir())?;
    let _guard = fsx::lock(&home.meta_lock(id), fsx::LOCK_WAIT)?;
    let mut meta = Meta::load(home, id)?.unwrap_or_default();
    change(&mut meta);
    fsx::atomic_write(&home.meta(id), &meta.to_bytes())?;
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_key_wins_and_values_keep_equals() {
        let m = Meta::parse(b"pane=%1\nrepo=a=b\npane=%7\njunk line\n=x\n");
        assert_eq!(m.get("pane"), Some("%7"));
        assert_eq!(m.get("repo"), Some("a=b"));
        assert_eq!(m.kind(), "ship");
        assert_eq!(m.entries().len(), 2);
    }

    #[test]
    fn update_preserves_other_keys() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t").unwrap();
        update(&home, &id, |m| {
            m.set("pane", "%1");
            m.set("custom", "keep me");
        })
        .unwrap();
        update(&home, &id, |m| m.set("pane", "%2")).unwrap();
        let m = Meta::load(&home, &id).unwrap().unwrap();
        assert_eq!(m.get("pane"), Some("%2"));
        assert_eq!(m.get("custom"), Some("keep me"));
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let m = Meta::parse(&bytes);
            let again = Meta::parse(&m.to_bytes());
            proptest::prop_assert_eq!(m, again);
        }
    }
}
