//! What an answer came from ([`Look`]): each file looked at relative to
//! its directory, compared by its [`Stamp`], and the answers kept with
//! their looks across frames.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, OFlags};
use rustix::io::Errno;

use crate::stamp::Stamp;

use super::*;

/// What a look compares ([`Look`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compare {
    /// A file whose contents were read: every stamp, and settled.
    Contents,
    /// A directory's type and owner only.
    Owner,
    /// Which file it is: device and inode.
    Identity,
}

/// What a stat showed, as far as an answer can depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Seen {
    pub(super) dev: u64,
    pub(super) mode: u32,
    pub(super) uid: u32,
    pub(super) stamp: Stamp,
}

impl Seen {
    pub(super) fn of(st: &rustix::fs::Stat) -> Seen {
        Seen {
            dev: st.st_dev,
            mode: st.st_mode,
            uid: st.st_uid,
            stamp: Stamp::of_stat(st),
        }
    }

    pub(super) fn same(&self, other: &Seen, how: Compare) -> bool {
        match how {
            Compare::Contents => self == other,
            Compare::Owner => self.mode == other.mode && self.uid == other.uid,
            Compare::Identity => self.dev == other.dev && self.stamp.ino() == other.stamp.ino(),
        }
    }

    /// Whether no change at `read_at` (Unix seconds) or later can leave
    /// these stamps as they are ([`Stamp::settled`]).
    pub(super) fn settled(&self, read_at: u64) -> bool {
        self.stamp.settled(read_at)
    }
}

/// One file an answer came from: `path` looked at relative to its
/// directory `anchor` (a lexical prefix of it), following a symlink or not,
/// and what it showed (`None`: it did not exist).
#[derive(Debug, Clone)]
pub(super) struct Look {
    pub(super) anchor: Arc<Anchor>,
    /// `path` relative to the anchor (empty: the anchor itself); `None`
    /// when the anchor is no prefix of it (the whole path is looked at).
    pub(super) rel: Option<PathBuf>,
    pub(super) path: PathBuf,
    pub(super) follow: bool,
    pub(super) how: Compare,
    pub(super) seen: Option<Seen>,
    /// The file events may vouch for it: no symlink was followed at its
    /// end ([`crate::fsnotice`]).
    pub(super) plain: bool,
}

/// A directory looks are taken from, opened once per frame.
#[derive(Debug)]
pub(super) struct Anchor {
    pub(super) path: PathBuf,
    /// The frame it was opened in, and what opened.
    pub(super) fd: Mutex<(u64, Option<Arc<OwnedFd>>)>,
}

/// What a look finds: what the stat showed (`None`: nothing there), or
/// `Err` when it could not be taken.
pub(super) type Stat = Result<Option<Seen>, ()>;

/// An answer kept across frames, with the looks it came from.
#[derive(Debug, Clone)]
pub(super) struct KeptAnswer {
    pub(super) looks: Vec<Look>,
    /// The common directory's facts it used, by path and generation.
    pub(super) common: Option<(PathBuf, u64)>,
    pub(super) answer: Answer,
    pub(super) frame: u64,
    /// The events' frame and the clock (Unix seconds) its looks were last
    /// taken in ([`crate::fsnotice::dirs::Watches::quiet`]).
    pub(super) verified: u64,
    pub(super) verified_at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Answer {
    Head(Result<Head, &'static str>),
    CommonDir(Option<PathBuf>),
}

/// The looks of one read, when it is to be kept.
pub(super) struct Rec {
    pub(super) looks: Vec<Look>,
    /// Every look could be taken and every file read had settled.
    pub(super) ok: bool,
    pub(super) common: Option<(PathBuf, u64)>,
}

/// Which directory a path is looked at from: its parent when it has one.
pub(super) fn parent_anchor(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(p), Some(_)) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => path.to_path_buf(),
    }
}

impl GitFiles {
    /// The anchor for `dir`, made once.
    pub(super) fn anchor(&self, dir: &Path) -> Arc<Anchor> {
        self.anchors
            .lock()
            .expect("anchors")
            .entry(dir.to_path_buf())
            .or_insert_with(|| {
                Arc::new(Anchor {
                    path: dir.to_path_buf(),
                    fd: Mutex::new((0, None)),
                })
            })
            .clone()
    }

    /// The anchor opened this frame; `None` when it does not open.
    pub(super) fn opened(&self, a: &Anchor) -> Option<Arc<OwnedFd>> {
        let mut g = a.fd.lock().expect("anchor");
        if g.0 != self.frame {
            *g = (
                self.frame,
                rustix::fs::open(
                    &a.path,
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    rustix::fs::Mode::empty(),
                )
                .ok()
                .map(Arc::new),
            );
        }
        g.1.clone()
    }

