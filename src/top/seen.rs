//! The dashboard's view of the wakes feed (`state/wakes.log`, docs/spec/watch.md#wakes):
//! how many wakes arrived since the captain last looked, and the feed as
//! the `w` view shows it.
//!
//! "Seen" is the dashboard's own cursor, `state/.top.cursor` (a byte offset
//! into `wakes.log`, replaced atomically), not `fm-watch --drain`'s
//! `.wakes.cursor`: a captain who looks at the feed in `fm top` must not
//! make an agent's `--drain` loop miss those wakes, and a `--drain` must
//! not hide them from the dashboard. A log shorter than the cursor (it was
//! replaced) counts from its start.
//!
//! The wakes of configured hosts join the feed (read in the background by
//! [`crate::remote::wakes::Feed`]); what was seen of each host is the
//! highest sequence number the `w` view showed of it, in
//! `state/.top-hosts.cursor` (`<host>\t<seq>` lines).

use std::collections::BTreeMap;

use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::remote::wakes::Merged;
use crate::wakes::{self, Wake};

/// Most feed lines the `w` view holds.
pub const FEED_LINES: usize = 500;

/// One wake as the `w` view lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedLine {
    pub wake: Wake,
    /// It arrived after the dashboard's cursor.
    pub new: bool,
    /// The host it came from; `None` for a local wake.
    pub host: Option<String>,
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

/// The highest sequence number seen of each host.
fn host_cursors(home: &Home) -> BTreeMap<String, u64> {
    let bytes = fsx::read_optional(&home.top_hosts_cursor())
        .ok()
        .flatten()
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| {
            let (name, seq) = l.split_once('\t')?;
            Some((name.to_string(), seq.trim().parse().ok()?))
        })
        .collect()
}

/// The hosts' wakes not seen yet, of `hosts` (each with its host).
pub fn unseen_hosts(home: &Home, hosts: &[Merged]) -> usize {
    if hosts.is_empty() {
        return 0;
    }
    let seen = host_cursors(home);
    hosts.iter().filter(|m| is_new(&seen, m)).count()
}

fn is_new(seen: &BTreeMap<String, u64>, m: &Merged) -> bool {
    m.host
        .as_ref()
        .is_some_and(|h| seen.get(h).is_none_or(|&s| m.wake.seq > s))
}

/// The last [`FEED_LINES`] wakes, local and the hosts' (`hosts`, as the
/// background feed has them) in time order, those after the cursors marked
/// new, and the cursors moved past all of them.
pub fn open(home: &Home, hosts: &[Merged]) -> Result<Vec<FeedLine>> {
    let (lines, end) = read(home, hosts)?;
    mark(home, hosts, end)?;
    Ok(lines)
}

/// [`open`] without moving the cursors (`fm serve`'s pages, whose GET
/// changes nothing), and the local log's end to [`mark`] later.
pub fn read(home: &Home, hosts: &[Merged]) -> Result<(Vec<FeedLine>, u64)> {
    let from = cursor(home);
    let (all, end) = wakes::read_since(home, 0)?;
    let (fresh, _) = wakes::read_since(home, from)?;
    let first_new = fresh.first().map(|w| w.seq);
    let seen = host_cursors(home);
    let mut lines: Vec<FeedLine> = all
        .into_iter()
        .map(|wake| FeedLine {
            new: first_new.is_some_and(|s| wake.seq >= s),
            wake,
            host: None,
        })
        .collect();
    lines.extend(hosts.iter().map(|m| FeedLine {
        new: is_new(&seen, m),
        wake: m.wake.clone(),
        host: m.host.clone(),
    }));
    // Stable: a local wake first on a tie, then the hosts in the order given.
    lines.sort_by_key(|l| l.wake.epoch);
    let skip = lines.len().saturating_sub(FEED_LINES);
    lines.drain(..skip);
    Ok((lines, end))
}

/// Moves the cursors past `end` of the local log and past each of
/// `hosts`' wakes.
pub fn mark(home: &Home, hosts: &[Merged], end: u64) -> Result<()> {
    let _guard = fsx::lock(&cursors_lock(home), fsx::LOCK_WAIT)?;
    fsx::atomic_write(&home.top_cursor(), format!("{end}\n").as_bytes())?;
    mark_hosts(home, &hosts.iter().collect::<Vec<_>>())
}

