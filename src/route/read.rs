//! Reads of a task on a host (a status fold, an inbox listing, a body):
//! the far tool runs as given, once (a read is safe to repeat), and its
//! answer is printed as the far tool printed it.

use super::Remote;
use crate::error::Result;
use crate::home::Home;

/// Runs `tool args…` on `host` and prints its answer; its exit code.
pub fn relay(home: &Home, host: &Remote, tool: &str, args: &[&str]) -> Result<u8> {
    crate::remote::call::relay(home, host, tool, args)
}

/// [`relay`] for a tool printing a message body, printed byte-exact.
pub fn relay_body(home: &Home, host: &Remote, tool: &str, args: &[&str]) -> Result<u8> {
    crate::remote::call::relay_body(home, host, tool, args)
}
