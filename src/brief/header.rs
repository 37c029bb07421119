//! The brief's header (docs/spec/brief.md#frontmatter, docs/spec/chains.md): the frontmatter keys a
//! brief carries, as one type that [`super::render`] writes and every
//! reader parses once, instead of asking the raw fields by name.
//!
//! Values are kept as written: a brief may be edited by hand, and checks
//! and refusals quote what they found (`kind "boat"`, `maxDepth "x"`). The
//! typed views ([`BriefHeader::kind`]) and the one copy of the task's
//! identity into meta ([`BriefHeader::apply_to_meta`]) are here too.

use crate::error::Result;
use crate::frontmatter;
use crate::fsx;
use crate::home::Home;
use crate::meta::{KeyValues, Kind};
use crate::task_id::TaskId;

/// Every key a brief's frontmatter may carry, in the order it is written;
/// `None` is a key the brief does not have (a scout has no `mode`, a
/// secondmate no `repo`, a top-level brief no `parentId`). Other keys are
/// ignored; a key written twice counts by its last value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BriefHeader {
    pub id: Option<String>,
    pub protocol_version: Option<String>,
    pub delegator: Option<String>,
    pub delegatee: Option<String>,
    pub timestamp: Option<String>,
    pub kind: Option<String>,
    pub mode: Option<String>,
    pub repo: Option<String>,
    pub branch: Option<String>,
    pub parent_id: Option<String>,
    pub max_depth: Option<String>,
    pub current_depth: Option<String>,
}

/// How [`BriefHeader::apply_to_meta`] treats what meta already says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetaSync {
    /// A spawn: keys meta already has stay (a relaunch keeps what the
    /// first spawn recorded); missing ones come from the brief.
    FillMissing,
    /// A re-applied brief: every key follows it, and one it lacks goes.
    Follow,
}

impl BriefHeader {
    /// The header of `text`; `Err` says why the frontmatter does not read.
    pub fn parse(text: &str) -> std::result::Result<BriefHeader, String> {
        let (fields, _) = frontmatter::parse(text)?;
        let mut h = BriefHeader::default();
        for (k, v) in fields {
            if let Some(slot) = h.slot(&k) {
                *slot = Some(v);
            }
        }
        Ok(h)
    }

    /// The header of `text`, or an empty one when it has none.
    pub fn read(text: &str) -> BriefHeader {
        BriefHeader::parse(text).unwrap_or_default()
    }

    /// The header of task `id`'s brief: empty when there is no brief or
    /// its frontmatter does not read; `Err` only when the file cannot be
    /// read.
    pub(crate) fn of_task(home: &Home, id: &TaskId) -> Result<BriefHeader> {
        let bytes = fsx::read_optional(&home.brief(id))?.unwrap_or_default();
        Ok(BriefHeader::read(&String::from_utf8_lossy(&bytes)))
    }

