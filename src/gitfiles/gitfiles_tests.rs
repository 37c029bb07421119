//! The file reader against git itself, layout by layout: where the reader
//! answers, it answers what `git rev-parse` does; where the layout is
//! unusual, it says so (the callers then ask git).

use super::*;
use crate::git::fixture::{commit_empty, git};

/// What git says: `None` when `dir` is not the top level of a repository
/// with a HEAD commit, else (branch, head).
fn git_says(dir: &Path) -> Option<(Option<String>, String)> {
    let out = crate::git::run(
        dir,
        &[
            "rev-parse",
            "--show-toplevel",
            "HEAD",
            "--symbolic-full-name",
            "HEAD",
        ],
    )
    .unwrap();
    if !out.ok {
        return None;
    }
    let mut lines = out.stdout.lines();
    if !crate::git::is_toplevel(dir, lines.next()?.trim()) {
        return None;
    }
    let head = lines.next()?.trim().to_string();
    let branch = lines
        .next()
        .and_then(|l| l.trim().strip_prefix("refs/heads/"))
        .map(str::to_string);
    Some((branch, head))
}

/// The reader agrees with git; returns what it read.
#[track_caller]
fn agrees(dir: &Path) -> Head {
    let h = GitFiles::new().head(dir);
    match &h {
        Head::Found(f) => assert_eq!(
            Some((f.branch.clone(), f.head.clone())),
            git_says(dir),
            "{}",
            dir.display()
        ),
        Head::NotRepo => assert_eq!(git_says(dir), None, "{}", dir.display()),
        Head::Unusual(_) => {}
    }
    h
}

#[track_caller]
fn found(dir: &Path) -> HeadFacts {
    match agrees(dir) {
        Head::Found(f) => f,
        other => panic!("{}: {other:?}", dir.display()),
    }
}

fn repo(root: &Path, name: &str) -> PathBuf {
    let r = root.join(name);
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    commit_empty(&r);
    r
}

#[test]
fn a_plain_repository_and_its_linked_worktrees() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let r = repo(&root, "r");
    let f = found(&r);
    assert_eq!(f.branch.as_deref(), Some("main"));
    assert_eq!(f.common_dir, r.join(".git"));
    let wt = root.join("wt/a");
    git(
        &r,
        &["worktree", "add", "-q", "-b", "fm/a", wt.to_str().unwrap()],
    );
    let w = found(&wt);
    assert_eq!(w.branch.as_deref(), Some("fm/a"));
    assert_eq!(w.common_dir, r.join(".git"), "worktrees share one name");
    // A commit in the worktree moves its HEAD only.
    commit_empty(&wt);
    assert_ne!(found(&wt).head, found(&r).head);
}

#[test]
fn packed_refs_detached_heads_and_symbolic_refs() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let r = repo(&root, "r");
    let wt = root.join("wt");
    git(
        &r,
        &["worktree", "add", "-q", "-b", "fm/x", wt.to_str().unwrap()],
    );
    commit_empty(&wt);
    git(&r, &["pack-refs", "--all"]);
    assert!(!r.join(".git/refs/heads/fm/x").exists());
    assert_eq!(found(&wt).branch.as_deref(), Some("fm/x"));
    assert_eq!(found(&r).branch.as_deref(), Some("main"));
    // A tag named like the branch changes nothing.
    git(&wt, &["tag", "fm/x"]);
    assert_eq!(found(&wt).branch.as_deref(), Some("fm/x"));
    git(&wt, &["checkout", "-q", "--detach"]);
    let f = found(&wt);
    assert_eq!((f.branch, f.head.len()), (None, 40));
    // HEAD → refs/heads/alias → refs/heads/main: the branch is main.
    git(&r, &["symbolic-ref", "refs/heads/alias", "refs/heads/main"]);
    git(&r, &["symbolic-ref", "HEAD", "refs/heads/alias"]);
    assert_eq!(found(&r).branch.as_deref(), Some("main"));
}

