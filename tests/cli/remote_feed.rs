//! The captain's side of remote tasks beyond one write, over a real sshd:
//! a retry that arrives while the far doorbell is still ringing, and
//! broadcasts (`fm-send --all`) reaching the remote tasks.

use std::process::Command;

use super::harness::{TestHome, Tmux, wait_until};
use super::remote_write::{drop_first_answer, kill_after_the_write};
use super::sshd::{ACCOUNT, Sshd};

/// Runs `args` as the far account (its tmux server, its files).
#[track_caller]
fn as_far(args: &[&str]) -> String {
    let out = Command::new("runuser")
        .args(["-u", ACCOUNT, "--"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A pane running bash on the far tmux server; its id.
fn far_pane(sshd: &Sshd, window: &str) -> String {
    let sock = sshd.far_socket.as_str();
    let has = Command::new("runuser")
        .args([
            "-u",
            ACCOUNT,
            "--",
            "tmux",
            "-L",
            sock,
            "has-session",
            "-t",
            "fm",
        ])
        .output()
        .unwrap();
    let mut args = vec!["tmux", "-L", sock];
    if has.status.success() {
        args.extend(["new-window", "-t", "fm", "-n", window]);
    } else {
        args.extend(["new-session", "-d", "-s", "fm", "-n", window, "-x", "150"]);
        args.extend(["-y", "40"]);
    }
    args.extend(["-P", "-F", "#{pane_id}", "bash --norc --noprofile"]);
    as_far(&args).trim().to_string()
}

fn far_read(sshd: &Sshd, rel: &str) -> String {
    std::fs::read_to_string(sshd.far_home.join(rel)).unwrap_or_default()
}

#[test]
fn a_retry_while_the_far_doorbell_rings_gets_the_first_answer_at_once() {
    let Some(sshd) = Sshd::start() else { return };
    let h = TestHome::new();
    // The captain gives up on an attempt after 2.5 s; the far ring takes
    // 9 s (its pause between typing the doorbell and pressing Enter).
    h.write("config/firstmate.toml", sshd.host_toml("far", 2_500));
    h.write("state/t1.meta", "kind=ship\nhost=far\n");
    sshd.far_write(
        "config/firstmate.toml",
        format!(
            "[tmux]\nsocket = \"{}\"\n[send]\nsettle_ms = 9000\n",
            sshd.far_socket
        ),
    );
    let pane = far_pane(&sshd, "w1");
    sshd.far_write(
        "state/t1.meta",
        format!(
            "kind=ship\npane={pane}\ntmux_socket={}\nharness=shell\n",
            sshd.far_socket
        ),
    );
    // The first attempt writes the record and rings; the captain drops
    // it at 2.5 s and retries: the retry is answered from the key, with
    // the doorbell still ringing, instead of waiting for the key's lock.
    h.fm("send")
        .args(["t1", "hello", "there"])
        .stdout("queued t1 001.msg \u{b7} doorbell ringing\n")
        .stderr("")
        .run();
    let inbox = sshd.far_home.join("state/t1.inbox");
    let msgs: Vec<_> = std::fs::read_dir(&inbox)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".msg"))
        .collect();
    assert_eq!(msgs, ["001.msg"]);

    // The first attempt finishes its ring and keeps the final answer under
    // the same key: a later retry gets that one.
    let seen = "state/t1.seen";
    assert!(
        wait_until(20.0, || far_read(&sshd, seen).lines().count() == 2),
        "{}",
        far_read(&sshd, seen)
    );
    let text = far_read(&sshd, seen);
    let lines: Vec<&str> = text.lines().collect();
    let key = lines[0].split(' ').next().unwrap();
    // `<key> <code> <request> <report as a JSON string>`.
    let kept = |line: &str| -> serde_json::Value {
        let json: String = serde_json::from_str(line.splitn(4, ' ').nth(3).unwrap()).unwrap();
        serde_json::from_str(&json).unwrap()
    };
    assert_eq!(kept(lines[0])["doorbell"], "ringing", "{text}");
    assert!(lines[1].starts_with(&format!("{key} 0 ")), "{text}");
    assert!(!lines[1].contains("ringing"), "{text}");
    let far_home = sshd.far_home.to_string_lossy().into_owned();
    let again = as_far(&[
        "env",
        &format!("FM_HOME={far_home}"),
        &format!("{far_home}/bin/fm-send"),
        "--idempotency-key",
        key,
        "t1",
        "hello",
        "there",
    ]);
    // The kept report, rendered as the captain renders it.
    let last = kept(lines[1]);
    let final_line = format!(
        "queued {} {:03}.msg \u{b7} doorbell {}\n",
        last["task"].as_str().unwrap(),
        last["seq"].as_u64().unwrap(),
        last["doorbell"].as_str().unwrap()
    );
    assert_eq!(again, final_line);
    assert!(
        again.starts_with("queued t1 001.msg \u{b7} doorbell "),
        "{again}"
    );
    assert_eq!(
        far_read(&sshd, "state/events.jsonl")
            .lines()
            .filter(|l| l.contains("inbox.queued"))
            .count(),
        1
    );
}

/// A captain home with a live local task `l1` (a pane of `t`) and tasks
/// `r1`, `r2` on host `far`, live in panes of the far tmux server; a task
/// `r3` of the far home is not the captain's.
fn broadcast_fleet(sshd: &Sshd, t: &Tmux) -> TestHome {
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 5_000));
    let pane = t.window("l1", &["cat"]);
    h.write(
        "state/l1.meta",
        format!("kind=ship\npane={pane}\ntmux_socket={}\n", t.socket),
    );
    for id in ["r1", "r2", "r3"] {
        if id != "r3" {
            h.write(&format!("state/{id}.meta"), "kind=ship\nhost=far\n");
        }
        let pane = far_pane(sshd, id);
        sshd.far_write(
            &format!("state/{id}.meta"),
            format!("kind=ship\npane={pane}\ntmux_socket={}\n", sshd.far_socket),
        );
    }
    h
}