    /// Each key's name as written, with its field.
    fn keys(&self) -> [(&'static str, &Option<String>); 12] {
        [
            ("id", &self.id),
            ("protocolVersion", &self.protocol_version),
            ("delegator", &self.delegator),
            ("delegatee", &self.delegatee),
            ("timestamp", &self.timestamp),
            ("kind", &self.kind),
            ("mode", &self.mode),
            ("repo", &self.repo),
            ("branch", &self.branch),
            ("parentId", &self.parent_id),
            ("maxDepth", &self.max_depth),
            ("currentDepth", &self.current_depth),
        ]
    }

    fn slot(&mut self, key: &str) -> Option<&mut Option<String>> {
        Some(match key {
            "id" => &mut self.id,
            "protocolVersion" => &mut self.protocol_version,
            "delegator" => &mut self.delegator,
            "delegatee" => &mut self.delegatee,
            "timestamp" => &mut self.timestamp,
            "kind" => &mut self.kind,
            "mode" => &mut self.mode,
            "repo" => &mut self.repo,
            "branch" => &mut self.branch,
            "parentId" => &mut self.parent_id,
            "maxDepth" => &mut self.max_depth,
            "currentDepth" => &mut self.current_depth,
            _ => return None,
        })
    }

    /// The frontmatter block, `---` to `---`, the keys it has in order.
    pub(crate) fn render(&self) -> String {
        let fields: Vec<(&str, String)> = self
            .keys()
            .into_iter()
            .filter_map(|(k, v)| v.clone().map(|v| (k, v)))
            .collect();
        frontmatter::render(&fields)
    }

    /// The task's kind as the brief says it (`None`: no `kind` key).
    pub fn kind(&self) -> Option<Kind> {
        self.kind.as_deref().map(Kind::parse)
    }

    /// The task identity meta mirrors from the brief: `kind`, `mode`,
    /// `repo`, `branch` (the gate and crew state read them there).
    fn identity(&self) -> [(&'static str, Option<&str>); 4] {
        [
            ("kind", self.kind.as_deref()),
            ("mode", self.mode.as_deref()),
            ("repo", self.repo.as_deref()),
            ("branch", self.branch.as_deref()),
        ]
    }

    /// Copies the task's identity (`kind`, `mode`, `repo`, `branch`) into
    /// meta: the one place spawn, a remote spawn and a re-applied brief
    /// write it.
    pub(crate) fn apply_to_meta(&self, m: &mut KeyValues, how: MetaSync) {
        for (key, value) in self.identity() {
            match (how, value) {
                (MetaSync::FillMissing, Some(v)) if m.get(key).is_none() => m.set(key, v),
                (MetaSync::FillMissing, _) => {}
                (MetaSync::Follow, Some(v)) => m.set(key, v),
                (MetaSync::Follow, None) => m.remove(key),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> BriefHeader {
        BriefHeader {
            id: Some("t1".into()),
            protocol_version: Some("1.0.0".into()),
            delegator: Some("captain".into()),
            delegatee: Some("t1".into()),
            timestamp: Some("2026-11-30T09:15:02Z".into()),
            kind: Some("ship".into()),
            mode: Some("no-mistakes".into()),
            repo: Some("/r/a b".into()),
            branch: Some("fm/t1".into()),
            parent_id: Some("p".into()),
            max_depth: Some("3".into()),
            current_depth: Some("1".into()),
        }
    }

    #[test]
    fn what_is_rendered_parses_back_and_keys_keep_their_names() {
        let h = header();
        let text = format!("{}# Body\n", h.render());
        assert_eq!(BriefHeader::parse(&text), Ok(h));
        assert!(
            text.starts_with("---\nid: t1\nprotocolVersion: 1.0.0\n"),
            "{text}"
        );
        assert!(text.contains("\nparentId: p\nmaxDepth: 3\ncurrentDepth: 1\n---\n"));
        let scout = BriefHeader {
            kind: Some("scout".into()),
            mode: None,
            branch: None,
            ..header()
        };
        let text = scout.render();
        assert!(
            !text.contains("mode:") && !text.contains("branch:"),
            "{text}"
        );
        assert_eq!(BriefHeader::read(&text), scout);
    }

    #[test]
    fn the_last_value_wins_other_keys_are_ignored_and_no_header_is_empty() {
        let h = BriefHeader::read("---\nkind: scout\nx-own: 1\nkind: ship\n---\n");
        assert_eq!(h.kind(), Some(Kind::Ship));
        assert_eq!(h.mode, None);
        assert_eq!(
            BriefHeader::read("# no frontmatter\n"),
            BriefHeader::default()
        );
        assert!(BriefHeader::parse("# no frontmatter\n").is_err());
        assert_eq!(BriefHeader::default().kind(), None);
    }

    #[test]
    fn meta_is_filled_or_follows_the_brief() {
        let scout = BriefHeader::read("---\nkind: scout\nrepo: /r\n---\n");
        let mut m = KeyValues::parse(b"kind=ship\nmode=direct-PR\npane=%1\n");
        scout.apply_to_meta(&mut m, MetaSync::FillMissing);
        assert_eq!(
            (m.get("kind"), m.get("mode"), m.get("repo"), m.get("branch")),
            (Some("ship"), Some("direct-PR"), Some("/r"), None)
        );
        scout.apply_to_meta(&mut m, MetaSync::Follow);
        assert_eq!(
            (m.get("kind"), m.get("mode"), m.get("repo"), m.get("pane")),
            (Some("scout"), None, Some("/r"), Some("%1"))
        );
    }

    fn field() -> impl proptest::strategy::Strategy<Value = Option<String>> {
        proptest::option::of(proptest::string::string_regex("(?s).{0,12}").unwrap())
    }

    proptest::proptest! {
        /// Whatever a header holds (quotes, colons, newlines, YAML words),
        /// what is rendered parses back to it.
        #[test]
        fn any_header_round_trips(
            a in field(), b in field(), c in field(), d in field(),
            e in field(), f in field(), g in field(), h in field(),
            i in field(), j in field(), k in field(), l in field(),
        ) {
            let hd = BriefHeader {
                id: a, protocol_version: b, delegator: c, delegatee: d,
                timestamp: e, kind: f, mode: g, repo: h, branch: i,
                parent_id: j, max_depth: k, current_depth: l,
            };
            let text = format!("{}body\n", hd.render());
            proptest::prop_assert_eq!(BriefHeader::parse(&text), Ok(hd));
        }
    }
}
