//! Tasks on other hosts: the ssh runner against a real sshd on loopback,
//! logging into the far account's own firstmate home.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use firstmate::Home;
use firstmate::config::Config;
use firstmate::remote::Ssh;

use super::harness::TestHome;
use super::sshd::{ACCOUNT, ALIAS, Sshd};

/// A captain home whose config names the far host `far`.
fn captain(sshd: &Sshd, timeout_ms: u64) -> (TestHome, Ssh) {
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", timeout_ms));
    let home = Home::at(&h.root()).unwrap();
    let cfg = Config::load(&h.path("config/firstmate.toml")).unwrap();
    assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
    let ssh = Ssh::new(&home, "far", &cfg.hosts["far"]).unwrap();
    (h, ssh)
}

#[test]
fn the_fixture_logs_into_the_far_account_with_sh_and_its_own_home() {
    let Some(sshd) = Sshd::start() else { return };
    let out = Command::new("ssh")
        .arg("-F")
        .arg(sshd.ssh_config())
        .args(["-o", "BatchMode=yes", ALIAS, "id -un; echo $0; pwd"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .collect::<Vec<_>>()[..2],
        [ACCOUNT, "sh"],
        "stderr: {} log: {}",
        String::from_utf8_lossy(&out.stderr),
        sshd.log()
    );
    assert!(out.status.success());
    let owner = Command::new("stat")
        .args(["-c", "%U"])
        .arg(&sshd.far_home)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&owner.stdout).trim(), ACCOUNT);
}

#[test]
fn a_far_tool_runs_in_the_far_home_with_its_body_on_stdin() {
    let Some(sshd) = Sshd::start() else { return };
    let (h, ssh) = captain(&sshd, 10_000);
    sshd.far_write("state/t1.meta", "kind=ship\n");

    let r = ssh
        .tool("fm-status", &["t1", "working", "on it"], None)
        .unwrap();
    assert_eq!((r.code, &*r.stdout, &*r.stderr), (0, "", ""));
    let log = std::fs::read_to_string(sshd.far_home.join("state/t1.status")).unwrap();
    assert!(log.starts_with("working [at="), "{log}");
    assert!(log.ends_with("]: on it\n"), "{log}");

    // A body with quotes, a newline and shell syntax arrives as written.
    let body = "it's $HOME `x`\nsecond line; rm -rf /\n";
    let r = ssh
        .tool(
            "fm-send",
            &["t1", "--quiet", "-"],
            Some(body.as_bytes().to_vec()),
        )
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.starts_with("queued t1 001.msg"), "{r:?}");
    let rec = std::fs::read_to_string(sshd.far_home.join("state/t1.inbox/001.msg")).unwrap();
    assert!(rec.ends_with(body), "{rec}");

    // A refusal of the far tool is its reply, not an unreachable host.
    let r = ssh
        .tool("fm-status", &["t1", "bogus-verb", "x"], None)
        .unwrap();
    assert_eq!(r.code, 2, "{r:?}");
    assert!(!r.stderr.is_empty());

    // The captain's side holds one master socket, in a private directory.
    let dir = h.path("state/ssh");
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    ssh.close();
}

#[test]
fn a_warm_round_trip_reuses_the_master_connection() {
    let Some(sshd) = Sshd::start() else { return };
    let (_h, ssh) = captain(&sshd, 10_000);
    let cold = Instant::now();
    ssh.tool("fm-status", &["t1", "--json"], None).unwrap();
    let cold = cold.elapsed();
    let mut warm = Duration::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let r = ssh.tool("fm-status", &["t1", "--json"], None).unwrap();
        assert_eq!(r.code, 0, "{r:?}");
        warm = warm.min(t.elapsed());
    }
    // A new connection costs a key exchange and an authentication; a
    // multiplexed session costs neither.
    assert!(warm < cold, "warm {warm:?} cold {cold:?}");
    assert!(warm < Duration::from_millis(500), "warm {warm:?}");
    ssh.close();
}

#[test]
fn a_stopped_host_is_unreachable_within_its_timeout_and_comes_back() {
    let Some(sshd) = Sshd::start() else { return };
    let (_h, ssh) = captain(&sshd, 1_500);
    assert_eq!(ssh.tool("fm-status", &["t1"], None).unwrap().code, 0);

    sshd.freeze();
    let t = Instant::now();
    let err = ssh.tool("fm-status", &["t1"], None).unwrap_err();
    let took = t.elapsed();
    sshd.thaw();
    assert_eq!(err.0, "timed out after 1.5s");
    assert!(took < Duration::from_millis(2_500), "{took:?}");

    assert_eq!(ssh.tool("fm-status", &["t1"], None).unwrap().code, 0);
    ssh.close();
}

