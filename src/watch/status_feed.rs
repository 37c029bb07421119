//! Status wakes (SPEC §6.3): every new status line whose verb is
//! needs-decision, blocked, done, failed or paused surfaces once.
//!
//! Per-task read offsets persist in `state/.watch.offsets` (owned by the
//! watcher alone; lines `<task>\t<offset>\t<inode>`). Only complete lines
//! are consumed, so a line being appended while we read is taken next
//! time; a log never seen is read from its beginning; a log replaced by
//! another file (different inode) or shorter than the offset is re-read
//! from its start. Offsets are saved after the wakes are appended, so a
//! crash in between may repeat a wake but never lose one; a wake that
//! cannot be appended rewinds the offset to its line ([`Offsets::rewind`]).

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;

use crate::error::{Error, Result};
use crate::fsx;
use crate::home::Home;
use crate::status::{self, Parsed};
use crate::task_id::TaskId;

/// Where each log has been read up to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offsets {
    map: BTreeMap<String, (u64, u64)>,
    dirty: bool,
}

impl Offsets {
    pub fn parse(bytes: &[u8]) -> Offsets {
        let text = String::from_utf8_lossy(fsx::complete_lines(bytes));
        let mut map = BTreeMap::new();
        for line in text.lines() {
            let mut f = line.split('\t');
            if let (Some(t), Some(Ok(o)), Some(Ok(i))) = (
                f.next(),
                f.next().map(str::parse::<u64>),
                f.next().map(str::parse::<u64>),
            ) {
                map.insert(t.to_string(), (o, i));
            }
        }
        Offsets { map, dirty: false }
    }

    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        self.map.iter().fold(String::new(), |mut out, (t, (o, i))| {
            let _ = writeln!(out, "{t}\t{o}\t{i}");
            out
        })
    }

    pub(crate) fn load(home: &Home) -> Result<Offsets> {
        Ok(fsx::read_optional(&home.watch_offsets())?
            .map(|b| Offsets::parse(&b))
            .unwrap_or_default())
    }

    /// Saves when something changed since load.
    pub(crate) fn save(&mut self, home: &Home) -> Result<()> {
        if self.dirty {
            fsx::atomic_write(&home.watch_offsets(), self.render().as_bytes())?;
            self.dirty = false;
        }
        Ok(())
    }

    fn set(&mut self, task: &str, offset: u64, ino: u64) {
        if self.map.get(task) != Some(&(offset, ino)) {
            self.map.insert(task.to_string(), (offset, ino));
            self.dirty = true;
        }
    }

    /// Moves a task's offset back to `offset` (the start of the first line
    /// whose wake could not be appended), so the next pass retries it.
    pub(crate) fn rewind(&mut self, task: &str, offset: u64) {
        if let Some(&(o, ino)) = self.map.get(task)
            && offset < o
        {
            self.set(task, offset, ino);
        }
    }
}

/// The wake text for a status line: `<verb>[ key=K]: <text>`.
pub fn wake_text(line: &status::StatusLine) -> String {
    if line.key == "default" {
        format!("{}: {}", line.verb, line.text)
    } else {
        format!("{} key={}: {}", line.verb, line.key, line.text)
    }
}

/// A status line to surface: its wake text and the byte offset where the
/// line starts in the log (where to resume if surfacing it fails).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StatusWake {
    pub text: String,
    pub(crate) start: u64,
}

/// Wake texts (with each line's start within `chunk`) for the
/// wake-worthy lines of `chunk` (complete lines only), and how many bytes
/// of it were consumed.
pub(crate) fn scan(chunk: &[u8], paused: &str) -> (Vec<(String, u64)>, u64) {
    let complete = fsx::complete_lines(chunk);
    let mut texts = Vec::new();
    let mut start = 0u64;
    for raw in complete.split(|&b| b == b'\n') {
        if let Parsed::Line(l) = status::parse_line(raw, paused)
            && l.kind.wakes()
        {
            texts.push((wake_text(&l), start));
        }
        start += raw.len() as u64 + 1;
    }
    (texts, complete.len() as u64)
}

/// New status wakes from a task's status log since the saved offset; the
/// new offset is recorded in `offsets` (the caller saves it, after
/// [`Offsets::rewind`] if appending one of them failed).
pub(crate) fn new_wakes(
    home: &Home,
    id: &TaskId,
    offsets: &mut Offsets,
    paused: &str,
) -> Result<Vec<StatusWake>> {
    let path = home.status(id);
    let meta = match fsx::stat(&path)? {
        Some(m) if m.is_file() => m,
        _ => return Ok(Vec::new()),
    };
    let (mut offset, ino) = offsets
        .map
        .get(id.as_str())
        .copied()
        .unwrap_or((0, meta.ino()));
    if ino != meta.ino() || meta.len() < offset {
        offset = 0;
    }
    if meta.len() == offset {
        offsets.set(id.as_str(), offset, meta.ino());
        return Ok(Vec::new());
    }
    let Some((mut f, _)) = fsx::open_read(&path)? else {
        return Ok(Vec::new());
    };
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::io("seek", &path, e))?;
    let mut chunk = Vec::new();
    f.read_to_end(&mut chunk)
        .map_err(|e| Error::io("read", &path, e))?;
    let (texts, used) = scan(&chunk, paused);
    offsets.set(id.as_str(), offset + used, meta.ino());
    Ok(texts
        .into_iter()
        .map(|(text, start)| StatusWake {
            text,
            start: offset + start,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_takes_complete_wake_worthy_lines_only() {
        let chunk = b"working: a\ndone: shipped\nblocked [key=db]: which db\nnote: x\nfailed: hal";
        let (texts, used) = scan(chunk, "paused");
        assert_eq!(
            texts,
            vec![
                ("done: shipped".to_string(), 11),
                ("blocked key=db: which db".to_string(), 25)
            ]
        );
        assert_eq!(used as usize, chunk.len() - "failed: hal".len());
    }

    #[test]
    fn offsets_round_trip() {
        let mut o = Offsets::default();
        o.set("a", 10, 3);
        o.set("b.c", 0, 9);
        let again = Offsets::parse(o.render().as_bytes());
        assert_eq!(again.map, o.map);
    }

    #[test]
    fn growing_replaced_and_truncated_logs() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        std::fs::create_dir(home.state_dir()).unwrap();
        let id = TaskId::parse("t").unwrap();
        let mut o = Offsets::default();
        let texts = |o: &mut Offsets| -> Vec<String> {
            new_wakes(&home, &id, o, "paused")
                .unwrap()
                .into_iter()
                .map(|w| w.text)
                .collect()
        };
        std::fs::write(home.status(&id), "done: one\npaused: hal").unwrap();
        assert_eq!(texts(&mut o), ["done: one"]);
        // The writer finishes its line (a raw write: it was mid-line).
        std::fs::OpenOptions::new()
            .append(true)
            .open(home.status(&id))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"f\n"))
            .unwrap();
        assert_eq!(texts(&mut o), ["paused: half"]);
        assert!(texts(&mut o).is_empty());
        // A wake that could not be appended is offered again after a rewind.
        fsx::append_line(&home.status(&id), b"blocked: x\n").unwrap();
        let got = new_wakes(&home, &id, &mut o, "paused").unwrap();
        assert_eq!(got[0].start, 23);
        o.rewind("t", got[0].start);
        assert_eq!(texts(&mut o), ["blocked: x"]);
        std::fs::remove_file(home.status(&id)).unwrap();
        std::fs::write(home.status(&id), "failed: again\n").unwrap();
        assert_eq!(texts(&mut o), ["failed: again"]);
    }
}
