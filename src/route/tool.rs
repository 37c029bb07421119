//! Writes still made by the far host's own tool (a board change or
//! dispatch, a brief change): `tool --idempotency-key K args…`, its
//! arguments or body on stdin, retried with the same key while the host
//! is unreachable, the far answer printed as the tool's own. Each moves to
//! a typed request of the far entry ([`super::far`]) in its turn.

use super::Remote;
use crate::error::Result;
use crate::home::Home;

/// Runs the keyed write on `host` on what `subject` names (a task id, or
/// `board`); `given` is the caller's key, else a new one is made.
pub fn write(
    home: &Home,
    host: &Remote,
    subject: &str,
    tool: &str,
    args: &[&str],
    stdin: Option<&[u8]>,
    given: Option<&str>,
) -> Result<u8> {
    crate::remote::call::write_for(home, host, subject, tool, args, stdin, given)
}
