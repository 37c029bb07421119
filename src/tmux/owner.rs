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

/// Whether the raw mark `raw` is one of task `id`'s spawns (a valid
/// `<id>/<16 hex digits>`).
pub fn marks_task(raw: &str, id: &TaskId) -> bool {
    matches!(Mark::parse(raw), Mark::Task(t, _) if &t == id)
}

/// A pane's mark as read: `<task id>/<16 hex digits>`, nothing, or
/// anything else (never trusted, never printed).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mark {
    None,
    Task(TaskId, String),
    Garbage,
}

impl Mark {
    fn parse(raw: &str) -> Mark {
        if raw.is_empty() {
            return Mark::None;
        }
        let Some((task, spawn)) = raw.split_once('/') else {
            return Mark::Garbage;
        };
        let hex = spawn.len() == 16 && spawn.bytes().all(|b| b.is_ascii_hexdigit());
        match TaskId::parse(task) {
            Ok(t) if hex => Mark::Task(t, spawn.to_string()),
            _ => Mark::Garbage,
        }
    }
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
    /// The pane is marked as another task's (named when the mark holds a
    /// valid task id).
    OtherTask(Option<String>),

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
            Lost::OtherTask(Some(t)) => Some(format!("the pane id now names task {t}'s pane")),
            Lost::OtherTask(None) => Some("the pane id now names another task's pane".into()),
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
    ///
    /// With a `spawn_id` in meta: the pane's exact mark proves it. Short
    /// of that, on the server the pane was opened on (pane ids are never
    /// reused within one server's life) a pane without a mark — one named
    /// in meta by hand — or with another spawn's mark of this same task — a
    /// relaunch between marking the pane and writing meta — is still the
    /// task's; on any other server it is not. Without a `spawn_id` (a meta
    /// written by hand or before marks): the pane is the task's unless it
    /// is marked as another task's.
    pub fn check(&self, info: Option<&PaneInfo>, server: Option<&str>) -> Result<(), Lost> {
        // An id no pane has: gone, plainly (`pane gone` in docs/spec/crew-state.md#resolution).
        let Some(info) = info else {
            return Err(Lost::Closed);
        };
        if info.id != self.pane {
            return Err(Lost::Closed);
        }
        let server = Some(info.server.as_str())
            .filter(|s| !s.is_empty())
            .or(server);
        let same_server = match (&self.server, server) {
            (Some(was), Some(now)) => Some(was == now),
            _ => None,
        };
        let mark = Mark::parse(&info.mark);
        let this_task = matches!(&mark, Mark::Task(t, _) if t == &self.task);
        let other = |mark: &Mark| match mark {
            Mark::Task(t, _) => Lost::OtherTask(Some(t.to_string())),
            _ => Lost::OtherTask(None),
        };
        let Some(want) = &self.spawn_id else {
            // Unproven meta (by hand, or from before marks): the pane is
            // the task's unless another task's mark says otherwise.
            return match &mark {
                Mark::None => Ok(()),
                Mark::Task(..) if this_task => Ok(()),
                _ => Err(other(&mark)),
            };
        };
        match &mark {
            Mark::Task(_, spawn) if this_task && spawn == want => Ok(()),
            _ if same_server == Some(false) => Err(Lost::ServerRestarted),
            Mark::None if same_server == Some(true) => Ok(()),
            Mark::None => Err(Lost::Unmarked),
            Mark::Task(..) if this_task && same_server == Some(true) => Ok(()),
            Mark::Task(..) if this_task => Err(Lost::OtherSpawn),
            _ => Err(other(&mark)),
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

    const A: &str = "00000000000000aa";
    const B: &str = "00000000000000bb";

    #[test]
    fn a_marked_claim_holds_on_its_own_mark_or_its_own_server() {
        let c = claim(Some(A), Some("7-100"));
        let m = |t: &str, s: &str| format!("{t}/{s}");
        assert_eq!(
            c.check(Some(&info("%0", &m("one", A), "7-100")), None),
            Ok(())
        );
        // Another server: its %0 is someone else's, or nobody's.
        for mark in [m("two", B), String::new(), m("one", B), "junk".into()] {
            assert_eq!(
                c.check(Some(&info("%0", &mark, "9-200")), None),
                Err(Lost::ServerRestarted),
                "{mark}"
            );
        }
        // Its own mark proves it anywhere (a server that kept its pid).
        assert_eq!(
            c.check(Some(&info("%0", &m("one", A), "9-200")), None),
            Ok(())
        );
        // An id no pane has is plainly gone.
        assert_eq!(c.check(None, Some("9-200")), Err(Lost::Closed));
        assert_eq!(c.check(None, None), Err(Lost::Closed));
        // The same server: ids are never reused, so an unmarked pane was
        // named by hand, and another spawn of this task is a relaunch
        // under way.
        assert_eq!(c.check(Some(&info("%0", "", "7-100")), None), Ok(()));
        assert_eq!(
            c.check(Some(&info("%0", &m("one", B), "7-100")), None),
            Ok(())
        );
        assert_eq!(
            c.check(Some(&info("%0", &m("two", A), "7-100")), None),
            Err(Lost::OtherTask(Some("two".into())))
        );
        // A mark that is not `<id>/<16 hex>` names nobody and proves nothing.
        for bad in [
            "one/aa".to_string(),
            format!("one/{A}0"),
            format!("on/{A}x"),
            format!("one/{A}/x"),
            "one".into(),
            format!("/{A}"),
            format!("\x1b[2J/{A}"),
        ] {
            let got = c.check(Some(&info("%0", &bad, "7-100")), None);
            assert_eq!(got, Err(Lost::OtherTask(None)), "{bad}");
        }
        // Without a server in meta: the mark alone decides.
        let c = claim(Some(A), None);
        assert_eq!(
            c.check(Some(&info("%0", &m("one", A), "1-1")), None),
            Ok(())
        );
        assert_eq!(
            c.check(Some(&info("%0", "", "1-1")), None),
            Err(Lost::Unmarked)
        );
        assert_eq!(
            c.check(Some(&info("%0", &m("one", B), "1-1")), None),
            Err(Lost::OtherSpawn)
        );
    }

    #[test]
    fn an_unmarked_claim_yields_only_to_another_tasks_mark() {
        let c = claim(None, None);
        assert_eq!(c.check(Some(&info("%0", "", "1-1")), None), Ok(()));
        assert_eq!(
            c.check(Some(&info("%0", &format!("one/{A}"), "1-1")), None),
            Ok(())
        );
        assert_eq!(
            c.check(Some(&info("%0", &format!("two/{A}"), "1-1")), None),
            Err(Lost::OtherTask(Some("two".into())))
        );
        assert_eq!(c.check(None, None), Err(Lost::Closed));
    }

    #[test]
    fn the_list_gives_the_server_of_a_missing_pane() {
        let c = claim(Some(A), Some("7-100"));
        let list = [info("%3", "x/y", "9-200")];
        assert_eq!(c.check_in(&list), Err(Lost::Closed));
        assert_eq!(c.check_in(&[]), Err(Lost::Closed));
        assert!(new_spawn_id() != new_spawn_id());
        assert_eq!(new_spawn_id().len(), 16);
        assert_eq!(
            Lost::OtherTask(Some("two".into())).words(),
            "pane gone \u{b7} the pane id now names task two's pane"
        );
        assert_eq!(Lost::Closed.words(), "pane gone");
    }
}
