use super::*;

#[test]
fn plan_follows_the_breaker() {
    let mut t = Task::new(BoardId(1), "s", 0);
    let plan = |t: &Task, acked| plan(t, acked, 100, 90);
    assert_eq!(plan(&t, false), Plan::Skip);
    t.assignee = Some("w1".into());
    assert_eq!(plan(&t, false), Plan::Send);
    t.status = Status::InProgress;
    assert_eq!(
        plan(&t, false),
        Plan::Skip,
        "claimed by hand, never dispatched"
    );
    t.dispatches = 1;
    t.dispatch_seq = Some(1);
    assert_eq!(plan(&t, false), Plan::Resend);
    assert_eq!(plan(&t, true), Plan::Skip);
    t.dispatches = 3;
    assert_eq!(plan(&t, false), Plan::Break);
    assert_eq!(plan(&t, true), Plan::Skip);
    // Within the grace period after the last dispatch nothing happens.
    t.updated_at = 50;
    assert_eq!(super::plan(&t, false, 100, 90), Plan::Skip);
    assert_eq!(super::plan(&t, false, 140, 90), Plan::Break);
}

/// A journal in memory whose `fail_at`-th note fails, the way a
/// dispatch killed at that point ends.
struct Mem {
    notes: std::collections::HashMap<BoardId, Note>,
    puts: usize,
    fail_at: usize,
}

impl Journal for Mem {
    fn get(&mut self, task: BoardId) -> Result<Option<Note>> {
        Ok(self.notes.get(&task).cloned())
    }

    fn put(&mut self, task: BoardId, note: &Note) -> Result<()> {
        self.puts += 1;
        if self.puts == self.fail_at {
            return Err(crate::error::Error::refused("killed"));
        }
        self.notes.insert(task, note.clone());
        Ok(())
    }
}

#[test]
fn a_keyed_dispatch_killed_at_any_step_then_rerun_acts_once_per_task() {
    // Notes: intent T-1, queued T-1, intent T-2, queued T-2; killed at
    // each in turn (5: not killed), then run again under the same key.
    for fail_at in 1..=5 {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let mut cfg = Config::default();
        // No grace: a task planned afresh would be re-sent at once.
        cfg.watch.grace_secs = 0;
        for (w, subject) in [("w1", "one"), ("w2", "two")] {
            fsx::ensure_dir(&home.state_dir()).unwrap();
            std::fs::write(home.meta(&TaskId::parse(w).unwrap()), "kind=ship\n").unwrap();
            let new = store::NewTask {
                subject: subject.into(),
                assignee: Some(w.into()),
                ..Default::default()
            };
            store::add(&home, new, 1).unwrap();
        }
        let mut j = Mem {
            notes: std::collections::HashMap::new(),
            puts: 0,
            fail_at,
        };
        let first = queue_all(&home, &cfg, 2, Some(&mut j), &mut Vec::new());
        assert_eq!(first.is_err(), fail_at < 5, "{fail_at}");
        let again = queue_all(&home, &cfg, 3, Some(&mut j), &mut Vec::new()).unwrap();
        let lines: Vec<String> = again
            .iter()
            .map(|o| {
                format!(
                    "{} {} {} {:?} {}",
                    o.action, o.task, o.assignee, o.seq, o.dispatches
                )
            })
            .collect();
        assert_eq!(
            lines,
            [
                "dispatched T-001 w1 Some(1) 1",
                "dispatched T-002 w2 Some(1) 1"
            ],
            "killed at note {fail_at}"
        );
        for (w, n) in [("w1", 1), ("w2", 2)] {
            let id = TaskId::parse(w).unwrap();
            assert_eq!(inbox::pending(&home, &id).unwrap(), [1], "{w} at {fail_at}");
            let t = store::load(&home, BoardId(n)).unwrap();
            assert_eq!(t.status, Status::InProgress, "{w} at {fail_at}");
            assert_eq!(
                (t.dispatches, t.dispatch_seq),
                (1, Some(1)),
                "{w} at {fail_at}"
            );
        }
    }
}

#[test]
fn message_names_the_task_and_the_commands() {
    let mut t = Task::new(BoardId(4), "fix login", 0);
    t.description = "the form".into();
    let m = message(&t, "w1");
    assert!(
        m.starts_with("Board task T-004: fix login\n\nthe form\n"),
        "{m}"
    );
    assert!(
        m.contains("fm-board complete T-004 --result") && m.contains("--as w1"),
        "{m}"
    );
    assert!(!m.contains("re-sent"));
    t.dispatches = 1;
    assert!(message(&t, "w1").contains("dispatch 2 of 3"));
}
