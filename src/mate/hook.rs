//! The first mate's harness hooks (docs/spec/mate.md#hooks).

use crate::config::Config;
use crate::error::Result;
use crate::home::Home;

/// Runs hook `event` for `harness`.
pub fn run(
    _home: &Home,
    _cfg: &Config,
    _event: &str,
    _harness: &str,
    _timeout: Option<f64>,
) -> Result<u8> {
    Ok(0)
}
