//! `fm restore` with the real agents: the tmux server dies under a worker
//! that has had one turn, a message arrives meanwhile, and `fm restore`
//! brings the worker back with its own conversation resumed — the model's
//! next request holds the earlier turn, then the doorbell the restore
//! rang.

use crate::Harness;
use crate::harness::{Cmd, bin};
use crate::world::{ID, Opts, World};

/// The agent's hooks record its conversation; the server dies; the
/// restore resumes that conversation and rings the doorbell owed.
pub fn resumes_the_conversation(h: Harness) {
    let Some(mut w) = World::new(h, Opts::default()) else {
        return;
    };
    w.spawn_ready();
    let session = || {
        w.home
            .read_string(&format!("state/{ID}.meta"))
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("session=").map(str::to_string))
    };
    w.wait_for("the hooks to record the session", 30.0, |_| {
        session().is_some()
    });
    let id = session().unwrap();
    assert!(
        id.len() == 36 && id.chars().filter(|c| *c == '-').count() == 4,
        "{id}"
    );
    let kickoff_requests = w.model.main_requests().len();
    // The server dies with the agent; a message comes meanwhile.
    w.tmux(&["kill-server"]);
    assert_eq!(w.send("after the restart"), "dead");
    let mut restore = Cmd::new(bin("fm"))
        .env("FM_HOME", w.home.root())
        .env("PATH", World::path());
    for (k, v) in w.agent_env() {
        restore = restore.env(k, v);
    }
    let out = restore
        .arg("restore")
        .stdout_regex(&format!(
            "restored {ID} pane=%\\d+ harness={} resumed={id} doorbell=rang\n\
             restored 1 \\(resumed 1, fresh 0\\), skipped 0, failed 0\n",
            h.name()
        ))
        .run()
        .stdout();
    w.pane = out
        .split("pane=")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .to_string();
    w.wait_for("the doorbell in the resumed conversation", 60.0, |w| {
        w.doorbells_received() == 1
    });
    // One request holds both: the kickoff turn from before the restart,
    // then the doorbell; no second kickoff was sent.
    let turns = w.model.user_turns();
    let texts: Vec<String> = turns.iter().map(|t| t.join("\n")).collect();
    assert!(
        texts
            .first()
            .is_some_and(|t| t.starts_with("Read the brief at ")),
        "{texts:#?}"
    );
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.starts_with("Read the brief at "))
            .count(),
        1,
        "{texts:#?}"
    );
    assert!(w.last_turn_is_the_doorbell(), "{texts:#?}");
    let kickoffs_since = w.model.main_requests()[kickoff_requests..]
        .iter()
        .filter(|r| {
            r.to_string().contains("Read the brief at ")
                && !r.to_string().contains("firstmate inbox")
        })
        .count();
    assert_eq!(kickoffs_since, 0, "a fresh kickoff was sent");
    w.wait_idle(30.0);
    // The same conversation goes on under the same id.
    assert_eq!(session().as_deref(), Some(id.as_str()));
}

/// Codex with its hooks off: no session recorded, so the restore reads
/// the thread's id from its rollout and resumes it all the same.
pub fn codex_without_hooks_resumes_from_its_rollout() {
    let opts = Opts {
        hooks: false,
        ..Opts::default()
    };
    let Some(mut w) = World::new(Harness::Codex, opts) else {
        return;
    };
    w.spawn_ready();
    let meta = w.home.read_string(&format!("state/{ID}.meta"));
    assert!(!meta.contains("session="), "{meta}");
    w.tmux(&["kill-server"]);
    assert_eq!(w.send("after the restart"), "dead");
    let mut restore = Cmd::new(bin("fm"))
        .env("FM_HOME", w.home.root())
        .env("PATH", World::path());
    for (k, v) in w.agent_env() {
        restore = restore.env(k, v);
    }
    let out = restore
        .arg("restore")
        .stdout_regex(&format!(
            "restored {ID} pane=%\\d+ harness=codex resumed=[0-9a-f-]{{36}} doorbell=rang\n\
             restored 1 \\(resumed 1, fresh 0\\), skipped 0, failed 0\n"
        ))
        .run()
        .stdout();
    w.pane = out
        .split("pane=")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .to_string();
    w.wait_for("the doorbell in the resumed conversation", 60.0, |w| {
        w.doorbells_received() == 1
    });
    let turns = w.model.user_turns();
    assert!(
        turns
            .first()
            .is_some_and(|t| t.join("\n").starts_with("Read the brief at ")),
        "{turns:#?}"
    );
    assert!(w.last_turn_is_the_doorbell(), "{turns:#?}");
}

mod claude {
    #[test]
    fn restore_resumes_the_conversation() {
        super::resumes_the_conversation(crate::Harness::Claude);
    }
}

mod codex {
    #[test]
    fn restore_resumes_the_conversation() {
        super::resumes_the_conversation(crate::Harness::Codex);
    }

    #[test]
    fn restore_without_hooks_resumes_from_the_rollout() {
        super::codex_without_hooks_resumes_from_its_rollout();
    }
}
