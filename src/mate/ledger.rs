//! The first mate's ledger (docs/spec/mate.md#ledger): how far the lead
//! acknowledged the feeds, and the wake packets it was shown.
//!
//! `state/.mate.cursor` holds the acknowledged position: `-\t<offset>` for
//! the local `wakes.log`, `<host>\t<offset>` per host. It moves only when
//! the lead acknowledges a packet (`fm wake --ack <token>`), never when a
//! packet is printed, so a lead interrupted mid-wake is shown the same
//! items again. `state/.mate.packets` keeps the newest [`KEEP`] packets
//! presented: `<n>\t<times shown>\t<acked 0|1>\t<epoch>\t<local end>\t<host>=<end>,…\t<session>`.
//! Both are replaced atomically under `state/.mate.lock`.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::fsx;
use crate::home::Home;

/// Packets remembered (older tokens read as unknown).
pub const KEEP: usize = 16;

/// A position in every feed: the local log's byte offset and each
/// host's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Position {
    pub local: u64,
    pub hosts: BTreeMap<String, u64>,
}

impl Position {
    /// The later of the two, feed by feed.
    #[must_use]
    pub fn max(&self, other: &Position) -> Position {
        let mut hosts = self.hosts.clone();
        for (h, &off) in &other.hosts {
            let e = hosts.entry(h.clone()).or_insert(off);
            *e = (*e).max(off);
        }
        Position {
            local: self.local.max(other.local),
            hosts,
        }
    }

    fn hosts_field(&self) -> String {
        self.hosts
            .iter()
            .map(|(h, o)| format!("{h}={o}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn parse_hosts(s: &str) -> Option<BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        for part in s.split(',').filter(|p| !p.is_empty()) {
            let (h, o) = part.split_once('=')?;
            out.insert(h.to_string(), o.parse().ok()?);
        }
        Some(out)
    }
}

/// One packet presented to the lead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    /// Its number; the token is `w<n>`.
    pub n: u64,
    /// How many times it was shown.
    pub shown: u32,
    pub acked: bool,
    /// When it was first shown.
    pub epoch: u64,
    /// Where the wakes it holds end: acknowledging it moves the cursor here.
    pub end: Position,
    /// The harness session of the waiter that first showed it, when one
    /// did (`-` in the file otherwise).
    pub session: Option<String>,
}

impl Presented {
    pub fn token(&self) -> String {
        token(self.n)
    }

    fn line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            self.n,
            self.shown,
            u8::from(self.acked),
            self.epoch,
            self.end.local,
            self.end.hosts_field(),
            self.session.as_deref().unwrap_or("-")
        )
    }

    fn parse(line: &str) -> Option<Presented> {
        let mut f = line.split('\t');
        let n = f.next()?.parse().ok()?;
        let shown = f.next()?.parse().ok()?;
        let acked = match f.next()? {
            "0" => false,
            "1" => true,
            _ => return None,
        };
        let epoch = f.next()?.parse().ok()?;
        let local = f.next()?.parse().ok()?;
        let hosts = Position::parse_hosts(f.next().unwrap_or(""))?;
        let session = f
            .next()
            .filter(|s| *s != "-" && valid_session(s))
            .map(str::to_string);
        Some(Presented {
            n,
            shown,
            acked,
            epoch,
            end: Position { local, hosts },
            session,
        })
    }
}

/// Whether `s` can name a harness session here: 1 to 128 letters,
/// digits, `-`, `_` or `.` (Claude Code and Codex use UUIDs).
pub fn valid_session(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The token of packet `n`.
pub fn token(n: u64) -> String {
    format!("w{n}")
}

/// The packet number a token names; `None` when it is not one.
pub fn parse_token(t: &str) -> Option<u64> {
    let digits = t.strip_prefix('w')?;
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The cursor and the packets, as read under the lock.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    pub cursor: Position,
    /// Oldest first.
    pub packets: Vec<Presented>,
}

/// What an acknowledgement did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acked {
    /// The cursor moved to the packet's end.
    Moved(Presented),
    /// It was acknowledged before (or a later packet was): nothing changed.
    Already(Presented),
    /// No packet kept has that number.
    Unknown {
        oldest: Option<u64>,
        newest: Option<u64>,
    },
}

impl Ledger {
    /// Reads both files; a missing or unreadable line is left out (a
    /// fresh ledger reads as position 0, no packets).
    pub fn load(home: &Home) -> Result<Ledger> {
        let cursor_bytes = fsx::read_optional(&home.mate_cursor())?.unwrap_or_default();
        let mut cursor = Position::default();
        for line in String::from_utf8_lossy(&cursor_bytes).lines() {
            let Some((name, off)) = line.split_once('\t') else {
                continue;
            };
            let Ok(off) = off.trim().parse::<u64>() else {
                continue;
            };
            if name == "-" {
                cursor.local = off;
            } else {
                cursor.hosts.insert(name.to_string(), off);
            }
        }
        let packets_bytes = fsx::read_optional(&home.mate_packets())?.unwrap_or_default();
        let mut packets: Vec<Presented> = String::from_utf8_lossy(&packets_bytes)
            .lines()
            .filter_map(Presented::parse)
            .collect();
        packets.sort_by_key(|p| p.n);
        Ok(Ledger { cursor, packets })
    }

    /// The newest packet, if any.
    pub fn last(&self) -> Option<&Presented> {
        self.packets.last()
    }

    /// Where the lead's attention reaches: the cursor, or the newest
    /// packet's end while that packet is not acknowledged (its wakes were
    /// shown already).
    pub fn covered(&self) -> Position {
        match self.last() {
            Some(p) if !p.acked => self.cursor.max(&p.end),
            _ => self.cursor.clone(),
        }
    }

