//! Which pane is a task's: the mark a spawn leaves on it.
//!
//! tmux numbers panes from `%0` again whenever its server starts (a
//! reboot, a crash, `kill-server`), so a `pane=%N` kept in meta may name
//! another task's pane, or the captain's own shell, on the next server. A
//! pane therefore counts as a task's only when it proves it: spawn and
//! relaunch set the pane option [`MARK_OPTION`] to `<id>/<spawn id>`, keep
//! the same spawn id in meta (`spawn_id`) and the server's identity
//! (`tmux_server`, its pid and start time); every reader and every action
//! compares the pane's mark, read in the same tmux call that lists or
//! looks up the pane, with what meta says ([`Claim::check`]).
//!
//! A meta without `spawn_id` (written by hand, or by a spawn before marks
//! existed) proves less: its pane counts as the task's unless the pane is
//! marked for another task. Relaunching such a task marks its pane.

use crate::meta::TaskMeta;
use crate::task_id::TaskId;
use crate::tmux::pane::PaneInfo;

/// The tmux pane option holding a pane's mark.
pub const MARK_OPTION: &str = "@fm_task";

/// The format that prints the server's identity: its pid and start time.
pub const SERVER_FORMAT: &str = "#{pid}-#{start_time}";

/// The mark a pane carries for one spawn of task `id`.
pub fn mark(id: &TaskId, spawn_id: &str) -> String {
    format!("{id}/{spawn_id}")
}

/// A new spawn id: 16 hex digits, unpredictable and unique per spawn.
pub fn new_spawn_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:016x}", h.finish())
}

/// Why a recorded pane is not the task's (any more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lost {
    /// No pane with that id, on the server the task was spawned on (or on
    /// a server nothing says anything about).
    Closed,
    /// The server that answers is not the one the pane was opened on.
    ServerRestarted,
    /// The pane carries no mark, though meta says it was marked.
    Unmarked,
    /// The pane is marked as another task's.
    OtherTask(String),
    /// The pane is marked for another spawn of this task.
    OtherSpawn,
}

impl Lost {
    /// The reason as crew state and the refusals word it; `None` for a
    /// pane that is simply not there (plain "pane gone").
    pub fn reason(&self) -> Option<String> {
        match self {
            Lost::Closed => None,
            Lost::ServerRestarted => Some("the tmux server restarted".into()),
            Lost::Unmarked => Some("the pane id now names an unmarked pane".into()),
            Lost::OtherTask(t) => Some(format!("the pane id now names task {t}'s pane")),
            Lost::OtherSpawn => Some("the pane belongs to another spawn of this task".into()),
        }
    }

    /// `pane gone`, with the reason when there is one.
    pub fn words(&self) -> String {
        match self.reason() {
            Some(r) => format!("pane gone \u{b7} {r}"),
            None => "pane gone".into(),
        }
    }
}

/// What meta says a task's pane must prove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub(crate) task: TaskId,
    pub(crate) pane: String,
    /// `spawn_id`; `None` for a meta that predates marks.
    pub(crate) spawn_id: Option<String>,
    /// `tmux_server`: the server the pane was opened on.
    pub(crate) server: Option<String>,
}

impl Claim {
    /// The claim of task `id`'s meta; `None` when it records no pane.
    pub fn of(id: &TaskId, meta: &TaskMeta) -> Option<Claim> {
        Some(Claim {
            task: id.clone(),
            pane: meta.pane.clone()?,
            spawn_id: meta.spawn_id.clone(),
            server: meta.tmux_server.clone(),
        })
    }

    /// The mark the pane must carry, when meta says it was marked.
    pub fn expected_mark(&self) -> Option<String> {
        self.spawn_id.as_deref().map(|s| mark(&self.task, s))
    }

    /// Whether `info` (the recorded pane as tmux lists it, `None` when no
    /// pane has that id) is this task's. `server` is the identity of the
    /// server asked, when known (a listed pane carries it).
    pub fn check(&self, info: Option<&PaneInfo>, server: Option<&str>) -> Result<(), Lost> {
        let server = info.map(|i| i.server.as_str()).or(server);
        let restarted = match (&self.server, server) {
            (Some(was), Some(now)) => !now.is_empty() && was != now,
            _ => false,
        };
        let Some(info) = info else {
            return Err(if restarted {
                Lost::ServerRestarted
            } else {
                Lost::Closed
            });
        };
        if info.id != self.pane {
            return Err(Lost::Closed);
        }
        let (task, spawn) = info.mark.split_once('/').unwrap_or((&info.mark, ""));
        match &self.spawn_id {
            // Unproven meta: the pane is ours unless another task owns it.
            None if info.mark.is_empty() || task == self.task.as_str() => Ok(()),
            Some(want) if task == self.task.as_str() && spawn == want => Ok(()),
            Some(_) if restarted => Err(Lost::ServerRestarted),
            Some(_) if info.mark.is_empty() => Err(Lost::Unmarked),
            Some(_) if task == self.task.as_str() => Err(Lost::OtherSpawn),
            // Another task's mark, whether meta proves anything or not.
            None | Some(_) => Err(Lost::OtherTask(task.to_string())),
        }
    }

