//! The `fm` front door: init, doctor, dispatch, completions, man.

use crate::harness::{Cmd, TestHome, bin};

#[test]
fn init_creates_a_home_and_refuses_to_clobber() {
    let h = TestHome::bare();
    let dir = h.root().join("fleet");
    Cmd::new(bin("fm"))
        .arg("init")
        .arg(&dir)
        .stdout(format!("initialised firstmate home: {}\n", dir.display()))
        .run();
    let cfg = std::fs::read_to_string(dir.join("config/firstmate.toml")).unwrap();
    assert!(cfg.contains("grace_secs = 90"));
    for d in ["data", "state", "config"] {
        use std::os::unix::fs::PermissionsExt;
        let m = std::fs::metadata(dir.join(d)).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o700, "{d}");
    }
    // fm serve's token, private.
    let token = std::fs::read_to_string(dir.join("state/.serve.token")).unwrap();
    assert_eq!(token.trim().len(), 32);
    {
        use std::os::unix::fs::PermissionsExt;
        let m = std::fs::metadata(dir.join("state/.serve.token")).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
    }
    std::fs::write(dir.join("config/firstmate.toml"), "# mine\n").unwrap();
    Cmd::new(bin("fm"))
        .arg("init")
        .arg(&dir)
        .status(1)
        .stderr_has("already exists")
        .run();
    assert_eq!(
        std::fs::read_to_string(dir.join("config/firstmate.toml")).unwrap(),
        "# mine\n"
    );
}

#[test]
fn doctor_on_a_fresh_home_reports_every_check() {
    let h = TestHome::bare();
    let dir = h.root().join("fleet");
    Cmd::new(bin("fm"))
        .arg("init")
        .arg(&dir)
        .stdout(format!("initialised firstmate home: {}\n", dir.display()))
        .run();
    // Whether a check fails depends on the machine; the exit code follows it.
    let r = Cmd::new(bin("fm"))
        .args(["doctor", "--home"])
        .arg(&dir)
        .status_any()
        .stdout_any()
        .run();
    let out = r.stdout();
    let names: Vec<&str> = out
        .lines()
        .map(|l| l[5..].split(':').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "tmux",
            "tmux locale",
            "git",
            "config",
            "data dir",
            "state dir",
            "tasks",
            "watcher",
            "inotify",
            "harness",
            "harness",
            "harness",
            "harness"
        ],
        "{out}"
    );
    for l in out.lines() {
        assert!(
            l.starts_with("ok ") || l.starts_with("warn ") || l.starts_with("fail "),
            "{l}"
        );
    }
    assert!(out.contains("warn watcher: not running"), "{out}");
    let fails = out.lines().any(|l| l.starts_with("fail"));
    assert_eq!(r.code, i32::from(fails));
    let j = Cmd::new(bin("fm"))
        .args(["doctor", "--json", "--home"])
        .arg(&dir)
        .status(r.code)
        .stdout_json()
        .run()
        .json();
    assert_eq!(j.as_array().unwrap().len(), 13);
    assert_eq!(j[0]["check"], "tmux");
}

/// `fm doctor` where whether some machine check fails depends on the
/// machine: the exit code must follow the report (1 when a line fails).
#[track_caller]
fn doctor(c: Cmd) -> crate::harness::Output {
    let r = c.status_any().stdout_any().run();
    let fails = r.stdout().lines().any(|l| l.starts_with("fail "));
    assert_eq!(r.code, i32::from(fails), "{}", r.stdout());
    r
}

#[test]
fn doctor_fails_on_a_broken_home() {
    let h = TestHome::new();
    h.write("config/firstmate.toml", "[watch\n");
    std::fs::remove_dir(h.path("state")).unwrap();
    h.fm("fm")
        .arg("doctor")
        .status(1)
        .stdout_has("fail config:")
        .stdout_has("fail state dir:")
        .run();
}

