//! `state/setup-approved`: which set-up content the captain approved for
//! which project, one line `<sha256 hex> <project top directory>` per
//! project, replaced atomically under `state/.setup-approved.lock`
//! (`fm setup approve` is the only writer). Approving is the captain's
//! word: refused while `FM_MATE` is set, as a grant is
//! ([`crate::grant::captain_only`]).

use std::path::Path;
use std::time::Duration;

use super::Plan;
use crate::error::{Error, Result};
use crate::fsx;
use crate::grant::{Actor, MATE_VAR};
use crate::home::Home;

/// How long an approval waits for another one's lock.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Whether a set-up may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Approval {
    Approved,
    /// Never approved for this project.
    New,
    /// Approved once, with other content.
    Changed,
}

impl Approval {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Approval::Approved => "approved",
            Approval::New => "not approved (new)",
            Approval::Changed => "not approved (changed since it was approved)",
        }
    }
}

/// The lines of the file: (hash, project).
fn parse(text: &str) -> Vec<(&str, &str)> {
    text.lines().filter_map(|l| l.split_once(' ')).collect()
}

fn render(lines: &[(&str, &str)]) -> String {
    lines.iter().fold(String::new(), |mut s, (h, p)| {
        s.push_str(h);
        s.push(' ');
        s.push_str(p);
        s.push('\n');
        s
    })
}

fn read(home: &Home) -> Result<String> {
    let bytes = fsx::read_optional(&home.setup_approvals())?.unwrap_or_default();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The project as a line of the file holds it; a path with a control
/// character cannot be one.
fn key(project: &Path) -> Result<&str> {
    match project.to_str() {
        Some(s) if !s.chars().any(char::is_control) => Ok(s),
        _ => Err(Error::refused(format!(
            "{}: a project path with control characters or invalid UTF-8 cannot be approved",
            project.display()
        ))),
    }
}

/// Whether `plan` is approved.
pub(crate) fn state(home: &Home, plan: &Plan) -> Result<Approval> {
    let text = read(home)?;
    let hash = plan.hash();
    let project = key(&plan.project)?;
    Ok(
        match parse(&text).into_iter().find(|(_, p)| *p == project) {
            Some((h, _)) if h == hash => Approval::Approved,
            Some(_) => Approval::Changed,
            None => Approval::New,
        },
    )
}

/// Refuses the first mate: approving is the captain's word.
pub(crate) fn captain_only(actor: Actor) -> Result<()> {
    match actor {
        Actor::Captain => Ok(()),
        Actor::Mate => Err(Error::refused(format!(
            "approving a set-up is the captain's word: refused while {MATE_VAR} is set (the first mate cannot approve what it would run)"
        ))),
    }
}

/// Records `plan`'s content as approved for its project (replacing an
/// earlier approval of it). The first mate cannot approve.
pub(crate) fn approve(home: &Home, actor: Actor, plan: &Plan) -> Result<()> {
    captain_only(actor)?;
    let project = key(&plan.project)?;
    fsx::ensure_dir(&home.state_dir())?;
    let _lock = fsx::lock(&home.setup_approvals_lock(), LOCK_WAIT)?;
    let text = read(home)?;
    let hash = plan.hash();
    let mut lines: Vec<(&str, &str)> = parse(&text)
        .into_iter()
        .filter(|(_, p)| *p != project)
        .collect();
    lines.push((&hash, project));
    fsx::atomic_write(&home.setup_approvals(), render(&lines).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_a_path_may_hold_spaces() {
        let text = "abc /src/my app\ndef /src/web\n";
        let lines = parse(text);
        assert_eq!(lines, [("abc", "/src/my app"), ("def", "/src/web")]);
        assert_eq!(render(&lines), text);
        assert!(key(Path::new("/a\nb")).is_err());
    }
}
