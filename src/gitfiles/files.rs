//! Reading git's own small files: bounded reads, ids, ref names, the
//! config's usual shape, `packed-refs`.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::*;

pub(super) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Reads a small regular file, not following a symlink; `None` when it
/// does not exist (or a path component is not a directory).
pub(super) fn read_small(path: &Path) -> Result<Option<String>, &'static str> {
    read_bounded(path, SMALL)
}

/// Reads a regular file of at most `limit` bytes without following a
/// symlink or blocking: a FIFO, socket or device in a worktree's git files
/// is "unreadable" (the caller falls back to git), never waited on.
pub(super) fn read_bounded(path: &Path, limit: u64) -> Result<Option<String>, &'static str> {
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

pub(super) fn is_hex_id(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A ref name this reader resolves: a branch, with no component git
/// would refuse (`refs/heads/.invalid` is reftable's placeholder).
#[allow(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "git refuses a ref component ending in `.lock`, in that case only"
)]
pub(super) fn is_branch_ref(name: &str) -> bool {
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
pub(super) fn config_is_usual(text: &str) -> bool {
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
pub(super) fn normalised(path: &Path) -> Option<PathBuf> {
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
pub(super) fn same_dir(path: &Path, out: &Path) -> bool {
    match (std::fs::metadata(path), std::fs::metadata(out)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

pub(super) fn parse_packed(text: &str) -> Packed {
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
