//! Task metadata (docs/spec/meta.md): `state/<id>.meta`, written by `fm-control`
//! (spawn, relaunch) and `fm-brief` (a sub-brief's `parent`, a re-applied
//! brief's kind, mode, repo and branch), and by hand.
//!
//! [`TaskMeta`] is the one reading of the file every tool uses: each value
//! trimmed once here, typed (kind, mode, paths, numbers), and an empty value
//! the same as a missing key — so `fm-send`, the watcher, crew state and
//! lifecycle can never disagree about a task's pane, socket or harness.
//! Writes go through [`update`]: under `state/.meta-<id>.lock`, read the
//! file's [`KeyValues`], change only the caller's keys, atomic replace — so
//! keys another writer owns (known or not) are preserved.

mod kind;
mod kv;

pub use kind::{Kind, MODES, Mode};
pub use kv::KeyValues;

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::task_id::TaskId;

/// A task's meta, as every tool reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskMeta {
    /// `kind`; `None` when meta records none (a reader that may consult the
    /// brief does so, the others take [`Kind::Ship`]: see [`TaskMeta::kind`]).
    pub kind: Option<Kind>,
    /// `mode`; `None` when missing or not one of the three modes.
    pub(crate) mode: Option<Mode>,
    /// `repo` (display name).
    pub(crate) repo: Option<String>,
    /// `project`: the source clone.
    pub(crate) project: Option<PathBuf>,
    /// `worktree`; `None` for a task never spawned.
    pub(crate) worktree: Option<PathBuf>,
    /// `branch` the brief told the worker to create.
    pub branch: Option<String>,
    pub harness: Option<String>,
    /// `pane` (`%N`): the only pane identity the tools trust.
    pub pane: Option<String>,
    /// `tmux_socket`; `None` means the config's (see [`TaskMeta::socket`]).
    pub tmux_socket: Option<String>,
    /// `window` (display only).
    pub(crate) window: Option<String>,
    /// `spawn_id`: the spawn that marked the pane ([`crate::tmux::owner`]);
    /// `None` for a meta that predates pane marks.
    pub(crate) spawn_id: Option<String>,
    /// `tmux_server`: the identity of the server the pane was opened on.
    pub(crate) tmux_server: Option<String>,
    /// `spawn_gen`; 0 when missing or not a number.
    pub(crate) spawn_gen: u64,
    pub(crate) spawned_at: Option<u64>,
    pub pr: Option<String>,
    pub(crate) pr_head: Option<String>,
    /// `parent`; `None` when missing or not a valid task id.
    pub(crate) parent: Option<TaskId>,
    /// `host` (reserved for remote workers).
    pub(crate) host: Option<String>,
    /// Every key as written, known or not.
    pub(crate) raw: KeyValues,
}

impl TaskMeta {
    pub fn parse(bytes: &[u8]) -> TaskMeta {
        TaskMeta::from_raw(KeyValues::parse(bytes))
    }

    /// Types the raw entries. This is the one place values are trimmed.
    /// One pass over the entries (each key is there once: the last
    /// occurrence in the file won), an empty value the same as none.
    pub fn from_raw(raw: KeyValues) -> TaskMeta {
        let mut m = TaskMeta::default();
        for (k, v) in raw.entries() {
            m.set_field(k, v.trim());
        }
        m.raw = raw;
        m
    }

    /// The typed fields as [`TaskMeta::parse`] gives them, read straight
    /// from the file's lines, without the raw entries (left empty): for a
    /// reader of the fields only, never for a writer (the fleet view).
    ///
    /// Lines and their '=' are found by byte (both ASCII, never inside a
    /// character), and only a line's own bytes looked at twice.
    #[cfg(test)]
    pub(crate) fn parse_fields(bytes: &[u8]) -> TaskMeta {
        let mut m = TaskMeta::default();
        m.fill_fields(bytes);
        m
    }

