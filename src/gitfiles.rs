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

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

/// Per-repository facts, read once per view.
#[derive(Debug, Clone)]
struct Common {
    /// `objects/` and `refs/` exist, and the config names nothing that
    /// changes where the work tree is or how refs are stored.
    usual: bool,
    packed: Arc<Packed>,
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
/// otherwise differs per worktree) — provided it is the same directory.
fn same_dir_normalised(path: &Path) -> Option<PathBuf> {
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
    let (a, b) = (std::fs::metadata(path).ok()?, std::fs::metadata(&out).ok()?);
    (a.dev() == b.dev() && a.ino() == b.ino()).then_some(out)
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
        }
    }

    fn owned(&self, md: &std::fs::Metadata) -> bool {
        self.euid == Some(md.uid())
    }

    /// The repository facts of a common directory, read once.
    fn common(&self, dir: &Path) -> Common {
        if let Some(c) = self.commons.lock().expect("git files memo").get(dir) {
            return c.clone();
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
        };
        self.commons
            .lock()
            .expect("git files memo")
            .insert(dir.to_path_buf(), c.clone());
        c
    }

    /// Branch and HEAD of the repository whose top level is `dir`.
    pub(crate) fn head(&self, dir: &Path) -> Head {
        match self.read(dir) {
            Ok(h) => h,
            Err(why) => Head::Unusual(why),
        }
    }

    /// The common directory of the repository whose top level is `dir`,
    /// when its layout is a usual one (whatever its HEAD).
    pub(crate) fn common_dir(&self, dir: &Path) -> Option<PathBuf> {
        let (_, common_dir) = self.dirs(dir).ok()??;
        self.common(&common_dir).usual.then_some(common_dir)
    }

    fn read(&self, dir: &Path) -> Result<Head, &'static str> {
        let Some((git_dir, common_dir)) = self.dirs(dir)? else {
            return Ok(Head::NotRepo);
        };
        let common = self.common(&common_dir);
        if !common.usual {
            return Err("unusual repository");
        }
        let head = read_small(&git_dir.join("HEAD"))?.ok_or("no HEAD")?;
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
            let value = if let Some(v) = read_small(&common_dir.join(&name))? {
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
    fn dirs(&self, dir: &Path) -> Result<Option<(PathBuf, PathBuf)>, &'static str> {
        if !self.plain_env {
            return Err("git environment variables set");
        }
        let dotgit = dir.join(".git");
        let md = match std::fs::symlink_metadata(&dotgit) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(_) => return Err("unreadable .git"),
        };
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
        let gd = std::fs::metadata(&git_dir).map_err(|_| "git directory missing")?;
        if !gd.is_dir() {
            return Err("git directory missing");
        }
        if !self.owned(&gd) {
            return Err("owned by another user");
        }
        let common_dir = match read_small(&git_dir.join("commondir"))? {
            Some(t) => {
                let t = t.trim_end_matches(['\n', '\r']);
                if t.is_empty() {
                    return Err("empty commondir");
                }
                same_dir_normalised(&git_dir.join(t)).ok_or("unusual commondir")?
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
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        let mut st = RefsState {
            stamp: 0,
            any: false,
            settled: true,
        };
        let settled_before = (now.cast_signed() - 1) * 1_000_000_000;
        let mut note = |path: &Path, md: &std::fs::Metadata, st: &mut RefsState| {
            path.hash(&mut h);
            (md.ino(), md.size(), md.mtime(), md.mtime_nsec()).hash(&mut h);
            if md.mtime() * 1_000_000_000 + md.mtime_nsec() >= settled_before {
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
        while let Some(dir) = todo.pop() {
            let rd = match std::fs::read_dir(&dir) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(_) => return None,
            };
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
