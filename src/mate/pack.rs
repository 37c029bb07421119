//! `fm mate init` (docs/spec/mate.md#init).

use crate::error::Result;

/// `fm mate init`.
pub fn init_cli(_dir: Option<&std::path::Path>, _harness: &str, _force: bool) -> Result<u8> {
    Ok(0)
}