    /// [`Claim::check`] against a server's whole pane list.
    pub fn check_in(&self, list: &[PaneInfo]) -> Result<(), Lost> {
        let found = list.iter().find(|p| p.id == self.pane);
        let server = list.first().map(|p| p.server.as_str());
        self.check(found, server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str, mark: &str, server: &str) -> PaneInfo {
        PaneInfo {
            id: id.into(),
            dead: false,
            in_mode: false,
            command: "claude".into(),
            session: "fm".into(),
            window: "w".into(),
            mark: mark.into(),
            server: server.into(),
        }
    }

    fn claim(spawn: Option<&str>, server: Option<&str>) -> Claim {
        Claim {
            task: TaskId::parse("one").unwrap(),
            pane: "%0".into(),
            spawn_id: spawn.map(str::to_string),
            server: server.map(str::to_string),
        }
    }

    #[test]
    fn a_marked_claim_holds_only_on_its_own_mark() {
        let c = claim(Some("aa"), Some("7-100"));
        assert_eq!(c.check(Some(&info("%0", "one/aa", "7-100")), None), Ok(()));
        // The server restarted: its %0 is someone else's, or nobody's.
        assert_eq!(
            c.check(Some(&info("%0", "two/bb", "9-200")), None),
            Err(Lost::ServerRestarted)
        );
        assert_eq!(
            c.check(Some(&info("%0", "", "9-200")), None),
            Err(Lost::ServerRestarted)
        );
        assert_eq!(c.check(None, Some("9-200")), Err(Lost::ServerRestarted));
        // The same server.
        assert_eq!(c.check(None, Some("7-100")), Err(Lost::Closed));
        assert_eq!(c.check(None, None), Err(Lost::Closed));
        assert_eq!(
            c.check(Some(&info("%0", "", "7-100")), None),
            Err(Lost::Unmarked)
        );
        assert_eq!(
            c.check(Some(&info("%0", "two/aa", "7-100")), None),
            Err(Lost::OtherTask("two".into()))
        );
        assert_eq!(
            c.check(Some(&info("%0", "one/bb", "7-100")), None),
            Err(Lost::OtherSpawn)
        );
        // A mark is compared whole: a prefix or a suffix is not it.
        for m in ["one/a", "one/aaa", "on/aa", "one/aa/x", "one", "/aa"] {
            assert!(c.check(Some(&info("%0", m, "7-100")), None).is_err(), "{m}");
        }
        // Without a server in meta: the mark alone decides.
        let c = claim(Some("aa"), None);
        assert_eq!(c.check(Some(&info("%0", "one/aa", "1-1")), None), Ok(()));
        assert_eq!(
            c.check(Some(&info("%0", "", "1-1")), None),
            Err(Lost::Unmarked)
        );
    }

    #[test]
    fn an_unmarked_claim_yields_only_to_another_tasks_mark() {
        let c = claim(None, None);
        assert_eq!(c.check(Some(&info("%0", "", "1-1")), None), Ok(()));
        assert_eq!(c.check(Some(&info("%0", "one/zz", "1-1")), None), Ok(()));
        assert_eq!(
            c.check(Some(&info("%0", "two/zz", "1-1")), None),
            Err(Lost::OtherTask("two".into()))
        );
        assert_eq!(c.check(None, None), Err(Lost::Closed));
    }

    #[test]
    fn the_list_gives_the_server_of_a_missing_pane() {
        let c = claim(Some("aa"), Some("7-100"));
        let list = [info("%3", "x/y", "9-200")];
        assert_eq!(c.check_in(&list), Err(Lost::ServerRestarted));
        let list = [info("%3", "x/y", "7-100")];
        assert_eq!(c.check_in(&list), Err(Lost::Closed));
        assert_eq!(c.check_in(&[]), Err(Lost::Closed));
        assert!(new_spawn_id() != new_spawn_id());
        assert_eq!(new_spawn_id().len(), 16);
        assert_eq!(
            Lost::OtherTask("two".into()).words(),
            "pane gone \u{b7} the pane id now names task two's pane"
        );
        assert_eq!(Lost::Closed.words(), "pane gone");
    }
}
