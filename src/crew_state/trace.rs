//! `--trace <id>` (docs/spec/chains.md): a delegation chain's audit trail.
//!
//! The chain is the task and every descendant linked through meta
//! `parent=`. Its events are read from `state/events.jsonl`, merged,
//! de-duplicated and put in time order (file order among equal times).
//! Only identical records are duplicates: the whole event, every field,
//! compared as a JSON value (so key order and spacing do not matter).
//! Timestamps are whole seconds, so two messages queued for one task in
//! the same second share task, actor, time and action and differ only in
//! their other fields (`seq`); both are kept. Each prints as one
//! Markdown list entry:
//! `- <UTC time> · <task> · <actor> · <action>[ · key=value, …]`.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::{Map, Value};

use crate::error::Result;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;
use crate::{clock, events, fsx};

/// The task and its descendants (through meta `parent=`), sorted.
pub(crate) fn chain(home: &Home, root: &TaskId) -> Result<BTreeSet<String>> {
    let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for id in home.task_ids_with_meta()? {
        if let Some(meta) = TaskMeta::load(home, &id)?
            && let Some(p) = meta.parent
        {
            children
                .entry(p.to_string())
                .or_default()
                .push(id.to_string());
        }
    }
    Ok(descendants(&children, root.as_str()))
}

/// Pure walk of a parent → children map; safe against cycles.
pub(crate) fn descendants(
    children: &BTreeMap<String, Vec<String>>,
    root: &str,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(t) = todo.pop() {
        if seen.insert(t.clone())
            && let Some(kids) = children.get(&t)
        {
            todo.extend(kids.iter().cloned());
        }
    }
    seen
}

fn s<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

fn ts(m: &Map<String, Value>) -> u64 {
    m.get("ts").and_then(Value::as_u64).unwrap_or(0)
}

/// The chain's events from the bytes of `events.jsonl`: filtered to
/// `tasks`, identical records dropped (the first occurrence wins), in
/// time order.
#[allow(clippy::implicit_hasher, reason = "callers build a std HashSet")]
pub fn entries(bytes: &[u8], tasks: &HashSet<&str>) -> Vec<Map<String, Value>> {
    let mut seen = HashSet::new();
    let mut out: Vec<Map<String, Value>> = fsx::complete_lines(bytes)
        .split(|&b| b == b'\n')
        .filter_map(events::parse_line)
        .filter(|m| tasks.contains(s(m, "task")))
        // serde_json's map is ordered by key, so equal records serialise
        // to equal text whatever order their fields were written in.
        .filter(|m| seen.insert(Value::Object(m.clone()).to_string()))
        .collect();
    out.sort_by_key(ts);
    out
}

/// One Markdown list entry.
pub fn markdown(m: &Map<String, Value>) -> String {
    let mut line = format!(
        "- {} \u{b7} {} \u{b7} {} \u{b7} {}",
        clock::rfc3339(ts(m)),
        s(m, "task"),
        s(m, "actor"),
        s(m, "action")
    );
    let extra: Vec<String> = m
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "ts" | "task" | "actor" | "action"))
        .map(|(k, v)| match v {
            Value::String(t) => format!("{k}={}", t.replace('\n', " ")),
            other => format!("{k}={other}"),
        })
        .collect();
    if !extra.is_empty() {
        line.push_str(" \u{b7} ");
        line.push_str(&extra.join(", "));
    }
    line
}

/// Reads the trail of `root`'s chain.
pub(crate) fn trail(home: &Home, root: &TaskId) -> Result<Vec<Map<String, Value>>> {
    let tasks = chain(home, root)?;
    let set: HashSet<&str> = tasks.iter().map(String::as_str).collect();
    let bytes = fsx::read_optional(&home.events())?.unwrap_or_default();
    Ok(entries(&bytes, &set))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_deduplicated_and_ordered() {
        let log = concat!(
            r#"{"ts":30,"tool":"fm-send","task":"kid","action":"inbox.queued","actor":"captain","seq":1}"#,
            "\n",
            r#"{"ts":10,"tool":"fm-brief","task":"top","action":"brief.written","actor":"captain"}"#,
            "\n",
            r#"{"ts":10,"tool":"fm-brief","task":"top","action":"brief.written","actor":"captain"}"#,
            "\n",
            r#"{"ts":20,"tool":"fm-status","task":"other","action":"status.appended","actor":"other"}"#,
            "\n",
            "not json\n",
            r#"{"ts":5,"tool":"x","task":"kid","action":"torn""#,
        );
        let tasks: HashSet<&str> = ["top", "kid"].into();
        let same_second = concat!(
            r#"{"ts":10,"tool":"fm-brief","task":"kid","action":"brief.written","actor":"captain"}"#,
            "\n",
        );
        let both = entries(format!("{log}\n{same_second}").as_bytes(), &tasks);
        assert_eq!(
            both.len(),
            3,
            "same actor, second and action on another task is another event"
        );
        let e = entries(log.as_bytes(), &tasks);
        let lines: Vec<String> = e.iter().map(markdown).collect();
        assert_eq!(
            lines,
            vec![
                "- 1970-01-01T00:00:10Z \u{b7} top \u{b7} captain \u{b7} brief.written \u{b7} tool=fm-brief",
                "- 1970-01-01T00:00:30Z \u{b7} kid \u{b7} captain \u{b7} inbox.queued \u{b7} seq=1, tool=fm-send",
            ]
        );
    }

    #[test]
    fn only_identical_records_are_duplicates() {
        let log = concat!(
            r#"{"ts":7,"tool":"fm-send","task":"c1","action":"inbox.queued","actor":"captain","seq":1}"#,
            "\n",
            r#"{"ts":7,"tool":"fm-send","task":"c1","action":"inbox.queued","actor":"captain","seq":2}"#,
            "\n",
            r#"{"actor":"captain", "seq":2, "action":"inbox.queued", "task":"c1", "tool":"fm-send", "ts":7}"#,
            "\n",
        );
        let tasks: HashSet<&str> = ["c1"].into();
        let e = entries(log.as_bytes(), &tasks);
        let seqs: Vec<&Value> = e.iter().map(|m| &m["seq"]).collect();
        assert_eq!(seqs, [1, 2], "same second, two messages: both kept once");
    }

    #[test]
    fn descendants_follow_parents_and_survive_cycles() {
        let mut c = BTreeMap::new();
        c.insert("a".to_string(), vec!["b".to_string(), "c".to_string()]);
        c.insert("b".to_string(), vec!["d".to_string(), "a".to_string()]);
        let d = descendants(&c, "a");
        assert_eq!(d.into_iter().collect::<Vec<_>>(), vec!["a", "b", "c", "d"]);
        assert_eq!(descendants(&c, "c").len(), 1);
    }
}
