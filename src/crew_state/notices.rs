//! What changed among the tasks' own files between two frames of a kept
//! reader, from filesystem events rather than a stat of every file.
//!
//! A kept reader looks at each task's files every frame ([`Stamps`]) to
//! learn that nothing changed, which for an idle fleet is most of a
//! frame's work. With a [`TaskNotices`] it asks inotify instead: `state/`
//! and every inbox are watched (entries made, removed or renamed, files
//! written, closed after writing or changed in their attributes), and a
//! task none of whose files raised an event since its stamps were last
//! taken keeps its facts without a look.
//!
//! The stamps stay the truth; the notices only say when they need not be
//! taken again. A task's stamps are trusted without a look only when
//! they were taken in a frame after both watches covering its files began
//! (so no change can fall between a look and its watch), no event has
//! named the task since, no queue overflow or name that is no task's came
//! since, its facts do not depend on its brief (which lives outside
//! `state/`), and they were taken less than [`RECHECK_SECS`] ago: every
//! task is looked at by its stamps at least that often, the safety net
//! for a change no event reports (a filesystem without inotify's
//! coverage, such as a network mount written from another machine).
//! Without inotify, or when an inbox cannot be watched (past
//! [`crate::fsnotice::watch_budget`], or the system's limit), those tasks
//! are looked at every frame, as before.
//!
//! [`Stamps`]: super::read::Stamps

use std::collections::HashMap;

use crate::fsnotice::state::StateNotices;
use crate::home::Home;
use crate::task_id::TaskId;

/// The longest a task's stamps are trusted without a look (seconds).
pub(crate) const RECHECK_SECS: u64 = 30;

/// The events of a kept reader's tasks, frame by frame.
pub(crate) struct TaskNotices {
    events: StateNotices,
    /// The current frame, counted from 1; events drained at the start of
    /// a frame carry its number.
    frame: u64,
    /// The frame `state/` began to be watched in.
    since: u64,
    /// The last frame an event named each task in.
    named: HashMap<TaskId, u64>,
    /// The last frame every task was to be looked at again in (overflow, a
    /// name that is no task's).
    everything: u64,
    /// The frame each task's inbox began to be watched in (at its end).
    inboxes: HashMap<TaskId, u64>,
}

impl std::fmt::Debug for TaskNotices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskNotices")
            .field("frame", &self.frame)
            .field("inboxes", &self.inboxes.len())
            .finish_non_exhaustive()
    }
}

impl TaskNotices {
    /// Watches `state/`; `None` when it cannot be (no inotify, no
    /// `state/`), and the reader then looks at every stamp every frame.
    pub(crate) fn start(home: &Home) -> Option<TaskNotices> {
        let events = StateNotices::start_with(home, true).ok()?;
        Some(TaskNotices {
            events,
            frame: 0,
            since: 0,
            named: HashMap::new(),
            everything: 0,
            inboxes: HashMap::new(),
        })
    }

    /// Starts the next frame: takes the events queued since the last one.
    /// `false` when `state/` can no longer be watched (the notices is then
    /// to be dropped).
    pub(crate) fn begin_frame(&mut self) -> bool {
        self.frame += 1;
        let frame = self.frame;
        let changed = self.events.drain();
        if changed.lost {
            return false;
        }
        if changed.all {
            self.everything = frame;
        }
        for id in changed.tasks.into_iter().chain(changed.later) {
            self.named.insert(id, frame);
        }
        true
    }

    /// The frame now read (what stamps taken in it are to record).
    pub(crate) fn frame(&self) -> u64 {
        self.frame
    }

    /// Whether the stamps of `id`, taken in frame `taken` at Unix second
    /// `taken_at`, still hold at `now` without a look (see the module
    /// doc). `inbox`: the task has an inbox directory.
    pub(crate) fn quiet(
        &self,
        id: &TaskId,
        inbox: bool,
        taken: u64,
        taken_at: u64,
        now: u64,
    ) -> bool {
        self.since < taken
            && self.everything <= taken
            && now.saturating_sub(taken_at) < RECHECK_SECS
            && now >= taken_at
            && self.named.get(id).is_none_or(|&f| f <= taken)
            && (!inbox || self.inboxes.get(id).is_some_and(|&f| f < taken))
    }

    /// Whether an event named `id` after its stamps were taken in frame
    /// `taken`: its files are then read again whatever their stamps say
    /// (a rewrite that kept a file's size and put its time back shows in
    /// its events, not in its stamps).
    pub(crate) fn named_since(&self, id: &TaskId, taken: u64) -> bool {
        self.named.get(id).is_some_and(|&f| f > taken)
    }

