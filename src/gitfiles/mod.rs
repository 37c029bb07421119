//! A worktree's branch and HEAD read from git's own files, without running
//! git (docs/spec/dod.md#gate, docs/spec/crew-state.md#resolution): one git process costs ~2 ms,
//! reading `.git`,
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

#![expect(
    clippy::disallowed_methods,
    reason = "outside the home: git's own files in worktrees and clones, read by path as git lays them out"
)]

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

mod files;
mod looks;
mod refs;

use files::*;
use looks::*;

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
}

#[cfg(test)]
#[path = "gitfiles_tests.rs"]
mod tests;