#[test]
fn a_directory_without_dot_git_is_not_a_repository() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let r = repo(&root, "r");
    let nested = r.join("worktrees/t9");
    std::fs::create_dir_all(&nested).unwrap();
    assert_eq!(agrees(&nested), Head::NotRepo);
    let plain = root.join("plain");
    std::fs::create_dir(&plain).unwrap();
    assert_eq!(agrees(&plain), Head::NotRepo);
}

#[test]
fn unusual_layouts_are_left_to_git() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    // A worktree whose repository moved away: its gitdir is gone.
    let r = repo(&root, "r");
    let wt = root.join("wt");
    git(
        &r,
        &["worktree", "add", "-q", "-b", "fm/m", wt.to_str().unwrap()],
    );
    std::fs::rename(&r, root.join("moved")).unwrap();
    assert!(matches!(
        agrees(&wt),
        Head::Unusual("git directory missing")
    ));
    assert_eq!(git_says(&wt), None);
    // After `git worktree repair` from the worktree, both read it again.
    std::fs::write(
        wt.join(".git"),
        format!(
            "gitdir: {}\n",
            root.join("moved/.git/worktrees/wt").display()
        ),
    )
    .unwrap();
    assert_eq!(found(&wt).branch.as_deref(), Some("fm/m"));
    // A worktree moved away from its recorded place still reads (git
    // follows the `.git` file; the stale back-link does not matter).
    let moved_wt = root.join("wt-moved");
    std::fs::rename(&wt, &moved_wt).unwrap();
    assert_eq!(found(&moved_wt).branch.as_deref(), Some("fm/m"));

    // An unborn branch.
    let u = root.join("unborn");
    std::fs::create_dir(&u).unwrap();
    git(&u, &["init", "-q", "-b", "main"]);
    assert!(matches!(agrees(&u), Head::Unusual("unborn branch")));

    // A relative gitdir, as `worktree.useRelativePaths` writes.
    let r2 = repo(&root, "r2");
    let rel = root.join("rel");
    git(
        &r2,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "fm/rel",
            rel.to_str().unwrap(),
        ],
    );
    std::fs::write(rel.join(".git"), "gitdir: ../r2/.git/worktrees/rel\n").unwrap();
    assert_eq!(found(&rel).branch.as_deref(), Some("fm/rel"));

    // `core.worktree` moves the top level elsewhere.
    let cw = repo(&root, "cw");
    git(&cw, &["config", "core.worktree", root.to_str().unwrap()]);
    assert!(matches!(agrees(&cw), Head::Unusual(_)));

    // A symlinked `.git`.
    let s = root.join("sym");
    std::fs::create_dir(&s).unwrap();
    std::os::unix::fs::symlink(root.join("r2/.git"), s.join(".git")).unwrap();
    assert!(matches!(agrees(&s), Head::Unusual(_)));

    // A `.git` file that is not a gitdir file.
    let junk = root.join("junk");
    std::fs::create_dir(&junk).unwrap();
    std::fs::write(junk.join(".git"), "hello\n").unwrap();
    assert!(matches!(agrees(&junk), Head::Unusual(_)));
}

#[test]
fn reftable_repositories_are_left_to_git() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("rt");
    std::fs::create_dir(&r).unwrap();
    let out = crate::git::run(&r, &["init", "-q", "-b", "main", "--ref-format=reftable"]).unwrap();
    if !out.ok {
        // A git older than 2.45 has no reftable: nothing to check.
        assert!(out.stderr.contains("ref-format"), "{}", out.stderr);
        return;
    }
    commit_empty(&r);
    assert!(matches!(agrees(&r), Head::Unusual(_)));
    assert!(git_says(&r).is_some());
}

#[test]
fn the_config_scan() {
    assert!(config_is_usual(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = x\n"
    ));
    for odd in [
        "[core]\n\tbare = true\n",
        "[core]\n\tbare\n",
        "[core]\nworktree = /x\n",
        "[include]\npath = other\n",
        "[includeIf \"gitdir:/x\"]\npath = other\n",
        "[extensions]\n\trefStorage = reftable\n",
        "[extensions]\n\tworktreeConfig = true\n",
        "[core",
    ] {
        assert!(!config_is_usual(odd), "{odd}");
    }
}

