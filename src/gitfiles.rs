//! A worktree's branch and HEAD read from git's own files, without running
//! git (SPEC §8.2, §9.2): one git process costs ~2 ms, reading `.git`,
//! `HEAD` and the branch's ref costs tens of microseconds, and the fleet
//! view asks for every worktree.
//!
//! The reader follows the layouts git itself writes: `<dir>/.git` a
//! directory, or a file `gitdir: <path>` (a linked worktree, a submodule)
//! whose git directory may name its common directory in `commondir`; `HEAD`
//! a commit id (detached) or `ref: refs/heads/<name>`; the ref a loose file
//! (itself possibly `ref: …`, a symbolic ref, followed to the end as `git
//! rev-parse --symbolic-full-name` does) or a line of `packed-refs`.
//! Anything else — an unborn branch, a reftable repository, a `.git` that
//! is a symlink, a git directory that does not exist (moved), files owned
//! by another user (git's `safe.directory` check), `core.worktree` or
//! `core.bare` or config includes, `GIT_DIR` and kin in the environment —
//! is [`Head::Unusual`]: the caller asks git, which answers exactly.
//!
//! [`GitFiles`] memoises per-repository reads (the common directory's
//! checks, its `packed-refs`) for the readers of one view; it is `Sync` so
//! the fleet's reader threads share it.
//!
//! A reader held across frames ([`GitFiles::kept`], the live view's) also
//! keeps each worktree's answer with what every file it came from looked
//! like ([`Look`]): the next frame looks at those files again — relative to
//! their directories, opened once per frame — and reads only when one of
//! them changed. A look compares what the answer depends on: a file read
//! by its inode, size, modification and change times (so a rewrite, a
//! rename over it, a chmod or chown all show), and only if it had settled
//! ([`crate::stamp::Stamp::settled`]); a directory checked for
//! its owner and type by those only; the common directory's identity by
//! device and inode. The repository's own facts (`config`, `packed-refs`,
//! `objects/`, `refs/`) are looked at once per frame the same way.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, OFlags};
use rustix::io::Errno;

use crate::stamp::Stamp;

/// What the files say about a directory's HEAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Head {
    /// `<dir>/.git` does not exist: `dir` is not the top level of a
    /// repository (git would answer for an enclosing one, or for none).
    NotRepo,
    Found(HeadFacts),
    /// A layout this reader does not follow (the reason, for tests).
    Unusual(&'static str),
}

/// HEAD as read from the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeadFacts {
    /// The commit HEAD names (lowercase hex).
    pub head: String,
    /// The branch HEAD points at, `refs/heads/` stripped, after following
    /// symbolic refs; `None` when HEAD is detached.
    pub branch: Option<String>,
    /// The repository's common directory (shared by its worktrees): where
    /// its refs and objects live.
    pub common_dir: PathBuf,
}

/// The refs that count as "outside a worktree" for the done check, as
/// they are now ([`GitFiles::refs_state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RefsState {
    /// Changes whenever a ref file or `packed-refs` does.
    pub stamp: u64,
    /// Some ref exists under the prefixes.
    pub any: bool,
    /// Every file is old enough for the stamp to be trusted later.
    pub settled: bool,
}

/// Environment variables that change where git looks; with any set, git
/// is asked.
const GIT_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CONFIG_PARAMETERS",
    "GIT_TEST_ASSUME_DIFFERENT_OWNER",
];

/// The largest `.git` file, `HEAD`, ref or `commondir` file read.
const SMALL: u64 = 4096;

/// Largest `config` or `packed-refs` read from git's files (16 MiB); a
/// bigger one is left to git.
const GIT_FILE: u64 = 16 << 20;

/// Deepest chain of symbolic refs followed (git stops at 5 as well).
const MAX_SYMREF_DEPTH: usize = 5;

/// The `packed-refs` of one repository.
#[derive(Debug, Default)]
struct Packed {
    refs: HashMap<String, String>,
    /// A line this reader does not understand.
    odd: bool,
}

