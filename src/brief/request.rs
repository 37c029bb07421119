//! A brief as asked for, and its validation into the [`BriefSpec`] that
//! renders (docs/spec/brief.md#cli, docs/spec/chains.md).
//!
//! [`BriefRequest`] holds the inputs as typed as the command line gives
//! them (texts inline or as a file to read, project paths as written, the
//! parent id unparsed). [`BriefRequest::check_flags`] refuses what needs no
//! home (which flags belong to which kind); [`BriefRequest::validate`]
//! reads and checks everything else — texts, limits, branch, the include
//! file, the delegation chain — and derives the spec. Nothing here writes,
//! so a refusal leaves the home as it was.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{BriefHeader, BriefKind, BriefPaths, BriefSpec, Lineage};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::meta::{self, Mode, TaskMeta};
use crate::task_id::TaskId;
use crate::{clock, fsx};

/// A text given inline or as a file (`-` reads stdin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Text {
    Inline(String),
    File(PathBuf),
}

impl Text {
    /// The text; a file is read up to `limit` and must be UTF-8 (`what`
    /// names it in the refusal).
    pub(crate) fn read(&self, what: &str, limit: fsx::Limit) -> Result<String> {
        match self {
            Text::Inline(t) => Ok(t.clone()),
            Text::File(f) => read_text(f, what, limit),
        }
    }
}

/// Reads a text file given on the command line (`-` is stdin) up to
/// `limit`; exit 2 when it cannot be read, is over the limit or is not
/// UTF-8.
pub(crate) fn read_text(path: &Path, what: &str, limit: fsx::Limit) -> Result<String> {
    let bytes = fsx::read_input(path, &format!("{what} file"), limit)?;
    String::from_utf8(bytes)
        .map_err(|_| Error::usage(format!("{what} file {} is not UTF-8", path.display())))
}

impl BriefKind {
    /// The kind the flags name: `--scout`, `--secondmate`, or a ship with
    /// `--mode` (exit 2 for a ship without a mode, or a mode given to the
    /// other kinds).
    pub(crate) fn from_flags(
        mode: Option<&str>,
        scout: bool,
        secondmate: bool,
    ) -> Result<BriefKind> {
        if secondmate || scout {
            if mode.is_some() {
                return Err(Error::usage(format!(
                    "--mode does not apply to a {} brief",
                    if scout { "scout" } else { "secondmate" }
                )));
            }
            return Ok(if scout {
                BriefKind::Scout
            } else {
                BriefKind::Secondmate
            });
        }
        let m = mode
            .ok_or_else(|| Error::usage(format!("a ship brief needs --mode ({})", meta::MODES)))?;
        Ok(BriefKind::Ship(Mode::parse(m)?))
    }
}

/// What `fm-brief <id> …` asks for.
#[derive(Debug, Clone)]
pub(crate) struct BriefRequest {
    pub id: TaskId,
    pub kind: BriefKind,
    /// The repository name (ship, scout) or project clone paths
    /// (secondmate), as typed.
    pub(crate) rest: Vec<OsString>,
    pub(crate) no_projects: bool,
    pub(crate) charter: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) intent: Option<Text>,
    pub(crate) spec: Option<Text>,
    pub(crate) mission: Option<String>,
    pub(crate) constraints: Vec<String>,
    pub(crate) shares: Vec<String>,
    pub(crate) parent: Option<OsString>,
    pub(crate) max_depth: Option<u32>,
    pub(crate) delegator: Option<String>,
    pub(crate) branch_prefix: Option<String>,
}

impl BriefRequest {
    fn ship_or_scout(&self) -> bool {
        self.kind != BriefKind::Secondmate
    }

    /// The repository name of a ship or scout (exactly one after the id);
    /// empty for a secondmate.
    fn repo(&self) -> Result<String> {
        if !self.ship_or_scout() {
            return Ok(String::new());
        }
        match self.rest.as_slice() {
            [r] => Ok(r
                .to_str()
                .ok_or_else(|| Error::usage("the repository name is not UTF-8"))?
                .to_string()),
            [] => Err(Error::usage(format!(
                "a {} brief needs <repo> after the id",
                self.kind.name()
            ))),
            _ => Err(Error::usage("give exactly one <repo> after the id")),
        }
    }

