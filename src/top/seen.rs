//! The dashboard's view of the wakes feed (`state/wakes.log`, SPEC §6.3):
//! how many wakes arrived since the captain last looked, and the feed as
//! the `w` view shows it.
//!
//! "Seen" is the dashboard's own cursor, `state/.top.cursor` (a byte offset
//! into `wakes.log`, replaced atomically), not `fm-watch --drain`'s
//! `.wakes.cursor`: a captain who looks at the feed in `fm top` must not
//! make an agent's `--drain` loop miss those wakes, and a `--drain` must
//! not hide them from the dashboard. A log shorter than the cursor (it was
//! replaced) counts from its start.

use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::wakes::{self, Wake};

/// Most feed lines the `w` view holds.
pub const FEED_LINES: usize = 500;

/// One wake as the `w` view lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedLine {
    pub wake: Wake,
    /// It arrived after the dashboard's cursor.
    pub new: bool,
}

/// The cursor; 0 when there is none yet.
pub fn cursor(home: &Home) -> u64 {
    fsx::read_optional(&home.top_cursor())
        .ok()
        .flatten()
        .and_then(|b| String::from_utf8_lossy(&b).trim().parse().ok())
        .unwrap_or(0)
}

/// Wakes after the cursor.
pub fn unseen(home: &Home) -> Result<usize> {
    Ok(wakes::read_since(home, cursor(home))?.0.len())
}

/// The last [`FEED_LINES`] wakes, those after the cursor marked new, and
/// the cursor moved past all of them.
pub fn open(home: &Home) -> Result<Vec<FeedLine>> {
    let from = cursor(home);
    let (all, end) = wakes::read_since(home, 0)?;
    let (fresh, _) = wakes::read_since(home, from)?;
    let first_new = fresh.first().map(|w| w.seq);
    let skip = all.len().saturating_sub(FEED_LINES);
    let lines = all
        .into_iter()
        .skip(skip)
        .map(|wake| FeedLine {
            new: first_new.is_some_and(|s| wake.seq >= s),
            wake,
        })
        .collect();
    fsx::atomic_write(&home.top_cursor(), format!("{end}\n").as_bytes())?;
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_marks_what_was_seen_and_is_not_drains() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        assert_eq!(unseen(&home).unwrap(), 0);
        wakes::append(&home, "t1", "status", "needs-decision: a", 1).unwrap();
        wakes::append(&home, "t2", "escalation", "001.msg", 2).unwrap();
        assert_eq!(unseen(&home).unwrap(), 2);
        let lines = open(&home).unwrap();
        assert_eq!(lines.iter().filter(|l| l.new).count(), 2);
        assert_eq!(unseen(&home).unwrap(), 0);
        wakes::append(&home, "t1", "status", "done: x", 3).unwrap();
        assert_eq!(unseen(&home).unwrap(), 1);
        let lines = open(&home).unwrap();
        let new: Vec<bool> = lines.iter().map(|l| l.new).collect();
        assert_eq!(new, [false, false, true]);
        assert!(!home.wakes_cursor().exists(), "--drain's cursor untouched");
    }
}
