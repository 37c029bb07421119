//! Notices of `state/`: one inotify instance watching `state/`
//! and every inbox directory for entries created, removed, renamed or
//! closed after writing (never for opens or reads, so a pass's own reading
//! raises nothing), each event turned into the task it concerns.
//!
//! A name in `state/` is `<task>.<what>`; a dot-file there (the watcher's
//! own lock, heartbeat and offsets), the logs the watcher appends and temp
//! files are not changes. An event in an inbox concerns that inbox's task,
//! whatever the name but a temp file (a new record, an ack, `.ring-owed`).
//! A name that names no task (`state/poke`, say) and a queue overflow ask
//! for a pass over every task. A file's creation alone is a change for a
//! little later ([`Changed::later`]): a file written in place raises its
//! create at the open, before its bytes, and reading it then would find
//! half a record.

use std::collections::{BTreeSet, HashMap};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustix::fs::inotify::{ReadFlags, WatchFlags};

use super::Inotify;

use crate::home::Home;
use crate::task_id::TaskId;

/// What a batch of events asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Changed {
    /// Passes over these tasks.
    pub(crate) tasks: BTreeSet<TaskId>,
    /// A pass over every task (overflow, or a name that is no task's).
    pub(crate) all: bool,
    /// `state/` itself went away or can no longer be watched.
    pub(crate) lost: bool,
    /// Tasks whose only event was a file created: its writer may still be
    /// writing it (a create comes at the open, before any byte), and its
    /// close-write names the task again. The caller passes over these a
    /// little later, for a file that is never written to (a link, a
    /// symlink, a FIFO).
    pub(crate) later: BTreeSet<TaskId>,
}

/// The inotify instance and what each watch descriptor stands for.
pub(crate) struct StateNotices {
    inotify: Inotify,
    state_wd: i32,
    /// Inbox watch descriptor → its task.
    inboxes: HashMap<i32, TaskId>,
    /// Inbox directories watched, by path.
    watched: HashMap<PathBuf, i32>,
    /// What every watch takes.
    mask: WatchFlags,
    /// Whether some inbox could not be watched (the inotify limit).
    pub(crate) incomplete: bool,
}

fn mask() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR
        | WatchFlags::DONT_FOLLOW
}

/// Whether `name` is a temp file of an atomic write (its rename into
/// place is the event that counts).
fn is_temp(name: &str) -> bool {
    name.contains(".tmp.")
}

/// The task a name in `state/` concerns: `Some(None)` for a name that is
/// not a change, `None` for one that is no task's.
fn state_name(name: &str) -> Option<Option<TaskId>> {
    if name.starts_with('.') || is_temp(name) || name == "wakes.log" || name == "events.jsonl" {
        return Some(None);
    }
    let (stem, _) = name.rsplit_once('.')?;
    TaskId::parse(stem).ok().map(Some)
}

impl StateNotices {
    /// Starts watching `state/`.
    pub(crate) fn start(home: &Home) -> std::io::Result<StateNotices> {
        StateNotices::start_with(home, false)
    }

    /// Starts watching `state/`; with `writes`, every write to a file is
    /// an event too, not only its writer's close (for a reader that must
    /// see a file appended by a writer that keeps it open).
    pub(crate) fn start_with(home: &Home, writes: bool) -> std::io::Result<StateNotices> {
        let mask = if writes {
            mask() | WatchFlags::MODIFY | WatchFlags::ATTRIB
        } else {
            mask()
        };
        let inotify = Inotify::new()?;
        let state_wd = inotify.add_watch(&home.state_dir(), mask)?;
        Ok(StateNotices {
            inotify,
            state_wd,
            inboxes: HashMap::new(),
            watched: HashMap::new(),
            mask,
            incomplete: false,
        })
    }

    /// Whether the inbox directory `dir` is watched.
    pub(crate) fn watches(&self, dir: &Path) -> bool {
        self.watched.contains_key(dir)
    }