/// Per-repository facts, read once per view (a kept reader looks at
/// their files again once per frame).
#[derive(Debug, Clone)]
struct Common {
    /// `objects/` and `refs/` exist, and the config names nothing that
    /// changes where the work tree is or how refs are stored.
    usual: bool,
    packed: Arc<Packed>,
    /// Which read of the facts this is (answers kept across frames name it).
    generation: u64,
    /// The frame they were last found current in.
    frame: u64,
    /// What their files looked like; `None` when they cannot be kept.
    looks: Option<Arc<Vec<Look>>>,
}

/// What a look compares ([`Look`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compare {
    /// A file whose contents were read: every stamp, and settled.
    Contents,
    /// A directory's type and owner only.
    Owner,
    /// Which file it is: device and inode.
    Identity,
}

/// What a stat showed, as far as an answer can depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    dev: u64,
    mode: u32,
    uid: u32,
    stamp: Stamp,
}

impl Seen {
    fn of(st: &rustix::fs::Stat) -> Seen {
        Seen {
            dev: st.st_dev,
            mode: st.st_mode,
            uid: st.st_uid,
            stamp: Stamp::of_stat(st),
        }
    }

    fn same(&self, other: &Seen, how: Compare) -> bool {
        match how {
            Compare::Contents => self == other,
            Compare::Owner => self.mode == other.mode && self.uid == other.uid,
            Compare::Identity => self.dev == other.dev && self.stamp.ino() == other.stamp.ino(),
        }
    }

    /// Whether no change at `read_at` (Unix seconds) or later can leave
    /// these stamps as they are ([`Stamp::settled`]).
    fn settled(&self, read_at: u64) -> bool {
        self.stamp.settled(read_at)
    }
}

/// One file an answer came from: `path` looked at relative to its
/// directory `anchor` (a lexical prefix of it), following a symlink or not,
/// and what it showed (`None`: it did not exist).
#[derive(Debug, Clone)]
struct Look {
    anchor: Arc<Anchor>,
    /// `path` relative to the anchor (empty: the anchor itself); `None`
    /// when the anchor is no prefix of it (the whole path is looked at).
    rel: Option<PathBuf>,
    path: PathBuf,
    follow: bool,
    how: Compare,
    seen: Option<Seen>,
    /// The file events may vouch for it: no symlink was followed at its
    /// end ([`crate::fsnotice`]).
    plain: bool,
}

/// A directory looks are taken from, opened once per frame.
#[derive(Debug)]
struct Anchor {
    path: PathBuf,
    /// The frame it was opened in, and what opened.
    fd: Mutex<(u64, Option<Arc<OwnedFd>>)>,
}

/// What a look finds: what the stat showed (`None`: nothing there), or
/// `Err` when it could not be taken.
type Stat = Result<Option<Seen>, ()>;

/// An answer kept across frames, with the looks it came from.
#[derive(Debug, Clone)]
struct KeptAnswer {
    looks: Vec<Look>,
    /// The common directory's facts it used, by path and generation.
    common: Option<(PathBuf, u64)>,
    answer: Answer,
    frame: u64,
    /// The events' frame and the clock (Unix seconds) its looks were last
    /// taken in ([`crate::fsnotice::dirs::Watches::quiet`]).
    verified: u64,
    verified_at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Head(Result<Head, &'static str>),
    CommonDir(Option<PathBuf>),
}

/// The looks of one read, when it is to be kept.
struct Rec {
    looks: Vec<Look>,
    /// Every look could be taken and every file read had settled.
    ok: bool,
    common: Option<(PathBuf, u64)>,
}

/// Which directory a path is looked at from: its parent when it has one.
fn parent_anchor(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(p), Some(_)) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => path.to_path_buf(),
    }
}

