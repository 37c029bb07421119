//! Writing briefs (docs/spec/brief.md#history): first write, `--force` re-apply and
//! `--revoke`, each an atomic replace of `data/<id>/brief.md`.
//!
//! Before a brief is replaced or revoked, its old bytes are copied to
//! `data/<id>/brief.history/NNN.md` (numbers only grow, so the history reads
//! in order). The whole copy-then-replace runs under
//! `data/<id>/.brief-write.lock`, so concurrent re-applies never interleave.
//! Callers validate everything first: these functions are the only writes.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::home::Home;
use crate::task_id::TaskId;
use crate::{clock, fsx, shq};

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    pub(crate) path: PathBuf,
    /// Where the previous brief went, when one was replaced.
    pub(crate) history: Option<PathBuf>,
}

/// Refuses when a brief exists and `force` is off (exit 1, nothing written).
pub(crate) fn refuse_existing(home: &Home, id: &TaskId, force: bool) -> Result<Option<Vec<u8>>> {
    fsx::refuse_symlink(&home.task_data(id))?;
    let path = home.brief(id);
    let old = fsx::read_optional(&path)?;
    if old.is_some() && !force {
        return Err(Error::refused(format!(
            "{} already exists (use --force to replace it)",
            path.display()
        )));
    }
    Ok(old)
}

/// Writes `bytes` as the brief, first moving any existing brief into history.
pub(crate) fn write(home: &Home, id: &TaskId, bytes: &[u8], force: bool) -> Result<Written> {
    refuse_existing(home, id, force)?;
    fsx::ensure_dir(&home.task_data(id))?;
    let _guard = fsx::lock(&home.brief_write_lock(id), fsx::LOCK_WAIT)?;
    let path = home.brief(id);
    let old = refuse_existing(home, id, force)?;
    let history = match old {
        Some(old) => Some(archive(home, id, &old)?),
        None => None,
    };
    fsx::atomic_write(&path, bytes)?;
    Ok(Written { path, history })
}

fn archive(home: &Home, id: &TaskId, old: &[u8]) -> Result<PathBuf> {
    let dir = home.brief_history(id);
    fsx::ensure_dir(&dir)?;
    let (_, p) = fsx::create_numbered(&dir, &[], "md", &home.brief_history_lock(id), old)?;
    Ok(p)
}

/// The revoked brief: the old frontmatter (when readable) and a body that
/// tells the worker to stop and report. It has no `## Captain's intent`.
pub(crate) fn revoked_text(old: &str, at: u64, status_path: &std::path::Path) -> String {
    let front = match crate::frontmatter::parse(old) {
        Ok((_, body)) => format!("{}\n", &old[..old.len() - body.len()]),
        Err(_) => String::new(),
    };
    format!(
        "{front}# Revoked\n\nThis brief was revoked at {}. Stop working now: change nothing more, append a final \
         status line saying where you stopped, and wait for instructions.\n\n`{}`\n",
        clock::rfc3339(at),
        shq::status_append(
            "failed",
            "revoked; stopped at <where you stopped>",
            status_path
        )
    )
}

/// Revokes the brief: history copy, then the revoked text (exit 1 when there is no brief).
pub(crate) fn revoke(home: &Home, id: &TaskId, at: u64) -> Result<Written> {
    let path = home.brief(id);
    fsx::refuse_symlink(&home.task_data(id))?;
    if fsx::read_optional(&path)?.is_none() {
        return Err(Error::refused(format!(
            "no brief to revoke ({})",
            path.display()
        )));
    }
    let _guard = fsx::lock(&home.brief_write_lock(id), fsx::LOCK_WAIT)?;
    let old = fsx::read_optional(&path)?
        .ok_or_else(|| Error::refused(format!("no brief to revoke ({})", path.display())))?;
    let history = archive(home, id, &old)?;
    let text = revoked_text(&String::from_utf8_lossy(&old), at, &home.status(id));
    fsx::atomic_write(&path, text.as_bytes())?;
    Ok(Written {
        path,
        history: Some(history),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keeps_every_version_in_order() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t").unwrap();
        write(&home, &id, b"v1\n", false).unwrap();
        assert_eq!(
            write(&home, &id, b"v2\n", false).unwrap_err().exit_code(),
            1
        );
        for v in ["v2\n", "v3\n"] {
            write(&home, &id, v.as_bytes(), true).unwrap();
        }
        revoke(&home, &id, 0).unwrap();
        let hist = home.brief_history(&id);
        let got: Vec<String> = (1..=3)
            .map(|n| std::fs::read_to_string(hist.join(format!("{n:03}.md"))).unwrap())
            .collect();
        assert_eq!(got, ["v1\n", "v2\n", "v3\n"]);
        assert!(
            std::fs::read_to_string(home.brief(&id))
                .unwrap()
                .contains("# Revoked")
        );
    }

    #[test]
    fn revoked_text_keeps_the_frontmatter() {
        let t = revoked_text("---\nid: t\n---\n\n# Task\n", 0, std::path::Path::new("/s"));
        assert!(t.starts_with("---\nid: t\n---\n\n# Revoked\n"), "{t}");
    }
}
