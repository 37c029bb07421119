//! `FM_<SECTION>_<KEY>` overrides (SPEC §1.4) for every scalar key.

use super::Config;
use crate::error::{Error, Result};

/// Applies `FM_<SECTION>_<KEY>` to every scalar key: the config is written
/// out as a table, the named values replaced (parsed as the key's type),
/// and read back.
pub(super) fn apply_env(cfg: Config, env: &[(String, String)]) -> Result<Config> {
    if !env.iter().any(|(k, _)| k.starts_with("FM_")) {
        return Ok(cfg);
    }
    let mut table = toml::Table::try_from(&cfg).map_err(|e| Error::EnvVar {
        var: "FM_*".into(),
        msg: e.to_string(),
    })?;
    let mut changed = false;
    for (section, body) in table.iter_mut() {
        let Some(body) = body.as_table_mut() else {
            continue;
        };
        for (key, value) in body.iter_mut() {
            let var = format!("FM_{}_{}", section.to_uppercase(), key.to_uppercase());
            let Some((_, raw)) = env.iter().find(|(k, _)| *k == var) else {
                continue;
            };
            let (parsed, want) = match value {
                toml::Value::Integer(_) => (
                    raw.trim()
                        .parse::<u64>()
                        .ok()
                        .and_then(|n| i64::try_from(n).ok())
                        .map(toml::Value::Integer),
                    "a non-negative integer",
                ),
                toml::Value::Boolean(_) => (
                    raw.trim().parse::<bool>().ok().map(toml::Value::Boolean),
                    "true or false",
                ),
                toml::Value::String(_) => (Some(toml::Value::String(raw.clone())), "a string"),
                // Arrays and tables are not scalars: no override.
                _ => continue,
            };
            *value = parsed.ok_or_else(|| Error::EnvVar {
                var: var.clone(),
                msg: format!("expected {want}, got {raw:?}"),
            })?;
            changed = true;
        }
    }
    if !changed {
        return Ok(cfg);
    }
    let mut out: Config = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| Error::EnvVar {
            var: "FM_*".into(),
            msg: e.message().to_string(),
        })?;
    out.harness = cfg.harness;
    out.warnings = cfg.warnings;
    Ok(out)
}
