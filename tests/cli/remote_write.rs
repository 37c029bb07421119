//! Writes to a task on another host (send, ack, status append) and to a
//! host's board (`fm-board --host`) over a real sshd: each runs the far
//! side's own tool with an idempotency key, so a connection that drops
//! after the far write and before the answer costs a retry, never a second
//! record.

use std::path::Path;

use super::harness::{TestHome, wait_until};
use super::sshd::Sshd;

/// A captain home whose task `t1` runs on host `far`, and the far home
/// knowing `t1`.
fn setup(sshd: &Sshd) -> TestHome {
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 5_000));
    h.write("state/t1.meta", "kind=ship\nhost=far\n");
    sshd.far_write("state/t1.meta", "kind=ship\n");
    h
}

/// Replaces the far `tool` by a wrapper whose first call runs the real
/// tool to its end (the write is made, its answer kept in `first.out`),
/// then marks `dropped` and hangs, so the answer never travels; later
/// calls run the real tool.
pub(super) fn drop_first_answer(sshd: &Sshd, tool: &str) {
    let bin = sshd.far_home.join("bin");
    std::fs::rename(bin.join(tool), bin.join(format!("{tool}.real"))).unwrap();
    let script = format!(
        "#!/bin/sh\n\
         top=\"$FM_HOME\"\n\
         if [ -e \"$top/dropped\" ]; then exec \"$top/bin/{tool}.real\" \"$@\"; fi\n\
         \"$top/bin/{tool}.real\" \"$@\" >\"$top/first.out\" 2>&1\n\
         echo $? >\"$top/first.code\"\n\
         : >\"$top/dropped\"\n\
         sleep 60\n"
    );
    sshd.far_write(&format!("bin/{tool}"), script);
    std::fs::set_permissions(
        bin.join(tool),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
}

/// Waits for the far write, then kills sshd (every session with it) and
/// starts it again: the connection that carried the write is gone before
/// the answer came back.
#[track_caller]
pub(super) fn kill_after_the_write(sshd: &mut Sshd) {
    let marker = sshd.far_home.join("dropped");
    assert!(
        wait_until(20.0, || marker.exists()),
        "the far write never happened: {}",
        sshd.log()
    );
    sshd.kill();
    sshd.restart();
}

pub(super) fn far_read(sshd: &Sshd, rel: &str) -> String {
    std::fs::read_to_string(sshd.far_home.join(rel)).unwrap_or_default()
}

/// The names in `dir`, but for dot files (the inbox lock).
pub(super) fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_send_whose_answer_was_lost_is_retried_into_the_same_record() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    // A send travels to the far entry, `fm far`.
    drop_first_answer(&sshd, "fm");
    let body = "it's $HOME\nline two; `x`\n";
    let send = h
        .fm("send")
        .args(["--quiet", "t1", "-"])
        .stdin(body)
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .stderr("")
        .start();
    kill_after_the_write(&mut sshd);
    send.wait(30.0);

    // The first attempt wrote the record and printed its answer there:
    // the report the captain renders as `queued t1 001.msg · doorbell quiet`.
    let first: serde_json::Value = serde_json::from_str(&far_read(&sshd, "first.out")).unwrap();
    assert_eq!(
        (&first["task"], &first["seq"], &first["doorbell"]),
        (&"t1".into(), &1.into(), &"quiet".into()),
        "{first}"
    );
    let inbox = sshd.far_home.join("state/t1.inbox");
    assert_eq!(entries(&inbox), ["001.msg", "handled"]);
    assert_eq!(entries(&inbox.join("handled")), Vec::<String>::new());
    let rec = far_read(&sshd, "state/t1.inbox/001.msg");
    assert!(rec.ends_with(body), "{rec}");
    let queued = far_read(&sshd, "state/events.jsonl")
        .lines()
        .filter(|l| l.contains("inbox.queued"))
        .count();
    assert_eq!(queued, 1);
    // One key, served once; nothing of the inbox on the captain's side.
    assert_eq!(far_read(&sshd, "state/t1.seen").lines().count(), 1);
    assert!(!h.exists("state/t1.inbox"));
}