/// Task records the tools would trip over are reported: an unreadable
/// meta fails, a loose mode or an unknown harness warns.
#[test]
fn doctor_looks_at_every_task_record() {
    use std::os::unix::fs::PermissionsExt;
    let h = TestHome::new();
    h.write("state/good.meta", "kind=ship\n");
    std::fs::set_permissions(h.path("state/good.meta"), PermissionsExt::from_mode(0o600)).unwrap();
    let r = doctor(h.fm("fm").arg("doctor"));
    assert!(
        r.stdout().contains("ok   tasks: 1 task(s)"),
        "{}",
        r.stdout()
    );
    h.write("state/loose.meta", "harness=nosuch\n");
    std::fs::set_permissions(h.path("state/loose.meta"), PermissionsExt::from_mode(0o644)).unwrap();
    let r = doctor(h.fm("fm").arg("doctor"));
    let out = r.stdout();
    assert!(
        out.contains("warn tasks:")
            && out.contains("loose.meta is mode 644")
            && out.contains("loose: unknown harness \"nosuch\""),
        "{out}"
    );
    std::os::unix::fs::symlink("/etc/hostname", h.path("state/link.meta")).unwrap();
    h.fm("fm")
        .arg("doctor")
        .status(1)
        .stdout_has("fail tasks: link: refusing to follow symlink")
        .run();
}

#[test]
fn no_home_exits_3_naming_fm_init() {
    let h = TestHome::bare();
    Cmd::new(bin("fm-status"))
        .arg("t")
        .current_dir(h.root())
        .status(3)
        .stderr_has("fm init")
        .run();
}

#[test]
fn home_is_found_from_a_subdirectory() {
    let h = TestHome::new();
    std::fs::create_dir_all(h.path("deep/er")).unwrap();
    Cmd::new(bin("fm-status"))
        .args(["t", "done", "x"])
        .current_dir(h.path("deep/er"))
        .run();
    assert!(h.exists("state/t.status"));
}

#[test]
fn fm_tool_runs_the_same_code_as_fm_dash_tool() {
    let h = TestHome::new();
    h.fm("fm")
        .args(["status", "t", "working", "via", "fm"])
        .run();
    let a = h
        .fm("fm")
        .args(["status", "t", "--json"])
        .stdout_any()
        .run()
        .stdout();
    let b = h
        .fm("status")
        .args(["t", "--json"])
        .stdout_any()
        .run()
        .stdout();
    assert_eq!(a, b);
    assert!(a.contains("via fm"));
    h.fm("fm")
        .args(["status", "--", "../x"])
        .status(2)
        .stderr("fm-status: error: invalid task id \"../x\": must start with a letter or digit\n")
        .run();
}

#[test]
fn help_has_examples_and_usage_errors_exit_2() {
    Cmd::new(bin("fm"))
        .arg("--help")
        .stdout_has("Examples:")
        .run();
    Cmd::new(bin("fm-status"))
        .arg("--help")
        .stdout_has("Examples:")
        .run();
    Cmd::new(bin("fm"))
        .arg("frobnicate")
        .status(2)
        .stderr("fm: error: unrecognized subcommand 'frobnicate'\n\nUsage: fm <COMMAND>\n\nFor more information, try '--help'.\n")
        .run();
    Cmd::new(bin("fm-status"))
        .status(2)
        .stderr_has(
            "fm-status: error: the following required arguments were not provided:\n  <ID>\n",
        )
        .run();
}

#[test]
fn completions_and_man_pages() {
    Cmd::new(bin("fm"))
        .args(["completions", "bash"])
        .stdout_has("complete")
        .stdout_has("status")
        .run();
    Cmd::new(bin("fm"))
        .args(["completions", "zsh"])
        .stdout_has("#compdef fm")
        .run();
    Cmd::new(bin("fm"))
        .args(["completions", "fish"])
        .stdout_has("complete -c fm")
        .run();
    let h = TestHome::bare();
    let dir = h.root().join("man");
    Cmd::new(bin("fm"))
        .arg("man")
        .arg(&dir)
        .stdout(format!("wrote 11 man pages to {}\n", dir.display()))
        .run();
    let page = std::fs::read_to_string(dir.join("fm.1")).unwrap();
    assert!(page.contains(".TH fm"));
    assert!(dir.join("fm-status.1").is_file());
    assert!(dir.join("fm-top.1").is_file());
}

