//! `teardown` (docs/spec/control.md): refuse to destroy unpushed or uncommitted work,
//! then stop, remove the worktree and archive the task's state.

use super::*;

impl Ctl<'_> {
    /// Whether the worktree's HEAD survives its removal: contained in a
    /// remote-tracking ref; a local branch also counts for local-only work
    /// and in a project with no remote at all (there is nowhere to push).
    #[allow(clippy::unused_self, reason = "a lifecycle step like the others")]
    pub(super) fn head_reachable(&self, meta: &TaskMeta, worktree: &Path) -> Result<bool> {
        let mut scopes = vec!["refs/remotes/"];
        let no_remote = git(worktree, &["remote"])?.trim().is_empty();
        if meta.mode == Some(Mode::LocalOnly) || no_remote {
            scopes.push("refs/heads/");
        }
        Ok(crate::git::ref_containing(worktree, "HEAD", &scopes)?.is_some())
    }

    pub(super) fn teardown(&self, force: bool) -> Result<String> {
        let meta = self.meta()?;
        // Before anything is stopped or removed: an archive reached
        // through a symlink would carry the task's files out of the home.
        fsx::refuse_symlink(&self.home.archive_dir())?;
        for p in self.archived_paths() {
            fsx::refuse_symlink(&p)?;
        }
        let worktree = meta.worktree.clone().unwrap_or_default();
        #[expect(
            clippy::disallowed_methods,
            reason = "outside the home: the worktree is git's"
        )]
        let has_worktree = meta.worktree.is_some() && worktree.join(".git").exists();
        if has_worktree && !force {
            // The top-level check first: a `.git` that git does not honour
            // would make every later `git -C` answer for an outer repository.
            let head = match crate::git::head(&worktree) {
                Err(e) if e.to_string().contains("not a git repository") => {
                    return Err(Error::refused(format!(
                        "worktree {} is not a git repository of its own (use --force)",
                        worktree.display()
                    )));
                }
                other => other?,
            };
            if !git(&worktree, &["status", "--porcelain"])?
                .trim()
                .is_empty()
            {
                return Err(Error::refused(format!(
                    "worktree {} has uncommitted changes (use --force)",
                    worktree.display()
                )));
            }
            // A task `fm land` delivered at this very HEAD has nothing
            // unlanded, whatever refs remain (a merged PR's branch pruned).
            let landed = meta.raw.get("landed").map(str::trim);
            if let Some(head) = head
                && landed != Some(head.as_str())
                && !self.head_reachable(&meta, &worktree)?
            {
                return Err(Error::refused(format!(
                    "HEAD {} is unreachable outside the worktree: push it first (or use --force)",
                    &head[..head.len().min(12)]
                )));
            }
        }
        if let Err(e) = self.stop(&meta, force)
            && !force
        {
            return Err(e);
        }
        if let Agent::Exited(info) | Agent::Alive(info) = self.agent(&meta)? {
            let _ = self.tmux(&meta).run(&["kill-pane", "-t", &info.id]);
        }
        // The delivery leg's waiter goes with its agent (docs/spec/ring.md#legs).
        crate::leg::claude::stop(self.home, self.id);
        if has_worktree {
            let project = meta.project.clone().unwrap_or_else(|| worktree.clone());
            let wt = worktree.display().to_string();
            git(&project, &["worktree", "remove", "--force", &wt])?;
        }
        let now = clock::now();
        let dest = self.home.archive_entry(self.id, now);
        fsx::ensure_dir(&dest)?;
        let id = self.id;
        for src in self.archived_paths() {
            let name = if src == self.home.task_data(id) {
                "data".into()
            } else {
                src.file_name()
                    .map(std::ffi::OsStr::to_os_string)
                    .unwrap_or_default()
            };
            if fsx::exists(&src)? && !fsx::rename_noclobber(&src, &dest.join(&name))? {
                return Err(Error::refused(format!(
                    "archive entry {} already exists",
                    dest.join(name).display()
                )));
            }
        }
        let event = Event::ControlTornDown {
            archive: dest.display().to_string(),
        };
        Entry::new(now, Tool::Control, id.as_str(), event).record(self.home);
        Ok(format!("torn-down {id} archive={}", dest.display()))
    }
}

impl Ctl<'_> {
    /// What teardown moves into the archive entry (the idempotency keys
    /// too: a retried teardown finds its answer there).
    fn archived_paths(&self) -> [PathBuf; 11] {
        let id = self.id;
        [
            self.home.meta(id),
            crate::inbox::ladder_files::agent_dead_path(self.home, id),
            crate::agent_report::agent_home_file(self.home, id),
            crate::leg::codex::state_file(self.home, id),
            self.home.seen_keys(id),
            self.home.status(id),
            self.home.busy(id),
            self.home.run(id),
            self.home.setup_log(id),
            self.home.inbox(id),
            self.home.task_data(id),
        ]
    }
}