/// Reads HEADs from git's files; memoises per-repository reads.
#[derive(Debug)]
pub(crate) struct GitFiles {
    /// The git environment is the plain one (no `GIT_DIR` and kin).
    plain_env: bool,
    /// Our effective uid, and whether we may trust ownership at all (root
    /// under sudo makes git compare against `SUDO_UID`).
    euid: Option<u32>,
    commons: Mutex<HashMap<PathBuf, Common>>,
    /// Answers are kept across frames ([`GitFiles::kept`]).
    keep: bool,
    /// The current frame (counted from 1 when kept) and its clock.
    frame: u64,
    now: u64,
    generations: AtomicU64,
    /// Answers read from the files (not kept ones), and kept answers the
    /// file events vouched for (no look taken), for tests.
    reads: AtomicU64,
    quiet_hits: AtomicU64,
    /// By directory and whether the answer is its HEAD (else its common
    /// directory).
    answers: Mutex<HashMap<(PathBuf, bool), KeptAnswer>>,
    /// The directories looks are taken from, each opened once per frame.
    anchors: Mutex<HashMap<PathBuf, Arc<Anchor>>>,
    /// A kept reader's file events, and their current frame: a kept
    /// answer none of whose files an event named since its looks is
    /// reused without them.
    notice: Option<crate::fsnotice::dirs::Watches>,
    notice_frame: u64,
    /// A kept reader's [`GitFiles::refs_state`] answers, by common
    /// directory and `heads`, with the directories walked, the common
    /// facts' generation and when they were taken.
    refs_kept: Mutex<HashMap<(PathBuf, bool), KeptRefs>>,
    /// A kept reader's [`GitFiles::kept_stat`] answers, by path and
    /// whether a symlink was followed, with the events' frame and the
    /// clock they were taken at.
    stats_kept: Mutex<HashMap<(PathBuf, bool), KeptStat>>,
}

type KeptStat = (rustix::io::Result<rustix::fs::Stat>, u64, u64);

/// A [`RefsState`] kept while no event came from the directories walked
/// for it (and `packed-refs` is unchanged).
#[derive(Debug, Clone)]
struct KeptRefs {
    state: RefsState,
    dirs: Vec<PathBuf>,
    generation: u64,
    verified: u64,
    verified_at: u64,
}

impl Default for GitFiles {
    fn default() -> Self {
        GitFiles::new()
    }
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Reads a small regular file, not following a symlink; `None` when it
/// does not exist (or a path component is not a directory).
fn read_small(path: &Path) -> Result<Option<String>, &'static str> {
    read_bounded(path, SMALL)
}

/// Reads a regular file of at most `limit` bytes without following a
/// symlink or blocking: a FIFO, socket or device in a worktree's git files
/// is "unreadable" (the caller falls back to git), never waited on.
fn read_bounded(path: &Path, limit: u64) -> Result<Option<String>, &'static str> {
    // Outside the home: a worktree's git files.
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(
            (rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::NONBLOCK
                | rustix::fs::OFlags::CLOEXEC)
                .bits()
                .cast_signed(),
        )
        .open(path);
    let mut f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) => {
            return Ok(None);
        }
        Err(_) => return Err("unreadable file"),
    };
    if !f.metadata().is_ok_and(|m| m.file_type().is_file()) {
        return Err("unreadable file");
    }
    let mut s = String::new();
    match f.by_ref().take(limit + 1).read_to_string(&mut s) {
        Ok(n) if (n as u64) <= limit => Ok(Some(s)),
        Ok(_) => Err("oversized file"),
        // EISDIR (a directory where a file was expected), bad UTF-8, …
        Err(_) => Err("unreadable file"),
    }
}

fn is_hex_id(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A ref name this reader resolves: a branch, with no component git
/// would refuse (`refs/heads/.invalid` is reftable's placeholder).
#[allow(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "git refuses a ref component ending in `.lock`, in that case only"
)]
fn is_branch_ref(name: &str) -> bool {
    match name.strip_prefix("refs/heads/") {
        Some(rest) => {
            !rest.is_empty()
                && rest
                    .split('/')
                    .all(|c| !c.is_empty() && !c.starts_with('.') && !c.ends_with(".lock"))
                && !name.contains("..")
                && !name
                    .bytes()
                    .any(|b| b <= b' ' || b"~^:?*[\\\x7f".contains(&b))
        }
        None => false,
    }
}

