//! Hardening (docs/spec/home.md#permissions, docs/spec/files.md, docs/spec/cli.md): on a read-only
//! home or a full disk every
//! writing command exits 3 with an `error:` line and leaves nothing partial
//! (no torn record, no dot-temp file); what the tools create is mode
//! 0700/0600; a symlink where the layout expects a directory or a record is
//! refused (exit 1) and never followed.
//!
//! The read-only and full-disk tests mount a small tmpfs, which needs root
//! or `CAP_SYS_ADMIN`. Without it they print why and are skipped, unless
//! `FM_REQUIRE_MOUNT=1` (CI sets it), which makes them fail. Root ignores
//! file modes, so read-only means a read-only mount, never a chmod.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{Cmd, bin, unmet};

/// A tmpfs mounted on a fresh temp dir; unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    #[track_caller]
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::Builder::new()
            .prefix("fm-harden-")
            .tempdir()
            .unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("fm-harden")
            .arg(dir.path())
            .output();
        let why = match out {
            Ok(o) if o.status.success() => return Some(Tmpfs { dir }),
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
            Err(e) => e.to_string(),
        };
        unmet(
            &format!("a tmpfs mount (needs root or CAP_SYS_ADMIN; mount said: {why})"),
            "FM_REQUIRE_MOUNT",
        );
        None
    }

    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    #[track_caller]
    fn remount_ro(&self) {
        let st = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(self.dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "remount read-only failed");
    }

    /// Writes a filler file until the filesystem says ENOSPC.
    #[track_caller]
    fn fill(&self) {
        let mut f = std::fs::File::create(self.root().join("filler")).unwrap();
        for size in [1 << 16, 512, 1] {
            let chunk = vec![0u8; size];
            loop {
                match f.write(&chunk) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                    Err(e) => panic!("filling the tmpfs: {e}"),
                }
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

fn fm(home: &Path, tool: &str) -> Cmd {
    let name = if tool == "fm" {
        "fm".to_string()
    } else {
        format!("fm-{tool}")
    };
    Cmd::new(bin(&name)).env("FM_HOME", home)
}

/// Every path under `root` with its content (`None` for a directory).
fn snapshot(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let m = p.symlink_metadata().unwrap();
            if m.is_dir() {
                out.insert(rel, None);
                walk(root, &p, out);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// What a failed command may leave behind: nothing changed, no dot-temp
/// file; new directories, lock files and empty append-only logs are
/// allowed (an empty log reads as no log).
#[track_caller]
fn assert_nothing_partial(
    what: &str,
    before: &BTreeMap<String, Option<Vec<u8>>>,
    after: &BTreeMap<String, Option<Vec<u8>>>,
) {
    for (path, content) in after {
        let name = Path::new(path).file_name().unwrap().to_string_lossy();
        assert!(!name.contains(".tmp."), "{what}: temp file left: {path}");
        match (before.get(path), content) {
            (Some(old), new) => assert!(
                old == new,
                "{what}: {path} changed; it now ends {:?}",
                new.as_deref().map(tail)
            ),
            (None, None) => {}
            (None, Some(bytes)) => {
                let harmless = name.ends_with(".lock")
                    || (bytes.is_empty() && (name.ends_with(".status") || name == "events.jsonl"));
                assert!(harmless, "{what}: new file {path} ({} bytes)", bytes.len());
            }
        }
    }
    for path in before.keys() {
        assert!(after.contains_key(path), "{what}: {path} vanished");
    }
}

/// The last bytes of a file, readably.
fn tail(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[b.len().saturating_sub(60)..]).into_owned()
}

/// A home inside `root` with task `t1` (brief, two pending records, a
/// status log) and task `root` (a brief to hang sub-briefs on).
#[track_caller]
fn seed(root: &Path) -> PathBuf {
    let home = root.join("home");
    let d = home.display();
    Cmd::new(bin("fm"))
        .arg("init")
        .arg(&home)
        .stdout(format!("initialised firstmate home: {d}\n"))
        .run();
    fm(&home, "brief")
        .args(["t1", "webapp", "--mode", "local-only"])
        .args(["--intent", "Fix the login.", "--spec", "Patch it."])
        .stdout(format!(
            "written: {d}/data/t1/brief.md (ship, mode=local-only)\n"
        ))
        .run();
    fm(&home, "brief")
        .args(["root", "webapp", "--mode", "local-only"])
        .stdout(format!(
            "scaffolded: {d}/data/root/brief.md (ship, mode=local-only; replace {{TASK}} and {{FIRSTMATE_SPEC}})\n"
        ))
        .run();
    for (n, body) in ["first", "second"].into_iter().enumerate() {
        fm(&home, "send")
            .args(["t1", body])
            .stdout(format!("queued t1 00{}.msg \u{b7} doorbell no-pane\n", n + 1))
            .stderr("fm-send: t1: doorbell no-pane: meta records no pane for this task; the message is recorded and the watcher will re-ring it\n")
            .run();
    }
    fm(&home, "status").args(["t1", "working", "started"]).run();
    fm(&home, "board")
        .args(["add", "Seeded task"])
        .stdout("T-001 pending\n")
        .run();
    home
}

/// Every writing command, as (label, tool, args). `fresh` names a task
/// with no files yet, so its writes need new space.
fn writing_commands(home: &Path) -> Vec<(&'static str, &'static str, Vec<String>)> {
    let s = |v: &[&str]| {
        v.iter()
            .map(std::string::ToString::to_string)
            .collect::<Vec<_>>()
    };
    vec![
        ("status append", "status", s(&["t2", "working", "more"])),
        ("status --busy", "status", s(&["t1", "--busy"])),
        ("send", "send", s(&["t1", "third message"])),
        (
            "brief write",
            "brief",
            s(&[
                "t2",
                "webapp",
                "--mode",
                "local-only",
                "--intent",
                "A.",
                "--spec",
                "B.",
            ]),
        ),
        (
            "brief --force",
            "brief",
            s(&[
                "t1",
                "webapp",
                "--mode",
                "local-only",
                "--intent",
                "New.",
                "--spec",
                "B.",
                "--force",
            ]),
        ),
        ("brief --revoke", "brief", s(&["--revoke", "t1"])),
        (
            "brief --respond",
            "brief",
            s(&["--respond", "t1", "--status", "success"]),
        ),
        (
            "brief --parent (meta)",
            "brief",
            s(&["t3", "webapp", "--scout", "--parent", "root"]),
        ),
        ("board add", "board", s(&["add", "Another task"])),
        ("board claim", "board", s(&["claim", "T-1", "--as", "w1"])),
        (
            "fm init",
            "fm",
            vec![
                "init".into(),
                home.parent().unwrap().join("other").display().to_string(),
            ],
        ),
    ]
}

#[track_caller]
fn expect_env_failure(home: &Path, label: &str, tool: &str, args: &[String]) {
    let before = snapshot(home.parent().unwrap());
    let r = fm(home, tool)
        .args(args)
        .status(3)
        .stderr_has("error:")
        .stderr_lacks("panicked")
        .run();
    eprintln!("{label}: {}", r.stderr().trim());
    let after = snapshot(home.parent().unwrap());
    assert_nothing_partial(label, &before, &after);
}

#[test]
fn read_only_home_every_writer_exits_3_and_writes_nothing() {
    let Some(fs) = Tmpfs::mount("4m") else { return };
    let home = seed(&fs.root());
    fs.remount_ro();
    let mut cmds = writing_commands(&home);
    cmds.push(("ack", "ack", vec!["t1".into(), "1".into()]));
    cmds.push((
        "control interrupt",
        "control",
        vec!["t1".into(), "interrupt".into()],
    ));
    cmds.push((
        "status append (existing log)",
        "status",
        vec!["t1".into(), "note".into(), "x".into()],
    ));
    for (label, tool, args) in cmds {
        expect_env_failure(&home, label, tool, &args);
    }
}

#[test]
fn full_disk_every_writer_exits_3_and_leaves_nothing_partial() {
    let Some(fs) = Tmpfs::mount("1m") else { return };
    let home = seed(&fs.root());
    // A status log whose last page has a few bytes free: an append that
    // does not fit must not leave its first bytes behind (a torn record).
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
    let mut log = Vec::new();
    while log.len() + 40 < page - 12 {
        log.extend_from_slice(b"note [at=1]: padding padding padding\n");
    }
    let pad = page - 12 - log.len();
    log.extend_from_slice(format!("note: {}\n", "p".repeat(pad - 7)).as_bytes());
    assert_eq!(log.len(), page - 12);
    std::fs::write(home.join("state/t4.status"), &log).unwrap();
    fs.fill();
    for (label, tool, args) in writing_commands(&home) {
        expect_env_failure(&home, label, tool, &args);
    }
    let long = "this line is longer than the free bytes in the page";
    expect_env_failure(
        &home,
        "torn append",
        "status",
        &["t4".into(), "note".into(), long.into()],
    );
    assert!(std::fs::read(home.join("state/t4.status")).unwrap() == log);
    // A send that cannot stage its record names the inbox, which exists,
    // never the temp file's base name (`…/staged`), which does not.
    fm(&home, "send")
        .args(["t1", "fourth message"])
        .status(3)
        .stderr_has(&format!(
            "({}): No space left on device",
            home.join("state/t1.inbox").display()
        ))
        .stderr_lacks("staged")
        .run();
}

#[test]
fn full_disk_ack_moves_the_whole_record_or_nothing() {
    let Some(fs) = Tmpfs::mount("1m") else { return };
    let home = seed(&fs.root());
    let pending = home.join("state/t1.inbox/001.msg");
    let bytes = std::fs::read(&pending).unwrap();
    fs.fill();
    // Either outcome is correct; each branch checks all of its output.
    let r = fm(&home, "ack")
        .args(["t1", "1"])
        .status_any()
        .stdout_any()
        .stderr_any()
        .run();
    let handled = home.join("state/t1.inbox/handled/001.msg");
    eprintln!("ack on a full disk: exit {}: {}", r.code, r.stderr().trim());
    match r.code {
        // A rename needs no space; the event append may warn (docs/spec/events.md).
        0 => {
            assert_eq!(r.stdout(), "handled 001.msg\n");
            assert!(
                r.stderr().is_empty() || r.stderr().starts_with("fm-ack: warning: "),
                "{}",
                r.stderr()
            );
            assert!(!pending.exists());
            assert_eq!(std::fs::read(&handled).unwrap(), bytes);
        }
        code => {
            assert_eq!(code, 3, "{}", r.stderr());
            assert_eq!(r.stdout(), "");
            assert!(r.stderr().contains("error:"), "{}", r.stderr());
            assert_eq!(std::fs::read(&pending).unwrap(), bytes);
            assert!(!handled.exists());
        }
    }
}

#[test]
fn created_files_are_0600_and_directories_0700() {
    let tmp = tempfile::tempdir().unwrap();
    let home = seed(tmp.path());
    let h = home.as_path();
    let d = h.display();
    let no_notice = "notice: no live worker notified (no pane recorded)\n";
    fm(h, "ack")
        .args(["t1", "1"])
        .stdout("handled 001.msg\n")
        .run();
    fm(h, "status").args(["t1", "--busy"]).run();
    fm(h, "brief")
        .args(["--respond", "t1", "--status", "success"])
        .stdout(format!(
            "responded: {d}/data/t1/response.md (status=success)\n"
        ))
        .run();
    fm(h, "brief")
        .args(["t3", "webapp", "--scout", "--parent", "root"])
        .stdout(format!(
            "scaffolded: {d}/data/t3/brief.md (scout; replace {{TASK}} and {{FIRSTMATE_SPEC}})\n"
        ))
        .run();
    fm(h, "brief")
        .args([
            "t1",
            "webapp",
            "--mode",
            "local-only",
            "--intent",
            "N.",
            "--spec",
            "S.",
            "--force",
        ])
        .stdout(format!(
            "written: {d}/data/t1/brief.md (ship, mode=local-only)\nhistory: {d}/data/t1/brief.history/001.md\n{no_notice}"
        ))
        .run();
    fm(h, "brief")
        .args(["--revoke", "t3"])
        .stdout(format!(
            "revoked: {d}/data/t3/brief.md\nhistory: {d}/data/t3/brief.history/001.md\n{no_notice}"
        ))
        .run();
    let want = [
        "config/firstmate.toml",
        "state/t1.meta",
        "state/t3.meta",
        "state/t1.status",
        "state/t1.busy",
        "state/t1.inbox/002.msg",
        "state/t1.inbox/handled/001.msg",
        "state/events.jsonl",
        "data/t1/brief.md",
        "data/t1/brief.history/001.md",
        "data/t1/response.md",
        "data/board/T-001.task",
    ];
    let mut seen = 0;
    for (path, content) in snapshot(h) {
        let mode = std::fs::symlink_metadata(h.join(&path))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        let expected = if content.is_none() { 0o700 } else { 0o600 };
        assert_eq!(mode, expected, "{path} is {mode:o}");
        seen += usize::from(want.contains(&path.as_str()));
    }
    let root_mode = std::fs::metadata(h).unwrap().permissions().mode() & 0o777;
    assert_eq!(root_mode, 0o700, "the home fm init created");
    assert!(seen >= want.len() - 1, "expected files missing");
}

/// A directory and a file outside the home that a symlink points at.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Outside {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(
            dir.path().join("d/001.msg"),
            b"schema=fm-inbox.v1\nat=x\n--\nnot yours\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("f"), b"outside\n").unwrap();
        Outside { dir }
    }
    fn dir(&self) -> PathBuf {
        self.dir.path().join("d")
    }
    fn file(&self) -> PathBuf {
        self.dir.path().join("f")
    }
}

/// Replaces `path` under the home by a symlink to `target`, runs each
/// command expecting exit 1, and checks nothing was followed or moved.
#[track_caller]
fn refused_through_symlink(path: &str, to_dir: bool, cmds: &[(&str, &[&str])]) {
    let tmp = tempfile::tempdir().unwrap();
    let home = seed(tmp.path());
    let out = Outside::new();
    let target = if to_dir { out.dir() } else { out.file() };
    let link = home.join(path);
    if link.is_dir() {
        std::fs::remove_dir_all(&link).unwrap();
    } else if link.exists() {
        std::fs::remove_file(&link).unwrap();
    }
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let outside_before = snapshot(out.dir.path());
    for (tool, args) in cmds {
        let before = snapshot(&home);
        fm(&home, tool)
            .args(*args)
            .status(1)
            .stderr_has("symlink")
            .run();
        assert_eq!(
            snapshot(out.dir.path()),
            outside_before,
            "{path}: {tool} {args:?} followed the link"
        );
        assert_nothing_partial(
            &format!("{path}: {tool} {args:?}"),
            &before,
            &snapshot(&home),
        );
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            target,
            "{path}: link moved"
        );
    }
}

