//! `FM_<SECTION>_<KEY>` overrides (docs/spec/config.md) for every scalar key.
//!
//! Which keys are scalars, and of which type, is read off the defaults as
//! they serialise, so a key added to a section gets its variable without
//! further code. A value is checked against that type here (so a bad one
//! names the variable) and then merged into the file's tree, where it is
//! deserialised like a value written in the file.

use std::borrow::Cow;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::Config;
use crate::error::{Error, Result};

/// Merges the overrides present in `env` into `tree`; whether there were any.
pub(super) fn merge<'a>(tree: &mut DeTable<'a>, env: &'a [(String, String)]) -> Result<bool> {
    if !env.iter().any(|(k, _)| k.starts_with("FM_")) {
        return Ok(false);
    }
    let defaults = toml::Table::try_from(Config::default()).map_err(|e| Error::EnvVar {
        var: "FM_*".into(),
        msg: e.to_string(),
    })?;
    let mut merged = false;
    for (section, body) in &defaults {
        let Some(body) = body.as_table() else {
            continue;
        };
        for (key, default) in body {
            let var = format!("FM_{}_{}", section.to_uppercase(), key.to_uppercase());
            let Some((_, raw)) = env.iter().find(|(k, _)| *k == var) else {
                continue;
            };
            let Some(value) = scalar(default, raw) else {
                if default.is_array() || default.is_table() {
                    continue;
                }
                return Err(Error::EnvVar {
                    msg: format!("expected {}, got {raw:?}", wanted(default)),
                    var,
                });
            };
            set(tree, section, key, value);
            merged = true;
        }
    }
    Ok(merged)
}

/// `raw` as a value of `default`'s type; `None` if it is not one (or the
/// key is not a scalar).
fn scalar<'a>(default: &toml::Value, raw: &'a str) -> Option<DeValue<'a>> {
    match default {
        toml::Value::String(_) => Some(DeValue::String(Cow::Borrowed(raw))),
        toml::Value::Integer(_) => {
            let digits = raw.trim();
            digits.parse::<u64>().ok()?;
            // TOML itself would refuse the `+` and leading zeros `parse` takes.
            let digits = digits.trim_start_matches('+').trim_start_matches('0');
            let digits = if digits.is_empty() { "0" } else { digits };
            Some(DeValue::parse(digits).ok()?.into_inner())
        }
        toml::Value::Boolean(_) => Some(DeValue::Boolean(raw.trim().parse().ok()?)),
        _ => None,
    }
}

fn wanted(default: &toml::Value) -> &'static str {
    match default {
        toml::Value::Integer(_) => "a non-negative integer",
        toml::Value::Boolean(_) => "true or false",
        _ => "a string",
    }
}

/// Sets `section.key` in `tree`, creating the section; a section the file
/// wrote as something other than a table was already refused.
fn set<'a>(tree: &mut DeTable<'a>, section: &str, key: &str, value: DeValue<'a>) {
    let name = |s: &str| Spanned::new(0..0, Cow::Owned(s.to_string()));
    if tree.get(section).is_none() {
        tree.insert(
            name(section),
            Spanned::new(0..0, DeValue::Table(DeTable::new())),
        );
    }
    if let Some(DeValue::Table(t)) = tree.get_mut(section).map(Spanned::get_mut) {
        t.insert(name(key), Spanned::new(0..0, value));
    }
}
