#[test]
fn literal_arg_escapes_only_a_trailing_semicolon() {
    assert_eq!(literal_arg("plain"), "plain");
    assert_eq!(literal_arg("a;b"), "a;b");
    assert_eq!(literal_arg("end;"), "end\\;");
    assert_eq!(literal_arg(";"), "\\;");
    assert_eq!(literal_arg("x\\;"), "x\\\\;");
    assert_eq!(literal_arg(""), "");
}

use super::*;

#[test]
fn parse_list_reads_fields_and_skips_junk() {
    let out = "%1\t0\t1\tbash\tfm\tt/ab\t7-9\tfm-a\n%22\t1\t0\tclaude\tfm\t\t7-9\twin\twith\ttabs\ngarbage\n";
    let v = parse_list(out);
    assert_eq!(v.len(), 2);
    assert!(v[0].in_mode && !v[0].dead);
    assert_eq!(v[0].command, "bash");
    assert_eq!(v[1].id, "%22");
    assert!(v[1].dead && !v[1].in_mode);
    assert_eq!(v[1].window, "win\twith\ttabs");
    assert_eq!((v[0].mark.as_str(), v[0].server.as_str()), ("t/ab", "7-9"));
    assert_eq!((v[1].mark.as_str(), v[1].server.as_str()), ("", "7-9"));
}

#[test]
fn fake_swallows_enters_then_submits() {
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.swallow_enters = 1);
    f.type_text("%1", "hello").unwrap();
    f.press("%1", "Enter").unwrap();
    assert!(f.capture("%1", 0).unwrap().ends_with("> hello\n"));
    f.press("%1", "Enter").unwrap();
    assert_eq!(f.screen("%1").history, vec!["hello".to_string()]);
    assert!(f.type_text("%9", "x").is_err());
}

/// A private tmux server for one test, killed on drop.
struct Server(String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .output();
    }
}

fn tmux_installed() -> bool {
    let found = std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok();
    if !found {
        assert!(
            std::env::var("FM_REQUIRE_TMUX").as_deref() != Ok("1"),
            "tmux is required (FM_REQUIRE_TMUX=1) but not installed"
        );
        eprintln!("skipped: tmux not installed");
    }
    found
}

/// Without a locale (as under cron) a tmux client prints the tabs of
/// `list-panes -F` as `_`, and every pane read finds nothing. The read
/// is done by a copy of this test binary started with no `LANG`/`LC_*`
/// at all ([`pane_reads_in_the_stripped_environment`]), against servers
/// started with and without a UTF-8 locale.
#[test]
fn panes_are_read_without_a_locale() {
    if !tmux_installed() {
        return;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for (n, utf8_server) in [(0, true), (1, false)] {
        let server = Server(format!("fm-test-{}-locale-{n}", std::process::id()));
        let mut start = std::process::Command::new("tmux");
        if utf8_server {
            start.env("LANG", "C.UTF-8");
        } else {
            start.env_clear().env("PATH", &path);
        }
        let st = start
            .args([
                "-L",
                &server.0,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "sleep 300",
            ])
            .status()
            .unwrap();
        assert!(st.success());
        // The shell tmux starts the command with has to exec it first: on a
        // busy machine the pane still shows the shell for a moment.
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(10) {
            let out = std::process::Command::new("tmux")
                .args([
                    "-L",
                    &server.0,
                    "list-panes",
                    "-F",
                    "#{pane_current_command}",
                ])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&out.stdout).trim() == "sleep" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // The test's own path, without the crate name, so it survives a move.
        let module = module_path!().split_once("::").map_or("", |(_, m)| m);
        let name = format!("{module}::pane_reads_in_the_stripped_environment");
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &name,
                "--include-ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env_clear()
            .env("PATH", &path)
            .env("FM_TEST_LOCALE_SOCKET", &server.0)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&child.stdout);
        assert!(
            child.status.success() && said.contains("1 passed"),
            "server started {}: {said}{}",
            if utf8_server {
                "in UTF-8"
            } else {
                "under env -i"
            },
            String::from_utf8_lossy(&child.stderr)
        );
    }
}

/// Run only by [`panes_are_read_without_a_locale`], in an environment
/// without `LANG`/`LC_*`.
#[test]
#[ignore = "run by panes_are_read_without_a_locale in a stripped environment"]
fn pane_reads_in_the_stripped_environment() {
    let socket = std::env::var("FM_TEST_LOCALE_SOCKET").expect("FM_TEST_LOCALE_SOCKET");
    for k in ["LANG", "LC_ALL", "LC_CTYPE"] {
        assert!(std::env::var_os(k).is_none(), "{k} is set");
    }
    // The environment does show the bug: a plain client's read is garbled.
    let plain = std::process::Command::new("tmux")
        .args(["-L", &socket, "list-panes", "-a", "-F", LIST_FORMAT])
        .output()
        .unwrap();
    let plain = String::from_utf8_lossy(&plain.stdout);
    assert!(plain.starts_with('%') && !plain.contains('\t'), "{plain:?}");
    assert!(parse_list(&plain).is_empty(), "{plain:?}");
    // Through the runner, the pane is there and its agent alive.
    let tmux = Tmux::new(&socket);
    let panes = tmux.list().unwrap();
    assert_eq!(panes.len(), 1, "{panes:?}");
    let p = &panes[0];
    assert_eq!(
        (p.command.as_str(), p.dead, p.in_mode),
        ("sleep", false, false)
    );
    let claude = crate::harness::builtin("claude").unwrap();
    assert!(claude.is_alive(p.dead, &p.command));
    assert_eq!(tmux.info(&p.id).unwrap().as_ref(), Some(p));
}