/// The lock both cursors are moved under (`fm top` and `fm serve` may
/// move them at once; the hosts' file is read, changed and replaced).
fn cursors_lock(home: &Home) -> std::path::PathBuf {
    home.state_dir().join(".top.cursor.lock")
}

/// Moves each host's cursor past its wakes in `hosts` (never back).
fn mark_hosts(home: &Home, hosts: &[&Merged]) -> Result<()> {
    if hosts.is_empty() {
        return Ok(());
    }
    let mut cursors = host_cursors(home);
    for m in hosts {
        if let Some(h) = &m.host {
            let c = cursors.entry(h.clone()).or_insert(0);
            *c = (*c).max(m.wake.seq);
        }
    }
    let mut text = String::new();
    for (h, s) in &cursors {
        text.push_str(&format!("{h}\t{s}\n"));
    }
    fsx::atomic_write(&home.top_hosts_cursor(), text.as_bytes())
}

/// Moves the cursors past what a page showed, not past what arrived
/// since: the local log up to offset `upto` (never beyond its end now,
/// never back), and each host up to its sequence number in `shown`
/// (`hosts` is the hosts' feed now). How many wakes became seen.
pub fn mark_shown(
    home: &Home,
    hosts: &[Merged],
    upto: u64,
    shown: &BTreeMap<String, u64>,
) -> Result<usize> {
    let _guard = fsx::lock(&cursors_lock(home), fsx::LOCK_WAIT)?;
    let from = cursor(home);
    let read = wakes::read_since_each(home, from)?;
    let upto = upto.min(read.end);
    let seen_now = read.wakes.iter().filter(|(_, at)| *at <= upto).count();
    if seen_now > 0 || read.started != from {
        fsx::atomic_write(&home.top_cursor(), format!("{upto}\n").as_bytes())?;
    }
    let before = host_cursors(home);
    let far: Vec<&Merged> = hosts
        .iter()
        .filter(|m| {
            m.host
                .as_ref()
                .and_then(|h| shown.get(h))
                .is_some_and(|&s| m.wake.seq <= s)
        })
        .collect();
    let seen_far = far.iter().filter(|m| is_new(&before, m)).count();
    mark_hosts(home, &far)?;
    Ok(seen_now + seen_far)
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
        let lines = open(&home, &[]).unwrap();
        assert_eq!(lines.iter().filter(|l| l.new).count(), 2);
        assert_eq!(unseen(&home).unwrap(), 0);
        wakes::append(&home, "t1", "status", "done: x", 3).unwrap();
        assert_eq!(unseen(&home).unwrap(), 1);
        let lines = open(&home, &[]).unwrap();
        let new: Vec<bool> = lines.iter().map(|l| l.new).collect();
        assert_eq!(new, [false, false, true]);
        assert!(!home.wakes_cursor().exists(), "--drain's cursor untouched");
    }

    #[test]
    fn the_hosts_wakes_join_the_feed_in_time_order_with_their_own_cursor() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        wakes::append(&home, "l1", "status", "done: local", 20).unwrap();
        let far = |seq, epoch, text: &str| Merged {
            wake: Wake {
                seq,
                epoch,
                task: "r1".into(),
                kind: "status".into(),
                text: text.into(),
            },
            host: Some("far".into()),
        };
        let mut hosts = vec![far(1, 10, "one"), far(2, 30, "two")];
        assert_eq!(unseen_hosts(&home, &hosts), 2);
        let lines = open(&home, &hosts).unwrap();
        let shown: Vec<(&str, Option<&str>, bool)> = lines
            .iter()
            .map(|l| (l.wake.text.as_str(), l.host.as_deref(), l.new))
            .collect();
        assert_eq!(
            shown,
            [
                ("one", Some("far"), true),
                ("done: local", None, true),
                ("two", Some("far"), true)
            ]
        );
        assert_eq!(unseen_hosts(&home, &hosts), 0);
        hosts.push(far(3, 40, "three"));
        assert_eq!(unseen_hosts(&home, &hosts), 1);
        let lines = open(&home, &hosts).unwrap();
        let new: Vec<bool> = lines.iter().map(|l| l.new).collect();
        assert_eq!(new, [false, false, false, true]);
        assert_eq!(
            std::fs::read_to_string(home.top_hosts_cursor()).unwrap(),
            "far\t3\n"
        );
        assert!(
            !home.wakes_hosts_cursor().exists(),
            "--drain's cursors untouched"
        );
    }
}