/// The config scan: `false` when the config sets something that moves the
/// work tree (`core.worktree`, a true `core.bare`), includes other files,
/// turns on per-worktree config, or stores refs in reftable.
fn config_is_usual(text: &str) -> bool {
    let mut section = String::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let mut rest = line;
        if let Some(after) = line.strip_prefix('[') {
            let Some(end) = after.find(']') else {
                return false;
            };
            section = after[..end].trim().to_ascii_lowercase();
            if section.starts_with("include") {
                return false;
            }
            rest = after[end + 1..].trim();
            if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
                continue;
            }
        }
        let (key, value) = match rest.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase()),
            None => (rest.trim().to_ascii_lowercase(), "true".to_string()),
        };
        let value = value.trim_matches('"');
        match (section.as_str(), key.as_str()) {
            ("core", "worktree") => return false,
            ("core", "bare")
                if value != "false" && value != "no" && value != "off" && value != "0" =>
            {
                return false;
            }
            ("extensions", "worktreeconfig") if value != "false" => return false,
            ("extensions", "refstorage") if value != "files" => return false,
            _ => {}
        }
    }
    true
}

/// `path` with `.` and `..` taken lexically — the one name every worktree
/// of a repository shares for its common directory (`…/worktrees/<name>/../..`
/// otherwise differs per worktree).
fn normalised(path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    Some(out)
}

