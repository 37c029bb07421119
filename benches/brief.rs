//! Brief and gate benchmarks, each a whole process: `fm-brief` writing a
//! filled ship brief, and `fm-dod --check` judging a done line against a
//! real repository (its git calls included). Run with
//! `cargo bench --bench brief`; figures go in BENCHMARKS.md.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.invalid")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.invalid")
        .output()
        .expect("git");
    assert!(st.status.success(), "git {args:?}");
}

/// Median and minimum of `runs` timed calls (the minimum shows the cost
/// without the noise of a shared machine).
struct Timing(Duration, Duration);

impl std::fmt::Display for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "median {:?}, min {:?}", self.0, self.1)
    }
}

fn time(runs: usize, mut f: impl FnMut(usize)) -> Timing {
    let v: Vec<Duration> = (0..runs)
        .map(|i| {
            let t = Instant::now();
            f(i);
            t.elapsed()
        })
        .collect();
    let min = v.iter().min().copied().unwrap_or_default();
    Timing(median(v), min)
}

fn main() {
    let home = tempfile::tempdir().expect("temp home");
    let root = home.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::write(root.join("config/firstmate.toml"), "").unwrap();

    let brief = Path::new(env!("CARGO_BIN_EXE_fm-brief"));
    let d = time(200, |i| {
        let st = Command::new(brief)
            .arg("--home")
            .arg(&root)
            .arg(format!("t{i}"))
            .args([
                "webapp",
                "--mode",
                "direct-PR",
                "--intent",
                "Make login fast.",
                "--spec",
                "Profile, fix.",
            ])
            .args([
                "--constraint",
                "Keep the API.",
                "--share",
                "team/perf=profiles",
            ])
            .output()
            .expect("run fm-brief");
        assert!(st.status.success());
    });
    println!("fm-brief filled ship brief (whole process): {d} (200 runs)");
    common::fig_ms("brief.write", d.0);
    common::fig_ms("brief.write_min", d.1);
    let d = time(200, |_| {
        let out = Command::new(brief)
            .arg("--home")
            .arg(&root)
            .args(["--check", "t1"])
            .output()
            .expect("run fm-brief");
        assert!(out.status.success());
    });
    println!("fm-brief --check (whole process): {d} (200 runs)");
    common::fig_ms("brief.check", d.0);

    // A project clone pushed to a bare remote, and a worktree whose HEAD is
    // (accepted) or is not (refused, the most git calls) on the remote.
    let (remote, project, wt) = (
        root.join("remote.git"),
        root.join("project"),
        root.join("worktrees/t"),
    );
    git(
        &root,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    git(
        &root,
        &["init", "-q", "-b", "main", project.to_str().unwrap()],
    );
    std::fs::write(project.join("f"), "x").unwrap();
    git(&project, &["add", "f"]);
    git(&project, &["commit", "-qm", "c"]);
    git(
        &project,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    git(&project, &["push", "-q", "origin", "main"]);
    git(
        &project,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "fm/t",
            wt.to_str().unwrap(),
            "main",
        ],
    );
    git(&wt, &["push", "-q", "origin", "fm/t"]);
    std::fs::write(
        root.join("state/t.meta"),
        format!(
            "kind=ship\nmode=direct-PR\nproject={}\nworktree={}\n",
            project.display(),
            wt.display()
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("state/t.status"),
        "done [at=1700000000]: PR https://example.invalid/pull/1\n",
    )
    .unwrap();
    let dod = Path::new(env!("CARGO_BIN_EXE_fm-dod"));
    let root = &root;
    let check = |want: i32| {
        move |_| {
            let out = Command::new(dod)
                .arg("--home")
                .arg(root)
                .args(["--check", "t"])
                .output()
                .expect("run fm-dod");
            assert_eq!(
                out.status.code(),
                Some(want),
                "{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    };
    let d = time(100, check(0));
    println!("fm-dod --check, accepted (whole process, 2 git calls): {d} (100 runs)");
    common::fig_ms("dod.accepted", d.0);
    std::fs::write(wt.join("g"), "y").unwrap();
    git(&wt, &["add", "g"]);
    git(&wt, &["commit", "-qm", "unpushed"]);
    let d = time(100, check(1));
    println!("fm-dod --check, refused (whole process, 3 git calls): {d} (100 runs)");
    common::fig_ms("dod.refused", d.0);
}
