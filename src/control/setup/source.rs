//! Where a project's set-up is written: the home's `[projects.<name>]`
//! table that names the project, and the project's own
//! `.firstmate/setup.toml` (the same two keys, `copy` and `setup`; an
//! unknown key there is an error, since nothing of that file is run
//! unless it reads as meant).

use std::path::Path;

use serde::Deserialize;

use crate::config::Config;
use crate::error::{Error, Result};

/// The project's own set-up file, relative to its top directory.
pub(crate) const PROJECT_FILE: &str = ".firstmate/setup.toml";

/// Largest project set-up file read.
const MAX_FILE: u64 = 64 * 1024;

/// One source's two lists.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Lists {
    #[serde(default)]
    pub copy: Vec<String>,
    #[serde(default)]
    pub setup: Vec<String>,
}

/// The sources that hold a set-up for the project at `top`, in order,
/// each with its name.
pub(super) fn lists(cfg: &Config, top: &Path) -> Result<Vec<(String, Lists)>> {
    let mut out = Vec::new();
    if let Some(name) = table_of(cfg, top) {
        let p = &cfg.projects[name];
        out.push((
            format!("[projects.{name}]"),
            Lists {
                copy: p.copy.clone(),
                setup: p.setup.clone(),
            },
        ));
    }
    if let Some(lists) = project_file(top)? {
        out.push((PROJECT_FILE.to_string(), lists));
    }
    Ok(out)
}

/// The `[projects.<name>]` table of the project at `top`: the one whose
/// `path` is that directory, else the one named after it that gives no
/// `path`.
pub(crate) fn table_of<'a>(cfg: &'a Config, top: &Path) -> Option<&'a str> {
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: the captain's project"
    )]
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let by_path = cfg.projects.iter().find(|(_, p)| {
        p.path
            .as_deref()
            .is_some_and(|path| path == top || canon(path) == top)
    });
    let by_name = || {
        let base = top.file_name()?.to_str()?;
        cfg.projects
            .iter()
            .find(|(name, p)| name.as_str() == base && p.path.is_none())
    };
    by_path.or_else(by_name).map(|(name, _)| name.as_str())
}

/// `<top>/.firstmate/setup.toml`, if there is one.
fn project_file(top: &Path) -> Result<Option<Lists>> {
    use std::io::Read;
    let path = top.join(PROJECT_FILE);
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: the captain's project"
    )]
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", &path, e)),
    };
    let mut text = String::new();
    file.take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| Error::io("read", &path, e))?;
    if text.len() as u64 > MAX_FILE {
        return Err(Error::refused(format!(
            "{} is over {MAX_FILE} bytes",
            path.display()
        )));
    }
    let lists: Lists = toml::from_str(&text).map_err(|e| Error::Config {
        path: path.clone(),
        line: e.span().map_or(1, |s| {
            text.as_bytes()[..s.start.min(text.len())]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1
        }),
        key: "(file)".into(),
        msg: e.message().trim().to_string(),
    })?;
    Ok(Some(lists))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        Config::from_parts(Path::new("firstmate.toml"), Some(text), &[]).unwrap()
    }

    #[test]
    fn a_table_is_found_by_its_path_then_by_the_directory_name() {
        let c = cfg(
            "[projects.app]\nsetup = [\"a\"]\n[projects.other]\npath = \"/src/app\"\nsetup = [\"b\"]\n",
        );
        assert_eq!(table_of(&c, Path::new("/src/app")), Some("other"));
        assert_eq!(table_of(&c, Path::new("/elsewhere/app")), Some("app"));
        assert_eq!(table_of(&c, Path::new("/src/web")), None);
        // A table with a path is that project's only.
        let c = cfg("[projects.app]\npath = \"/src/app\"\n");
        assert_eq!(table_of(&c, Path::new("/x/app")), None);
    }

    #[test]
    fn the_project_file_is_read_and_an_unknown_key_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path();
        assert!(project_file(top).unwrap().is_none());
        std::fs::create_dir(top.join(".firstmate")).unwrap();
        std::fs::write(
            top.join(PROJECT_FILE),
            "copy = [\".env\"]\nsetup = [\"make deps\"]\n",
        )
        .unwrap();
        let l = project_file(top).unwrap().unwrap();
        assert_eq!(
            (l.copy, l.setup),
            (vec![".env".into()], vec!["make deps".into()])
        );
        std::fs::write(top.join(PROJECT_FILE), "setup = []\nsetpu = [\"x\"]\n").unwrap();
        let e = project_file(top).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(
            e.to_string().contains(":2: (file): unknown field `setpu`"),
            "{e}"
        );
    }
}
