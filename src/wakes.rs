//! The captain's feed (SPEC §6.3): `state/wakes.log`, one wake per line,
//! `<seq>\t<epoch>\t<task>\t<kind>\t<text>`.
//!
//! Writers (the watcher, `fm-board` for `blocker` wakes) go through
//! [`append`]: under `state/.wakes.lock` it reads the last sequence number
//! and appends the next, so sequence numbers are unique and increasing
//! across processes. Tabs and newlines in a wake's fields become spaces, so
//! a wake is always exactly one line of five fields.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::fsx;
use crate::home::Home;

/// One parsed wake line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wake {
    pub seq: u64,
    pub at: u64,
    pub task: String,
    pub kind: String,
    pub text: String,
}

impl Wake {
    /// The line as written, ending in `\n`.
    pub fn to_line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\n",
            self.seq,
            self.at,
            flat(&self.task),
            flat(&self.kind),
            flat(&self.text)
        )
    }
}

fn flat(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

/// Parses one line (without its `\n`); `None` unless it has five fields
/// with numeric seq and epoch.
pub fn parse_line(line: &str) -> Option<Wake> {
    let mut it = line.splitn(5, '\t');
    let seq = it.next()?.parse().ok()?;
    let at = it.next()?.parse().ok()?;
    let task = it.next()?.to_string();
    let kind = it.next()?.to_string();
    let text = it.next()?.trim_end_matches('\r').to_string();
    Some(Wake {
        seq,
        at,
        task,
        kind,
        text,
    })
}

/// Every well-formed wake in complete lines of `bytes`, in file order.
pub fn parse_all(bytes: &[u8]) -> Vec<Wake> {
    String::from_utf8_lossy(fsx::complete_lines(bytes))
        .lines()
        .filter_map(parse_line)
        .collect()
}

/// The highest seq in the file (0 when empty or missing). Reads only the
/// tail unless the tail holds no well-formed line.
fn last_seq(home: &Home) -> Result<u64> {
    let path = home.wakes();
    let mut f = match File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(Error::Symlink(path)),
        Err(e) => return Err(Error::io("open", path, e)),
    };
    let len = f.metadata().map_err(|e| Error::io("stat", &path, e))?.len();
    const TAIL: u64 = 64 * 1024;
    let start = len.saturating_sub(TAIL);
    f.seek(SeekFrom::Start(start))
        .map_err(|e| Error::io("seek", &path, e))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)
        .map_err(|e| Error::io("read", &path, e))?;
    let max = |b: &[u8]| parse_all(b).iter().map(|w| w.seq).max();
    match max(&buf) {
        Some(n) => Ok(n),
        None if start > 0 => Ok(max(&fsx::read(&path)?).unwrap_or(0)),
        None => Ok(0),
    }
}

/// Appends one wake with seq = 1 + the last seq in the file, under the
/// wakes lock. Returns the seq written.
pub fn append(home: &Home, task: &str, kind: &str, text: &str, now: u64) -> Result<u64> {
    fsx::ensure_dir(&home.state_dir())?;
    let _guard = fsx::lock(&home.wakes_lock(), fsx::LOCK_WAIT)?;
    let seq = last_seq(home)? + 1;
    let wake = Wake {
        seq,
        at: now,
        task: task.to_string(),
        kind: kind.to_string(),
        text: text.to_string(),
    };
    fsx::append_line(&home.wakes(), wake.to_line().as_bytes())?;
    Ok(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_numbers_and_flattens() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        assert_eq!(
            append(&home, "T-001", "blocker", "no\tcreds\nat all", 5).unwrap(),
            1
        );
        assert_eq!(append(&home, "t2", "escalation", "x", 6).unwrap(), 2);
        let bytes = std::fs::read(home.wakes()).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            "1\t5\tT-001\tblocker\tno creds at all\n2\t6\tt2\tescalation\tx\n"
        );
        let w = parse_all(&bytes);
        assert_eq!(w.len(), 2);
        assert_eq!(
            w[1],
            Wake {
                seq: 2,
                at: 6,
                task: "t2".into(),
                kind: "escalation".into(),
                text: "x".into()
            }
        );
    }

    #[test]
    fn seq_follows_the_last_good_line_and_ignores_a_torn_tail() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        std::fs::create_dir_all(home.state_dir()).unwrap();
        std::fs::write(
            home.wakes(),
            "7\t1\ta\tstatus\tdone: x\ngarbage\n9\t2\tb\tst",
        )
        .unwrap();
        assert_eq!(last_seq(&home).unwrap(), 7);
    }

    proptest::proptest! {
        #[test]
        fn parser_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            for w in parse_all(&bytes) {
                let line = w.to_line();
                proptest::prop_assert_eq!(line.matches('\t').count(), 4);
                proptest::prop_assert_eq!(line.matches('\n').count(), 1);
                proptest::prop_assert_eq!(parse_line(line.trim_end_matches('\n')).map(|x| x.seq), Some(w.seq));
            }
        }
    }
}