    /// The descriptor to poll for readability.
    pub(crate) fn fd(&self) -> impl AsFd + '_ {
        self.inotify.fd()
    }

    /// Watches each inbox of `dirs` not watched yet; returns the tasks
    /// whose inbox was newly watched (the caller passes over them once
    /// more, for what landed before the watch).
    pub(crate) fn watch_inboxes(&mut self, home: &Home, dirs: &[PathBuf]) -> Vec<TaskId> {
        let mut new = Vec::new();
        for dir in dirs {
            if self.watched.contains_key(dir) {
                continue;
            }
            let Some(id) = inbox_task(home, dir) else {
                continue;
            };
            match self.inotify.add_watch(dir, self.mask) {
                Ok(wd) => {
                    self.watched.insert(dir.clone(), wd);
                    self.inboxes.insert(wd, id.clone());
                    new.push(id);
                }
                Err(_) => self.incomplete = true,
            }
        }
        new
    }

    /// Reads every event queued now (without blocking).
    pub(crate) fn drain(&mut self) -> Changed {
        let mut out = Changed::default();
        let mut gone = Vec::new();
        let (state_wd, inboxes) = (self.state_wd, &self.inboxes);
        let complete = self.inotify.drain(|flags, wd, name| {
            if flags.contains(ReadFlags::IGNORED) {
                gone.push(wd);
                return;
            }
            let name = name.and_then(|n| n.to_str().ok());
            let created = flags.contains(ReadFlags::CREATE) && !flags.contains(ReadFlags::ISDIR);
            let add = |out: &mut Changed, id: TaskId| {
                if created {
                    out.later.insert(id);
                } else {
                    out.tasks.insert(id);
                }
            };
            if wd == state_wd {
                if flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) {
                    out.lost = true;
                    return;
                }
                match name.map(state_name) {
                    Some(Some(Some(id))) => add(&mut out, id),
                    Some(Some(None)) => {}
                    Some(None) | None if created => {}
                    Some(None) | None => out.all = true,
                }
            } else if let Some(id) = inboxes.get(&wd) {
                if name.is_some_and(is_temp) {
                    return;
                }
                add(&mut out, id.clone());
            }
        });
        if !complete {
            out.all = true;
        }
        let now = &out.tasks;
        out.later.retain(|id| !now.contains(id));
        for wd in gone {
            if wd == self.state_wd {
                out.lost = true;
            } else if let Some(id) = self.inboxes.remove(&wd) {
                self.watched.retain(|_, w| *w != wd);
                out.tasks.insert(id);
            }
        }
        out
    }

    /// Reads every notice queued now (without blocking), handing `each`
    /// the name each one carries (in `state/` or in an inbox); `false` when
    /// some were lost or `state/` itself went away. For a reader that
    /// decides by the name alone (`fm top`'s refresh).
    pub(crate) fn drain_names(&mut self, mut each: impl FnMut(&str)) -> bool {
        let state_wd = self.state_wd;
        let mut lost = false;
        let mut gone = Vec::new();
        let complete = self.inotify.drain(|flags, wd, name| {
            if flags.contains(ReadFlags::IGNORED) {
                gone.push(wd);
            } else if wd == state_wd
                && flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF)
            {
                lost = true;
            } else if let Some(n) = name.and_then(|n| n.to_str().ok()) {
                each(n);
            }
        });
        for wd in gone {
            if wd == self.state_wd {
                lost = true;
            } else if self.inboxes.remove(&wd).is_some() {
                self.watched.retain(|_, w| *w != wd);
            }
        }
        complete && !lost
    }

    /// How many inbox directories are watched.
    #[cfg(test)]
    pub(crate) fn inboxes_watched(&self) -> usize {
        self.inboxes.len()
    }
}

