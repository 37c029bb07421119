use super::*;

fn sh(script: &str) -> Cmd {
    Cmd::new("sh").arg("-c").arg(script)
}

#[test]
fn input_is_the_childs_stdin() {
    let out = sh("cat; echo end").stdin(b"a\nb\n".to_vec()).run().unwrap();
    assert_eq!((out.code(), &*out.stdout), (Some(0), "a\nb\nend\n"));
    // Without input stdin is empty, and a child that never reads its
    // (large) input still finishes.
    assert_eq!(sh("cat").run_ok().unwrap(), "");
    let big = vec![b'x'; 4 << 20];
    assert_eq!(sh("echo ok").stdin(big).run_ok().unwrap(), "ok\n");
}

#[test]
fn output_and_exit_codes() {
    let out = sh("printf out; printf err >&2; exit 3").run().unwrap();
    assert_eq!(
        (out.code(), &*out.stdout, &*out.stderr),
        (Some(3), "out", "err")
    );
    let err = sh("echo nope >&2; exit 2").run_ok().unwrap_err();
    assert_eq!(err.to_string(), "sh -c echo nope >&2; exit 2: exit 2: nope");
    assert_eq!(sh("echo yes").run_ok().unwrap(), "yes\n");
    let killed = sh("kill -9 $$").run_ok().unwrap_err();
    assert!(
        killed.to_string().ends_with(": killed by a signal"),
        "{killed}"
    );
}

#[test]
fn stdin_bytes_reach_the_child_and_a_child_that_ignores_them_is_fine() {
    let out = sh("cat; printf .").stdin(b"body\n".to_vec()).run_ok();
    assert_eq!(out.unwrap(), "body\n.");
    let big = vec![b'x'; 1 << 20];
    let out = sh("exit 0").stdin(big).run().unwrap();
    assert_eq!(out.code(), Some(0));
}

#[test]
fn a_missing_program_is_not_installed() {
    let err = Cmd::new("definitely-not-a-program-fm").run().unwrap_err();
    assert!(matches!(err.cause, Cause::NotFound));
    let e: Error = err.into();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("not installed"), "{e}");
}

#[test]
fn a_hung_child_is_killed_and_reaped_at_the_bound() {
    let t = Instant::now();
    let err = sh("echo $$; exec sleep 30")
        .timeout(Duration::from_millis(300))
        .run()
        .unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(
        err.to_string(),
        "sh -c echo $$; exec sleep 30: timed out after 0.3s"
    );
    let e: Error = err.into();
    assert_eq!(e.exit_code(), 3);
}

#[test]
fn the_killed_child_leaves_no_process_behind() {
    // The child prints its pid and waits; after the bound that pid must
    // be gone (killed and reaped, not a zombie of ours).
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!("echo $$ > '{}'; exec sleep 30", pidfile.display());
    let _ = sh(&script).timeout(Duration::from_millis(300)).run();
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let proc_dir = Path::new("/proc").join(pid.trim());
    assert!(!proc_dir.exists(), "child {} still exists", pid.trim());
}

#[test]
fn a_grandchild_holding_the_pipes_does_not_hold_the_caller() {
    let t = Instant::now();
    let out = sh("sleep 5 & echo started")
        .timeout(Duration::from_secs(4))
        .run()
        .unwrap();
    assert_eq!(out.code(), Some(0));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[test]
fn output_is_bounded_and_the_child_is_not_blocked() {
    let more = MAX_OUTPUT + 3 * 65536;
    let out = sh(&format!("head -c {more} /dev/zero; echo done >&2"))
        .run()
        .unwrap();
    assert_eq!(out.stdout.len(), MAX_OUTPUT);
    assert_eq!(out.stderr, "done\n");
    assert_eq!(read_bounded(&b"abcdef"[..], 4), b"abcd");
}

#[test]
fn long_arguments_are_summarised() {
    let long = "x".repeat(500);
    let err = Cmd::new("definitely-not-a-program-fm")
        .arg(&long)
        .run()
        .unwrap_err();
    assert_eq!(err.args.chars().count(), ARGS_SHOWN + 1);
    assert!(err.args.ends_with('…'));
}

#[test]
fn git_gets_its_environment() {
    let cmd = Cmd::git(Path::new("/r"));
    let env: Vec<_> = cmd
        .env
        .iter()
        .map(|(k, v)| format!("{}={}", k.display(), v.as_ref().unwrap().display()))
        .collect();
    assert_eq!(
        env,
        ["GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C"]
    );
    assert_eq!(cmd.args, ["-C", "/r"]);
}

#[test]
fn tmux_is_given_a_utf8_character_type_only_when_it_lacks_one() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    };
    assert_eq!(utf8_locale(env(&[])), Some(("LC_CTYPE", "C.UTF-8")));
    assert_eq!(
        utf8_locale(env(&[("LANG", "C")])),
        Some(("LC_CTYPE", "C.UTF-8"))
    );
    assert_eq!(
        utf8_locale(env(&[("LANG", "")])),
        Some(("LC_CTYPE", "C.UTF-8"))
    );
    assert_eq!(utf8_locale(env(&[("LANG", "en_US.UTF-8")])), None);
    assert_eq!(utf8_locale(env(&[("LANG", "C.utf8")])), None);
    assert_eq!(
        utf8_locale(env(&[("LANG", "C"), ("LC_CTYPE", "de_DE.UTF-8")])),
        None
    );
    assert_eq!(
        utf8_locale(env(&[("LANG", "C.UTF-8"), ("LC_ALL", "C")])),
        Some(("LC_ALL", "C.UTF-8"))
    );
    assert_eq!(
        utf8_locale(env(&[("LC_ALL", "POSIX"), ("LANG", "C.UTF-8")])),
        Some(("LC_ALL", "C.UTF-8"))
    );
    assert_eq!(
        utf8_locale(env(&[("LC_ALL", ""), ("LANG", "C.UTF-8")])),
        None
    );
    assert_eq!(Cmd::tmux(Some("s")).args[..3], ["-u", "-L", "s"]);
    assert_eq!(Cmd::tmux(None).args, ["-u"]);
}