#[test]
fn closed_stdout_pipe_is_success() {
    let script = format!(
        "'{}' completions bash | head -c 1 >/dev/null; echo ${{PIPESTATUS[0]}}",
        bin("fm").display()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "0",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "a closed pipe is no error: no message"
    );
}

#[test]
fn every_installed_tool_is_reachable_through_fm() {
    for t in firstmate::cli::TOOLS {
        let exe = bin(&format!("fm-{}", t.name));
        if exe.is_file() {
            Cmd::new(bin("fm"))
                .args([t.name, "--help"])
                .stdout_has(&format!("fm-{}", t.name))
                .run();
        }
    }
}

#[test]
fn doctor_without_a_home_still_checks_the_machine_and_fails_home() {
    let h = TestHome::bare();
    let r = Cmd::new(bin("fm"))
        .arg("doctor")
        .current_dir(h.root())
        .status(1)
        .stdout_any()
        .run();
    let out = r.stdout();
    let names: Vec<&str> = out
        .lines()
        .map(|l| l[5..].split(':').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "tmux",
            "tmux locale",
            "git",
            "home",
            "inotify",
            "harness",
            "harness",
            "harness",
            "harness"
        ],
        "{out}"
    );
    assert!(out.contains("fail home: "), "{out}");
}

#[test]
fn doctor_warns_about_a_watcher_whose_heartbeat_stopped() {
    let h = TestHome::new();
    let home = firstmate::Home::at(&h.root()).unwrap();
    let _held = firstmate::fsx::try_lock(&home.watch_lock())
        .unwrap()
        .expect("lock is free");
    h.write("state/.watch.beat", "");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
    std::fs::File::options()
        .write(true)
        .open(home.watch_beat())
        .unwrap()
        .set_modified(old)
        .unwrap();
    let r = doctor(h.fm("fm").arg("doctor"));
    assert!(
        r.stdout()
            .contains("warn watcher: watcher holds the lock but its heartbeat is 10"),
        "{}",
        r.stdout()
    );
    h.write("state/.watch.beat", "");
    let r = doctor(h.fm("fm").arg("doctor"));
    assert!(
        r.stdout().contains("ok   watcher: running"),
        "{}",
        r.stdout()
    );
}

/// The tmux probe runs in doctor's own environment: under cron's (`env -i`,
/// no locale) it still reads tab-separated fields, through the runner's
/// locale fix.
#[test]
fn doctor_probes_tmux_reads_in_cron_env() {
    if !crate::harness::have_tmux() {
        return;
    }
    let h = TestHome::new();
    let path = std::env::var_os("PATH").unwrap();
    let tmux_dir = std::env::split_paths(&path)
        .find(|d| d.join("tmux").is_file())
        .unwrap();
    let r = doctor(
        Cmd::new("env")
            .arg("-i")
            .arg(format!("HOME={}", h.root().display()))
            .arg(format!("PATH=/usr/bin:/bin:{}", tmux_dir.display()))
            .arg(format!("FM_HOME={}", h.root().display()))
            .arg(bin("fm"))
            .arg("doctor"),
    );
    let out = r.stdout();
    assert!(
        out.contains("ok   tmux locale: tab-separated reads survive (the locale is not UTF-8 here; firstmate runs tmux with -u and LC_CTYPE=C.UTF-8)\n"),
        "{out}"
    );
}

