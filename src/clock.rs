//! Time: the current Unix second, the UTC stamps written into records, and
//! the renderings a person reads.
//!
//! Logic takes a plain `now` (epoch seconds) as an argument instead of
//! reading the system clock deep inside, so decisions can be tested at any
//! instant without sleeping. Calendar arithmetic and validation are
//! `jiff`'s: a stamp names a real instant or is refused.

use std::time::{SystemTime, UNIX_EPOCH};

use jiff::Timestamp;

/// Current Unix seconds from the system clock.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The stamp format records carry: UTC, RFC 3339 to the second, `Z`.
const STAMP: &str = "%Y-%m-%dT%H:%M:%SZ";

/// The instant of `epoch`, clamped to the last one jiff represents (late on
/// 9999-12-30 UTC) rather than wrapped.
fn instant(epoch: u64) -> Timestamp {
    i64::try_from(epoch)
        .ok()
        .and_then(|s| Timestamp::from_second(s).ok())
        .unwrap_or(Timestamp::MAX)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for Unix seconds (UTC, RFC 3339 to the second):
/// the inbox record's `at=` header, and the ISO form JSON reports carry.
pub fn rfc3339(epoch: u64) -> String {
    instant(epoch).strftime(STAMP).to_string()
}

/// `YYYY-MM-DD HH:MM UTC`, for human-facing notes.
pub fn human_utc(epoch: u64) -> String {
    instant(epoch).strftime("%Y-%m-%d %H:%M UTC").to_string()
}

/// Unix seconds of a `YYYY-MM-DDTHH:MM:SSZ` stamp (the form [`rfc3339`]
/// writes); `None` for any other shape, a date that does not exist
/// (`2026-02-31`), or an instant before 1970.
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    // jiff reads every RFC 3339 form (offsets, fractions, lower case); the
    // records hold only the one this module writes.
    let b = s.as_bytes();
    if b.len() != 20 || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let t: Timestamp = s.parse().ok()?;
    u64::try_from(t.as_second()).ok()
}

/// A short age like `42s`, `5m`, `3h`, `2d`.
pub fn age(secs: u64) -> String {
    let (n, unit) = age_in_units(secs);
    format!("{n}{unit}")
}

/// [`age`] as its number and its unit (`s`, `m`, `h` or `d`).
pub(crate) fn age_in_units(secs: u64) -> (u64, char) {
    match secs {
        s if s < 60 => (s, 's'),
        s if s < 3600 => (s / 60, 'm'),
        s if s < 86_400 => (s / 3600, 'h'),
        s => (s / 86_400, 'd'),
    }
}

/// How long before `now` the instant `then` was: `3m ago`; a `then` after
/// `now` (a skewed clock, a hand-written stamp) reads `in 3m`.
pub fn ago(then: u64, now: u64) -> String {
    if then > now {
        format!("in {}", age(then - now))
    } else {
        format!("{} ago", age(now - then))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_796_030_102), "2026-11-30T09:15:02Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(human_utc(1_796_030_102), "2026-11-30 09:15 UTC");
        for t in [0, 951_782_400, 1_796_030_102, 4_102_444_799] {
            assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t));
        }
        for bad in [
            "",
            "2026-11-30 09:15:02Z",
            "2026-13-30T09:15:02Z",
            "2026-11-30T09:15:02",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn impossible_dates_and_other_forms_are_refused() {
        for bad in [
            "2026-02-31T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-04-31T12:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T09:60:00Z",
            "2026-11-30t09:15:02z",
            "2026-11-30T09:15:02+00:00",
            "2026-11-30T09:15:02.5Z",
            "1969-12-31T23:59:59Z",
            "+2026-11-30T09:15:02Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        assert_eq!(parse_rfc3339("2024-02-29T00:00:00Z"), Some(1_709_164_800));
    }

    #[test]
    fn far_instants_are_clamped_not_wrapped() {
        let last = rfc3339(253_402_207_200);
        assert_eq!(last, "9999-12-30T22:00:00Z");
        assert_eq!(parse_rfc3339(&last), Some(253_402_207_200));
        assert_eq!(rfc3339(253_402_300_799), last);
        assert_eq!(rfc3339(u64::MAX), last);
    }

    #[test]
    fn ages() {
        assert_eq!(age(5), "5s");
        assert_eq!(age(125), "2m");
        assert_eq!(age(7200), "2h");
        assert_eq!(age(200_000), "2d");
        assert_eq!(ago(1000, 1180), "3m ago");
        assert_eq!(ago(1000, 1000), "0s ago");
        assert_eq!(ago(1300, 1000), "in 5m");
    }
}