    /// Stats `path` (as `rel` from `anchor`, a lexical prefix of it: the
    /// same file as by the whole path); `Ok(None)` when it does not exist.
    pub(super) fn stat_from(
        &self,
        anchor: &Anchor,
        rel: Option<&Path>,
        path: &Path,
        follow: bool,
    ) -> Stat {
        let flags = if follow {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        // The anchor itself not followed: by its path.
        let rel = rel.filter(|r| follow || !r.as_os_str().is_empty());
        let opened = rel.and_then(|r| Some((r, self.opened(anchor)?)));
        let st = match opened {
            Some((rel, fd)) if rel.as_os_str().is_empty() => rustix::fs::fstat(&*fd),
            Some((rel, fd)) => rustix::fs::statat(&*fd, rel, flags),
            None => rustix::fs::statat(rustix::fs::CWD, path, flags),
        };
        match st {
            Ok(st) => Ok(Some(Seen::of(&st))),
            Err(Errno::NOENT | Errno::NOTDIR) => Ok(None),
            Err(_) => Err(()),
        }
    }

    /// Takes a look for `rec` (before the file is read); `Compare::Contents`
    /// of a directory compares its owner only.
    pub(super) fn look(
        &self,
        rec: &mut Option<Rec>,
        anchor: &Path,
        path: &Path,
        follow: bool,
        how: Compare,
    ) {
        let Some(r) = rec.as_mut() else { return };
        if !r.ok {
            return;
        }
        if r.looks
            .iter()
            .any(|l| l.path == path && l.follow == follow && l.how == how)
        {
            return;
        }
        let rel = path.strip_prefix(anchor).ok().map(Path::to_path_buf);
        let anchor = self.anchor(anchor);
        let Ok(seen) = self.stat_from(&anchor, rel.as_deref(), path, follow) else {
            r.ok = false;
            return;
        };
        let how = match (how, seen) {
            (Compare::Contents, Some(s))
                if rustix::fs::FileType::from_raw_mode(s.mode).is_dir() =>
            {
                Compare::Owner
            }
            _ => how,
        };
        if how == Compare::Contents && seen.is_some_and(|s| !s.settled(self.now)) {
            r.ok = false;
            return;
        }
        // What was followed is not what the events of its directory see.
        let plain = !follow
            || rustix::fs::lstat(path)
                .is_ok_and(|st| !rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink());
        r.looks.push(Look {
            anchor,
            rel,
            path: path.to_path_buf(),
            follow,
            how,
            seen,
            plain,
        });
    }

    /// Whether every look shows what it showed.
    pub(super) fn still(&self, looks: &[Look]) -> bool {
        looks.iter().all(|l| {
            let now = self.stat_from(&l.anchor, l.rel.as_deref(), &l.path, l.follow);
            match (now, l.seen) {
                (Ok(Some(a)), Some(b)) => a.same(&b, l.how),
                (Ok(None), None) => true,
                _ => false,
            }
        })
    }

    /// The kept answer for `dir`, when every file it came from is as it was.
    pub(super) fn kept_answer(&self, dir: &Path, want_head: bool) -> Option<Answer> {
        if !self.keep {
            return None;
        }
        let key = (dir.to_path_buf(), want_head);
        let mut answers = self.answers.lock().expect("answers");
        let a = answers.get_mut(&key)?;
        if a.frame != self.frame {
            let looks = std::mem::take(&mut a.looks);
            let common = a.common.clone();
            let (verified, verified_at) = (a.verified, a.verified_at);
            drop(answers);
            let quiet = self.quiet(&looks, verified, verified_at);
            let fresh = (quiet || self.still(&looks))
                && common
                    .as_ref()
                    .is_none_or(|(c, g)| self.common(c).generation == *g);
            answers = self.answers.lock().expect("answers");
            let a = answers.get_mut(&key)?;
            a.looks = looks;
            if !fresh {
                answers.remove(&key);
                return None;
            }
            a.frame = self.frame;
            if quiet {
                self.quiet_hits.fetch_add(1, Ordering::Relaxed);
            } else {
                (a.verified, a.verified_at) = (self.notice_frame, self.now);
            }
        }
        answers.get(&key).map(|a| a.answer.clone())
    }

    /// Whether no event named a file of `looks` since they were taken in
    /// the events' frame `verified` (at Unix second `verified_at`), less
    /// than [`crate::fsnotice::RECHECK_SECS`] ago. Every look is asked
    /// about, so each is watched from this frame's end.
    pub(super) fn quiet(&self, looks: &[Look], verified: u64, verified_at: u64) -> bool {
        let Some(w) = &self.notice else {
            return false;
        };
        let recent =
            self.now >= verified_at && self.now - verified_at < crate::fsnotice::RECHECK_SECS;
        let mut all = recent;
        for l in looks {
            all &= l.plain && w.quiet(&l.path, verified);
        }
        all
    }

    pub(super) fn keep_answer(
        &self,
        dir: &Path,
        want_head: bool,
        rec: Option<Rec>,
        answer: &Answer,
    ) {
        let Some(rec) = rec.filter(|r| r.ok) else {
            return;
        };
        self.answers.lock().expect("answers").insert(
            (dir.to_path_buf(), want_head),
            KeptAnswer {
                looks: rec.looks,
                common: rec.common,
                answer: answer.clone(),
                frame: self.frame,
                verified: self.notice_frame,
                verified_at: self.now,
            },
        );
    }

    pub(super) fn recorder(&self) -> Option<Rec> {
        self.keep.then(|| Rec {
            looks: Vec::new(),
            ok: true,
            common: None,
        })
    }
}
