//! Counters kept in the home's files (record numbers, wake sequence
//! numbers, board ids, spawn generations): the next one is one more than
//! the last, and a counter that would pass the highest number its readers
//! accept is refused, never wrapped or written under a name no reader
//! parses.

use super::*;

/// The highest number a numbered name (`NNN.msg`, `NNN.md`) or a wake's
/// sequence number may carry: 19 digits, the most any reader parses.
pub const MAX_NUMBER: u64 = 9_999_999_999_999_999_999;

/// The number after `last` for a counter kept in `path` whose readers
/// accept numbers up to `max`; refused (exit 1), naming the file, once it
/// would pass `max`.
pub fn next_number(last: u64, max: u64, path: &Path) -> Result<u64> {
    match last.checked_add(1) {
        Some(n) if n <= max => Ok(n),
        _ => Err(Error::refused(format!(
            "refusing to count past {max} in {} (the last number is {last}; readers accept none higher)",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_stop_at_their_readers_limit_instead_of_wrapping() {
        let p = Path::new("/h/state/wakes.log");
        assert_eq!(next_number(0, MAX_NUMBER, p).unwrap(), 1);
        assert_eq!(
            next_number(MAX_NUMBER - 1, MAX_NUMBER, p).unwrap(),
            MAX_NUMBER
        );
        for last in [MAX_NUMBER, u64::MAX] {
            let e = next_number(last, MAX_NUMBER, p).unwrap_err();
            assert_eq!(e.exit_code(), 1);
            assert!(e.to_string().contains("/h/state/wakes.log"), "{e}");
        }
        // The largest number is still a name readers parse.
        let name = numbered_name(MAX_NUMBER, "msg");
        assert_eq!(parse_numbered(&name, "msg"), Some(MAX_NUMBER));
        assert_eq!(
            parse_numbered(&numbered_name(MAX_NUMBER + 1, "msg"), "msg"),
            None
        );
    }
}
