//! Status wakes (docs/spec/watch.md#wakes): every new status line whose verb is
//! needs-decision, blocked, done, failed or paused surfaces once.
//!
//! Per-task read offsets persist in `state/.watch.offsets` (owned by the
//! watcher alone; lines `<task>\t<offset>\t<inode>\t<tail>`, where `tail`
//! is a hash of the up to [`TAIL`] bytes just before the offset). Only
//! complete lines are consumed, so a line being appended while we read is
//! taken next time; a log never seen is read from its beginning; a log
//! replaced by another file (different inode), shorter than the offset, or
//! whose bytes before the offset are no longer the ones read there (cut
//! in place by a `>` and grown again past the offset) is re-read from its
//! start. Offsets are saved after the wakes are appended, so a crash in
//! between may repeat a wake but never lose one; a wake that cannot be
//! appended rewinds the offset to its line ([`Offsets::rewind`]).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::status::{self, Parsed};
use crate::task_id::TaskId;

/// How many bytes before a saved offset its hash covers.
const TAIL: u64 = 64;

/// Where one log has been read up to: the offset, the file's inode, and
/// the hash of the bytes just before the offset (`None` when not known:
/// an offsets file written before hashes were kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    offset: u64,
    ino: u64,
    tail: Option<u64>,
}

/// Where each log has been read up to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offsets {
    map: BTreeMap<String, Mark>,
    dirty: bool,
}