/// A FIFO among git's files is never waited on: the reader calls the
/// layout unusual (git answers, under its own time bound).
#[test]
fn a_fifo_among_the_git_files_is_not_waited_on() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    for file in ["HEAD", "config", "packed-refs"] {
        let r = repo(&root, file);
        let p = r.join(".git").join(file);
        let _ = std::fs::remove_file(&p);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let dir = r.clone();
        std::thread::spawn(move || {
            let _ = tx.send(GitFiles::new().head(&dir));
        });
        let h = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{file} as a FIFO: the reader is waiting on it"));
        // HEAD and config are needed for any answer; the loose branch ref
        // answers without packed-refs.
        let unusual = matches!(h, Head::Unusual(_));
        assert_eq!(unusual, file != "packed-refs", "{file} as a FIFO: {h:?}");
    }
}

/// A kept reader's answers for `dirs` in a frame read at `now`.
fn frame(files: &mut GitFiles, now: u64, dirs: &[&Path]) -> Vec<Head> {
    files.begin_frame(now);
    let heads = dirs.iter().map(|d| files.head(d)).collect();
    files.end_frame();
    heads
}

fn branch_and_head(h: &Head) -> (Option<String>, String) {
    match h {
        Head::Found(f) => (f.branch.clone(), f.head.clone()),
        other => panic!("{other:?}"),
    }
}

fn rev(dir: &Path, what: &str) -> String {
    crate::git::run(dir, &["rev-parse", what])
        .unwrap()
        .stdout
        .trim()
        .to_string()
}

/// A repository with worktrees `a` (on `fm/a`) and `b` (on `fm/b`, one
/// commit ahead), read once and then again by a kept reader: the second
/// frame reads nothing. Returns (tempdir, repository, a, b, reader, now).
fn kept_fixture() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf, GitFiles, u64) {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let r = repo(&root, "r");
    let (a, b) = (root.join("wt/a"), root.join("wt/b"));
    for (wt, br) in [(&a, "fm/a"), (&b, "fm/b")] {
        git(
            &r,
            &["worktree", "add", "-q", "-b", br, wt.to_str().unwrap()],
        );
    }
    commit_empty(&b);
    // Settled: the files were written more than the settle margin before `now`.
    let now = crate::clock::now() + 5;
    let mut files = GitFiles::kept();
    let first = frame(&mut files, now, &[&a, &b, &r]);
    assert_eq!(files.reads(), 3);
    assert_eq!(frame(&mut files, now, &[&a, &b, &r]), first);
    assert_eq!(files.reads(), 3, "nothing changed: nothing read");
    // Once every file is watched, the events vouch for every answer: the
    // changes each test makes next are seen through them.
    for _ in 0..3 {
        assert_eq!(frame(&mut files, now, &[&a, &b, &r]), first);
    }
    let hits = files.quiet_hits();
    assert_eq!(frame(&mut files, now, &[&a, &b, &r]), first);
    assert_eq!(files.quiet_hits(), hits + 3, "every answer vouched for");
    assert_eq!(files.reads(), 3);
    (d, r, a, b, files, now)
}

#[test]
fn a_kept_reader_sees_a_moved_branch_ref_on_the_next_frame() {
    let (_d, r, a, b, mut files, now) = kept_fixture();
    let b_head = rev(&b, "HEAD");
    git(&r, &["update-ref", "refs/heads/fm/a", &b_head]);
    let h = frame(&mut files, now + 5, &[&a, &b]);
    assert_eq!(branch_and_head(&h[0]), (Some("fm/a".into()), b_head));
    assert_eq!(files.reads(), 4, "only the changed worktree is read");
    // A commit landing in the worktree.
    commit_empty(&a);
    let h = frame(&mut files, now + 10, &[&a]);
    assert_eq!(branch_and_head(&h[0]).1, rev(&a, "HEAD"));
}