/// Whether `path` and its lexical form `out` are the same directory.
fn same_dir(path: &Path, out: &Path) -> bool {
    match (std::fs::metadata(path), std::fs::metadata(out)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

fn parse_packed(text: &str) -> Packed {
    let mut p = Packed::default();
    for line in text.lines() {
        if line.starts_with('#') || line.starts_with('^') || line.is_empty() {
            continue;
        }
        match line.split_once(' ') {
            Some((id, name)) if is_hex_id(id) && name.starts_with("refs/") => {
                p.refs.insert(name.to_string(), id.to_string());
            }
            _ => p.odd = true,
        }
    }
    p
}

impl GitFiles {
    pub(crate) fn new() -> GitFiles {
        let plain_env = GIT_ENV.iter().all(|v| std::env::var_os(v).is_none());
        let uid = euid();
        let sudo = uid == 0 && std::env::var_os("SUDO_UID").is_some();
        GitFiles {
            plain_env,
            euid: (!sudo).then_some(uid),
            commons: Mutex::new(HashMap::new()),
            keep: false,
            frame: 0,
            now: 0,
            generations: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            quiet_hits: AtomicU64::new(0),
            answers: Mutex::new(HashMap::new()),
            anchors: Mutex::new(HashMap::new()),
            notice: None,
            notice_frame: 0,
            refs_kept: Mutex::new(HashMap::new()),
            stats_kept: Mutex::new(HashMap::new()),
        }
    }

    /// A reader to hold across frames: each frame starts with
    /// [`GitFiles::begin_frame`] and ends with [`GitFiles::end_frame`].
    pub(crate) fn kept() -> GitFiles {
        GitFiles {
            keep: true,
            notice: crate::fsnotice::dirs::Watches::new(),
            ..GitFiles::new()
        }
    }

    /// Starts a frame read at `now` (Unix seconds): the files answers
    /// came from are looked at again before an answer is reused.
    pub(crate) fn begin_frame(&mut self, now: u64) {
        self.frame += 1;
        self.now = now;
        if let Some(w) = self.notice.as_mut() {
            self.notice_frame = w.begin_frame();
        }
        if !self.keep {
            self.commons.get_mut().expect("git files memo").clear();
        }
    }

    /// Ends a frame: forgets answers and repositories it did not use.
    pub(crate) fn end_frame(&mut self) {
        let frame = self.frame;
        if let Some(w) = self.notice.as_mut() {
            w.end_frame();
        }
        // Paths no longer asked about are not tracked: a bound, not an
        // exact forgetting (what is dropped is only taken again).
        let stats = self.stats_kept.get_mut().expect("stats");
        if stats.len() > 16_384 {
            stats.clear();
        }
        self.answers
            .get_mut()
            .expect("answers")
            .retain(|_, a| a.frame == frame);
        self.commons
            .get_mut()
            .expect("git files memo")
            .retain(|_, c| c.frame == frame);
        // Directories no kept answer looks from are closed.
        self.anchors
            .get_mut()
            .expect("anchors")
            .retain(|_, a| Arc::strong_count(a) > 1);
    }

    /// The anchor for `dir`, made once.
    fn anchor(&self, dir: &Path) -> Arc<Anchor> {
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
    fn opened(&self, a: &Anchor) -> Option<Arc<OwnedFd>> {
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
    fn stat_from(&self, anchor: &Anchor, rel: Option<&Path>, path: &Path, follow: bool) -> Stat {
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
    fn look(&self, rec: &mut Option<Rec>, anchor: &Path, path: &Path, follow: bool, how: Compare) {
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
    fn still(&self, looks: &[Look]) -> bool {
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
    fn kept_answer(&self, dir: &Path, want_head: bool) -> Option<Answer> {
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
    fn quiet(&self, looks: &[Look], verified: u64, verified_at: u64) -> bool {
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

    fn keep_answer(&self, dir: &Path, want_head: bool, rec: Option<Rec>, answer: &Answer) {
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

    /// How many answers were read from the files rather than kept.
    #[cfg(test)]
    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// How many kept answers the file events vouched for.
    #[cfg(test)]
    pub(crate) fn quiet_hits(&self) -> u64 {
        self.quiet_hits.load(Ordering::Relaxed)
    }

    fn recorder(&self) -> Option<Rec> {
        self.keep.then(|| Rec {
            looks: Vec::new(),
            ok: true,
            common: None,
        })
    }

    fn owned(&self, md: &std::fs::Metadata) -> bool {
        self.euid == Some(md.uid())
    }

    /// The repository facts of a common directory, read once (a kept
    /// reader looks at their files again once per frame).
    fn common(&self, dir: &Path) -> Common {
        let prev = self
            .commons
            .lock()
            .expect("git files memo")
            .get(dir)
            .cloned();
        if let Some(mut c) = prev {
            if c.frame == self.frame {
                return c;
            }
            if c.looks.as_ref().is_some_and(|l| self.still(l)) {
                c.frame = self.frame;
                self.commons
                    .lock()
                    .expect("git files memo")
                    .insert(dir.to_path_buf(), c.clone());
                return c;
            }
        }
        let mut rec = self.recorder();
        for d in ["objects", "refs"] {
            self.look(&mut rec, dir, &dir.join(d), true, Compare::Owner);
        }
        for f in ["config", "packed-refs"] {
            self.look(&mut rec, dir, &dir.join(f), false, Compare::Contents);
        }
        let dirs_ok = ["objects", "refs"]
            .iter()
            .all(|d| std::fs::metadata(dir.join(d)).is_ok_and(|m| m.is_dir()));
        // A config or packed-refs that is not a plain, bounded file (a
        // FIFO, a symlink, huge) makes the layout unusual: git answers.
        let config = match read_bounded(&dir.join("config"), GIT_FILE) {
            Ok(Some(t)) => config_is_usual(&t),
            Ok(None) => true,
            Err(_) => false,
        };
        let packed = match read_bounded(&dir.join("packed-refs"), GIT_FILE) {
            Ok(Some(t)) => parse_packed(&t),
            Ok(None) => Packed::default(),
            Err(_) => Packed {
                odd: true,
                ..Packed::default()
            },
        };
        let c = Common {
            usual: dirs_ok && config,
            packed: Arc::new(packed),
            generation: self.generations.fetch_add(1, Ordering::Relaxed) + 1,
            frame: self.frame,
            looks: rec.filter(|r| r.ok).map(|r| Arc::new(r.looks)),
        };
        self.commons
            .lock()
            .expect("git files memo")
            .insert(dir.to_path_buf(), c.clone());
        c
    }

    /// Branch and HEAD of the repository whose top level is `dir`.
    pub(crate) fn head(&self, dir: &Path) -> Head {
        let r = if let Some(Answer::Head(r)) = self.kept_answer(dir, true) {
            r
        } else {
            self.reads.fetch_add(1, Ordering::Relaxed);
            let mut rec = self.recorder();
            let r = self.read(dir, &mut rec);
            self.keep_answer(dir, true, rec, &Answer::Head(r.clone()));
            r
        };
        match r {
            Ok(h) => h,
            Err(why) => Head::Unusual(why),
        }
    }

    /// The common directory of the repository whose top level is `dir`,
    /// when its layout is a usual one (whatever its HEAD).
    pub(crate) fn common_dir(&self, dir: &Path) -> Option<PathBuf> {
        if let Some(Answer::CommonDir(c)) = self.kept_answer(dir, false) {
            return c;
        }
        self.reads.fetch_add(1, Ordering::Relaxed);
        let mut rec = self.recorder();
        let c = (|| {
            let (_, common_dir) = self.dirs(dir, &mut rec).ok()??;
            let common = self.common(&common_dir);
            if let Some(r) = rec.as_mut() {
                r.common = Some((common_dir.clone(), common.generation));
            }
            common.usual.then_some(common_dir)
        })();
        self.keep_answer(dir, false, rec, &Answer::CommonDir(c.clone()));
        c
    }

    fn read(&self, dir: &Path, rec: &mut Option<Rec>) -> Result<Head, &'static str> {
        let Some((git_dir, common_dir)) = self.dirs(dir, rec)? else {
            return Ok(Head::NotRepo);
        };
        let common = self.common(&common_dir);
        if let Some(r) = rec.as_mut() {
            r.common = Some((common_dir.clone(), common.generation));
        }
        if !common.usual {
            return Err("unusual repository");
        }
        let head_path = git_dir.join("HEAD");
        self.look(
            rec,
            &parent_anchor(&git_dir),
            &head_path,
            false,
            Compare::Contents,
        );
        let head = read_small(&head_path)?.ok_or("no HEAD")?;
        let head = head.trim_end();
        let Some(target) = head.strip_prefix("ref:") else {
            if !is_hex_id(head) {
                return Err("HEAD is neither a ref nor a commit id");
            }
            return Ok(Head::Found(HeadFacts {
                head: head.to_string(),
                branch: None,
                common_dir,
            }));
        };
        let mut name = target.trim_start().to_string();
        for _ in 0..MAX_SYMREF_DEPTH {
            if !is_branch_ref(&name) {
                return Err("HEAD names no branch");
            }
            let ref_path = common_dir.join(&name);
            self.look(rec, &common_dir, &ref_path, false, Compare::Contents);
            let value = if let Some(v) = read_small(&ref_path)? {
                v.trim_end().to_string()
            } else {
                if common.packed.odd {
                    return Err("unusual packed-refs");
                }
                match common.packed.refs.get(&name) {
                    Some(id) => id.clone(),
                    None => return Err("unborn branch"),
                }
            };
            if let Some(next) = value.strip_prefix("ref:") {
                name = next.trim_start().to_string();
                continue;
            }
            if !is_hex_id(&value) {
                return Err("ref is neither a ref nor a commit id");
            }
            return Ok(Head::Found(HeadFacts {
                head: value,
                branch: Some(name["refs/heads/".len()..].to_string()),
                common_dir,
            }));
        }
        Err("symbolic refs nested too deep")
    }

    /// The git directory and common directory of the repository whose top
    /// level is `dir`; `None` when `dir/.git` does not exist.
    fn dirs(
        &self,
        dir: &Path,
        rec: &mut Option<Rec>,
    ) -> Result<Option<(PathBuf, PathBuf)>, &'static str> {
        if !self.plain_env {
            return Err("git environment variables set");
        }
        let dotgit = dir.join(".git");
        let wt_anchor = parent_anchor(dir);
        self.look(rec, &wt_anchor, &dotgit, false, Compare::Contents);
        let md = match std::fs::symlink_metadata(&dotgit) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(_) => return Err("unreadable .git"),
        };
        self.look(rec, &wt_anchor, dir, true, Compare::Owner);
        let wt = std::fs::metadata(dir).map_err(|_| "unreadable worktree")?;
        if !self.owned(&md) || !self.owned(&wt) {
            return Err("owned by another user");
        }
        let git_dir = if md.is_dir() {
            dotgit
        } else if md.is_file() {
            let text = read_small(&dotgit)?.ok_or("unreadable .git")?;
            let target = text
                .trim_end_matches(['\n', '\r'])
                .strip_prefix("gitdir: ")
                .ok_or("not a gitdir file")?;
            if target.is_empty() {
                return Err("not a gitdir file");
            }
            dir.join(target)
        } else {
            return Err(".git is neither a file nor a directory");
        };
        let gd_anchor = parent_anchor(&git_dir);
        self.look(rec, &gd_anchor, &git_dir, true, Compare::Owner);
        let gd = std::fs::metadata(&git_dir).map_err(|_| "git directory missing")?;
        if !gd.is_dir() {
            return Err("git directory missing");
        }
        if !self.owned(&gd) {
            return Err("owned by another user");
        }
        let commondir = git_dir.join("commondir");
        self.look(rec, &gd_anchor, &commondir, false, Compare::Contents);
        let common_dir = match read_small(&commondir)? {
            Some(t) => {
                let t = t.trim_end_matches(['\n', '\r']);
                if t.is_empty() {
                    return Err("empty commondir");
                }
                let target = git_dir.join(t);
                let out = normalised(&target).ok_or("unusual commondir")?;
                // The answer depends on which directories these are.
                self.look(rec, &gd_anchor, &target, true, Compare::Identity);
                self.look(rec, &out, &out, true, Compare::Identity);
                if !same_dir(&target, &out) {
                    return Err("unusual commondir");
                }
                out
            }
            None => git_dir.clone(),
        };
        Ok(Some((git_dir, common_dir)))
    }

    /// What the refs under `refs/remotes/` (and `refs/heads/` when
    /// `heads`) of a repository look like now: a stamp of every loose ref
    /// file and of `packed-refs`, whether there is any such ref at all,
    /// and whether every file is older than `now` by more than a second
    /// (so an answer about these refs may be kept while the stamp holds).
    /// `None` when the directory cannot be walked.
    pub(crate) fn refs_state(&self, common_dir: &Path, heads: bool, now: u64) -> Option<RefsState> {
        let Some(w) = &self.notice else {
            return self.refs_walk(common_dir, heads, now, &mut Vec::new());
        };
        let key = (common_dir.to_path_buf(), heads);
        let kept = self.refs_kept.lock().expect("refs").get(&key).cloned();
        if let Some(k) = kept {
            let recent =
                now >= k.verified_at && now - k.verified_at < crate::fsnotice::RECHECK_SECS;
            let mut quiet = recent && w.quiet(&common_dir.join("packed-refs"), k.verified);
            for d in &k.dirs {
                quiet &= w.dir_quiet(d, k.verified);
            }
            if quiet && self.common(common_dir).generation == k.generation {
                return Some(k.state);
            }
        }
        let mut dirs = Vec::new();
        let generation = self.common(common_dir).generation;
        let state = self.refs_walk(common_dir, heads, now, &mut dirs);
        // Each directory walked is asked about, so watched from now on.
        for d in &dirs {
            w.dir_quiet(d, self.notice_frame);
        }
        w.quiet(&common_dir.join("packed-refs"), self.notice_frame);
        let mut kept = self.refs_kept.lock().expect("refs");
        match state {
            Some(s) if s.settled => {
                kept.insert(
                    key,
                    KeptRefs {
                        state: s,
                        dirs,
                        generation,
                        verified: self.notice_frame,
                        verified_at: now,
                    },
                );
            }
            _ => {
                kept.remove(&key);
            }
        }
        state
    }

    /// What `take` says of `path` (a stat, following a symlink at its end
    /// or not; `None` when it cannot be taken that way): a kept reader
    /// keeps it across frames while no file event names the path, for up
    /// to [`crate::fsnotice::RECHECK_SECS`], unless it is a symlink (what
    /// it points at is not what the events of its directory see).
    pub(crate) fn kept_stat(
        &self,
        path: &Path,
        follow: bool,
        take: impl FnOnce() -> Option<rustix::io::Result<rustix::fs::Stat>>,
    ) -> Option<rustix::io::Result<rustix::fs::Stat>> {
        let Some(w) = &self.notice else {
            return take();
        };
        let key = (path.to_path_buf(), follow);
        if let Some((r, verified, at)) = self.stats_kept.lock().expect("stats").get(&key).copied()
            && self.now >= at
            && self.now - at < crate::fsnotice::RECHECK_SECS
            && w.quiet(path, verified)
        {
            return Some(r);
        }
        let r = take()?;
        let plain = match r {
            Ok(st) if follow => rustix::fs::lstat(path).is_ok_and(|l| {
                l.st_ino == st.st_ino
                    && !rustix::fs::FileType::from_raw_mode(l.st_mode).is_symlink()
            }),
            Ok(st) => !rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink(),
            // Nothing there, and no dangling symlink either.
            Err(Errno::NOENT | Errno::NOTDIR) => {
                !follow || matches!(rustix::fs::lstat(path), Err(Errno::NOENT | Errno::NOTDIR))
            }
            Err(_) => false,
        };
        let mut kept = self.stats_kept.lock().expect("stats");
        if plain {
            w.quiet(path, self.notice_frame);
            kept.insert(key, (r, self.notice_frame, self.now));
        } else {
            kept.remove(&key);
        }
        Some(r)
    }

    /// [`GitFiles::refs_state`] by walking the refs; `dirs` gets every
    /// directory walked (or looked for).
    fn refs_walk(
        &self,
        common_dir: &Path,
        heads: bool,
        now: u64,
        dirs: &mut Vec<PathBuf>,
    ) -> Option<RefsState> {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        let mut st = RefsState {
            stamp: 0,
            any: false,
            settled: true,
        };
        let mut note = |path: &Path, md: &std::fs::Metadata, st: &mut RefsState| {
            path.hash(&mut h);
            let stamp = Stamp::of_metadata(md);
            stamp.hash(&mut h);
            if !stamp.settled(now) {
                st.settled = false;
            }
        };
        let mut prefixes = vec!["refs/remotes/"];
        if heads {
            prefixes.push("refs/heads/");
        }
        let mut todo: Vec<PathBuf> = prefixes
            .iter()
            .map(|p| common_dir.join(p.trim_end_matches('/')))
            .collect();
        // `refs/` itself: a prefix directory made or removed is an event
        // there.
        dirs.push(common_dir.join("refs"));
        while let Some(dir) = todo.pop() {
            // One that does not exist is made by an event in its parent,
            // which is walked (or is `refs/`).
            let rd = match std::fs::read_dir(&dir) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(_) => return None,
            };
            dirs.push(dir.clone());
            for entry in rd {
                let entry = entry.ok()?;
                let path = entry.path();
                if entry.file_type().ok()?.is_dir() {
                    todo.push(path);
                    continue;
                }
                let md = std::fs::symlink_metadata(&path).ok()?;
                note(&path, &md, &mut st);
                st.any = true;
            }
        }
        let packed = common_dir.join("packed-refs");
        match std::fs::symlink_metadata(&packed) {
            Ok(md) => note(&packed, &md, &mut st),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return None,
        }
        let common = self.common(common_dir);
        if common.packed.odd {
            return None;
        }
        if common
            .packed
            .refs
            .keys()
            .any(|k| prefixes.iter().any(|p| k.starts_with(p)))
        {
            st.any = true;
        }
        st.stamp = h.finish();
        Some(st)
    }
}

#[cfg(test)]
#[path = "gitfiles_tests.rs"]
mod tests;