/// FNV-1a: a stable hash (the same in every build) of a few bytes.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Offsets {
    pub fn parse(bytes: &[u8]) -> Offsets {
        let text = String::from_utf8_lossy(fsx::complete_lines(bytes));
        let mut map = BTreeMap::new();
        for line in text.lines() {
            let mut f = line.split('\t');
            if let (Some(t), Some(Ok(offset)), Some(Ok(ino))) = (
                f.next(),
                f.next().map(str::parse::<u64>),
                f.next().map(str::parse::<u64>),
            ) {
                let tail = f.next().and_then(|h| u64::from_str_radix(h, 16).ok());
                map.insert(t.to_string(), Mark { offset, ino, tail });
            }
        }
        Offsets { map, dirty: false }
    }

    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        self.map.iter().fold(String::new(), |mut out, (t, m)| {
            let _ = match m.tail {
                Some(h) => writeln!(out, "{t}\t{}\t{}\t{h:016x}", m.offset, m.ino),
                None => writeln!(out, "{t}\t{}\t{}", m.offset, m.ino),
            };
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

    fn set(&mut self, task: &str, mark: Mark) {
        if self.map.get(task) != Some(&mark) {
            self.map.insert(task.to_string(), mark);
            self.dirty = true;
        }
    }

    /// Moves a task's offset back to `offset` (the start of the first line
    /// whose wake could not be appended), so the next pass retries it. The
    /// bytes before it are not hashed here; the next pass hashes them.
    pub(crate) fn rewind(&mut self, task: &str, offset: u64) {
        if let Some(&m) = self.map.get(task)
            && offset < m.offset
        {
            self.set(
                task,
                Mark {
                    offset,
                    ino: m.ino,
                    tail: None,
                },
            );
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

/// What a pass needs to know of a status log before reading it: its
/// inode and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogFacts {
    pub(crate) ino: u64,
    pub(crate) len: u64,
}

/// The facts of a task's status log by its path; `None` when it is
/// missing or not a regular file.
pub(crate) fn log_facts(home: &Home, id: &TaskId) -> Result<Option<LogFacts>> {
    Ok(match fsx::stat(&home.status(id))? {
        Some(m) if m.is_file() => Some(LogFacts {
            ino: m.ino(),
            len: m.len(),
        }),
        _ => None,
    })
}

/// New status wakes from a task's status log since the saved offset; the
/// new offset is recorded in `offsets` (the caller saves it, after
/// [`Offsets::rewind`] if appending one of them failed).
#[cfg(test)]
pub(crate) fn new_wakes(
    home: &Home,
    id: &TaskId,
    offsets: &mut Offsets,
    paused: &str,
) -> Result<Vec<StatusWake>> {
    match log_facts(home, id)? {
        Some(facts) => new_wakes_at(home, id, facts, offsets, paused),
        None => Ok(Vec::new()),
    }
}

/// [`new_wakes`] for a log whose facts the caller already has (a pass
/// looks at every log with one `fstatat` relative to `state/`).
pub(crate) fn new_wakes_at(
    home: &Home,
    id: &TaskId,
    meta: LogFacts,
    offsets: &mut Offsets,
    paused: &str,
) -> Result<Vec<StatusWake>> {
    let path = home.status(id);
    let ino = meta.ino;
    let saved = offsets.map.get(id.as_str()).copied();
    let mut mark = saved.unwrap_or(Mark {
        offset: 0,
        ino,
        tail: None,
    });
    if mark.ino != ino || meta.len < mark.offset {
        mark = Mark {
            offset: 0,
            ino,
            tail: None,
        };
    }
    if meta.len == mark.offset {
        offsets.set(id.as_str(), mark);
        return Ok(Vec::new());
    }
    // One read from just before the offset: the bytes there must be the
    // ones read last time, or the log was rewritten in place.
    let mut back = mark.offset.min(TAIL);
    let mut chunk = read_chunk(&path, mark.offset - back)?;
    let same = mark.tail.is_none_or(|h| {
        chunk
            .get(..usize::try_from(back).unwrap_or(usize::MAX))
            .is_some_and(|b| fnv1a(b) == h)
    });
    if !same {
        mark.offset = 0;
        back = 0;
        chunk = read_chunk(&path, 0)?;
    }
    let offset = mark.offset;
    let skip = usize::try_from(back).unwrap_or(0).min(chunk.len());
    let (texts, mut used) = scan(&chunk[skip..], paused);
    let data = (chunk.len() - skip) as u64;
    if used == 0 && data >= fsx::MAX_CHUNK {
        // One line longer than a chunk: prose, skipped rather than
        // re-read forever.
        used = data;
    }
    let end = skip + usize::try_from(used).unwrap_or(0);
    let consumed = &chunk[..end.min(chunk.len())];
    let tail_from = consumed.len().saturating_sub(TAIL as usize);
    offsets.set(
        id.as_str(),
        Mark {
            offset: offset + used,
            ino,
            tail: Some(fnv1a(&consumed[tail_from..])),
        },
    );
    Ok(texts
        .into_iter()
        .map(|(text, start)| StatusWake {
            text,
            start: offset + start,
        })
        .collect())
}

/// Up to [`fsx::MAX_CHUNK`] bytes of the log from `from` plus the
/// [`TAIL`] bytes re-read before the offset: the next pass goes on from
/// where this one stopped.
fn read_chunk(path: &std::path::Path, from: u64) -> Result<Vec<u8>> {
    Ok(
        fsx::read_from(path, fsx::Start::Offset(from), fsx::MAX_CHUNK + TAIL)?
            .map(|(bytes, _, _)| bytes)
            .unwrap_or_default(),
    )
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
        let mark = |offset, ino, tail| Mark { offset, ino, tail };
        o.set("a", mark(10, 3, Some(0xfeed)));
        o.set("b.c", mark(0, 9, None));
        let again = Offsets::parse(o.render().as_bytes());
        assert_eq!(again.map, o.map);
        // A line written before hashes were kept still reads.
        assert_eq!(Offsets::parse(b"a\t10\t3\n").map["a"], mark(10, 3, None));
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

    /// A worker's `>` instead of `>>` cuts the log in place (same inode)
    /// and its next lines may grow it past the saved offset before the
    /// watcher looks: the bytes before the offset no longer match, so the
    /// log is read again from its start and nothing is lost.
    #[test]
    fn a_log_cut_in_place_and_regrown_past_the_offset_is_reread() {
        use std::io::Write as _;
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
        std::fs::write(home.status(&id), "working: a\ndone: first\n").unwrap();
        assert_eq!(texts(&mut o), ["done: first"]);
        let ino = std::fs::metadata(home.status(&id)).unwrap().ino();
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(home.status(&id))
            .unwrap();
        f.write_all(b"needs-decision [key=db]: which database for the cache?\n")
            .unwrap();
        drop(f);
        assert_eq!(std::fs::metadata(home.status(&id)).unwrap().ino(), ino);
        assert_eq!(
            texts(&mut o),
            ["needs-decision key=db: which database for the cache?"]
        );
        // Growing on from there reads only the new line.
        fsx::append_line(&home.status(&id), b"blocked: second\n").unwrap();
        assert_eq!(texts(&mut o), ["blocked: second"]);
        // A saved offset that lies past the end (a hand-edited offsets
        // file) reads the log from its start.
        let mut lying = Offsets::parse(format!("t\t999999\t{ino}\n").as_bytes());
        assert_eq!(texts(&mut lying).len(), 2);
    }
}