#[test]
fn a_host_that_is_down_is_unreachable_with_ssh_s_reason() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let (_h, ssh) = captain(&sshd, 5_000);
    sshd.kill();
    let t = Instant::now();
    let err = ssh.tool("fm-status", &["t1"], None).unwrap_err();
    assert!(err.0.contains("Connection refused"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let e = ssh.tool_or_err("fm-status", &["t1"], None).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("host far unreachable: "), "{e}");
}

/// A captain home with a local task `l1` and a remote task `r1` on `far`
/// (working there), plus `r2` whose host does not know it.
fn fleet(sshd: &Sshd, timeout_ms: u64) -> TestHome {
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", timeout_ms));
    h.write("state/l1.meta", "kind=scout\n");
    h.write(
        "state/l1.status",
        format!("working [at={}]: here\n", firstmate::clock::now()),
    );
    h.write("state/r1.meta", "kind=scout\nhost=far\n");
    h.write("state/r2.meta", "kind=scout\nhost=far\n");
    sshd.far_write("state/r1.meta", "kind=scout\n");
    sshd.far_write(
        "state/r1.status",
        format!("working [at={}]: far away\n", firstmate::clock::now()),
    );
    h
}

#[test]
fn the_fleet_view_shows_remote_rows_from_their_host_with_a_host_column() {
    let Some(sshd) = Sshd::start() else { return };
    let h = fleet(&sshd, 10_000);
    h.fm("crew-state")
        .stdout_regex(concat!(
            r"ID +HOST +STATE +SOURCE +AGE +INBOX +OPEN +WAITING +DETAIL\n",
            r"l1 +- +working +status-log +\d+s ago +0 +0 +- +here\n",
            r"r1 +far +working +status-log +\d+s ago +0 +0 +- +far away\n",
            r"r2 +far +unknown +none +- +0 +0 +- +no metadata for r2 on host far\n",
        ))
        .run();
    let out = h.fm("crew-state").arg("--json").stdout_json().run();
    let rows = out.json();
    assert_eq!(rows[0]["id"], "l1");
    assert!(rows[0].get("host").is_none(), "{rows}");
    assert_eq!(rows[1]["host"], "far");
    assert_eq!(rows[1]["state"], "working");
    assert_eq!(rows[1]["source"], "status-log");
    h.fm("crew-state")
        .arg("r1")
        .stdout("state: working \u{b7} source: status-log \u{b7} far away\n")
        .run();
    // The far side keeps its own view: r1 is local there.
    assert!(
        !sshd.far_home.join("state/ssh").exists(),
        "the far side opened no connection of its own"
    );
}

#[test]
fn a_stopped_host_answers_unknown_within_its_timeout_and_the_rest_is_intact() {
    let Some(sshd) = Sshd::start() else { return };
    let h = fleet(&sshd, 1_500);
    // Warm: the master connection is up when the host stops.
    h.fm("crew-state").stdout_has("far away").run();
    sshd.freeze();
    let t = Instant::now();
    let out = h
        .fm("crew-state")
        .stdout_regex(concat!(
            r"ID +HOST +STATE +SOURCE +AGE +INBOX +OPEN +WAITING +DETAIL\n",
            r"l1 +- +working +status-log +\d+s ago +0 +0 +- +here\n",
            r"r1 +far +unknown +none +- +0 +0 +- +host unreachable: timed out after 1\.5s\n",
            r"r2 +far +unknown +none +- +0 +0 +- +host unreachable: timed out after 1\.5s\n",
        ))
        .run();
    let took = t.elapsed();
    sshd.thaw();
    drop(out);
    assert!(took < Duration::from_millis(2_800), "{took:?}");
    h.fm("crew-state").stdout_has("far away").run();
}

#[test]
fn a_host_that_is_down_or_not_configured_says_why_in_its_rows() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = fleet(&sshd, 5_000);
    h.write("state/r3.meta", "kind=scout\nhost=elsewhere\n");
    sshd.kill();
    h.fm("crew-state")
        .stdout_regex(concat!(
            r"ID +HOST +STATE +SOURCE +AGE +INBOX +OPEN +WAITING +DETAIL\n",
            r"l1 +- +working +status-log +\d+s ago +0 +0 +- +here\n",
            r"r1 +far +unknown +none +- +0 +0 +- +host unreachable: .*Connection refused\n",
            r"r2 +far +unknown +none +- +0 +0 +- +host unreachable: .*Connection refused\n",
            r"r3 +elsewhere +unknown +none +- +0 +0 +- +host elsewhere is not configured\n",
        ))
        .run();
}

/// The `host …` lines of `fm doctor` in home `h`.
#[track_caller]
fn doctor_host_lines(h: &TestHome) -> Vec<String> {
    let r = super::harness::Cmd::new(super::harness::bin("fm"))
        .args(["doctor", "--home"])
        .arg(h.root())
        .status_any()
        .stdout_any()
        .run();
    r.stdout()
        .lines()
        .filter(|l| l[5..].starts_with("host "))
        .map(String::from)
        .collect()
}

