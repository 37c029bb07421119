//! Reading and validating `fm-brief`'s inputs that need more than one
//! flag: the brief's kind, text files, secondmate projects, the include
//! file and the delegation chain. Nothing here writes.

use std::path::{Path, PathBuf};

use super::Args;
use crate::brief::{self, BriefKind, Lineage};
use crate::error::{Error, Result};
use crate::meta::{self, Mode};
use crate::task_id::TaskId;
use crate::{frontmatter, fsx};

pub(super) fn read_text(path: &Path, what: &str) -> Result<String> {
    let bytes = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(|e| Error::io("read", "<stdin>", e))?;
        buf
    } else {
        std::fs::read(path)
            .map_err(|e| Error::usage(format!("cannot read {what} file {}: {e}", path.display())))?
    };
    String::from_utf8(bytes)
        .map_err(|_| Error::usage(format!("{what} file {} is not UTF-8", path.display())))
}

pub(super) fn kind_of(a: &Args) -> Result<BriefKind> {
    if a.secondmate || a.scout {
        if a.mode.is_some() {
            return Err(Error::usage(format!(
                "--mode does not apply to a {} brief",
                if a.scout { "scout" } else { "secondmate" }
            )));
        }
        return Ok(if a.scout {
            BriefKind::Scout
        } else {
            BriefKind::Secondmate
        });
    }
    let m = a
        .mode
        .as_deref()
        .ok_or_else(|| Error::usage(format!("a ship brief needs --mode ({})", meta::MODES)))?;
    Ok(BriefKind::Ship(Mode::parse(m)?))
}

pub(super) fn projects(a: &Args, kind: BriefKind) -> Result<Vec<PathBuf>> {
    if kind != BriefKind::Secondmate {
        return Ok(Vec::new());
    }
    match (a.rest.is_empty(), a.no_projects) {
        (true, false) => {
            return Err(Error::usage(
                "a secondmate needs project clone paths or --no-projects",
            ));
        }
        (false, true) => {
            return Err(Error::usage(
                "--no-projects and project clone paths exclude each other",
            ));
        }
        _ => {}
    }
    let cwd = std::env::current_dir().map_err(|e| Error::io("get current directory", ".", e))?;
    a.rest
        .iter()
        .map(|p| {
            let p = cwd.join(p);
            match p.canonicalize() {
                Ok(c) if c.is_dir() => Ok(c),
                _ => Err(Error::usage(format!(
                    "project clone {} is not a directory",
                    p.display()
                ))),
            }
        })
        .collect()
}

pub(super) fn read_include(home: &crate::home::Home) -> Result<Option<String>> {
    let path = home.brief_include();
    let md = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("stat", path, e)),
    };
    if !md.file_type().is_file() {
        return Err(Error::usage(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let text = String::from_utf8(fsx::read(&path)?)
        .map_err(|_| Error::usage(format!("{} is not UTF-8", path.display())))?;
    brief::validate_include(&text)?;
    Ok(Some(text).filter(|t| !t.trim().is_empty()))
}

/// The chain position of a new brief (SPEC §11.2). `--max-depth` may
/// tighten a chain's limit; a looser one is refused (exit 2), not clamped.
pub(super) fn lineage(a: &Args, home: &crate::home::Home, id: &TaskId) -> Result<Option<Lineage>> {
    let Some(raw) = &a.parent else {
        return Ok(a.max_depth.map(|max| Lineage {
            parent: None,
            max_depth: max,
            depth: 0,
        }));
    };
    let parent = TaskId::parse_os(raw)?;
    if &parent == id {
        return Err(Error::usage("a task cannot be its own parent"));
    }
    let path = home.brief(&parent);
    let bytes = fsx::read_optional(&path)?.ok_or_else(|| {
        Error::refused(format!("parent {parent} has no brief ({})", path.display()))
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let (fields, _) = frontmatter::parse(&text)
        .map_err(|e| Error::refused(format!("parent brief {}: {e}", path.display())))?;
    let num = |k: &str| -> Result<Option<u32>> {
        frontmatter::get(&fields, k)
            .map(|v| {
                v.parse::<u32>().map_err(|_| {
                    Error::refused(format!(
                        "parent brief {}: {k} {v:?} is not a number",
                        path.display()
                    ))
                })
            })
            .transpose()
    };
    let depth = num("currentDepth")?.unwrap_or(0);
    let parent_max = num("maxDepth")?.unwrap_or(brief::DEFAULT_MAX_DEPTH);
    if let Some(asked) = a.max_depth
        && asked > parent_max
    {
        return Err(Error::usage(format!(
            "--max-depth {asked} is looser than the chain's limit: parent {parent} has maxDepth {parent_max}; \
             a sub-brief may only tighten it"
        )));
    }
    let max = a.max_depth.unwrap_or(parent_max);
    if depth >= max {
        return Err(Error::refused(format!(
            "parent {parent} is already at maxDepth {max} (currentDepth {depth})"
        )));
    }
    Ok(Some(Lineage {
        parent: Some(parent),
        max_depth: max,
        depth: depth + 1,
    }))
}