    /// Sets the fields of [`TaskMeta::parse_fields`] from the file's lines.
    fn fill_fields(&mut self, bytes: &[u8]) {
        let m = self;
        let text = match std::str::from_utf8(bytes) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        let mut rest = &*text;
        while !rest.is_empty() {
            // `str::lines`: split at '\n', a '\r' before it dropped.
            let (line, next) = match memchr::memchr(b'\n', rest.as_bytes()) {
                Some(i) => (
                    rest[..i].strip_suffix('\r').unwrap_or(&rest[..i]),
                    &rest[i + 1..],
                ),
                None => (rest, ""),
            };
            rest = next;
            let Some(eq) = line.bytes().position(|b| b == b'=') else {
                continue;
            };
            let (k, v) = (line[..eq].trim(), &line[eq + 1..]);
            if k.is_empty() || k.starts_with('#') {
                continue;
            }
            // As [`KeyValues::set`] keeps it; the last occurrence wins,
            // an empty one included.
            if v.bytes().any(|b| b == b'\n' || b == b'\r') {
                m.set_field(k, v.replace(['\n', '\r'], " ").trim());
            } else {
                m.set_field(k, v.trim());
            }
        }
    }

    /// Sets the field `k` from its trimmed value `v` (empty: none).
    fn set_field(&mut self, k: &str, v: &str) {
        let text = || (!v.is_empty()).then(|| v.to_string());
        let number = || v.parse::<u64>().ok();
        let path = || (!v.is_empty()).then(|| PathBuf::from(v));
        match k {
            "kind" => self.kind = (!v.is_empty()).then(|| Kind::parse(v)),
            "mode" => self.mode = Mode::parse(v).ok().filter(|_| !v.is_empty()),
            "repo" => self.repo = text(),
            "project" => self.project = path(),
            "worktree" => self.worktree = path(),
            "branch" => self.branch = text(),
            "harness" => self.harness = text(),
            "pane" => self.pane = text(),
            "tmux_socket" => self.tmux_socket = text(),
            "window" => self.window = text(),
            "spawn_id" => self.spawn_id = text(),
            "tmux_server" => self.tmux_server = text(),
            "spawn_gen" => self.spawn_gen = number().unwrap_or(0),
            "spawned_at" => self.spawned_at = number(),
            "pr" => self.pr = text(),
            "pr_head" => self.pr_head = text(),
            "parent" => self.parent = TaskId::parse(v).ok(),
            "host" => self.host = text(),
            _ => {}
        }
    }

    /// Reads `state/<id>.meta`; `None` when it does not exist. A
    /// `worktree=` holding a control character is refused
    /// ([`TaskMeta::parse_checked`]).
    pub(crate) fn load(home: &Home, id: &TaskId) -> Result<Option<TaskMeta>> {
        fsx::read_optional(&home.meta(id))?
            .map(|b| TaskMeta::parse_checked(&b))
            .transpose()
    }

    /// [`TaskMeta::parse`] for a meta a tool is about to act on: a
    /// `worktree=` path with a control character in it is refused, as a
    /// home path is ([`crate::home::refuse_control`]). Such a path would be
    /// passed to git and typed into briefs and panes as something that
    /// does not exist, or as two lines.
    pub(crate) fn parse_checked(bytes: &[u8]) -> Result<TaskMeta> {
        TaskMeta::parse(bytes).checked()
    }

    /// [`TaskMeta::parse_fields`], checked as [`TaskMeta::parse_checked`],
    /// into `slot` (a meta is large: filled in place, not moved there).
    pub(crate) fn parse_fields_into(bytes: &[u8], slot: &mut Option<TaskMeta>) -> Result<()> {
        let m = slot.insert(TaskMeta::default());
        m.fill_fields(bytes);
        m.refuse_control()
    }

    fn checked(self) -> Result<TaskMeta> {
        self.refuse_control()?;
        Ok(self)
    }

    /// Refuses a `worktree=` holding a control character.
    fn refuse_control(&self) -> Result<()> {
        match &self.worktree {
            Some(wt) => crate::home::refuse_control("worktree", wt),
            None => Ok(()),
        }
    }

    /// The kind, an unrecorded one being a ship.
    pub fn kind(&self) -> Kind {
        self.kind.clone().unwrap_or(Kind::Ship)
    }
    /// The host the task runs on (`host=`, trimmed); `None` for a local
    /// task (no key, or a blank one).
    pub(crate) fn host_name(&self) -> Option<&str> {
        self.host
            .as_deref()
            .map(str::trim)
            .filter(|h| !h.is_empty())
    }

