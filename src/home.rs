//! The home directory (docs/spec/home.md#resolution, #layout): how it is found, and every path
//! inside it. No other module joins paths under the home; they ask
//! [`Home`], so the layout lives in exactly one place.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::task_id::TaskId;

/// Relative location of the config file inside a home.
pub(crate) const CONFIG_REL: &str = "config/firstmate.toml";

/// Refuses a path holding a control character (a newline, a tab, an
/// escape, DEL, a C1 control). Such a path cannot be written into a
/// generated command line (a crontab entry, the doorbell) or shown to the
/// captain as itself: a newline would start a second cron job, and the
/// output layer would show a name that does not exist. `what` says which
/// path it is (`home`, `paths.worktrees`).
pub(crate) fn refuse_control(what: &str, path: &Path) -> Result<()> {
    if let Some(c) = control_char(path) {
        return Err(Error::refused(format!(
            "{what} path {} holds the control character U+{:04X}; \
             rename it to a path without control characters",
            path.display(),
            c as u32
        )));
    }
    Ok(())
}

pub(crate) use crate::config::control_char;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// Resolves the home: `flag`, then `$FM_HOME`, then the nearest ancestor
    /// of the current directory holding `config/firstmate.toml`.
    pub fn resolve(flag: Option<&Path>) -> Result<Home> {
        let cwd =
            std::env::current_dir().map_err(|e| Error::io("get current directory", ".", e))?;
        let env = std::env::var_os("FM_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Home::resolve_from(flag, env.as_deref(), &cwd)
    }

    /// [`Home::resolve`] with its inputs passed in (for tests).
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: it finds the home, before there is one to walk"
    )]
    pub(crate) fn resolve_from(
        flag: Option<&Path>,
        env: Option<&Path>,
        cwd: &Path,
    ) -> Result<Home> {
        if let Some(dir) = flag.or(env) {
            // A named directory must be a home too: a mistyped FM_HOME must
            // not quietly collect a worker's reports where nobody looks.
            let home = Home::at(&cwd.join(dir))?;
            if !crate::fsx::stat(&home.config_file())?.is_some_and(|m| m.is_file()) {
                return Err(Error::NotAHome(home.root));
            }
            return Ok(home);
        }
        let mut dir = Some(cwd);
        while let Some(d) = dir {
            if d.join(CONFIG_REL).is_file() {
                return Home::at(d);
            }
            dir = d.parent();
        }
        Err(Error::NoHome(cwd.to_path_buf()))
    }

    /// A home rooted at an existing directory, made absolute and physical.
    /// A path with a control character in it is refused
    /// ([`refuse_control`]), as given and as resolved.
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: it finds the home, before there is one to walk"
    )]
    pub fn at(dir: &Path) -> Result<Home> {
        refuse_control("home", dir)?;
        let root = dir
            .canonicalize()
            .map_err(|_| Error::NoHome(dir.to_path_buf()))?;
        if !root.is_dir() {
            return Err(Error::NoHome(dir.to_path_buf()));
        }
        refuse_control("home", &root)?;
        crate::fsx::register_root(&root);
        Ok(Home { root })
    }

    /// A home at `root` taken as given (already absolute); for `fm init`.
    pub fn new_unchecked(root: PathBuf) -> Home {
        crate::fsx::register_root(&root);
        Home { root }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn config_dir(&self) -> PathBuf {
        self.root.join("config")
    }
    pub(crate) fn config_file(&self) -> PathBuf {
        self.root.join(CONFIG_REL)
    }
    pub(crate) fn brief_include(&self) -> PathBuf {
        self.root.join("config/brief-include.md")
    }
    pub(crate) fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }
    pub fn state_dir(&self) -> PathBuf {
        self.root.join("state")
    }

    // --- data/<id>/ ---
    pub(crate) fn task_data(&self, id: &TaskId) -> PathBuf {
        self.data_dir().join(id.as_str())
    }
    pub(crate) fn brief(&self, id: &TaskId) -> PathBuf {
        self.task_data(id).join("brief.md")
    }
    pub(crate) fn brief_history(&self, id: &TaskId) -> PathBuf {
        self.task_data(id).join("brief.history")
    }
    pub(crate) fn brief_history_lock(&self, id: &TaskId) -> PathBuf {
        self.task_data(id).join(".brief.lock")
    }
    /// Held while a brief is replaced, so history numbers follow the order of writes.
    pub(crate) fn brief_write_lock(&self, id: &TaskId) -> PathBuf {
        self.task_data(id).join(".brief-write.lock")
    }
    pub(crate) fn report(&self, id: &TaskId) -> PathBuf {
        self.task_data(id).join("report.md")
    }
    pub(crate) fn response(&self, id: &TaskId) -> PathBuf {
        self.task_data(id).join("response.md")
    }

    // --- data/board/ ---
    pub(crate) fn board_dir(&self) -> PathBuf {
        self.data_dir().join("board")
    }
    pub(crate) fn board_lock(&self) -> PathBuf {
        self.board_dir().join(".lock")
    }
    /// The file of board task `T-NNN` (`name` is the canonical `T-NNN`).
    pub(crate) fn board_task(&self, name: &str) -> PathBuf {
        self.board_dir().join(format!("{name}.task"))
    }

    // --- state/<id>.* ---
    fn state_file(&self, id: &TaskId, suffix: &str) -> PathBuf {
        self.state_dir().join(format!("{id}.{suffix}"))
    }
    pub(crate) fn meta(&self, id: &TaskId) -> PathBuf {
        self.state_file(id, "meta")
    }
    pub(crate) fn meta_lock(&self, id: &TaskId) -> PathBuf {
        self.state_dir().join(format!(".meta-{id}.lock"))
    }
    pub(crate) fn control_lock(&self, id: &TaskId) -> PathBuf {
        self.state_dir().join(format!(".control-{id}.lock"))
    }
    pub fn status(&self, id: &TaskId) -> PathBuf {
        self.state_file(id, "status")
    }
    pub fn busy(&self, id: &TaskId) -> PathBuf {
        self.state_file(id, "busy")
    }
    /// The output of a new worktree's set-up (`control::setup`).
    pub fn setup_log(&self, id: &TaskId) -> PathBuf {
        self.state_file(id, "setup.log")
    }
    /// The set-ups the captain approved, by content hash.
    pub(crate) fn setup_approvals(&self) -> PathBuf {
        self.state_dir().join("setup-approved")
    }
    pub(crate) fn setup_approvals_lock(&self) -> PathBuf {
        self.state_dir().join(".setup-approved.lock")
    }
    /// The harness settings spawn writes for an agent's own hooks.
    pub fn agent_hooks(&self, id: &TaskId) -> PathBuf {
        self.state_file(id, "hooks.json")
    }
    pub fn run(&self, id: &TaskId) -> PathBuf {
        self.state_file(id, "run")
    }
    pub(crate) fn inbox(&self, id: &TaskId) -> PathBuf {
        self.state_file(id, "inbox")
    }
    pub(crate) fn inbox_handled(&self, id: &TaskId) -> PathBuf {
        self.inbox(id).join("handled")
    }
    pub(crate) fn inbox_lock(&self, id: &TaskId) -> PathBuf {
        self.inbox(id).join(".lock")
    }
    pub fn inbox_record(&self, id: &TaskId, seq: u64) -> PathBuf {
        self.inbox(id).join(crate::fsx::numbered_name(seq, "msg"))
    }
    pub fn handled_record(&self, id: &TaskId, seq: u64) -> PathBuf {
        self.inbox_handled(id)
            .join(crate::fsx::numbered_name(seq, "msg"))
    }
    pub(crate) fn ring_state(&self, id: &TaskId) -> PathBuf {
        self.inbox(id).join(".ring-state")
    }
    pub(crate) fn escalated(&self, id: &TaskId) -> PathBuf {
        self.inbox(id).join(".escalated")
    }
    /// A doorbell held back while the agent was busy, owed at the turn's end.
    pub(crate) fn ring_owed(&self, id: &TaskId) -> PathBuf {
        self.inbox(id).join(".ring-owed")
    }
    /// The dialog the watcher last raised a `dialog` wake for.
    pub(crate) fn dialog_seen(&self, id: &TaskId) -> PathBuf {
        self.inbox(id).join(".dialog")
    }

    // --- home-wide state ---
    pub(crate) fn events(&self) -> PathBuf {
        self.state_dir().join("events.jsonl")
    }
    pub fn wakes(&self) -> PathBuf {
        self.state_dir().join("wakes.log")
    }
    pub(crate) fn wakes_lock(&self) -> PathBuf {
        self.state_dir().join(".wakes.lock")
    }
    pub(crate) fn wakes_cursor(&self) -> PathBuf {
        self.state_dir().join(".wakes.cursor")
    }
    /// Serialises `fm-watch --drain` runs (the cursor itself is replaced).
    pub(crate) fn wakes_cursor_lock(&self) -> PathBuf {
        self.state_dir().join(".wakes.cursor.lock")
    }
    /// `fm top`'s own cursor into `wakes.log`: what the `w` view marked
    /// seen (a byte offset; `--drain`'s cursor is another file).
    pub(crate) fn top_cursor(&self) -> PathBuf {
        self.state_dir().join(".top.cursor")
    }
    /// `fm top`'s "seen" of each host's wakes: `<host>\t<seq>` lines.
    pub(crate) fn top_hosts_cursor(&self) -> PathBuf {
        self.state_dir().join(".top-hosts.cursor")
    }
    /// A notification channel's cursor into `wakes.log`: `<offset> <seq>`
    /// of the last wake it delivered or passed over.
    pub(crate) fn notify_cursor(&self, channel: &str) -> PathBuf {
        self.state_dir().join(format!(".notify-{channel}.cursor"))
    }
    /// Per-task read offsets of status logs already surfaced as wakes.
    pub(crate) fn watch_offsets(&self) -> PathBuf {
        self.state_dir().join(".watch.offsets")
    }
    pub fn watch_lock(&self) -> PathBuf {
        self.state_dir().join(".watch.lock")
    }
    pub fn watch_beat(&self) -> PathBuf {
        self.state_dir().join(".watch.beat")
    }
    /// Output of the watcher the `--crontab` line runs (bounded there).
    pub fn watch_log(&self) -> PathBuf {
        self.state_dir().join("watch.log")
    }
    /// Idempotency keys a task's writes across hosts were served with
    /// (`remote::kept`).
    pub(crate) fn seen_keys(&self, id: &TaskId) -> PathBuf {
        self.state_dir().join(format!("{id}.seen"))
    }
    pub(crate) fn seen_lock(&self, id: &TaskId) -> PathBuf {
        self.state_dir().join(format!(".seen-{id}.lock"))
    }
    /// Held while a doorbell is rung into the task's pane, so two ringers
    /// (a send and the watcher, say) never type into one composer at once.
    pub(crate) fn ring_lock(&self, id: &TaskId) -> PathBuf {
        self.state_dir().join(format!(".ring-{id}.lock"))
    }
    /// The Claude Code leg's waiter (docs/spec/ring.md#legs): `pid`,
    /// start time, spawn id and pane of the waiter listening now.
    pub(crate) fn leg_waiter(&self, id: &TaskId) -> PathBuf {
        self.state_file(id, "leg")
    }
    /// The leg's rings and delivered marks (`<rung> <delivered> <seq>`,
    /// then the doorbell text).
    pub(crate) fn leg_rings(&self, id: &TaskId) -> PathBuf {
        self.state_dir().join(format!(".leg-{id}.rings"))
    }
    /// Held while [`Home::leg_rings`] is read and changed.
    pub(crate) fn leg_lock(&self, id: &TaskId) -> PathBuf {
        self.state_dir().join(format!(".leg-{id}.lock"))
    }
    /// The board's idempotency keys (no task's: a dot file).
    pub(crate) fn board_seen_keys(&self) -> PathBuf {
        self.state_dir().join(".board.seen")
    }
    pub(crate) fn board_seen_lock(&self) -> PathBuf {
        self.state_dir().join(".seen-board.lock")
    }
    /// The captain's open grants to the first mate (`grant`).
    pub(crate) fn grants(&self) -> PathBuf {
        self.state_dir().join("grants")
    }
    pub(crate) fn grants_lock(&self) -> PathBuf {
        self.state_dir().join(".grants.lock")
    }
    /// The captain's cursor into each host's wakes (`remote::wakes`).
    pub(crate) fn wakes_hosts_cursor(&self) -> PathBuf {
        self.state_dir().join(".wakes-hosts.cursor")
    }
    /// The first mate's acknowledged position in the feeds: `-\t<offset>`
    /// for the local `wakes.log`, `<host>\t<offset>` per host.
    pub(crate) fn mate_cursor(&self) -> PathBuf {
        self.state_dir().join(".mate.cursor")
    }
    /// The wake packets presented to the first mate (the newest few).
    pub(crate) fn mate_packets(&self) -> PathBuf {
        self.state_dir().join(".mate.packets")
    }
    /// Serialises presenting and acknowledging wake packets.
    pub(crate) fn mate_lock(&self) -> PathBuf {
        self.state_dir().join(".mate.lock")
    }
    /// The current `fm wake --wait` waiter: `<pid>\t<nonce>`; an older
    /// waiter that no longer finds itself here ends without a word.
    pub(crate) fn mate_waiter(&self) -> PathBuf {
        self.state_dir().join(".mate.waiter")
    }
    /// What `fm mate init` wrote: `<path>\t<sha256>` lines.
    pub(crate) fn mate_pack(&self) -> PathBuf {
        self.state_dir().join(".mate.pack")
    }
    /// ssh's control sockets, one per host connection (mode 0700).
    pub fn ssh_dir(&self) -> PathBuf {
        self.state_dir().join("ssh")
    }
    pub(crate) fn archive_dir(&self) -> PathBuf {
        self.state_dir().join("archive")
    }
    pub(crate) fn archive_entry(&self, id: &TaskId, epoch: u64) -> PathBuf {
        self.archive_dir().join(format!("{id}-{epoch}"))
    }

    /// Where task worktrees live: `paths.worktrees`, relative to the home
    /// unless absolute; physical (see [`physical`]), because briefs tell
    /// workers that `pwd -P` must print it.
    pub(crate) fn worktrees_dir(&self, cfg: &crate::config::Config) -> PathBuf {
        physical(&self.root.join(&cfg.paths.worktrees))
    }
    /// The default worktree of a task, physical like [`Home::worktrees_dir`].
    pub(crate) fn worktree(&self, cfg: &crate::config::Config, id: &TaskId) -> PathBuf {
        physical(&self.root.join(&cfg.paths.worktrees).join(id.as_str()))
    }

    /// Ids of every task with a meta file, sorted.
    pub(crate) fn task_ids_with_meta(&self) -> Result<Vec<TaskId>> {
        let mut ids = Vec::new();
        for name in crate::fsx::list_dir(&self.state_dir())? {
            let Some(name) = name.to_str() else { continue };
            if let Some(stem) = name.strip_suffix(".meta")
                && let Ok(id) = TaskId::parse(stem)
            {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }
}

/// `path` made physical as far as it exists: its longest existing ancestor
/// with symlinks resolved, then the components that do not exist yet
/// (`.` dropped, `..` taken lexically, as nothing below the ancestor exists
/// to be a symlink). An absolute path stays absolute.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: a path made physical before it is known to be in one"
)]
pub(crate) fn physical(path: &Path) -> PathBuf {
    use std::path::Component;
    let parts: Vec<Component> = path.components().collect();
    for keep in (1..=parts.len()).rev() {
        let prefix: PathBuf = parts[..keep].iter().collect();
        let Ok(mut out) = prefix.canonicalize() else {
            continue;
        };
        for c in &parts[keep..] {
            match c {
                Component::Normal(n) => out.push(n),
                Component::ParentDir => {
                    out.pop();
                }
                _ => {}
            }
        }
        return out;
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init(p: &Path) {
        std::fs::create_dir_all(p.join("config")).unwrap();
        std::fs::write(p.join(CONFIG_REL), "").unwrap();
    }

    #[test]
    fn resolution_order_flag_env_ancestor() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let c = tempfile::tempdir().unwrap();
        for d in [&a, &b, &c] {
            init(d.path());
        }
        let deep = c.path().join("x/y");
        std::fs::create_dir_all(&deep).unwrap();
        let canon = |p: &Path| p.canonicalize().unwrap();
        let h = Home::resolve_from(Some(a.path()), Some(b.path()), &deep).unwrap();
        assert_eq!(h.root(), canon(a.path()));
        let h = Home::resolve_from(None, Some(b.path()), &deep).unwrap();
        assert_eq!(h.root(), canon(b.path()));
        let h = Home::resolve_from(None, None, &deep).unwrap();
        assert_eq!(h.root(), canon(c.path()));
        let bare = tempfile::tempdir().unwrap();
        let err = Home::resolve_from(None, None, bare.path()).unwrap_err();
        assert_eq!(err.exit_code(), 3);
        assert!(err.to_string().contains("fm init"));
        // A named directory without a config is not a home either.
        for (flag, env) in [(Some(bare.path()), None), (None, Some(bare.path()))] {
            let err = Home::resolve_from(flag, env, a.path()).unwrap_err();
            assert_eq!(err.exit_code(), 3);
            assert!(err.to_string().contains("not a firstmate home"), "{err}");
        }
    }

    #[test]
    fn relative_flag_is_made_absolute() {
        let a = tempfile::tempdir().unwrap();
        init(&a.path().join("h"));
        let h = Home::resolve_from(Some(Path::new("h")), None, a.path()).unwrap();
        assert!(h.root().is_absolute());
        assert!(h.root().ends_with("h"));
    }

    #[test]
    fn every_task_path_stays_under_the_home() {
        let h = Home::new_unchecked(PathBuf::from("/home/x"));
        let id = TaskId::parse("t1").unwrap();
        for p in [
            h.brief(&id),
            h.meta(&id),
            h.status(&id),
            h.inbox_record(&id, 1000),
            h.ring_state(&id),
        ] {
            assert!(p.starts_with("/home/x"));
        }
        assert_eq!(
            h.inbox_record(&id, 7),
            PathBuf::from("/home/x/state/t1.inbox/007.msg")
        );
    }

    #[test]
    fn worktree_paths_are_physical_even_before_they_exist() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(real.join("home/config")).unwrap();
        std::fs::create_dir_all(real.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(real.join("elsewhere"), real.join("home/worktrees")).unwrap();
        let h = Home::at(&real.join("home")).unwrap();
        let cfg = crate::config::Config::default();
        let id = TaskId::parse("t1").unwrap();
        assert_eq!(h.worktrees_dir(&cfg), real.join("elsewhere"));
        assert_eq!(h.worktree(&cfg, &id), real.join("elsewhere/t1"));
        assert_eq!(
            physical(&real.join("home/worktrees/../x/./y")),
            real.join("x/y")
        );
        assert_eq!(physical(&real.join("nope/a/../b")), real.join("nope/b"));
    }
}
