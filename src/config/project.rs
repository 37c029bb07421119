//! A `[projects.<name>]` table of `firstmate.toml`: what a new worktree of
//! that project needs before its agent starts (docs/spec/setup.md). Read
//! with the rest of the config (unknown keys warn there, with their line);
//! used by `control::setup`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// The configured projects by name, sorted.
pub type Projects = BTreeMap<String, ProjectCfg>;

/// One project.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(expecting = "a [projects.<name>] table")]
pub struct ProjectCfg {
    /// The project's checkout (absolute). Without it, the table is the
    /// project whose top directory is named `<name>`.
    #[serde(default, deserialize_with = "absolute")]
    pub path: Option<PathBuf>,
    /// Shell commands run in a new worktree, in order.
    #[serde(default)]
    pub setup: Vec<String>,
    /// Untracked files copied from the checkout into a new worktree,
    /// relative to the project's top directory.
    #[serde(default)]
    pub copy: Vec<String>,
}

fn absolute<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
    let s = String::deserialize(d)?;
    if !s.starts_with('/') {
        return Err(serde::de::Error::custom(format!(
            "expected an absolute path, got {s:?}"
        )));
    }
    Ok(Some(PathBuf::from(s)))
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    fn load(text: &str) -> crate::Result<Config> {
        Config::from_parts(Path::new("firstmate.toml"), Some(text), &[])
    }

    #[test]
    fn a_project_table_is_read_and_checked() {
        let c = load("[projects.app]\nsetup = [\"npm ci\"]\ncopy = [\".env\"]\n").unwrap();
        let p = &c.projects["app"];
        assert_eq!(p.setup, ["npm ci"]);
        assert_eq!(p.copy, [".env"]);
        assert_eq!(p.path, None);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let c = load("[projects.app]\npath = \"/src/app\"\n").unwrap();
        assert_eq!(
            c.projects["app"].path.as_deref(),
            Some(Path::new("/src/app"))
        );
        let msg = load("[projects.app]\npath = \"src/app\"\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "firstmate.toml:2: projects.app.path: expected an absolute path, got \"src/app\""
        );
        let c = load("[projects.app]\nsetpu = []\n").unwrap();
        assert_eq!(
            c.warnings,
            ["firstmate.toml:2: unknown key projects.app.setpu (ignored)"]
        );
    }
}
