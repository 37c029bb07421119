//! `fm restore`: a live fleet of stand-in workers in private tmux servers,
//! one server killed under it, and every task whose agent died with it
//! brought back — resumed where a session is known, afresh otherwise, the
//! doorbells owed meanwhile rung in the new panes — while a pane that
//! survived on another server is left alone, and a second run changes
//! nothing.

use std::path::Path;

use crate::control::{briefed, pane_of, project};
use crate::harness::{Cmd, TestHome, Tmux, bin, wait_until};

const SESSION: &str = "0744d8c0-b402-4d50-a903-7366fcfb1aa1";

fn meta(h: &TestHome, id: &str, key: &str) -> String {
    h.read_string(&format!("state/{id}.meta"))
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or("")
        .to_string()
}

/// The stand-in behind a script that writes down the arguments it was
/// started with (`<home>/<id>.argv`), as the `stand-in` profile's
/// launch and resume.
fn recording_stand_in(h: &TestHome) {
    let script = h.path("agent.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nhome=$1; id=$2; shift 2\nprintf '%s\\n' \"$@\" > \"$home/$id.argv\"\nexec {} --home \"$home\" \"$id\"\n",
            bin("fm-stand-in").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let s = script.display();
    let mut cfg = h.read_string("config/firstmate.toml");
    cfg.push_str(&format!(
        "\n[harness.stand-in]\nlaunch = [\"{s}\", \"{{home}}\", \"{{id}}\", \"fresh\"]\nresume = [\"{s}\", \"{{home}}\", \"{{id}}\", \"resume\", \"{{session}}\"]\n"
    ));
    h.write("config/firstmate.toml", cfg);
}

fn spawn(h: &TestHome, t: &Tmux, project: &Path, id: &str) -> String {
    briefed(h, id);
    pane_of(
        &Cmd::new(bin("fm-control"))
            .env("FM_HOME", h.root())
            .env("FM_TMUX_SOCKET", &t.socket)
            .args([id, "spawn", "--project"])
            .arg(project)
            .args(["--harness", "stand-in"])
            .stdout_any()
            .run()
            .stdout(),
    )
}

/// `fm restore` as a captain's script runs it: `env -i`, a bare PATH.
fn restore(h: &TestHome, args: &[&str]) -> Cmd {
    let bins = bin("fm").parent().unwrap().display().to_string();
    Cmd::new("env")
        .args([
            "-i",
            &format!("PATH={bins}:/usr/bin:/bin"),
            "FM_CONTROL_RESTORE_RING_SECS=20",
        ])
        .arg(bin("fm"))
        .args(["restore", "--home"])
        .arg(h.root())
        .args(args)
}

fn panes(t: &Tmux) -> String {
    let out = std::process::Command::new("tmux")
        .args([
            "-L",
            &t.socket,
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{@fm_task}",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_killed_server_brings_its_tasks_back_and_leaves_the_rest() {
    let Some(t) = Tmux::with_python() else { return };
    let Some(other) = Tmux::start() else { return };
    let h = TestHome::new();
    let proj = project(&h);
    recording_stand_in(&h);
    // `resumed` and `fresh` live on the server that dies, `survivor` on
    // another one, `finished` is done and has no conversation to resume.
    let mut old = std::collections::BTreeMap::new();
    for id in ["resumed", "fresh", "finished"] {
        old.insert(id, spawn(&h, &t, &proj, id));
    }
    let survivor = spawn(&h, &other, &proj, "survivor");
    for id in ["resumed", "fresh", "finished", "survivor"] {
        assert!(
            wait_until(10.0, || h.exists(&format!("{id}.argv"))),
            "{id} never started"
        );
        assert_eq!(h.read_string(&format!("{id}.argv")), "fresh\n");
    }
    h.fm("status")
        .args(["finished", "done", "all of it"])
        .stdout_any()
        .run();
    // The agent's hook names its conversation: only from its own pane
    // on its own server is it recorded.
    let server_pid = meta(&h, "resumed", "tmux_server")
        .split('-')
        .next()
        .unwrap()
        .to_string();
    let hook = |pane: &str, pid: &str| {
        h.fm("fm")
            .args(["session-hook", "resumed"])
            .env("TMUX_PANE", pane)
            .env("TMUX", format!("/tmp/x,{pid},0"))
            .stdin(format!(
                r#"{{"session_id":"{SESSION}","hook_event_name":"Stop"}}"#
            ))
            .stdout_any()
            .run()
    };
    hook(&old["fresh"], &server_pid);
    assert_eq!(meta(&h, "resumed", "session"), "");
    hook(&old["resumed"], "1");
    assert_eq!(meta(&h, "resumed", "session"), "");
    hook(&old["resumed"], &server_pid);
    assert_eq!(meta(&h, "resumed", "session"), SESSION);

    // The server dies under the fleet; a message arrives meanwhile.
    let _ = std::process::Command::new("tmux")
        .args(["-L", &t.socket, "kill-server"])
        .output();
    assert!(wait_until(10.0, || panes(&t).is_empty()));
    h.fm("send")
        .args(["fresh", "while you were down"])
        .env("FM_TMUX_SOCKET", &t.socket)
        .status_any()
        .stdout_any()
        .stderr_any()
        .run();
    assert!(h.exists("state/fresh.inbox/001.msg"));

    // A dry run says what it would do and changes nothing.
    let before: Vec<String> = ["resumed", "fresh", "finished", "survivor"]
        .iter()
        .map(|id| h.read_string(&format!("state/{id}.meta")))
        .collect();
    restore(&h, &["--dry-run"])
        .stdout(format!(
            "skipped finished: done, and no conversation to resume (fm-control finished relaunch starts it afresh)\n\
             would-restore fresh harness=stand-in fresh\n\
             would-restore resumed harness=stand-in resumed={SESSION}\n\
             skipped survivor: alive in pane {survivor}\n\
             would restore 2 (resumed 1, fresh 1), skipped 2, failed 0\n"
        ))
        .run();
    let j = restore(&h, &["--dry-run", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(
        (&j["restored"], &j["resumed"], &j["fresh"], &j["skipped"]),
        (&2.into(), &1.into(), &1.into(), &2.into()),
        "{j}"
    );
    assert_eq!(j["tasks"][2]["outcome"], "restored");
    assert_eq!(j["tasks"][2]["session"], SESSION);
    assert_eq!(j["tasks"][3]["why"], format!("alive in pane {survivor}"));
    let after: Vec<String> = ["resumed", "fresh", "finished", "survivor"]
        .iter()
        .map(|id| h.read_string(&format!("state/{id}.meta")))
        .collect();
    assert_eq!(before, after);
    assert!(panes(&t).is_empty(), "{}", panes(&t));

    // The restore: a new window each, meta updated, the doorbell rung.
    let out = restore(&h, &[])
        .stdout_regex(&format!(
            "skipped finished: done, and no conversation to resume \\(fm-control finished relaunch starts it afresh\\)\n\
             restored fresh pane=%\\d+ harness=stand-in fresh doorbell=rang\n\
             restored resumed pane=%\\d+ harness=stand-in resumed={SESSION} doorbell=none\n\
             skipped survivor: alive in pane {survivor}\n\
             restored 2 \\(resumed 1, fresh 1\\), skipped 2, failed 0\n"
        ))
        .run()
        .stdout();
    let line = |id: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("restored {id} ")))
            .unwrap()
            .to_string()
    };
    for id in ["resumed", "fresh"] {
        let pane = pane_of(&line(id));
        assert_eq!(meta(&h, id, "pane"), pane);
        assert_eq!(meta(&h, id, "spawn_gen"), "2");
        let mark = format!("{pane} {id}/{}", meta(&h, id, "spawn_id"));
        assert!(panes(&t).contains(&mark), "{mark}: {}", panes(&t));
    }
    assert_eq!(
        h.read_string("resumed.argv"),
        format!("resume\n{SESSION}\n")
    );
    assert_eq!(meta(&h, "resumed", "session"), SESSION);
    assert_eq!(h.read_string("fresh.argv"), "fresh\n");
    // The fresh agent is told its work so far is in its worktree; the
    // resumed one knows it already.
    let brief = h.read_string("data/fresh/brief.md");
    assert!(
        brief.contains("\n## Progress note (")
            && brief.ends_with("Carry on from there; do not start over.\n"),
        "{brief}"
    );
    assert!(
        !h.read_string("data/resumed/brief.md")
            .contains("## Progress note")
    );
    // The owed doorbell reached the new agent, which read the message.
    let fresh = meta(&h, "fresh", "pane");
    assert!(
        wait_until(10.0, || t.capture(&fresh).contains("firstmate inbox")),
        "{}",
        t.capture(&fresh)
    );
    assert!(wait_until(10.0, || !h.exists("state/fresh.inbox/001.msg")));
    // The survivor's pane and meta are as they were.
    assert_eq!(meta(&h, "survivor", "pane"), survivor);
    assert_eq!(meta(&h, "survivor", "spawn_gen"), "1");
    let events = h.read_string("state/events.jsonl");
    assert_eq!(events.matches("control.restored").count(), 2, "{events}");

    // Twice is once: every agent is alive now.
    let now: Vec<String> = ["resumed", "fresh"]
        .iter()
        .map(|id| h.read_string(&format!("state/{id}.meta")))
        .collect();
    restore(&h, &["resumed", "fresh"])
        .stdout(format!(
            "skipped resumed: alive in pane {}\nskipped fresh: alive in pane {fresh}\n\
             restored 0 (resumed 0, fresh 0), skipped 2, failed 0\n",
            meta(&h, "resumed", "pane")
        ))
        .run();
    let again: Vec<String> = ["resumed", "fresh"]
        .iter()
        .map(|id| h.read_string(&format!("state/{id}.meta")))
        .collect();
    assert_eq!(now, again);
    assert_eq!(panes(&t).lines().count(), 2, "{}", panes(&t));
}

fn set_meta(h: &TestHome, id: &str, key: &str, value: Option<&str>) {
    let rel = format!("state/{id}.meta");
    let mut text = String::new();
    for l in h.read_string(&rel).lines() {
        if !l.starts_with(&format!("{key}=")) {
            text.push_str(l);
            text.push('\n');
        }
    }
    if let Some(v) = value {
        text.push_str(&format!("{key}={v}\n"));
    }
    h.write(&rel, text);
}

#[test]
fn restore_starts_no_agent_where_one_may_still_run_or_was_stopped() {
    let Some(t) = Tmux::with_python() else { return };
    let Some(dying) = Tmux::start() else { return };
    let h = TestHome::new();
    let proj = project(&h);
    recording_stand_in(&h);
    let mut pane = std::collections::BTreeMap::new();
    for id in ["orphan", "respawned", "unmarked"] {
        pane.insert(id, spawn(&h, &t, &proj, id));
    }
    pane.insert("stopped", spawn(&h, &dying, &proj, "stopped"));
    for id in ["orphan", "respawned", "unmarked", "stopped"] {
        assert!(
            wait_until(10.0, || h.exists(&format!("{id}.argv"))),
            "{id} never started"
        );
    }
    // The captain stops one agent; later its server dies.
    Cmd::new(bin("fm-control"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &dying.socket)
        .args(["stopped", "exit"])
        .stdout("stopped stopped\n")
        .run();
    let _ = std::process::Command::new("tmux")
        .args(["-L", &dying.socket, "kill-server"])
        .output();
    assert!(wait_until(10.0, || panes(&dying).is_empty()));
    // Meta lost track of an agent that still runs (a restore whose meta
    // write failed, say): its pane carries the task's mark.
    set_meta(&h, "orphan", "pane", Some("%999"));
    // Meta names no server, and the pane does not prove it is gone: it
    // carries another spawn of the same task, or no mark at all.
    for id in ["respawned", "unmarked"] {
        set_meta(&h, id, "tmux_server", None);
    }
    set_meta(&h, "respawned", "spawn_id", Some("00000000000000bb"));
    t.run([
        "set-option",
        "-p",
        "-u",
        "-t",
        &pane["unmarked"],
        "@fm_task",
    ]);
    let before = panes(&t);
    let expected = format!(
        "skipped orphan: pane {o} on its server carries its mark, an agent meta does not record (meta names %999): tmux kill-pane -t {o}, then restore\n\
         skipped respawned: not proven gone: pane {r} is there and the pane belongs to another spawn of this task (fm-control respawned relaunch replaces it)\n\
         skipped stopped: the captain stopped its agent (fm-control stopped exit): fm-control stopped relaunch starts it again\n\
         skipped unmarked: not proven gone: pane {u} is there and the pane id now names an unmarked pane (fm-control unmarked relaunch replaces it)\n",
        o = pane["orphan"],
        r = pane["respawned"],
        u = pane["unmarked"],
    );
    restore(&h, &["--dry-run"])
        .stdout(format!(
            "{expected}would restore 0 (resumed 0, fresh 0), skipped 4, failed 0\n"
        ))
        .run();
    restore(&h, &[])
        .stdout(format!(
            "{expected}restored 0 (resumed 0, fresh 0), skipped 4, failed 0\n"
        ))
        .run();
    assert_eq!(panes(&t), before);
    assert!(panes(&dying).is_empty(), "{}", panes(&dying));
    let events = h.read_string("state/events.jsonl");
    assert!(!events.contains("control.restored"), "{events}");
}

#[test]
fn a_restore_that_cannot_record_its_agent_leaves_none_running() {
    let Some(t) = Tmux::with_python() else { return };
    let h = TestHome::new();
    let proj = project(&h);
    recording_stand_in(&h);
    spawn(&h, &t, &proj, "locked");
    assert!(wait_until(10.0, || h.exists("locked.argv")));
    let _ = std::process::Command::new("tmux")
        .args(["-L", &t.socket, "kill-server"])
        .output();
    assert!(wait_until(10.0, || panes(&t).is_empty()));
    // Meta cannot be written: its lock is held past the wait.
    let lock = std::fs::File::create(h.path("state/.meta-locked.lock")).unwrap();
    lock.lock().unwrap();
    let out = restore(&h, &[]).status(1).stdout_any().stderr_any().run();
    assert!(
        out.stdout().contains("failed locked: "),
        "{}{}",
        out.stdout(),
        out.stderr()
    );
    assert!(
        !panes(&t).contains("locked/"),
        "an agent runs unrecorded: {}",
        panes(&t)
    );
    drop(lock);
    restore(&h, &[])
        .stdout_regex(
            "restored locked pane=%\\d+ harness=stand-in fresh doorbell=none\n\
             restored 1 \\(resumed 0, fresh 1\\), skipped 0, failed 0\n",
        )
        .run();
    restore(&h, &[])
        .stdout_has("skipped locked: alive in pane")
        .run();
    assert_eq!(panes(&t).matches("locked/").count(), 1, "{}", panes(&t));
}