    /// Ends a frame: watches the inboxes of `tasks` (those having one) not
    /// watched yet, and forgets what concerns tasks no longer read.
    pub(crate) fn end_frame(&mut self, home: &Home, tasks: &[(TaskId, bool)]) {
        let frame = self.frame;
        let mut dirs = Vec::new();
        for (id, inbox) in tasks {
            if !inbox {
                self.inboxes.remove(id);
                continue;
            }
            let dir = home.inbox(id);
            if self.events.watches(&dir) {
                self.inboxes.entry(id.clone()).or_insert(frame);
                continue;
            }
            self.inboxes.remove(id);
            // A share of the watch limit (the watcher daemon needs its
            // own); the tasks past it are looked at every frame.
            if self.inboxes.len() + dirs.len() < crate::fsnotice::watch_budget() {
                dirs.push(dir);
            }
        }
        for id in self.events.watch_inboxes(home, &dirs) {
            self.inboxes.insert(id, frame);
        }
        // An inbox whose watch went (the directory removed) is watched
        // again above once it is back; the events named its task.
        if self.named.len() > 2 * tasks.len() + 64 {
            let keep: std::collections::HashSet<&TaskId> = tasks.iter().map(|(id, _)| id).collect();
            self.named.retain(|id, _| keep.contains(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FleetReader, Row};
    use crate::config::Config;
    use crate::home::Home;
    use crate::task_id::TaskId;

    fn rows(r: &mut FleetReader, home: &Home, cfg: &Config, now: u64) -> Vec<Row> {
        let mut out = Vec::new();
        r.fleet(home, cfg, now, &mut |row| {
            out.push(row);
            Ok(())
        })
        .unwrap();
        out
    }

    fn json(rows: &[Row]) -> String {
        serde_json::to_string(rows).unwrap()
    }

    /// A kept reader with file events: quiet tasks are not looked at, and
    /// each change is seen on the next frame, including a rewrite in
    /// place that kept the file's size and put its time back (which no
    /// stamp shows); the stamps are looked at again after `RECHECK_SECS`.
    #[test]
    fn a_kept_reader_trusts_quiet_tasks_and_sees_every_change_its_events_name() {
        let d = tempfile::tempdir().unwrap();
        for sub in ["config", "data", "state"] {
            std::fs::create_dir_all(d.path().join(sub)).unwrap();
        }
        std::fs::write(d.path().join("config/firstmate.toml"), "").unwrap();
        let home = Home::at(d.path()).unwrap();
        let cfg = Config::default();
        let state = home.state_dir();
        let n = 12;
        for i in 0..n {
            let id = format!("t{i:02}");
            std::fs::write(state.join(format!("{id}.meta")), "kind=secondmate\n").unwrap();
            std::fs::write(state.join(format!("{id}.status")), "working: step 1\n").unwrap();
            std::fs::create_dir_all(state.join(format!("{id}.inbox"))).unwrap();
        }
        let now = crate::clock::now() + 5;
        let fresh = |now: u64| json(&rows(&mut FleetReader::new(), &home, &cfg, now));
        let mut kept = FleetReader::kept();
        let mut frame = |now: u64| {
            let got = json(&rows(&mut kept, &home, &cfg, now));
            assert_eq!(got, fresh(now));
            (got, kept.stats().looked)
        };
        // The first frame looks at everything, the second too (the inboxes
        // are watched from the end of the first), the third at nothing.
        assert_eq!(frame(now).1, n);
        assert_eq!(frame(now).1, n);
        assert_eq!(frame(now).1, 0);
        assert_eq!(frame(now + 1).1, 0);

        let id = |s: &str| TaskId::parse(s).unwrap();
        crate::fsx::append_line(&home.status(&id("t03")), b"needs-decision: which way?\n").unwrap();
        let (got, looked) = frame(now + 2);
        assert_eq!(looked, 1);
        assert!(got.contains("which way?"), "{got}");
        assert_eq!(frame(now + 2).1, 0);

        std::fs::write(
            d.path().join("rec"),
            "schema=fm-inbox.v1\nat=2026-01-01T00:00:00Z\nfrom=captain\n--\nhello\n",
        )
        .unwrap();
        std::fs::rename(d.path().join("rec"), state.join("t05.inbox/001.msg")).unwrap();
        assert_eq!(frame(now + 3).1, 1);

        // Same inode, same size, its modification time put back.
        let status = home.status(&id("t07"));
        let was = std::fs::metadata(&status).unwrap().modified().unwrap();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&status)
            .unwrap();
        std::io::Write::write_all(&mut &f, b"working: step 2\n").unwrap();
        f.set_modified(was).unwrap();
        drop(f);
        let (got, looked) = frame(now + 4);
        assert_eq!(looked, 1);
        assert!(got.contains("step 2"), "{got}");

        // The safety net: every task looked at again once its stamps are
        // RECHECK_SECS old.
        assert_eq!(frame(now + 4 + super::RECHECK_SECS).1, n);
        assert_eq!(frame(now + 5 + super::RECHECK_SECS).1, 0);
    }
}