#[test]
fn a_status_append_whose_answer_was_lost_is_written_once() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    // An append travels to the far entry, `fm far`.
    drop_first_answer(&sshd, "fm");
    let st = h
        .fm("status")
        .args(["t1", "needs-decision", "--key", "db", "which db? it's $X"])
        .stdout("")
        .stderr("")
        .start();
    kill_after_the_write(&mut sshd);
    st.wait(30.0);
    assert_eq!(far_read(&sshd, "first.code"), "0\n");
    let log = far_read(&sshd, "state/t1.status");
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.starts_with("needs-decision [at="), "{log}");
    assert!(log.ends_with("] [key=db]: which db? it's $X\n"), "{log}");
    assert!(!h.exists("state/t1.status"));

    // The show runs there too: the open decision is the far one.
    h.fm("status")
        .args(["t1", "--json"])
        .stdout_has(r#""open":[{"key":"db","verb":"needs-decision","text":"which db? it's $X""#)
        .stderr("")
        .run();
}

#[test]
fn an_ack_whose_answer_was_lost_answers_handled_once() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    for body in ["one", "two"] {
        h.fm("send")
            .args(["--quiet", "t1", body])
            .stdout_has("queued t1 ")
            .stderr("")
            .run();
    }
    // An acknowledgement travels to the far entry, `fm far`.
    drop_first_answer(&sshd, "fm");
    let ack = h
        .fm("ack")
        .args(["t1", "--through", "2"])
        .stdout("handled 001.msg\nhandled 002.msg\n")
        .stderr("")
        .start();
    kill_after_the_write(&mut sshd);
    ack.wait(30.0);
    let inbox = sshd.far_home.join("state/t1.inbox");
    assert_eq!(entries(&inbox), ["handled"]);
    assert_eq!(entries(&inbox.join("handled")), ["001.msg", "002.msg"]);
    let acked = far_read(&sshd, "state/events.jsonl")
        .lines()
        .filter(|l| l.contains("inbox.acked"))
        .count();
    assert_eq!(acked, 2);

    // Reading and listing run there as well.
    h.fm("ack")
        .args(["t1", "--list"])
        .stdout("")
        .stderr("")
        .run();
}

#[test]
fn a_host_down_through_every_attempt_is_exit_3_naming_the_key() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    sshd.kill();
    h.fm("send")
        .args(["t1", "hello"])
        .status(3)
        .stdout("")
        .stderr_regex(
            r"^fm-send: error: ssh: host far unreachable: .*Connection refused \(3 attempts; the write may have landed there: key [A-Za-z0-9._-]+-t1-\d+-\d+-0\)\n$",
        )
        .run();
    // A host the config does not define is refused, never served locally.
    h.write("state/t2.meta", "kind=ship\nhost=gone\n");
    h.fm("send")
        .args(["t2", "hello"])
        .status(1)
        .stdout("")
        .stderr_has("task t2 runs on host gone, which config does not define ([hosts.gone])")
        .run();
    assert!(!h.exists("state/t2.inbox"));
}

/// The far events of `action`.
pub(super) fn far_events(sshd: &Sshd, action: &str) -> usize {
    far_read(sshd, "state/events.jsonl")
        .lines()
        .filter(|l| l.contains(&format!("\"action\":\"{action}\"")))
        .count()
}

#[test]
fn a_board_claim_whose_answer_was_lost_is_made_once_on_the_far_board() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    // The description travels on stdin: quotes, `$`, a newline, a leading dash.
    let description = "-n it's $HOME\nand `x`";
    h.fm("board")
        .args(["--host", "far", "add", "Fix the form", "--assignee", "t1"])
        .arg(format!("--description={description}"))
        .arg("--priority=-2")
        .stdout("T-001 pending\n")
        .stderr("")
        .run();
    // A board change travels to the far entry, `fm far`.
    drop_first_answer(&sshd, "fm");
    let claim = h
        .fm("board")
        .args(["claim", "T-1", "--as", "t1", "--host", "far"])
        .stdout("T-001 in_progress\n")
        .stderr("")
        .start();
    kill_after_the_write(&mut sshd);
    claim.wait(30.0);
    // Its report, rendered, is `T-001 in_progress`.
    let first: serde_json::Value = serde_json::from_str(&far_read(&sshd, "first.out")).unwrap();
    assert_eq!(
        (&first["task"]["id"], &first["task"]["status"]),
        (&"T-001".into(), &"in_progress".into()),
        "{first}"
    );
    assert!(first.get("released").is_none(), "{first}");
    assert_eq!(far_events(&sshd, "board.claimed"), 1);
    // Two keys served (the add, the claim); nothing of a board here.
    assert_eq!(far_read(&sshd, "state/.board.seen").lines().count(), 2);
    assert!(!h.exists("data/board"));

    // Reads run there: the far task as the far board holds it.
    let shown = h
        .fm("board")
        .args(["--host", "far", "show", "1", "--json"])
        .stdout_json()
        .stderr("")
        .run()
        .json();
    assert_eq!(shown["status"], "in_progress");
    assert_eq!(shown["owner"], "t1");
    assert_eq!(shown["description"], description);
    assert_eq!(shown["priority"], -2);

    // A comment whose text looks like options goes as text; a refusal is
    // the far tool's, relayed with its exit code and nothing kept.
    h.fm("board")
        .args(["--host", "far", "comment", "T-1", "--as", "t1", "--"])
        .args(["--blocker", "is", "not", "a", "flag", "here"])
        .stdout("T-001 in_progress\n")
        .stderr("")
        .run();
    let shown = h
        .fm("board")
        .args(["--host", "far", "--json", "show", "1"])
        .stdout_json()
        .stderr("")
        .run()
        .json();
    assert_eq!(shown["comments"][0]["text"], "--blocker is not a flag here");
    h.fm("board")
        .args(["--host", "far", "claim", "T-1", "--as", "t2"])
        .status(1)
        .stdout("")
        .stderr_has("in_progress")
        .run();
    assert_eq!(far_read(&sshd, "state/.board.seen").lines().count(), 3);
    h.fm("board")
        .args(["--host", "far", "list"])
        .stdout_has("T-001")
        .stderr("")
        .run();
}