#[test]
fn a_kept_reader_sees_a_rewritten_head_on_the_next_frame() {
    let (_d, r, a, b, mut files, now) = kept_fixture();
    // Rewritten in place (no rename): detached, then on another branch.
    let head_file = r.join(".git/worktrees/a/HEAD");
    let b_head = rev(&b, "HEAD");
    std::fs::write(&head_file, format!("{b_head}\n")).unwrap();
    let h = frame(&mut files, now + 5, &[&a]);
    assert_eq!(branch_and_head(&h[0]), (None, b_head));
    std::fs::write(&head_file, "ref: refs/heads/main\n").unwrap();
    let h = frame(&mut files, now + 10, &[&a]);
    assert_eq!(
        branch_and_head(&h[0]),
        (Some("main".into()), rev(&r, "main"))
    );
}

#[test]
fn a_kept_reader_sees_a_packed_refs_only_branch_update_on_the_next_frame() {
    let (_d, r, _a, b, mut files, now) = kept_fixture();
    git(&r, &["pack-refs", "--all"]);
    assert!(!r.join(".git/refs/heads/fm/b").exists());
    let b_head = rev(&b, "HEAD");
    let h = frame(&mut files, now + 5, &[&b]);
    assert_eq!(branch_and_head(&h[0]).1, b_head);
    let main = rev(&r, "main");
    git(&r, &["update-ref", "refs/heads/fm/b", &main]);
    git(&r, &["pack-refs", "--all"]);
    assert!(!r.join(".git/refs/heads/fm/b").exists());
    let h = frame(&mut files, now + 10, &[&b]);
    assert_eq!(branch_and_head(&h[0]), (Some("fm/b".into()), main));
}

#[test]
fn a_kept_reader_sees_a_removed_and_recreated_worktree_on_the_next_frame() {
    let (_d, r, a, b, mut files, now) = kept_fixture();
    git(&r, &["worktree", "remove", "--force", b.to_str().unwrap()]);
    assert_eq!(frame(&mut files, now + 5, &[&b]), [Head::NotRepo]);
    let main = rev(&r, "main");
    git(
        &r,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "fm/b2",
            b.to_str().unwrap(),
            "main",
        ],
    );
    let h = frame(&mut files, now + 10, &[&b]);
    assert_eq!(branch_and_head(&h[0]), (Some("fm/b2".into()), main));
    // Each answer is still what a fresh reader says.
    for wt in [&a, &b, &r] {
        assert_eq!(frame(&mut files, now + 10, &[wt.as_path()])[0], agrees(wt));
    }
}

#[test]
fn a_kept_reader_rereads_files_that_had_not_settled() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let r = repo(&root, "r");
    let now = crate::clock::now();
    let mut files = GitFiles::kept();
    // Read as they were just written: not kept, read again each frame.
    frame(&mut files, now, &[&r]);
    frame(&mut files, now, &[&r]);
    assert_eq!(files.reads(), 2);
    frame(&mut files, now + 5, &[&r]);
    frame(&mut files, now + 5, &[&r]);
    assert_eq!(files.reads(), 3);
}

#[test]
fn a_kept_reader_never_takes_an_answer_through_a_symlink_on_the_events_word() {
    let (_d, r, a, b, mut files, now) = kept_fixture();
    let root = r.parent().unwrap().to_path_buf();
    // `wt/link` → `hop/x` → `wt/a`: retargeting `hop/x` changes what the
    // link reaches while no watched directory sees an event.
    std::fs::create_dir(root.join("hop")).unwrap();
    std::os::unix::fs::symlink(&a, root.join("hop/x")).unwrap();
    let link = root.join("wt/link");
    std::os::unix::fs::symlink(root.join("hop/x"), &link).unwrap();
    let on_a = branch_and_head(&agrees(&a));
    for _ in 0..4 {
        let h = frame(&mut files, now + 1, &[&link]);
        assert_eq!(branch_and_head(&h[0]), on_a);
    }
    std::fs::remove_file(root.join("hop/x")).unwrap();
    std::os::unix::fs::symlink(&b, root.join("hop/x")).unwrap();
    let h = frame(&mut files, now + 2, &[&link]);
    assert_eq!(branch_and_head(&h[0]), branch_and_head(&agrees(&b)));
}
