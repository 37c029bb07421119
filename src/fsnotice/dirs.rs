//! Whether a file can have changed since a frame, from filesystem events:
//! for a reader held across frames (the live view) that would otherwise
//! look at every file an answer came from, every frame, to learn that
//! none changed.
//!
//! [`Watches`] watches the directories holding the files asked about, one
//! inotify watch per directory, and notes, per name asked about, the last
//! frame an event named it: entries made, removed or renamed, files
//! written, closed after writing, or changed in their attributes. A name
//! is [`Watches::quiet`] since frame `taken` when its directory's watch
//! and the name's interest both began in a frame before `taken` (so no
//! change can fall between a look and the watch), no event named it or
//! touched the directory itself (removed, moved, unwatched) since, and
//! the queue did not overflow since. Anything not yet watched is not
//! quiet: its watch starts at the end of the frame, and it is looked at by
//! its stat until then.
//!
//! What events cannot see, and the caller must cover: a change to a
//! symlink among the directories on a path (the watch follows it to the
//! directory it named when it began), and a file's symlink target. The
//! callers look at every file by its stat at least every
//! [`super::RECHECK_SECS`], and never trust a look that followed a symlink.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::inotify::{ReadFlags, WatchFlags};

use super::{Inotify, watch_budget};

fn mask() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR
}

/// One watched directory.
#[derive(Debug, Default)]
struct Dir {
    /// The frame its watch began in (at the end of it).
    since: u64,
    /// The last frame the directory itself was removed, moved or
    /// unwatched in.
    touched: u64,
    /// Each name asked about: the frame interest in it began in, and the
    /// last frame an event named it in.
    names: HashMap<OsString, (u64, u64)>,
    /// The last frame any event in it came in.
    any: u64,
}

/// See the module doc.
pub(crate) struct Watches {
    inotify: Inotify,
    frame: u64,
    /// By watch descriptor; `dirs` maps paths to them (`None`: the
    /// directory could not be watched this frame).
    by_wd: HashMap<i32, Dir>,
    dirs: HashMap<PathBuf, Option<i32>>,
    /// The last frame the queue overflowed in.
    overflow: u64,
    /// Names asked about that are not watched yet, watched at the frame's
    /// end.
    wanted: Mutex<Vec<(PathBuf, OsString)>>,
}

impl std::fmt::Debug for Watches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watches")
            .field("frame", &self.frame)
            .field("dirs", &self.dirs.len())
            .finish_non_exhaustive()
    }
}

/// The directory and name of `path`, when it ends in a plain name.
fn split(path: &Path) -> Option<(&Path, &OsStr)> {
    let name = path.file_name()?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty())?;
    let bytes = path.as_os_str().as_bytes();
    // Not `a/b/` or `a/b/.`, whose name the parser reads as `b`.
    (bytes.ends_with(name.as_bytes()) && bytes.len() > name.len()).then_some((dir, name))
}

impl Watches {
    /// `None` when inotify cannot be had.
    pub(crate) fn new() -> Option<Watches> {
        Some(Watches {
            inotify: Inotify::new().ok()?,
            frame: 0,
            by_wd: HashMap::new(),
            dirs: HashMap::new(),
            overflow: 0,
            wanted: Mutex::new(Vec::new()),
        })
    }

    /// Starts the next frame (its number returned): takes the events
    /// queued since the last one.
    pub(crate) fn begin_frame(&mut self) -> u64 {
        self.frame += 1;
        let frame = self.frame;
        let mut gone = Vec::new();
        let by_wd = &mut self.by_wd;
        let complete = self.inotify.drain(|flags, wd, name| {
            let Some(dir) = by_wd.get_mut(&wd) else {
                return;
            };
            dir.any = frame;
            if flags.intersects(ReadFlags::IGNORED | ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF)
            {
                dir.touched = frame;
                if flags.contains(ReadFlags::IGNORED) {
                    gone.push(wd);
                }
                return;
            }
            if let Some(name) = name
                && let Some(seen) = dir.names.get_mut(OsStr::from_bytes(name.to_bytes()))
            {
                seen.1 = frame;
            }
        });
        if !complete {
            self.overflow = frame;
        }
        for wd in gone {
            self.by_wd.remove(&wd);
            self.dirs.retain(|_, w| *w != Some(wd));
        }
        frame
    }

    /// Whether `path` cannot have changed since frame `taken` (see the
    /// module doc); when it is not watched yet, its watch is asked for. A
    /// path with `.` or `..` in it is taken as it reads lexically (the
    /// symlinks on a path are the callers' recheck's, as above). A file
    /// whose directory does not exist is quiet while that directory's
    /// name is quiet in its own parent: creating it is an event there.
    pub(crate) fn quiet(&self, path: &Path, taken: u64) -> bool {
        use std::path::Component;
        if path
            .components()
            .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
        {
            let mut lexical = PathBuf::new();
            for c in path.components() {
                match c {
                    Component::CurDir => {}
                    Component::ParentDir => {
                        if !lexical.pop() {
                            return false;
                        }
                    }
                    c => lexical.push(c),
                }
            }
            return self.quiet(&lexical, taken);
        }
        let Some((dir, name)) = split(path) else {
            return false;
        };
        match self.dirs.get(dir) {
            Some(Some(wd)) => {
                let d = &self.by_wd[wd];
                if let Some(&(since, last)) = d.names.get(name) {
                    return d.since < taken
                        && since < taken
                        && d.touched <= taken
                        && last <= taken
                        && self.overflow <= taken;
                }
            }
            // Not watchable (missing, say) when last tried.
            Some(None) if self.quiet(dir, taken) => return true,
            Some(None) | None => {}
        }
        self.wanted
            .lock()
            .expect("wanted")
            .push((dir.to_path_buf(), name.to_os_string()));
        false
    }

    /// Whether no entry of the directory `dir` can have changed since
    /// frame `taken`: no event at all came from it since (its watch began
    /// before). When it is not watched yet, its watch is asked for.
    pub(crate) fn dir_quiet(&self, dir: &Path, taken: u64) -> bool {
        if let Some(Some(wd)) = self.dirs.get(dir) {
            let d = &self.by_wd[wd];
            return d.since < taken
                && d.touched <= taken
                && d.any <= taken
                && self.overflow <= taken;
        }
        self.wanted
            .lock()
            .expect("wanted")
            .push((dir.to_path_buf(), OsString::new()));
        false
    }

    /// Ends a frame: watches the names asked about and not watched.
    pub(crate) fn end_frame(&mut self) {
        let frame = self.frame;
        let wanted = std::mem::take(self.wanted.get_mut().expect("wanted"));
        let mut tried: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
        for (dir, name) in wanted {
            // A directory not watchable when last tried is tried again
            // (it was asked about, so it may exist now), once a frame.
            let wd = if let Some(Some(w)) = self.dirs.get(&dir) {
                Some(*w)
            } else if tried.insert(dir.clone()) {
                let w = if self.by_wd.len() < watch_budget() {
                    self.inotify.add_watch(&dir, mask()).ok()
                } else {
                    None
                };
                self.dirs.insert(dir, w);
                if let Some(w) = w {
                    // The same directory by another path shares its
                    // watch descriptor, and its names.
                    self.by_wd.entry(w).or_insert_with(|| Dir {
                        since: frame,
                        ..Dir::default()
                    });
                }
                w
            } else {
                None
            };
            if let Some(w) = wd
                && !name.is_empty()
                && let Some(d) = self.by_wd.get_mut(&w)
            {
                d.names.entry(name).or_insert((frame, frame));
            }
        }
    }
}