#[test]
fn doctor_checks_each_host_for_firstmate_tmux_and_git() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = TestHome::new();
    let missing = sshd.host_toml("nofm", 5_000).replace(
        &sshd.far_home.join("bin").display().to_string(),
        "/nonexistent",
    );
    h.write(
        "config/firstmate.toml",
        sshd.host_toml("far", 5_000) + &missing,
    );
    // The far home is made private, so the far doctor's one remark is
    // the watcher that does not run there.
    for dir in ["data", "state"] {
        std::fs::set_permissions(
            sshd.far_home.join(dir),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
    }
    let lines = doctor_host_lines(&h);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let version = env!("CARGO_PKG_VERSION");
    let far_home = sshd.far_home.display().to_string();
    assert!(
        lines[0].starts_with(&format!("warn host far: fm {version}, tmux ")),
        "{lines:?}"
    );
    assert!(
        lines[0].contains(&format!(", home {far_home}; there: watcher: not running (")),
        "{lines:?}"
    );
    assert!(!lines[0].contains("there: data dir"), "{lines:?}");
    assert!(
        lines[1].starts_with("fail host nofm: firstmate not found there ("),
        "{lines:?}"
    );
    // A far home that lost its config is no firstmate home: the host fails.
    std::fs::rename(
        sshd.far_home.join("config/firstmate.toml"),
        sshd.far_home.join("config/firstmate.toml.away"),
    )
    .unwrap();
    let lines = doctor_host_lines(&h);
    assert!(
        lines[0].starts_with("fail host far: fm ")
            && lines[0].contains(&format!(
                "; there: home: {far_home} is not a firstmate home (no config/firstmate.toml)"
            )),
        "{lines:?}"
    );
    sshd.kill();
    let lines = doctor_host_lines(&h);
    assert!(
        lines[0].starts_with("fail host far: unreachable: ") && lines[0].contains("refused"),
        "{lines:?}"
    );
}

#[test]
fn remote_rows_carry_the_far_attention_and_current_at() {
    let Some(sshd) = Sshd::start() else { return };
    let h = fleet(&sshd, 10_000);
    let at = firstmate::clock::now() - 120;
    sshd.far_write(
        "state/r1.status",
        format!("needs-decision [at={at}] [key=db]: which db?\n"),
    );
    let out = h.fm("crew-state").arg("--json").stdout_json().run();
    let rows = out.json();
    assert_eq!(rows[1]["id"], "r1");
    assert_eq!(rows[1]["state"], "parked");
    assert_eq!(rows[1]["current_at"], firstmate::clock::rfc3339(at));
    assert_eq!(rows[1]["attention"]["kind"], "decision");
    assert_eq!(rows[1]["attention"]["key"], "db");
    assert_eq!(rows[1]["attention"]["since"], firstmate::clock::rfc3339(at));
    assert_eq!(
        rows[1]["attention"]["reason"],
        "needs decision: db \u{2014} which db?"
    );
    h.fm("crew-state")
        .stdout_regex(r".*\nr1 +far +parked +status-log +2m ago +0 +1 +decision db +which db\?\n.*")
        .run();
}

#[test]
fn the_row_of_a_local_task_asks_no_host() {
    let Some(sshd) = Sshd::start() else { return };
    let h = fleet(&sshd, 3_000);
    // A hung host: any question to it would cost the whole 3 s.
    sshd.freeze();
    let t = Instant::now();
    let out = h
        .fm("crew-state")
        .arg("l1")
        .stdout("state: working \u{b7} source: status-log \u{b7} here\n")
        .stderr("")
        .run();
    let took = t.elapsed();
    sshd.thaw();
    drop(out);
    assert!(took < Duration::from_millis(1_500), "{took:?}");
    assert!(!h.exists("state/ssh"), "no connection was opened");
}

#[test]
fn doctor_checks_the_hosts_in_parallel() {
    let Some(sshd) = Sshd::start() else { return };
    let h = TestHome::new();
    h.write(
        "config/firstmate.toml",
        sshd.host_toml("far", 1_500) + &sshd.host_toml("far2", 1_500),
    );
    sshd.freeze();
    let t = Instant::now();
    let lines = doctor_host_lines(&h);
    let took = t.elapsed();
    sshd.thaw();
    // ssh's own connect timeout (1 s) or our bound (1.5 s), whichever
    // comes first.
    assert_eq!(lines.len(), 2, "{lines:?}");
    for (line, name) in lines.iter().zip(["far", "far2"]) {
        assert!(
            line.starts_with(&format!("fail host {name}: unreachable: "))
                && line.contains("timed out"),
            "{lines:?}"
        );
    }
    // One after the other would take at least 3 s.
    assert!(took < Duration::from_millis(2_800), "{took:?}");
}