#[test]
fn a_board_change_to_a_host_down_is_exit_3_and_an_unknown_host_exit_2() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    sshd.kill();
    h.fm("board")
        .args(["--host", "far", "add", "x"])
        .status(3)
        .stdout("")
        .stderr_regex(
            r"^fm-board: error: ssh: host far unreachable: .*Connection refused \(3 attempts; the write may have landed there: key [A-Za-z0-9._-]+-board-\d+-\d+-0\)\n$",
        )
        .run();
    h.fm("board")
        .args(["--host", "near", "claim", "1", "--as", "t1"])
        .status(2)
        .stdout("")
        .stderr_has("unknown host \"near\" (configured: far; define [hosts.near])")
        .run();
    // A key given by hand is the far key, and a malformed one goes nowhere.
    h.fm("board")
        .args(["--host", "far", "--idempotency-key", "k1", "retry", "1"])
        .status(3)
        .stdout("")
        .stderr_regex(r"^fm-board: error: ssh: host far unreachable: .*\(3 attempts; the write may have landed there: key k1\)\n$")
        .run();
    h.fm("board")
        .args(["--host", "far", "--idempotency-key", "k 1", "retry", "1"])
        .status(2)
        .stdout("")
        .stderr_has("malformed idempotency key \"k 1\"")
        .run();
    assert!(!h.exists("data/board"));
}