#[test]
fn symlinked_inbox_is_refused() {
    refused_through_symlink(
        "state/t1.inbox",
        true,
        &[
            ("send", &["t1", "hello"]),
            ("ack", &["t1", "1"]),
            ("ack", &["t1", "--list"]),
        ],
    );
}

#[test]
fn symlinked_handled_dir_is_refused() {
    refused_through_symlink(
        "state/t1.inbox/handled",
        true,
        &[("ack", &["t1", "1"]), ("send", &["t1", "hello"])],
    );
}

#[test]
fn symlinked_record_is_refused() {
    refused_through_symlink(
        "state/t1.inbox/001.msg",
        false,
        &[("ack", &["t1", "1"]), ("ack", &["t1", "--read", "1"])],
    );
}

#[test]
fn symlinked_status_log_is_refused() {
    refused_through_symlink(
        "state/t1.status",
        false,
        &[("status", &["t1", "working", "x"]), ("status", &["t1"])],
    );
}

#[test]
fn symlinked_meta_is_refused() {
    refused_through_symlink(
        "state/t1.meta",
        false,
        &[
            ("send", &["t1", "hello"]),
            (
                "brief",
                &[
                    "t1",
                    "webapp",
                    "--mode",
                    "local-only",
                    "--parent",
                    "root",
                    "--force",
                ],
            ),
            ("control", &["t1", "interrupt"]),
        ],
    );
}

#[test]
fn symlinked_task_data_is_refused() {
    refused_through_symlink(
        "data/t1",
        true,
        &[
            (
                "brief",
                &["t1", "webapp", "--mode", "local-only", "--force"],
            ),
            ("brief", &["--revoke", "t1"]),
            ("brief", &["--respond", "t1", "--status", "success"]),
            ("brief", &["--check", "t1"]),
            ("brief", &["--check-response", "t1"]),
            ("control", &["t1", "interrupt"]),
            ("send", &["t1", "hello"]),
        ],
    );
}

mod clocks;
mod counters;
mod debris;
mod fifos;
mod inputs;
mod keys;
mod locks;
mod names;
mod output;
mod paths;
mod walk;
