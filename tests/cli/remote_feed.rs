//! The captain's side of remote tasks beyond one write, over a real sshd:
//! a retry that arrives while the far doorbell is still ringing, the
//! wakes of every host for `fm-watch --until-wake`, and broadcasts.

use std::process::Command;

use super::harness::{TestHome, wait_until};
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
    assert!(lines[0].ends_with("doorbell ringing\\n\""), "{text}");
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
    let final_line: String = serde_json::from_str(lines[1].splitn(3, ' ').nth(2).unwrap()).unwrap();
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