#[test]
fn dispatch_to_an_assignee_on_another_host_is_refused_and_changes_nothing() {
    // No ssh involved: the refusal is decided from the captain's meta.
    let h = TestHome::new();
    h.write(
        "config/firstmate.toml",
        "[hosts.far]\ndestination = \"nowhere.invalid\"\nhome = \"/srv/fm\"\n",
    );
    h.write("state/t1.meta", "kind=ship\nhost=far\n");
    h.fm("board")
        .args(["add", "Fix it", "--assignee", "t1"])
        .stdout("T-001 pending\n")
        .stderr("")
        .run();
    h.fm("board")
        .arg("dispatch")
        .status(1)
        .stdout(
            "error T-001 t1 \u{b7} assignee t1 runs on host far; dispatch reaches this home's inboxes only: add the task to that host's board (fm-board --host far add \u{2026} --assignee t1) and dispatch it there (fm-board --host far dispatch)\n",
        )
        .stderr("")
        .run();
    h.fm("board")
        .args(["show", "1", "--json"])
        .stdout_has(r#""status":"pending""#)
        .stdout_has(r#""dispatches":0"#)
        .stderr("")
        .run();
    assert!(!h.exists("state/t1.inbox"));
}

#[test]
fn a_key_given_by_hand_to_a_remote_task_is_the_far_key() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    // The captain retries a send with the key of the first attempt: the
    // second run is answered from the far keys and writes nothing.
    for _ in 0..2 {
        h.fm("send")
            .args(["--quiet", "--idempotency-key", "mine.1", "t1", "-"])
            .stdin("once\n")
            .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
            .stderr("")
            .run();
    }
    let inbox = sshd.far_home.join("state/t1.inbox");
    assert_eq!(entries(&inbox), ["001.msg", "handled"]);
    let seen = far_read(&sshd, "state/t1.seen");
    assert!(seen.starts_with("mine.1 0 "), "{seen}");
    // The same for a status append and an ack.
    for _ in 0..2 {
        h.fm("status")
            .args(["--idempotency-key", "mine.2", "t1", "working", "on it"])
            .stdout("")
            .stderr("")
            .run();
        h.fm("ack")
            .args(["--idempotency-key", "mine.3", "t1", "1"])
            .stdout("handled 001.msg\n")
            .stderr("")
            .run();
    }
    assert_eq!(far_read(&sshd, "state/t1.status").lines().count(), 1);
    assert_eq!(far_events(&sshd, "inbox.acked"), 1);
    // None of it touched the captain's files of the task.
    assert!(!h.exists("state/t1.inbox"));
    assert!(!h.exists("state/t1.status"));
    assert!(!h.exists("state/t1.seen"));
    // A malformed key is refused before any call.
    h.fm("send")
        .args(["--idempotency-key", "a/b", "t1", "x"])
        .status(2)
        .stdout("")
        .stderr_has("malformed idempotency key \"a/b\"")
        .run();
}

#[test]
fn a_brief_reapplied_for_a_remote_task_whose_answer_was_lost_is_installed_once() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    sshd.far_write("data/t1/brief.md", "the brief spawn brought\n");
    // A malformed key, and a far refusal (the far brief exists, no
    // --force): the captain's copy is written only once the far side
    // took the change.
    h.fm("brief")
        .args(["t1", "demo", "--mode", "local-only", "--force"])
        .args(["--intent", "x", "--spec", "y", "--idempotency-key", "a b"])
        .status(2)
        .stdout("")
        .stderr_has("malformed idempotency key \"a b\"")
        .run();
    h.fm("brief")
        .args(["t1", "demo", "--mode", "local-only"])
        .args(["--intent", "x", "--spec", "y"])
        .status(1)
        .stdout("")
        .stderr_has("brief.md already exists (use --force to replace it)")
        .run();
    assert!(!h.exists("data/t1/brief.md"));
    assert_eq!(
        far_read(&sshd, "data/t1/brief.md"),
        "the brief spawn brought\n"
    );
    // A brief change travels to the far entry, `fm far`.
    drop_first_answer(&sshd, "fm");
    let far_data = regex::escape(&sshd.far_home.join("data/t1").display().to_string());
    let brief = h
        .fm("brief")
        .args(["t1", "demo", "--mode", "local-only", "--force"])
        .args(["--intent", "new ask", "--spec", "one commit"])
        .stdout_regex(&format!(
            "^written: {far_data}/brief.md \\(ship, mode=local-only\\)\n\
             history: {far_data}/brief.history/001.md\n\
             notice: no live worker notified \\(no pane recorded\\)\n$"
        ))
        .stderr("")
        .start();
    kill_after_the_write(&mut sshd);
    brief.wait(30.0);
    assert_eq!(far_read(&sshd, "first.code"), "0\n");
    // Installed once: one history entry, one event, the far paths.
    assert_eq!(
        entries(&sshd.far_home.join("data/t1/brief.history")),
        ["001.md"]
    );
    assert_eq!(far_events(&sshd, "brief.written"), 1);
    let far = far_read(&sshd, "data/t1/brief.md");
    let here = h.root().canonicalize().unwrap().display().to_string();
    let there = sshd.far_home.display().to_string();
    assert_eq!(
        far,
        h.read_string("data/t1/brief.md").replace(&here, &there)
    );
    assert!(far.contains("new ask") && !far.contains(&here), "{far}");

    // A revoke goes the same way: here, then there.
    h.fm("brief")
        .args(["--revoke", "t1"])
        .stdout_regex(&format!(
            "^revoked: {far_data}/brief.md\nhistory: {far_data}/brief.history/002.md\n\
             notice: no live worker notified \\(no pane recorded\\)\n$"
        ))
        .stderr("")
        .run();
    assert!(h.read_string("data/t1/brief.md").contains("revoked"));
    assert!(far_read(&sshd, "data/t1/brief.md").contains("revoked"));
    assert_eq!(far_events(&sshd, "brief.revoked"), 1);
}

const REFUSED: &str = "was used for another request; nothing was done\n";