/// The `.msg` records of the far task `id`.
fn far_records(sshd: &Sshd, id: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(sshd.far_home.join(format!("state/{id}.inbox")))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".msg"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn local_records(h: &TestHome, id: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(h.path(&format!("state/{id}.inbox")))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".msg"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

const BROADCAST_OUT: &str = "queued l1 001.msg \u{b7} doorbell quiet\n\
                             queued r1 001.msg \u{b7} doorbell quiet\n\
                             queued r2 001.msg \u{b7} doorbell quiet\n";

#[test]
fn a_broadcast_reaches_the_remote_tasks_in_one_call_per_host() {
    let Some(sshd) = Sshd::start() else { return };
    let Some(t) = Tmux::start() else { return };
    let h = broadcast_fleet(&sshd, &t);
    let body = "stand down; it's $HOME\n`x`\n";
    h.fm("send")
        .args(["--all", "--quiet", "-"])
        .stdin(body)
        .stdout(BROADCAST_OUT)
        .stderr("")
        .run();
    assert_eq!(local_records(&h, "l1"), ["001.msg"]);
    for id in ["r1", "r2"] {
        assert_eq!(far_records(&sshd, id), ["001.msg"], "{id}");
        let rec = far_read(&sshd, &format!("state/{id}.inbox/001.msg"));
        assert!(rec.ends_with(body), "{rec}");
        // Keyed there, one key per task; nothing of its inbox here.
        assert_eq!(
            far_read(&sshd, &format!("state/{id}.seen")).lines().count(),
            1
        );
        assert!(!h.exists(&format!("state/{id}.inbox")), "{id}");
    }
    // The far home's own task is not the captain's: not addressed.
    assert_eq!(far_records(&sshd, "r3"), Vec::<String>::new());
    // One ssh call for the host: one key, served for both tasks.
    let key = |id: &str| {
        far_read(&sshd, &format!("state/{id}.seen"))
            .split(' ')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(key("r1"), key("r2"));

    // --json: one object per line, the remote ones like the local one.
    let out = h
        .fm("send")
        .args(["--all", "--quiet", "--json", "again"])
        .stdout_any()
        .stderr("")
        .run()
        .stdout();
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tasks: Vec<&str> = rows.iter().map(|r| r["task"].as_str().unwrap()).collect();
    assert_eq!(tasks, ["l1", "r1", "r2"], "{out}");
    for r in &rows {
        assert_eq!(r["seq"], 2, "{r}");
        assert!(
            r["path"].as_str().unwrap().ends_with("inbox/002.msg"),
            "{r}"
        );
        assert_eq!(r["doorbell"], "quiet", "{r}");
    }
}

#[test]
fn a_broadcast_with_a_host_down_sends_the_rest_and_names_the_host() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let Some(t) = Tmux::start() else { return };
    let h = broadcast_fleet(&sshd, &t);
    sshd.kill();
    h.fm("send")
        .args(["--all", "--quiet", "hello"])
        .status(3)
        .stdout("queued l1 001.msg \u{b7} doorbell quiet\n")
        .stderr_regex(concat!(
            r"^fm-send: error: r1: host far unreachable: .*Connection refused \(3 attempts; the message may have landed there: key \S+-all-\d+-\d+-0\)\n",
            r"fm-send: error: r2: host far unreachable: .*Connection refused \(3 attempts; the message may have landed there: key \S+-all-\d+-\d+-0\)\n$",
        ))
        .run();
    assert_eq!(local_records(&h, "l1"), ["001.msg"]);
    for id in ["r1", "r2"] {
        assert_eq!(far_records(&sshd, id), Vec::<String>::new(), "{id}");
    }
}

#[test]
fn a_broadcast_whose_far_answer_was_lost_writes_one_record_per_task() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let Some(t) = Tmux::start() else { return };
    let h = broadcast_fleet(&sshd, &t);
    // The host's part travels to the far entry, `fm far`.
    drop_first_answer(&sshd, "fm");
    let send = h
        .fm("send")
        .args(["--all", "--quiet", "freeze", "main"])
        .stdout(BROADCAST_OUT)
        .stderr("")
        .start();
    kill_after_the_write(&mut sshd);
    send.wait(30.0);
    // The first attempt wrote both records there, its answer lost: the
    // report the captain renders as `queued r1 001.msg · doorbell quiet`
    // and `queued r2 …`.
    let first: serde_json::Value = serde_json::from_str(&far_read(&sshd, "first.out")).unwrap();
    let lines: Vec<String> = first["sent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "queued {} {:03}.msg \u{b7} doorbell {}\n",
                r["task"].as_str().unwrap(),
                r["seq"].as_u64().unwrap(),
                r["doorbell"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        lines.concat(),
        "queued r1 001.msg \u{b7} doorbell quiet\nqueued r2 001.msg \u{b7} doorbell quiet\n",
        "{first}"
    );
    assert!(first.get("failed").is_none(), "{first}");
    assert_eq!(local_records(&h, "l1"), ["001.msg"]);
    for id in ["r1", "r2"] {
        assert_eq!(far_records(&sshd, id), ["001.msg"], "{id}");
        assert_eq!(
            far_read(&sshd, &format!("state/{id}.seen")).lines().count(),
            1
        );
    }
    let queued = far_read(&sshd, "state/events.jsonl")
        .lines()
        .filter(|l| l.contains("inbox.queued"))
        .count();
    assert_eq!(queued, 2);
}
