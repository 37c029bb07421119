//! The `copy` list: untracked files (a `.env`, a local config) copied
//! from the captain's checkout into a new worktree, at the same relative
//! path, with their permission bits.
//!
//! An entry is a relative path inside the project: no `..`, no absolute
//! path, nothing in `.git`. No symlink is followed on either side — not
//! the file, not a directory above it (a link could read a file outside
//! the project, or write one outside the worktree) — and only a regular
//! file is copied. Both trees are the captain's and git's, outside the
//! home, so this is plain `std::fs` with `O_NOFOLLOW` opens.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path};

/// Why `rel` is not an entry the list may hold, if it is not.
pub(super) fn check_rel(rel: &str) -> Result<(), &'static str> {
    let p = Path::new(rel);
    if rel.is_empty() || rel.contains('\0') {
        return Err("is empty");
    }
    let mut normal = 0;
    for c in p.components() {
        match c {
            Component::Normal(n) if n == ".git" => return Err("is inside .git"),
            Component::Normal(_) => normal += 1,
            Component::CurDir => {}
            Component::ParentDir => return Err("leaves the project (..)"),
            Component::RootDir | Component::Prefix(_) => {
                return Err("is absolute: name a path inside the project");
            }
        }
    }
    if normal == 0 {
        return Err("names no file");
    }
    Ok(())
}

/// Refuses a symlink at `base/rel`'s directories (those that exist);
/// `Ok(false)` when one of them is missing.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the captain's project and git's worktree"
)]
fn dirs_plain(base: &Path, rel: &Path) -> Result<bool, String> {
    let mut at = base.to_path_buf();
    let Some(parent) = rel.parent() else {
        return Ok(true);
    };
    for c in parent.components() {
        at.push(c);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!("{} is a symlink", at.display()));
            }
            Ok(m) if !m.is_dir() => return Err(format!("{} is not a directory", at.display())),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(format!("{}: {e}", at.display())),
        }
    }
    Ok(true)
}

/// Copies `project/rel` to `worktree/rel`, keeping its mode; the reason
/// it cannot, in words.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the captain's project and git's worktree"
)]
pub(super) fn copy(project: &Path, worktree: &Path, rel: &str) -> Result<(), String> {
    check_rel(rel).map_err(str::to_string)?;
    let relp = Path::new(rel);
    let from = project.join(relp);
    if !dirs_plain(project, relp)? {
        return Err(format!("{} does not exist", from.display()));
    }
    // Non-blocking: a FIFO (or a device) would block an open for reading;
    // what was opened is then checked a regular file on the descriptor.
    let mut src = OpenOptions::new()
        .read(true)
        .custom_flags(
            (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK)
                .bits()
                .cast_signed(),
        )
        .open(&from)
        .map_err(|e| match rustix::io::Errno::from_io_error(&e) {
            Some(rustix::io::Errno::LOOP) => format!("{} is a symlink", from.display()),
            _ => format!("{}: {e}", from.display()),
        })?;
    let meta = src
        .metadata()
        .map_err(|e| format!("{}: {e}", from.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", from.display()));
    }
    let to = worktree.join(relp);
    if !dirs_plain(worktree, relp)? {
        let dir = to.parent().unwrap_or(worktree);
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // Made just now, by this process: but check again, in case a
        // link was put in its way meanwhile.
        dirs_plain(worktree, relp)?;
    }
    // The permission bits only: no setuid, setgid or sticky bit is made.
    let mode = meta.permissions().mode() & 0o777;
    let mut dst: File = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(&to)
        .map_err(|e| format!("{}: {e}", to.display()))?;
    io::copy(&mut src, &mut dst).map_err(|e| format!("{}: {e}", to.display()))?;
    dst.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{}: {e}", to.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_stay_inside_the_project() {
        assert_eq!(check_rel(".env"), Ok(()));
        assert_eq!(check_rel("config/local.toml"), Ok(()));
        assert_eq!(check_rel("./a"), Ok(()));
        assert!(check_rel("../escape").is_err());
        assert!(check_rel("a/../../b").is_err());
        assert!(check_rel("/etc/passwd").is_err());
        assert!(check_rel(".git/config").is_err());
        assert!(check_rel("").is_err());
        assert!(check_rel(".").is_err());
    }

    #[test]
    fn a_file_is_copied_with_its_mode_and_no_symlink_is_followed() {
        let d = tempfile::tempdir().unwrap();
        let (p, w) = (d.path().join("p"), d.path().join("w"));
        fs::create_dir_all(p.join("conf")).unwrap();
        fs::create_dir_all(&w).unwrap();
        fs::write(p.join("conf/run.sh"), "echo hi\n").unwrap();
        fs::set_permissions(p.join("conf/run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
        copy(&p, &w, "conf/run.sh").unwrap();
        assert_eq!(
            fs::read_to_string(w.join("conf/run.sh")).unwrap(),
            "echo hi\n"
        );
        let mode = fs::metadata(w.join("conf/run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o750);
        std::os::unix::fs::symlink("/etc/hostname", p.join("link")).unwrap();
        assert!(copy(&p, &w, "link").unwrap_err().contains("symlink"));
        std::os::unix::fs::symlink(&p, p.join("dirlink")).unwrap();
        assert!(
            copy(&p, &w, "dirlink/conf/run.sh")
                .unwrap_err()
                .contains("symlink")
        );
        std::os::unix::fs::symlink("/tmp", w.join("out")).unwrap();
        fs::create_dir_all(p.join("out")).unwrap();
        fs::write(p.join("out/x"), "x").unwrap();
        assert!(copy(&p, &w, "out/x").unwrap_err().contains("symlink"));
        assert!(copy(&p, &w, "missing").unwrap_err().contains("missing"));
    }

    #[test]
    fn a_fifo_is_refused_at_once_and_no_setuid_bit_is_copied() {
        let d = tempfile::tempdir().unwrap();
        let (p, w) = (d.path().join("p"), d.path().join("w"));
        fs::create_dir_all(&p).unwrap();
        fs::create_dir_all(&w).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(p.join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let (pp, ww) = (p.clone(), w.clone());
        std::thread::spawn(move || {
            let _ = tx.send(copy(&pp, &ww, "pipe"));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("copying a FIFO blocked");
        assert!(got.unwrap_err().contains("not a regular file"));
        fs::write(p.join("tool"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(p.join("tool"), fs::Permissions::from_mode(0o6755)).unwrap();
        copy(&p, &w, "tool").unwrap();
        let mode = fs::metadata(w.join("tool")).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o755);
    }
}