    /// The tmux socket the task's pane lives on: meta `tmux_socket`, else
    /// the config's `tmux.socket` (`""` is the default server).
    pub(crate) fn socket<'a>(&'a self, cfg: &'a Config) -> &'a str {
        self.tmux_socket.as_deref().unwrap_or(&cfg.tmux.socket)
    }
}

/// Read-modify-write of a task's meta under its lock. Creates `state/` and
/// the file if needed; returns the meta as written.
pub(crate) fn update(
    home: &Home,
    id: &TaskId,
    change: impl FnOnce(&mut KeyValues),
) -> Result<TaskMeta> {
    fsx::ensure_dir(&home.state_dir())?;
    let _guard = fsx::lock(&home.meta_lock(id), fsx::LOCK_WAIT)?;
    let mut raw = fsx::read_optional(&home.meta(id))?
        .map(|b| KeyValues::parse(&b))
        .unwrap_or_default();
    change(&mut raw);
    fsx::atomic_write(&home.meta(id), &raw.to_bytes())?;
    Ok(TaskMeta::from_raw(raw))
}

/// Whether a task exists: it has meta or a brief. A symlink at the meta,
/// the task's data directory or its brief is refused (exit 1), never
/// followed.
pub(crate) fn task_known(home: &Home, id: &TaskId) -> Result<bool> {
    for p in [home.meta(id), home.task_data(id), home.brief(id)] {
        fsx::refuse_symlink(&p)?;
    }
    Ok(fsx::exists(&home.meta(id))? || fsx::exists(&home.brief(id))?)
}

/// The worktree the gate inspects for a task (and a brief names): meta
/// `worktree`, else the default location; physical as far as it exists.
pub(crate) fn worktree_of(home: &Home, cfg: &Config, id: &TaskId, meta: &TaskMeta) -> PathBuf {
    worktree_with(home, cfg, id, meta, &crate::home::physical)
}