    /// Records a new packet ending at `end`, shown once (to `session`,
    /// when a harness's waiter showed it); returns it.
    pub fn present_new(&mut self, end: Position, epoch: u64, session: Option<String>) -> Presented {
        let n = self.last().map_or(1, |p| p.n + 1);
        let p = Presented {
            n,
            shown: 1,
            acked: false,
            epoch,
            end,
            session,
        };
        self.packets.push(p.clone());
        let extra = self.packets.len().saturating_sub(KEEP);
        self.packets.drain(..extra);
        p
    }

    /// Counts one more showing of the newest packet; returns it.
    pub fn present_again(&mut self) -> Option<Presented> {
        let p = self.packets.last_mut()?;
        p.shown = p.shown.saturating_add(1);
        Some(p.clone())
    }

    /// Acknowledges packet `n`: the cursor moves to its end (never back),
    /// and it and every older packet count as acknowledged.
    pub fn ack(&mut self, n: u64) -> Acked {
        let Some(i) = self.packets.iter().position(|p| p.n == n) else {
            return Acked::Unknown {
                oldest: self.packets.first().map(|p| p.n),
                newest: self.last().map(|p| p.n),
            };
        };
        let p = self.packets[i].clone();
        let newer_acked = self.packets[i..].iter().any(|q| q.acked);
        if newer_acked {
            return Acked::Already(p);
        }
        self.cursor = self.cursor.max(&p.end);
        for q in &mut self.packets[..=i] {
            q.acked = true;
        }
        Acked::Moved(p)
    }

    /// Writes both files (atomic replace each; the packets first, so a
    /// crash between them leaves a packet acknowledged whose cursor did
    /// not move: it is shown again, never lost).
    pub fn save(&self, home: &Home) -> Result<()> {
        fsx::ensure_dir(&home.state_dir())?;
        let packets: String = self.packets.iter().map(Presented::line).collect();
        fsx::atomic_write(&home.mate_packets(), packets.as_bytes())?;
        let mut cursor = format!("-\t{}\n", self.cursor.local);
        for (h, o) in &self.cursor.hosts {
            cursor.push_str(&format!("{h}\t{o}\n"));
        }
        fsx::atomic_write(&home.mate_cursor(), cursor.as_bytes())
    }
}

/// Holds `state/.mate.lock` for the guard's life.
pub fn lock(home: &Home) -> Result<fsx::LockGuard> {
    fsx::ensure_dir(&home.state_dir())?;
    fsx::lock(&home.mate_lock(), fsx::LOCK_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(local: u64, hosts: &[(&str, u64)]) -> Position {
        Position {
            local,
            hosts: hosts.iter().map(|(h, o)| ((*h).to_string(), *o)).collect(),
        }
    }

    #[test]
    fn tokens_round_trip_and_refuse_anything_else() {
        assert_eq!(parse_token(&token(12)), Some(12));
        for bad in [
            "",
            "w",
            "12",
            "w-1",
            "w1x",
            "W1",
            "w 1",
            "w99999999999999999999",
        ] {
            assert_eq!(parse_token(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn ack_moves_the_cursor_once_and_never_back() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let mut l = Ledger::load(&home).unwrap();
        assert_eq!(l.cursor, Position::default());
        let a = l.present_new(pos(100, &[("h1", 7)]), 1, None);
        let b = l.present_new(pos(250, &[("h1", 9), ("h2", 3)]), 2, Some("0b1e-77".into()));
        assert_eq!((a.n, b.n), (1, 2));
        assert_eq!(l.covered(), pos(250, &[("h1", 9), ("h2", 3)]));
        // The newer first: the older is then already covered.
        assert!(matches!(l.ack(2), Acked::Moved(_)));
        assert_eq!(l.cursor, pos(250, &[("h1", 9), ("h2", 3)]));
        assert!(matches!(l.ack(2), Acked::Already(_)));
        assert!(matches!(l.ack(1), Acked::Already(_)));
        assert_eq!(l.cursor.local, 250, "never back");
        assert!(matches!(
            l.ack(9),
            Acked::Unknown {
                oldest: Some(1),
                newest: Some(2)
            }
        ));
        l.save(&home).unwrap();
        let back = Ledger::load(&home).unwrap();
        assert_eq!(back.cursor, l.cursor);
        assert_eq!(back.packets, l.packets);
    }

    #[test]
    fn an_older_ack_moves_only_to_its_own_end() {
        let mut l = Ledger::default();
        l.present_new(pos(100, &[]), 1, None);
        l.present_new(pos(250, &[]), 2, None);
        assert!(matches!(l.ack(1), Acked::Moved(_)));
        assert_eq!(l.cursor.local, 100);
        assert!(!l.packets[1].acked);
        assert_eq!(l.covered().local, 250);
    }

    #[test]
    fn only_the_newest_packets_are_kept_and_garbage_lines_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let mut l = Ledger::default();
        for i in 0..(KEEP as u64 + 5) {
            l.present_new(pos(i * 10, &[]), i, None);
        }
        assert_eq!(l.packets.len(), KEEP);
        assert_eq!(l.packets[0].n, 6);
        l.save(&home).unwrap();
        let mut text = std::fs::read_to_string(home.mate_packets()).unwrap();
        text.push_str("garbage\n7\tx\t0\t1\t2\t\n99\t1\t2\t1\t2\t\n");
        std::fs::write(home.mate_packets(), text).unwrap();
        std::fs::write(home.mate_cursor(), "-\t40\nnot a line\nh1\tx\nh2\t5\n").unwrap();
        let back = Ledger::load(&home).unwrap();
        assert_eq!(back.packets.len(), KEEP);
        assert_eq!(back.cursor, pos(40, &[("h2", 5)]));
    }
}
