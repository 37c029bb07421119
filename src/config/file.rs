//! Reading `firstmate.toml`: toml's spanned tree turns a deserialisation
//! error into `file:line` and the dotted key, and `serde_ignored` reports
//! the keys no section struct has, each at its own line.

use std::ops::Range;
use std::path::Path;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::Config;
use crate::error::{Error, Result};

/// The file's spanned tree (an empty text is an empty table).
pub(super) fn parse<'i>(path: &Path, text: &'i str) -> Result<Spanned<DeTable<'i>>> {
    DeTable::parse(text).map_err(|e| {
        // Name the offending text (a duplicate key, say) when the error
        // points at a short single-line span.
        let key = e
            .span()
            .and_then(|s| text.get(s))
            .map(|k| k.trim().trim_matches('"'))
            .filter(|k| !k.is_empty() && k.len() <= 64 && !k.contains('\n'))
            .unwrap_or("(syntax)")
            .to_string();
        Error::Config {
            path: path.to_path_buf(),
            line: e.span().map_or(1, |s| line_of(text, s.start)),
            key,
            msg: e.message().trim().to_string(),
        }
    })
}

/// Deserialises `tree` (parsed from `text`), collecting unknown keys as
/// warnings.
pub(super) fn read(path: &Path, text: &str, tree: &Spanned<DeTable>) -> Result<Config> {
    let err = |line: usize, key: String, msg: String| Error::Config {
        path: path.to_path_buf(),
        line,
        key,
        msg,
    };
    let mut unknown = Vec::new();
    let de = toml::de::Deserializer::from(tree.clone());
    let mut cfg: Config =
        serde_ignored::deserialize(de, |p| unknown.push(segments(&p))).map_err(|e| {
            let span = e.span();
            let key = span
                .as_ref()
                .and_then(|s| key_at(tree.get_ref(), s))
                .unwrap_or_else(|| "(file)".into());
            let line = span.map_or(1, |s| line_of(text, s.start));
            err(line, key, describe(e.message()))
        })?;
    cfg.warnings = unknown
        .into_iter()
        .flat_map(|keys| per_key(tree.get_ref(), keys))
        .map(|keys| {
            let line = key_span(tree.get_ref(), &keys).map_or(1, |s| line_of(text, s.start));
            format!(
                "{}:{line}: unknown key {} (ignored)",
                path.display(),
                keys.join(".")
            )
        })
        .collect();
    Ok(cfg)
}

/// The table keys of an ignored value's path (`watch.bogus` → both).
fn segments(p: &serde_ignored::Path) -> Vec<String> {
    use serde_ignored::Path;
    match p {
        Path::Root => Vec::new(),
        Path::Map { parent, key } => {
            let mut v = segments(parent);
            v.push(key.clone());
            v
        }
        Path::Seq { parent, index } => {
            let mut v = segments(parent);
            v.push(index.to_string());
            v
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => segments(parent),
    }
}

/// An unknown `[section]` is reported key by key, each at its own line; an
/// empty one, or any other unknown key, as itself.
fn per_key(tree: &DeTable, keys: Vec<String>) -> Vec<Vec<String>> {
    if let [section] = keys.as_slice()
        && let Some((_, v)) = tree
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == section.as_str())
        && let Some(body) = v.get_ref().as_table()
        && !body.is_empty()
    {
        return body
            .keys()
            .map(|k| vec![section.clone(), k.get_ref().to_string()])
            .collect();
    }
    vec![keys]
}

/// Where the key at `keys` is written.
fn key_span(table: &DeTable, keys: &[String]) -> Option<Range<usize>> {
    let (first, rest) = keys.split_first()?;
    let (k, v) = table
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == first.as_str())?;
    if rest.is_empty() {
        return Some(k.span());
    }
    key_span(v.get_ref().as_table()?, rest).or(Some(k.span()))
}

/// The dotted key whose value holds `at` (the span of a deserialisation
/// error); the innermost table key, never an array index.
fn key_at(table: &DeTable, at: &Range<usize>) -> Option<String> {
    table.iter().find_map(|(k, v)| {
        if let DeValue::Table(inner) = v.get_ref()
            && let Some(sub) = key_at(inner, at)
        {
            return Some(format!("{}.{sub}", k.get_ref()));
        }
        let s = v.span();
        (s.start <= at.start && at.end <= s.end).then(|| k.get_ref().to_string())
    })
}

/// serde says `invalid type: string "soon", expected a non-negative
/// integer`; the key and line are already named, so keep what was wanted.
fn describe(msg: &str) -> String {
    let msg = msg.trim();
    match msg.split_once(", expected ") {
        Some((head, want)) if head.starts_with("invalid ") => {
            let want = match want {
                "a sequence" => "an array of strings",
                "a map" => "a table",
                w => w,
            };
            format!("expected {want}")
        }
        _ => msg.to_string(),
    }
}

/// 1-based line of byte offset `pos`.
fn line_of(text: &str, pos: usize) -> usize {
    text.as_bytes()[..pos.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