#[test]
fn a_key_reused_for_another_remote_request_is_refused_there() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    let send = |key: &str, body: &str| {
        h.fm("send")
            .args(["--quiet", "--idempotency-key", key, "t1", "-"])
            .stdin(body)
    };
    send("k.1", "one\n")
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .stderr("")
        .run();
    send("k.1", "two\n")
        .status(2)
        .stdout("")
        .stderr(format!("fm-send: error: idempotency key \"k.1\" {REFUSED}"))
        .run();
    let inbox = sshd.far_home.join("state/t1.inbox");
    assert_eq!(entries(&inbox), ["001.msg", "handled"]);
    send("k.1b", "two\n")
        .stdout("queued t1 002.msg \u{b7} doorbell quiet\n")
        .run();
    // An ack of other records under a served key.
    let ack = |seq: &str| h.fm("ack").args(["--idempotency-key", "k.2", "t1", seq]);
    ack("1").stdout("handled 001.msg\n").stderr("").run();
    ack("2")
        .status(2)
        .stdout("")
        .stderr(format!("fm-ack: error: idempotency key \"k.2\" {REFUSED}"))
        .run();
    assert_eq!(entries(&inbox), ["002.msg", "handled"]);
    // A status append of another line.
    let status = |text: &str| {
        h.fm("status")
            .args(["--idempotency-key", "k.3", "t1", "working", text])
    };
    status("one").stdout("").stderr("").run();
    status("two")
        .status(2)
        .stdout("")
        .stderr(format!(
            "fm-status: error: idempotency key \"k.3\" {REFUSED}"
        ))
        .run();
    assert_eq!(far_read(&sshd, "state/t1.status").lines().count(), 1);
    // A board cancel of another task.
    for subject in ["A", "B"] {
        h.fm("board")
            .args(["--host", "far", "add", subject])
            .stdout_any()
            .run();
    }
    let cancel = |task: &str| {
        h.fm("board").args([
            "--host",
            "far",
            "--idempotency-key",
            "k.4",
            "cancel",
            task,
            "--reason",
            "not needed",
        ])
    };
    cancel("T-001").stdout("T-001 cancelled\n").stderr("").run();
    cancel("T-002")
        .status(2)
        .stdout("")
        .stderr(format!(
            "fm-board: error: idempotency key \"k.4\" {REFUSED}"
        ))
        .run();
    h.fm("board")
        .args(["--host", "far", "show", "2", "--json"])
        .stdout_has(r#""status":"pending""#)
        .run();
}

#[test]
fn a_host_without_the_tools_is_exit_3_naming_the_host_and_the_tool() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    let bin = format!("bin = \"{}\"", sshd.far_home.join("bin").display());
    let noexec = sshd.far_home.join("noexec");
    // A host whose tools are nowhere (bin unset: the far PATH has none),
    // and one whose fm-ack is there but not executable.
    h.write(
        "config/firstmate.toml",
        format!(
            "{}{}{}",
            sshd.host_toml("far", 5_000),
            sshd.host_toml("bare", 5_000).replace(&bin, "bin = \"\""),
            sshd.host_toml("noexec", 5_000)
                .replace(&bin, &format!("bin = \"{}\"", noexec.display())),
        ),
    );
    // An acknowledgement runs the far entry, `fm`: that is the tool there.
    sshd.far_write("noexec/fm", "#!/bin/sh\nexit 0\n");
    h.write("state/t2.meta", "kind=ship\nhost=bare\n");
    h.write("state/t3.meta", "kind=ship\nhost=noexec\n");
    h.fm("send")
        .args(["--quiet", "t2", "hi"])
        .status(3)
        .stdout("")
        .stderr_regex(
            // A send runs the far entry, `fm far`: that is the tool named.
            r"^fm-send: error: host bare has no fm on its PATH \(exit 127\); it said: .*fm.*\n$",
        )
        .run();
    h.fm("status")
        .arg("t2")
        .status(3)
        .stdout("")
        .stderr_has("fm-status: error: host bare has no fm-status on its PATH (exit 127)")
        .run();
    h.fm("ack")
        .args(["t3", "1"])
        .status(3)
        .stdout("")
        .stderr_has(&format!(
            "fm-ack: error: host noexec cannot run {}/fm: not executable (exit 126)",
            noexec.display()
        ))
        .run();
}

#[test]
fn a_forged_exit_code_kept_on_the_far_side_is_exit_3_not_replayed() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd);
    // 255 is ssh's own code: replayed, it read as an unreachable host.
    sshd.far_write("state/t1.seen", "k.9 255 \"forged\\n\"\n");
    h.fm("send")
        .args(["--quiet", "--idempotency-key", "k.9", "t1", "-"])
        .stdin("x\n")
        .status(3)
        .stdout("")
        .stderr_has("fm-send: error: replay of an idempotency key failed (")
        .stderr_has("the answer kept for key \"k.9\" is corrupt (exit code 255, which no tool of ours gives); nothing was done\n")
        .stderr_lacks("unreachable")
        .run();
    assert!(entries(&sshd.far_home.join("state/t1.inbox")).is_empty());
}