/// The task whose inbox `dir` is (`state/<task>.inbox`).
fn inbox_task(home: &Home, dir: &Path) -> Option<TaskId> {
    if dir.parent()? != home.state_dir() {
        return None;
    }
    let name = dir.file_name()?.to_str()?;
    TaskId::parse(name.strip_suffix(".inbox")?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> TaskId {
        TaskId::parse(s).unwrap()
    }

    #[test]
    fn names_in_state_map_to_their_task_or_to_nothing() {
        assert_eq!(state_name("t.status"), Some(Some(id("t"))));
        assert_eq!(state_name("a.b.meta"), Some(Some(id("a.b"))));
        assert_eq!(state_name("t.inbox"), Some(Some(id("t"))));
        for quiet in [
            ".watch.beat",
            ".x.tmp.1.2",
            "wakes.log",
            "events.jsonl",
            "t.status.tmp.9",
        ] {
            assert_eq!(state_name(quiet), Some(None), "{quiet}");
        }
        assert_eq!(state_name("poke"), None);
        assert_eq!(state_name("-bad.meta"), None);
    }

    /// Real inotify on a temp home: our own reads raise nothing, a write
    /// names its task, an inbox event names the inbox's task, a removed
    /// inbox is forgotten, an unknown name asks for everything.
    #[test]
    fn events_name_the_tasks_they_concern() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("state")).unwrap();
        let home = Home::at(d.path()).unwrap();
        let state = home.state_dir();
        std::fs::create_dir_all(state.join("t.inbox")).unwrap();
        std::fs::write(state.join("t.status"), "working: x\n").unwrap();
        let mut ev = StateNotices::start(&home).unwrap();
        let new = ev.watch_inboxes(&home, &[state.join("t.inbox"), d.path().join("elsewhere")]);
        assert_eq!(new, [id("t")]);
        assert!(ev.watch_inboxes(&home, &[state.join("t.inbox")]).is_empty());
        assert_eq!(ev.inboxes_watched(), 1);

        std::fs::read(state.join("t.status")).unwrap();
        std::fs::read_dir(state.join("t.inbox"))
            .unwrap()
            .for_each(drop);
        assert_eq!(ev.drain(), Changed::default());

        std::fs::write(state.join("u.status"), "done: y\n").unwrap();
        std::fs::write(state.join(".watch.beat"), "").unwrap();
        std::fs::write(state.join("t.inbox/001.msg"), "x").unwrap();
        std::fs::write(state.join("t.inbox/.x.tmp.1"), "x").unwrap();
        let got = ev.drain();
        assert_eq!(got.tasks, BTreeSet::from([id("t"), id("u")]));
        assert!(!got.all && !got.lost);

        std::fs::write(state.join("poke"), "").unwrap();
        assert!(ev.drain().all);

        // A file being written in place: its create is for later, its
        // close-write is the change.
        {
            use std::io::Write;
            let mut f = std::fs::File::create(state.join("t.inbox/002.msg")).unwrap();
            let got = ev.drain();
            assert!(got.tasks.is_empty(), "{got:?}");
            assert_eq!(got.later, BTreeSet::from([id("t")]));
            f.write_all(b"half").unwrap();
        }
        let got = ev.drain();
        assert_eq!(got.tasks, BTreeSet::from([id("t")]));
        assert!(got.later.is_empty());
        std::os::unix::fs::symlink("nowhere", state.join("t.inbox/003.msg")).unwrap();
        assert_eq!(ev.drain().later, BTreeSet::from([id("t")]));

        std::fs::remove_dir_all(state.join("t.inbox")).unwrap();
        let got = ev.drain();
        assert!(got.tasks.contains(&id("t")));
        assert_eq!(ev.inboxes_watched(), 0);
        // Watched again once it is back.
        std::fs::create_dir_all(state.join("t.inbox")).unwrap();
        assert_eq!(ev.watch_inboxes(&home, &[state.join("t.inbox")]), [id("t")]);
    }
}