/// [`worktree_of`], an absolute path made physical by `physical` (which
/// answers as [`crate::home::physical`] does).
pub(crate) fn worktree_with(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    meta: &TaskMeta,
    physical: &dyn Fn(&Path) -> PathBuf,
) -> PathBuf {
    match &meta.worktree {
        None => home.worktree(cfg, id),
        Some(w) if w.is_absolute() => physical(w),
        Some(w) => w.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typing as it was, key by key: what the one pass must give.
    fn from_raw_by_key(raw: KeyValues) -> TaskMeta {
        let text = |k: &str| {
            Some(raw.str(k).trim())
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let path = |k: &str| text(k).map(PathBuf::from);
        let number = |k: &str| text(k).and_then(|v| v.parse::<u64>().ok());
        TaskMeta {
            kind: text("kind").map(|k| Kind::parse(&k)),
            mode: text("mode").and_then(|m| Mode::parse(&m).ok()),
            repo: text("repo"),
            project: path("project"),
            worktree: path("worktree"),
            branch: text("branch"),
            harness: text("harness"),
            pane: text("pane"),
            tmux_socket: text("tmux_socket"),
            window: text("window"),
            spawn_id: text("spawn_id"),
            tmux_server: text("tmux_server"),
            spawn_gen: number("spawn_gen").unwrap_or(0),
            spawned_at: number("spawned_at"),
            pr: text("pr"),
            pr_head: text("pr_head"),
            parent: text("parent").and_then(|p| TaskId::parse(&p).ok()),
            host: text("host"),
            raw: raw.clone(),
        }
    }

    proptest::proptest! {
        #[test]
        fn one_pass_types_every_meta_as_key_by_key(
            lines in proptest::collection::vec(
                (
                    proptest::sample::select(&[
                        "kind", "mode", "repo", "project", "worktree", "branch", "harness",
                        "pane", "tmux_socket", "window", "spawn_gen", "spawned_at", "pr", "spawn_id", "tmux_server",
                        "pr_head", "parent", "host", "other", " pane", "#pane",
                    ][..]),
                    proptest::sample::select(&[
                        "", " ", "ship", "scout", "barge", "local-only", "direct-PR", "7",
                        " 12 ", "x", "%3", "/w", "a=b", "../p", "p-1", "\r",
                    ][..]),
                ),
                0..12,
            ),
        ) {
            let mut text = String::new();
            for (k, v) in &lines {
                text.push_str(&format!("{k}={v}\n"));
            }
            let raw = KeyValues::parse(text.as_bytes());
            proptest::prop_assert_eq!(TaskMeta::from_raw(raw.clone()), from_raw_by_key(raw));
        }
    }

    proptest::proptest! {
        /// Read straight from the lines, the fields are what the raw
        /// entries type into: the last occurrence of a key wins, an empty
        /// one included.
        #[test]
        fn the_fields_read_from_the_lines_are_the_typed_entries(
            lines in proptest::collection::vec(
                (
                    proptest::sample::select(&[
                        "kind", "mode", "repo", "project", "worktree", "pane", "spawn_gen",
                        "parent", "host", "other", " pane", "#pane", "", "pane ",
                    ][..]),
                    proptest::sample::select(&["=", " = ", "", "=="][..]),
                    proptest::sample::select(&[
                        "", " ", "ship", "scout", "local-only", "7", " 12 ", "x", "%3", "/w",
                        "a=b", "../p", "p-1", "a\rb", "\r", "\u{e9}", "\u{a0}x\u{a0}",
                    ][..]),
                    proptest::sample::select(&["\n", "\r\n", "\r"][..]),
                ),
                0..10,
            ),
            raw_bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..3),
        ) {
            let mut bytes = Vec::new();
            for (k, eq, v, end) in &lines {
                bytes.extend_from_slice(format!("{k}{eq}{v}{end}").as_bytes());
            }
            bytes.extend_from_slice(&raw_bytes);
            let want = TaskMeta {
                raw: KeyValues::default(),
                ..TaskMeta::parse(&bytes)
            };
            proptest::prop_assert_eq!(TaskMeta::parse_fields(&bytes), want);
        }
    }

    #[test]
    fn values_are_trimmed_typed_and_empty_is_missing() {
        let m = TaskMeta::parse(
            b"pane= %7 \ntmux_socket=sock \nharness=\tclaude\nkind=\nmode=local-only \nspawn_gen= 3\nparent= P \nworktree=/w \nrepo=a=b\nmystery= x \n",
        );
        assert_eq!(m.pane.as_deref(), Some("%7"));
        assert_eq!(m.tmux_socket.as_deref(), Some("sock"));
        assert_eq!(m.harness.as_deref(), Some("claude"));
        assert_eq!((m.kind.clone(), m.kind()), (None, Kind::Ship));
        assert_eq!(m.mode, Some(Mode::LocalOnly));
        assert_eq!(m.spawn_gen, 3);
        assert_eq!(m.parent.as_ref().map(TaskId::as_str), Some("P"));
        assert_eq!(m.worktree, Some(PathBuf::from("/w")));
        assert_eq!(m.repo.as_deref(), Some("a=b"));
        // Unknown keys are kept as written.
        assert_eq!(m.raw.get("mystery"), Some(" x "));
        let cfg = Config::default();
        assert_eq!(m.socket(&cfg), "sock");
        assert_eq!(
            TaskMeta::parse(b"tmux_socket= \n").socket(&cfg),
            cfg.tmux.socket
        );
        let odd = TaskMeta::parse(b"mode=yolo\nparent=../x\nspawn_gen=x\nkind=barge\n");
        assert_eq!(
            (odd.mode, odd.parent.clone(), odd.spawn_gen),
            (None, None, 0)
        );
        assert_eq!(odd.kind(), Kind::Other("barge".into()));
    }

    #[test]
    fn update_preserves_other_keys() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t").unwrap();
        update(&home, &id, |m| {
            m.set("pane", "%1");
            m.set("custom", "keep me");
        })
        .unwrap();
        let written = update(&home, &id, |m| m.set("pane", "%2")).unwrap();
        let m = TaskMeta::load(&home, &id).unwrap().unwrap();
        assert_eq!(m, written);
        assert_eq!(m.pane.as_deref(), Some("%2"));
        assert_eq!(m.raw.get("custom"), Some("keep me"));
    }
}
