//! The project's own files a set-up's commands name (`./scripts/setup.sh`,
//! `sh tools/bootstrap`): what they run comes from the new worktree, so
//! from the base commit it is checked out at, not from the command line
//! the captain read. Their git object ids at that commit are part of what
//! is approved ([`super::Plan::hash`]), so a changed script asks for
//! approval again (docs/spec/setup.md#approval).
//!
//! A word of a command names such a file when it is a relative path with
//! a `/` in it (after the shell's quotes are taken off), inside the
//! project: not absolute, no `..`, no `~`, `$`, glob, `=` or `:` (a
//! URL), not an option. What a command reads without naming it (a `Makefile`, the
//! package scripts `npm install` runs) is not covered.

use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A file a command names, and the git object it is at the base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Named {
    /// The path inside the project, without a leading `./`.
    pub path: String,
    /// Its object id at the base commit; `None` when the base does not
    /// track it.
    pub object: Option<String>,
}

/// The project paths the words of `command` name, in order, each once.
pub(super) fn named_paths(command: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let words = command
        .split(|c: char| c.is_whitespace() || ";&|()<>`".contains(c))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"'));
    for w in words {
        if let Some(p) = project_path(w)
            && !out.contains(&p)
        {
            out.push(p);
        }
    }
    out
}

/// `word` as a path inside the project, if it reads as one.
fn project_path(word: &str) -> Option<String> {
    if !word.contains('/')
        || word.starts_with('-')
        || word.contains(|c: char| "~$=:*?[]{}\\'\"".contains(c) || c.is_control())
    {
        return None;
    }
    let mut parts = Vec::new();
    for c in Path::new(word).components() {
        match c {
            Component::Normal(n) => parts.push(n.to_str()?),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The object ids of `paths` at `base` in the project at `top`; the
/// commit `base` names is an error when there is none.
pub(super) fn read_at(top: &Path, base: &str, paths: &[String]) -> Result<Vec<Named>> {
    let commit = format!("{base}^{{commit}}");
    let out = crate::git::run(
        top,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &commit,
        ],
    )?;
    let commit = out.stdout.trim();
    if !out.ok || commit.is_empty() {
        return Err(Error::refused(format!(
            "the set-up of {} names files of the project, to be read at {base}, which names no commit",
            top.display()
        )));
    }
    paths
        .iter()
        .map(|p| {
            let spec = format!("{commit}:{p}");
            let o = crate::git::run(top, &["rev-parse", "--verify", "--quiet", &spec])?;
            let id = o.stdout.trim();
            Ok(Named {
                path: p.clone(),
                object: (o.ok && !id.is_empty()).then(|| id.to_string()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_inside_the_project_are_the_named_files() {
        assert_eq!(named_paths("./scripts/setup.sh"), ["scripts/setup.sh"]);
        assert_eq!(
            named_paths("sh tools/boot --x && ./run ; \"./run\""),
            ["tools/boot", "run"]
        );
        assert_eq!(
            named_paths("cp config/example.env .env"),
            ["config/example.env"]
        );
        for none in [
            "npm ci",
            "make dev-db",
            "/usr/bin/env x",
            "../up/x",
            "~/bin/x",
            "$HOME/x",
            "FOO=a/b make",
            "--file=./x",
            "ls src/*.rs",
            "curl https://example.invalid/x | sh",
            "./",
        ] {
            assert!(named_paths(none).is_empty(), "{none}");
        }
    }

    proptest::proptest! {
        /// Whatever the command, a named path is a plain relative path
        /// inside the project, named once.
        #[test]
        fn a_named_path_never_leaves_the_project(cmd in "[ -~\\t\\n]{0,60}") {
            let got = named_paths(&cmd);
            for (i, p) in got.iter().enumerate() {
                proptest::prop_assert!(!p.is_empty() && !p.starts_with('/'), "{p:?}");
                proptest::prop_assert!(
                    p.split('/').all(|c| !c.is_empty() && c != "." && c != ".."),
                    "{p:?}"
                );
                proptest::prop_assert!(!got[..i].contains(p), "{p:?} twice");
            }
        }
    }

    #[test]
    fn the_object_at_the_base_is_read_and_an_untracked_file_has_none() {
        use crate::git::fixture::git;
        let d = tempfile::tempdir().unwrap();
        let top = d.path();
        git(top, &["init", "-q", "-b", "main"]);
        std::fs::create_dir(top.join("scripts")).unwrap();
        std::fs::write(top.join("scripts/setup.sh"), "echo one\n").unwrap();
        git(top, &["add", "scripts/setup.sh"]);
        git(
            top,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@x",
                "commit",
                "-q",
                "-m",
                "a",
            ],
        );
        let paths = vec!["scripts/setup.sh".to_string(), "scripts/none".to_string()];
        let got = read_at(top, "main", &paths).unwrap();
        assert_eq!(got[0].object.as_deref().map(str::len), Some(40));
        assert_eq!(got[1].object, None);
        // The working tree's edit is not what the worktree gets: no change.
        std::fs::write(top.join("scripts/setup.sh"), "echo two\n").unwrap();
        assert_eq!(read_at(top, "main", &paths).unwrap(), got);
        assert!(read_at(top, "nosuch", &paths).is_err());
    }
}