/// Each agent harness is named with its program and version: the pinned
/// one is `ok`, another warns, a missing built-in is fine, a missing
/// configured one warns, and an unverified profile says so.
#[test]
fn doctor_names_each_harness_and_its_version() {
    use std::os::unix::fs::PermissionsExt;
    let h = TestHome::new();
    let bin_dir = h.root().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let fake = |name: &str, says: &str| {
        let p = bin_dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\necho '{says}'\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let versions = include_str!("../../scripts/agents.versions");
    let claude = versions
        .lines()
        .find_map(|l| l.strip_prefix("claude="))
        .unwrap()
        .trim();
    fake("claude", &format!("{claude} (Claude Code)"));
    fake("codex", "codex-cli 0.1.0");
    fake("opencode", "1.0.0");
    h.write(
        "config/firstmate.toml",
        "[harness.mine]\nlaunch = [\"my-agent\"]\n\n[harness.codex]\napproval = \"prompt\"\n",
    );
    let path = format!("{}:/usr/bin:/bin", bin_dir.display());
    let r = doctor(h.fm("fm").arg("doctor").env("PATH", &path));
    let out = r.stdout();
    let has = |line: &str| assert!(out.contains(&format!("{line}\n")), "{line}\n---\n{out}");
    has(&format!(
        "ok   harness: claude: `claude` {claude} (the version the profile is built for); approval bypass (--dangerously-skip-permissions)"
    ));
    // A version no suite run verified: named, with the ones that were.
    let verified = versions
        .lines()
        .find_map(|l| l.strip_prefix("codex.verified="))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(", ");
    has(&format!(
        "warn harness: codex: codex 0.1.0: not verified by the conformance suite (verified: {verified}); approval prompt (--sandbox read-only --ask-for-approval on-request)",
    ));
    let unknown = "approval as launched (no flags known for this profile)";
    has(&format!(
        "ok   harness: opencode: `opencode` installed; no conformance suite verifies this profile; {unknown}"
    ));
    has(&format!("ok   harness: pi: `pi` not installed; {unknown}"));
    has(&format!(
        "warn harness: mine: `my-agent` not installed; {unknown}"
    ));
}

/// Bare `fm`: what needs the captain now, the commands for each, the
/// fleet's counts; a fleet read as `fm top` reads it (real panes).
#[test]
fn bare_fm_lists_what_needs_you_with_the_next_commands() {
    let Some(f) = crate::top::Fleet::new() else {
        return;
    };
    let out = Cmd::new(bin("fm"))
        .env("FM_HOME", f.h.root())
        .stdout_any()
        .run()
        .stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0], "3 need you (5 workers: 1 working, 1 idle, 1 parked, 1 done, 1 exited):",
        "{out}"
    );
    assert!(
        lines[1].starts_with("schema  needs decision: schema \u{2014} postgres or sqlite? ("),
        "{out}"
    );
    assert_eq!(
        lines[2], "  fm send schema --resolve-key schema -- '<answer>'",
        "{out}"
    );
    assert_eq!(lines[3], "  fm peek schema", "{out}");
    assert!(
        lines[4].starts_with("deaf  1 message unread after 3 rings"),
        "{out}"
    );
    assert!(out.contains("\ngone  dead agent: pane gone"), "{out}");
    // Its pane is gone: restore comes first, with the agent's conversation.
    assert!(
        out.contains("pane gone\n  fm restore gone\n  fm control gone relaunch"),
        "{out}"
    );
    assert!(
        out.contains("  fm control gone relaunch --note '<progress so far>'\n"),
        "{out}"
    );
    assert!(out.ends_with("the whole fleet: fm top\n"), "{out}");
    // The same under an empty environment (no TERM, no LANG).
    let mut home = std::ffi::OsString::from("FM_HOME=");
    home.push(f.h.root());
    Cmd::new("env")
        .arg("-i")
        .arg(home)
        .arg(bin("fm"))
        .stdout(out.as_str())
        .run();
}

#[test]
fn bare_fm_says_when_nothing_needs_you_and_how_to_make_a_home() {
    let h = TestHome::new();
    h.fm("fm")
        .stdout("nothing needs you now: no workers\n  fm top\n")
        .run();
    h.write("state/t1.meta", "kind=ship\n");
    h.write("state/t1.status", "working: on it\n");
    h.fm("fm")
        .stdout_regex(r"^nothing needs you now: 1 worker: 1 \w+\n  fm top\n$")
        .run();
    let bare = TestHome::bare();
    Cmd::new("env")
        .arg("-i")
        .arg(crate::harness::bin("fm"))
        .current_dir(bare.root())
        .stdout(
            "no firstmate home here: make one with `fm init DIR`, or watch the whole loop run with `fm demo`\n\
             every command: fm --help\n",
        )
        .run();
    // --help keeps the help.
    Cmd::new(bin("fm"))
        .arg("--help")
        .stdout_has("Usage: fm <COMMAND>")
        .run();
}
