//! The captain's feed (docs/spec/watch.md#wakes): `state/wakes.log`, one line per wake,
//! `<seq>\t<epoch>\t<task>\t<kind>\t<text>`.
//!
//! Writers (the watcher, `fm-board`) append only through [`append`], which
//! holds `state/.wakes.lock` while it reads the last sequence number and
//! appends the next line, so sequence numbers are unique and increasing.
//! Fields never contain a tab or a newline ([`clean`] replaces them).
//! Readers trust only complete (`\n`-terminated) lines.

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::fsx;
use crate::home::Home;

/// Longest wake text kept; longer text is cut at a character boundary.
pub(crate) const MAX_TEXT: usize = 1000;

/// One wake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wake {
    pub seq: u64,
    pub epoch: u64,
    pub task: String,
    pub kind: String,
    pub text: String,
}

impl Wake {
    /// The line as stored, with its `\n`.
    pub fn to_line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\n",
            self.seq, self.epoch, self.task, self.kind, self.text
        )
    }
}

/// A field made safe for the log: control characters (tab, newline …)
/// become spaces, and text is cut to [`MAX_TEXT`] bytes.
pub fn clean(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if out.len() > MAX_TEXT {
        let mut cut = MAX_TEXT;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
}

/// Parses one line (without its `\n`); `None` for anything malformed.
pub fn parse_line(line: &[u8]) -> Option<Wake> {
    let line = String::from_utf8_lossy(line);
    let mut f = line.splitn(5, '\t');
    Some(Wake {
        seq: f.next()?.parse().ok()?,
        epoch: f.next()?.parse().ok()?,
        task: f.next()?.to_string(),
        kind: f.next()?.to_string(),
        text: f.next()?.to_string(),
    })
}

/// Wakes in the complete lines of `bytes`.
pub fn parse_all(bytes: &[u8]) -> Vec<Wake> {
    fsx::complete_lines(bytes)
        .split(|&b| b == b'\n')
        .filter_map(parse_line)
        .collect()
}

/// Reads `path` from byte `offset` to its end, at most
/// [`fsx::MAX_FILE`] bytes of it; a missing file reads as empty.
fn read_from_offset(path: &Path, offset: u64) -> Result<Vec<u8>> {
    Ok(
        fsx::read_from(path, fsx::Start::Offset(offset), fsx::MAX_FILE)?
            .map(|(bytes, _, _)| bytes)
            .unwrap_or_default(),
    )
}

/// The highest sequence number in the file's tail: the last complete
/// line's, or a torn fragment's after it (a watcher killed mid-append),
/// so a number a fragment already shows is never handed out again.
fn last_seq(path: &Path) -> Result<u64> {
    let len = fsx::stat(path)?.map_or(0, |m| m.len());
    if len == 0 {
        return Ok(0);
    }
    let mut from = len.saturating_sub(4 * MAX_TEXT as u64);
    loop {
        let tail = read_from_offset(path, from)?;
        let complete = fsx::complete_lines(&tail);
        let fragment = String::from_utf8_lossy(&tail[complete.len()..]);
        let torn: u64 = fragment
            .split('\t')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        // Skip the first (possibly partial) line unless we read from 0.
        let body = if from == 0 {
            complete
        } else {
            match complete.iter().position(|&b| b == b'\n') {
                Some(i) => &complete[i + 1..],
                None => &[],
            }
        };
        if let Some(w) = body
            .split(|&b| b == b'\n')
            .filter_map(parse_line)
            .next_back()
        {
            return Ok(w.seq.max(torn));
        }
        if from == 0 {
            return Ok(torn);
        }
        from = from.saturating_sub(64 * 1024);
    }
}

/// Appends a wake and returns it as stored (fields [`clean`]ed, with its
/// sequence number): what readers of the log, stdout and the `on_wake`
/// hook all see.
pub(crate) fn append(home: &Home, task: &str, kind: &str, text: &str, now: u64) -> Result<Wake> {
    fsx::ensure_dir(&home.state_dir())?;
    let path = home.wakes();
    let _guard = fsx::lock(&home.wakes_lock(), fsx::LOCK_WAIT)?;
    let seq = fsx::next_number(last_seq(&path)?, fsx::MAX_NUMBER, &path)?;
    let wake = Wake {
        seq,
        epoch: now,
        task: clean(task),
        kind: clean(kind),
        text: clean(text),
    };
    // A fragment left by a writer killed mid-line is ended by append_line.
    fsx::append_line(&path, wake.to_line().as_bytes())?;
    Ok(wake)
}

/// Wakes in complete lines from byte `offset`, and the offset just past
/// the last complete line read. A log shorter than `offset` (replaced or
/// truncated) is read from its start.
pub fn read_since(home: &Home, offset: u64) -> Result<(Vec<Wake>, u64)> {
    let path = home.wakes();
    let len = fsx::stat(&path)?.map_or(0, |m| m.len());
    let offset = if len < offset { 0 } else { offset };
    let bytes = read_from_offset(&path, offset)?;
    let complete = fsx::complete_lines(&bytes);
    Ok((parse_all(complete), offset + complete.len() as u64))
}

/// Wakes read by [`read_since_each`]: each with the offset just past its
/// line, where the read started, and where its complete lines end.
pub struct ReadEach {
    pub wakes: Vec<(Wake, u64)>,
    pub started: u64,
    pub end: u64,
}

/// As [`read_since`], each wake with the offset just past its line (a
/// reader that takes only some of them knows where it stopped), and the
/// offset the read started from (0 when the log was shorter than `offset`).
pub fn read_since_each(home: &Home, offset: u64) -> Result<ReadEach> {
    let path = home.wakes();
    let len = fsx::stat(&path)?.map_or(0, |m| m.len());
    let offset = if len < offset { 0 } else { offset };
    let bytes = read_from_offset(&path, offset)?;
    let complete = fsx::complete_lines(&bytes);
    let mut out = Vec::new();
    let mut at = offset;
    for line in complete.split_inclusive(|&b| b == b'\n') {
        at += line.len() as u64;
        if let Some(w) = parse_line(&line[..line.len() - 1]) {
            out.push((w, at));
        }
    }
    Ok(ReadEach {
        wakes: out,
        started: offset,
        end: offset + complete.len() as u64,
    })
}

/// Byte length of the complete lines of the log right now.
pub(crate) fn end_offset(home: &Home) -> Result<u64> {
    Ok(read_since(home, 0)?.1)
}

/// Whether a wake with exactly this task, kind and text and an epoch of
/// at least `since` is already logged: the watcher's guard against
/// repeating a ladder wake of the same episode (`since` is when the
/// record was queued, so a re-queued record with the same name and text
/// after a teardown is a new episode).
///
/// Wakes are appended in time order, so the log is read backwards from
/// its tail, in growing chunks, only until a line older than `since`.
pub fn exists_since(home: &Home, task: &str, kind: &str, text: &str, since: u64) -> Result<bool> {
    let (task, kind, text) = (clean(task), clean(kind), clean(text));
    let path = home.wakes();
    let len = match fsx::stat(&path)? {
        Some(m) if m.is_file() => m.len(),
        Some(_) => {
            return Err(Error::io(
                "read",
                &path,
                std::io::Error::other("not a regular file"),
            ));
        }
        None => return Ok(false),
    };
    let mut chunk = 16 * 1024u64;
    loop {
        let from = len.saturating_sub(chunk);
        let bytes = read_from_offset(&path, from)?;
        let bytes = &bytes[..bytes.len().min((len - from) as usize)];
        let complete = fsx::complete_lines(bytes);
        // Skip the first (possibly partial) line unless we read from 0.
        let body = match (from, complete.iter().position(|&b| b == b'\n')) {
            (0, _) => complete,
            (_, Some(i)) => &complete[i + 1..],
            (_, None) => &[][..],
        };
        let mut reached_older = false;
        for w in body.split(|&b| b == b'\n').rev().filter_map(parse_line) {
            if w.epoch < since {
                reached_older = true;
                break;
            }
            if w.task == task && w.kind == kind && w.text == text {
                return Ok(true);
            }
        }
        if reached_older || from == 0 {
            return Ok(false);
        }
        chunk = chunk.saturating_mul(4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> (tempfile::TempDir, Home) {
        let d = tempfile::tempdir().unwrap();
        let h = Home::at(d.path()).unwrap();
        (d, h)
    }

    #[test]
    fn append_numbers_and_reads_back() {
        let (_d, h) = home();
        assert_eq!(append(&h, "t1", "status", "done: x", 5).unwrap().seq, 1);
        let stored = append(&h, "t2", "escalation", "a\tb\nc", 6).unwrap();
        assert_eq!(stored.seq, 2);
        let (w, off) = read_since(&h, 0).unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(w[1].text, "a b c");
        assert_eq!(w[1], stored, "the returned wake is the stored one");
        assert!(exists_since(&h, "t2", "escalation", "a\tb\nc", 0).unwrap());
        assert!(exists_since(&h, "t2", "escalation", "a b c", 6).unwrap());
        assert!(!exists_since(&h, "t2", "escalation", "a b c", 7).unwrap());
        assert!(!exists_since(&h, "t2", "overdue", "a b c", 0).unwrap());
        assert_eq!(read_since(&h, off).unwrap().0, vec![]);
    }

    #[test]
    fn exists_since_reads_back_only_to_the_episode_start() {
        let (_d, h) = home();
        append(&h, "t", "escalation", "001.msg unacknowledged", 10).unwrap();
        // Enough later lines to need more than one backward chunk.
        for i in 0..400u64 {
            append(&h, "u", "status", &"x".repeat(100), 20 + i).unwrap();
        }
        assert!(exists_since(&h, "t", "escalation", "001.msg unacknowledged", 10).unwrap());
        assert!(!exists_since(&h, "t", "escalation", "001.msg unacknowledged", 11).unwrap());
        assert!(!exists_since(&h, "t", "escalation", "nope", 0).unwrap());
    }

    #[test]
    fn a_torn_tail_is_ended_not_glued() {
        let (_d, h) = home();
        append(&h, "t", "status", "one", 1).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(h.wakes())
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"7\t1\tt\tsta"))
            .unwrap();
        assert_eq!(read_since(&h, 0).unwrap().0.len(), 1);
        // The fragment's number is never handed out again.
        assert_eq!(append(&h, "t", "status", "two", 2).unwrap().seq, 8);
        let w = read_since(&h, 0).unwrap().0;
        assert_eq!(w.last().unwrap().text, "two");
    }

    #[test]
    fn numbering_survives_garbage_lines_and_never_wraps() {
        let (_d, h) = home();
        append(&h, "t", "status", "one", 1).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(h.wakes())
            .and_then(|mut f| {
                std::io::Write::write_all(&mut f, b"garbage\n\xff\xfe\n99999999999999999999\tx\n")
            })
            .unwrap();
        // Lines that are not wakes (a 20-digit number does not parse) do
        // not count: the next number follows the last wake.
        assert_eq!(append(&h, "t", "status", "two", 2).unwrap().seq, 2);
        std::fs::OpenOptions::new()
            .append(true)
            .open(h.wakes())
            .and_then(|mut f| {
                std::io::Write::write_all(
                    &mut f,
                    format!("{}\t3\tt\tstatus\tmax\n", u64::MAX).as_bytes(),
                )
            })
            .unwrap();
        let before = std::fs::read(h.wakes()).unwrap();
        let err = append(&h, "t", "status", "three", 3).unwrap_err();
        assert_eq!(err.exit_code(), 1);
        assert!(err.to_string().contains("wakes.log"), "{err}");
        assert_eq!(
            std::fs::read(h.wakes()).unwrap(),
            before,
            "nothing appended"
        );
    }

    #[test]
    fn concurrent_appenders_get_unique_increasing_numbers() {
        let (_d, h) = home();
        std::thread::scope(|s| {
            for t in 0..8 {
                let h = &h;
                s.spawn(move || {
                    for i in 0..25 {
                        append(h, &format!("t{t}"), "status", &format!("line {i}"), 1).unwrap();
                    }
                });
            }
        });
        let seqs: Vec<u64> = read_since(&h, 0).unwrap().0.iter().map(|w| w.seq).collect();
        assert_eq!(seqs, (1..=200).collect::<Vec<u64>>());
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary() {
        let s = "é".repeat(MAX_TEXT);
        let c = clean(&s);
        assert!(c.len() <= MAX_TEXT);
        assert!(c.chars().all(|ch| ch == 'é'));
    }
}