    /// Refuses flags that do not belong to the brief's kind (exit 2). Needs
    /// no home, so it runs before the home is resolved.
    pub(crate) fn check_flags(&self) -> Result<()> {
        self.repo()?;
        if self.ship_or_scout()
            && (self.charter.is_some() || self.scope.is_some() || self.no_projects)
        {
            return Err(Error::usage(
                "--charter, --scope and --no-projects belong to --secondmate",
            ));
        }
        if !self.ship_or_scout()
            && (self.intent.is_some() || self.spec.is_some() || self.mission.is_some())
        {
            return Err(Error::usage(
                "a secondmate charter takes --charter and --scope, not --intent, --spec or --mission",
            ));
        }
        Ok(())
    }

    /// Reads and checks every input and derives the spec to render, dated
    /// `now`.
    pub(crate) fn validate(&self, home: &Home, cfg: &Config, now: u64) -> Result<BriefSpec> {
        self.check_flags()?;
        let id = &self.id;
        let intent_limit =
            fsx::Limit::setting(cfg.brief.max_intent_bytes, "brief.max_intent_bytes");
        let intent = self
            .intent
            .as_ref()
            .map(|t| t.read("intent", intent_limit))
            .transpose()?;
        if let Some(i) = &intent {
            super::validate_intent(i, cfg.brief.max_intent_bytes)?;
        }
        let spec = self
            .spec
            .as_ref()
            .map(|t| t.read("spec", fsx::Limit::INPUT))
            .transpose()?;
        if spec.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(Error::usage("the spec is blank"));
        }
        if let Some(m) = &self.mission {
            super::validate_mission(m)?;
        }
        for (what, text) in [("--intent", &intent), ("--spec", &spec)] {
            if text
                .as_deref()
                .is_some_and(super::check::leaves_a_fence_open)
            {
                return Err(Error::usage(format!(
                    "{what} opens a ``` code fence it never closes: it would hide every heading after it in the brief; close the fence"
                )));
            }
        }
        super::validate_constraints(&self.constraints)?;
        let shares = super::validate_shares(&self.shares)?;
        for (name, v) in [("charter", &self.charter), ("scope", &self.scope)] {
            if v.as_deref().is_some_and(|t| t.trim().is_empty()) {
                return Err(Error::usage(format!("the {name} is blank")));
            }
        }
        let projects = self.projects()?;
        let prefix = self
            .branch_prefix
            .clone()
            .unwrap_or_else(|| cfg.brief.branch_prefix.clone());
        let branch = format!("{prefix}{id}");
        if matches!(self.kind, BriefKind::Ship(_)) {
            super::validate_branch(&branch)?;
            if branch == cfg.brief.default_branch {
                return Err(Error::usage(format!(
                    "invalid branch name {}: it is the default branch, which the brief forbids committing to; use --branch-prefix",
                    crate::cli::common::quoted(&branch)
                )));
            }
        }
        let include = if self.ship_or_scout() {
            read_include(home)?
        } else {
            None
        };
        let lineage = self.lineage(home)?;
        let meta = TaskMeta::load(home, id)?.unwrap_or_default();
        Ok(BriefSpec {
            id: id.clone(),
            kind: self.kind,
            repo: self.repo()?,
            delegator: self
                .delegator
                .clone()
                .unwrap_or_else(|| cfg.brief.delegator.clone()),
            branch,
            timestamp: clock::rfc3339(now),
            intent,
            spec,
            mission: self.mission.clone(),
            constraints: self.constraints.clone(),
            shares,
            lineage,
            include,
            projects,
            charter: self.charter.clone(),
            scope: self.scope.clone(),
            paths: BriefPaths::of(home, cfg, id, &meta),
            default_branch: cfg.brief.default_branch.clone(),
            paused_verb: cfg.brief.paused_verb.clone(),
            tools: cfg.brief.tools.clone(),
        })
    }

    /// A secondmate's project clones: each an existing directory,
    /// absolute (relative paths are taken from the current directory).
    fn projects(&self) -> Result<Vec<PathBuf>> {
        if self.kind != BriefKind::Secondmate {
            return Ok(Vec::new());
        }
        match (self.rest.is_empty(), self.no_projects) {
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
        let cwd =
            std::env::current_dir().map_err(|e| Error::io("get current directory", ".", e))?;
        self.rest
            .iter()
            .map(|p| {
                let p = cwd.join(p);
                #[expect(
                    clippy::disallowed_methods,
                    reason = "outside the home: the captain's project clones"
                )]
                let clone = p.canonicalize().ok().filter(|c| c.is_dir());
                match clone {
                    Some(c) => Ok(c),
                    None => Err(Error::usage(format!(
                        "project clone {} is not a directory",
                        p.display()
                    ))),
                }
            })
            .collect()
    }

    /// The chain position of a new brief (docs/spec/chains.md). `--max-depth` may
    /// tighten a chain's limit; a looser one is refused (exit 2), not
    /// clamped.
    fn lineage(&self, home: &Home) -> Result<Option<Lineage>> {
        let Some(raw) = &self.parent else {
            return Ok(self.max_depth.map(|max| Lineage {
                parent: None,
                max_depth: max,
                depth: 0,
            }));
        };
        let parent = TaskId::parse_os(raw)?;
        if parent == self.id {
            return Err(Error::usage("a task cannot be its own parent"));
        }
        let path = home.brief(&parent);
        let bytes = fsx::read_optional(&path)?.ok_or_else(|| {
            Error::refused(format!("parent {parent} has no brief ({})", path.display()))
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let header = BriefHeader::parse(&text)
            .map_err(|e| Error::refused(format!("parent brief {}: {e}", path.display())))?;
        let num = |k: &str, v: Option<&str>| -> Result<Option<u32>> {
            v.map(|v| {
                v.parse::<u32>().map_err(|_| {
                    Error::refused(format!(
                        "parent brief {}: {k} {v:?} is not a number",
                        path.display()
                    ))
                })
            })
            .transpose()
        };
        let depth = num("currentDepth", header.current_depth.as_deref())?.unwrap_or(0);
        let parent_max =
            num("maxDepth", header.max_depth.as_deref())?.unwrap_or(super::DEFAULT_MAX_DEPTH);
        if let Some(asked) = self.max_depth
            && asked > parent_max
        {
            return Err(Error::usage(format!(
                "--max-depth {asked} is looser than the chain's limit: parent {parent} has maxDepth {parent_max}; \
                 a sub-brief may only tighten it"
            )));
        }
        let max = self.max_depth.unwrap_or(parent_max);
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
}

/// `config/brief-include.md`, when it is a regular file with text in it.
fn read_include(home: &Home) -> Result<Option<String>> {
    let path = home.brief_include();
    let Some(md) = fsx::stat(&path)? else {
        return Ok(None);
    };
    if !md.file_type().is_file() {
        return Err(Error::usage(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let text = String::from_utf8(fsx::read(&path)?)
        .map_err(|_| Error::usage(format!("{} is not UTF-8", path.display())))?;
    super::validate_include(&text)?;
    Ok(Some(text).filter(|t| !t.trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_name_the_kind() {
        assert_eq!(
            BriefKind::from_flags(Some("local-only"), false, false).unwrap(),
            BriefKind::Ship(Mode::LocalOnly)
        );
        assert_eq!(
            BriefKind::from_flags(None, true, false).unwrap(),
            BriefKind::Scout
        );
        for (mode, scout, secondmate) in [
            (None, false, false),
            (Some("yolo"), false, false),
            (Some("direct-PR"), true, false),
            (Some("direct-PR"), false, true),
        ] {
            let e = BriefKind::from_flags(mode, scout, secondmate).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{mode:?} {scout} {secondmate}");
        }
    }
}
