//! The fast reader of a task's files against the same files read by
//! their paths.

use std::sync::Mutex;

use super::state_dir::READ_FIRST;
use super::*;

#[test]
fn the_listing_finds_tasks_by_their_meta_and_notes_their_files() {
    let d = tempfile::tempdir().unwrap();
    let home = Home::at(d.path()).unwrap();
    let state = home.state_dir();
    std::fs::create_dir_all(state.join("b.inbox")).unwrap();
    for name in [
        "b.meta",
        "b.status",
        "b.busy",
        "c.busy.x",
        "stat.us",
        "a.x.status.meta",
        "a.x.status.status",
        "a.x.status.run",
        "orphan.status",
        ".meta",
        "wakes.log",
        "events.jsonl",
        "..meta",
    ] {
        std::fs::write(state.join(name), "").unwrap();
    }
    let l = Listing::read(&home).unwrap();
    let got: Vec<(&str, u8)> = l
        .tasks
        .iter()
        .map(|t| (t.id.as_str(), t.present.0))
        .collect();
    assert_eq!(
        got,
        [
            ("a.x.status", Present::META | Present::STATUS | Present::RUN),
            (
                "b",
                Present::META | Present::STATUS | Present::BUSY | Present::INBOX
            ),
        ]
    );
}

#[test]
fn a_remote_tasks_files_here_are_not_read() {
    let d = tempfile::tempdir().unwrap();
    let home = Home::at(d.path()).unwrap();
    let state = home.state_dir();
    std::fs::create_dir_all(state.join("r.inbox")).unwrap();
    std::fs::write(state.join("r.inbox/001.msg"), "x").unwrap();
    std::fs::write(state.join("r.status"), "working [at=1]: here\n").unwrap();
    std::fs::write(state.join("r.meta"), "kind=ship\nhost=far\n").unwrap();
    let (f, _) = both(&home, "r");
    assert_eq!(
        (f.fold.any_line, f.inbox_pending, f.error),
        (false, 0, None)
    );
    assert_eq!(f.meta.and_then(|m| m.host).as_deref(), Some("far"));
    // The same files of a local task are read.
    std::fs::write(state.join("r.meta"), "kind=ship\nhost= \n").unwrap();
    let (f, _) = both(&home, "r");
    assert_eq!((f.fold.any_line, f.inbox_pending), (true, 1));
}

/// Reads `id` through `state/` opened, and by whole paths.
fn both(home: &Home, id: &str) -> (Facts, Facts) {
    let cfg = Config::default();
    let id = TaskId::parse(id).unwrap();
    let open = StateDir::open(home);
    assert!(open.fd.is_some(), "state/ opens");
    let by_path = StateDir {
        fd: None,
        profiles: Mutex::default(),
        dirs: Dirs::default(),
    };
    (
        task(home, &cfg, &open, &id, Present::ALL, 1),
        task(home, &cfg, &by_path, &id, Present::ALL, 1),
    )
}

#[test]
fn a_tasks_files_read_through_state_as_by_their_paths() {
    let d = tempfile::tempdir().unwrap();
    let home = Home::at(d.path()).unwrap();
    let state = home.state_dir();
    std::fs::create_dir_all(state.join("t1.inbox/handled")).unwrap();
    std::fs::write(state.join("t1.meta"), "kind=secondmate\nrepo=r\n").unwrap();
    let mut log = "working [at=5]: a\n".repeat(3_000);
    log.push_str("needs-decision [at=6] [key=k]: the last line\n");
    std::fs::write(state.join("t1.status"), &log).unwrap();
    for name in ["001.msg", "002.msg", "handled/000.msg", "x.tmp"] {
        std::fs::write(state.join("t1.inbox").join(name), "m\n").unwrap();
    }
    std::fs::write(state.join("t1.inbox/.escalated"), "002.msg\n").unwrap();
    let (a, b) = both(&home, "t1");
    for f in [&a, &b] {
        assert_eq!(f.error, None);
        assert_eq!(f.meta.as_ref().and_then(|m| m.repo.as_deref()), Some("r"));
        // Read to its end: the last line is the current one.
        let current = f.fold.current().unwrap();
        assert_eq!(
            (current.text.as_str(), f.fold.last_at),
            ("the last line", Some(6))
        );
        assert!(f.log_mtime.is_some());
        assert_eq!(f.inbox_pending, 2);
        assert_eq!(
            f.escalated.as_ref().map(|e| e.record.as_str()),
            Some("002.msg")
        );
    }
    assert_eq!(format!("{a:?}"), format!("{b:?}"));

    // A meta read for its bytes only, at every size about the buffer
    // it is read into first, reads as by its path.
    for len in [
        0,
        1,
        READ_FIRST - 1,
        READ_FIRST,
        READ_FIRST + 1,
        3 * READ_FIRST,
    ] {
        let line = "repo=r\n";
        let pad = "#".repeat(len.saturating_sub(line.len() + 1));
        let meta = if len == 0 {
            String::new()
        } else if len <= line.len() {
            "\n".repeat(len)
        } else {
            format!("{pad}\n{line}")
        };
        assert_eq!(meta.len(), len);
        std::fs::write(state.join("t1.meta"), &meta).unwrap();
        let (a, b) = both(&home, "t1");
        assert_eq!(a.error, None, "{len}");
        let repo = a.meta.as_ref().and_then(|m| m.repo.as_deref());
        assert_eq!(repo, (len > line.len()).then_some("r"), "{len}");
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{len}");
    }

    // Without `.escalated` nothing is escalated; a missing task has
    // empty facts.
    std::fs::remove_file(state.join("t1.inbox/.escalated")).unwrap();
    assert_eq!(both(&home, "t1").0.escalated, None);
    let (a, _) = both(&home, "absent");
    assert!(a.meta.is_none() && a.error.is_none() && a.inbox_pending == 0);
}

#[test]
fn unusual_files_fail_with_the_ordinary_readers_errors() {
    let d = tempfile::tempdir().unwrap();
    let home = Home::at(d.path()).unwrap();
    let state = home.state_dir();
    std::fs::create_dir_all(state.join("elsewhere")).unwrap();
    // A FIFO meta, a directory status log, a symlinked inbox, a file
    // where the inbox should be.
    fsx::test_fifo::make(&state.join("f.meta"));
    std::fs::create_dir_all(state.join("d.status")).unwrap();
    // A meta read for its bytes only that is a directory, a FIFO busy
    // record beside a meta.
    std::fs::create_dir_all(state.join("m.meta")).unwrap();
    std::fs::write(state.join("b.meta"), "repo=r\n").unwrap();
    fsx::test_fifo::make(&state.join("b.busy"));
    std::os::unix::fs::symlink("elsewhere", state.join("l.inbox")).unwrap();
    std::fs::write(state.join("p.inbox"), "").unwrap();
    let err = |id: &str| -> String {
        let id = TaskId::parse(id).unwrap();
        match id.as_str() {
            "f" | "m" => fsx::read_optional_mtime(&home.meta(&id)).unwrap_err(),
            "b" => fsx::read_optional_mtime(&home.busy(&id)).unwrap_err(),
            "d" => fsx::read_optional_mtime(&home.status(&id)).unwrap_err(),
            _ => fsx::list_numbered(&home.inbox(&id), inbox::EXT).unwrap_err(),
        }
        .to_string()
    };
    for id in ["f", "m", "b", "d", "l", "p"] {
        let (a, b) = both(&home, id);
        let want = err(id);
        assert_eq!(a.error.as_deref(), Some(want.as_str()), "{id}");
        assert_eq!(b.error.as_deref(), Some(want.as_str()), "{id}");
    }
    assert!(err("f").contains("FIFO"), "{}", err("f"));

    // A FIFO meta, and a FIFO busy record, that a writer holds open
    // with bytes waiting: refused as any FIFO, the bytes left unread.
    let mut writers = Vec::new();
    std::fs::write(state.join("v.meta"), "repo=r\n").unwrap();
    for name in ["w.meta", "v.busy"] {
        writers.push(fsx::test_fifo::with_writer(
            &state.join(name),
            b"repo=pipe\n",
        ));
    }
    let id = |s: &str| TaskId::parse(s).unwrap();
    for (t, want) in [
        ("w", fsx::read_optional_mtime(&home.meta(&id("w")))),
        ("v", fsx::read_optional_mtime(&home.busy(&id("v")))),
    ] {
        let want = want.unwrap_err().to_string();
        assert!(want.contains("FIFO"), "{want}");
        let (a, b) = both(&home, t);
        assert_eq!(a.error.as_deref(), Some(want.as_str()), "{t}");
        assert_eq!(b.error.as_deref(), Some(want.as_str()), "{t}");
    }
    for mut w in writers {
        let mut back = [0u8; 10];
        std::io::Read::read_exact(&mut w, &mut back).unwrap();
        assert_eq!(&back, b"repo=pipe\n");
    }
}

#[test]
fn a_file_appearing_in_an_unchanged_inbox_is_seen() {
    let d = tempfile::tempdir().unwrap();
    let home = Home::at(d.path()).unwrap();
    let id = TaskId::parse("t").unwrap();
    std::fs::create_dir_all(home.inbox(&id)).unwrap();
    std::fs::write(home.meta(&id), "kind=ship\n").unwrap();
    let present = Present(Present::META | Present::INBOX);
    let now = crate::clock::now() + 5;
    let dir = StateDir::open(&home);
    let take = |prev| Stamps::take(&home, &dir, &id, present, now, true, prev);
    let first = take(None);
    assert_eq!((first.escalated, first.ring_state), (None, None));
    assert!(first.still(&take(Some(&first))));
    for name in [".escalated", ".ring-state"] {
        let p = home.inbox(&id).join(name);
        std::fs::write(&p, "001.msg\n").unwrap();
        let next = take(Some(&first));
        assert!(!first.still(&next), "{name} appearing is seen");
        assert!(next.escalated.is_some() || next.ring_state.is_some());
        std::fs::remove_file(&p).unwrap();
    }
}

#[test]
fn stamps_trust_only_settled_unchanged_files() {
    let d = tempfile::tempdir().unwrap();
    let home = Home::at(d.path()).unwrap();
    std::fs::create_dir_all(home.state_dir()).unwrap();
    let id = TaskId::parse("t").unwrap();
    std::fs::write(home.meta(&id), "kind=ship\n").unwrap();
    let present = Present(Present::META);
    let now = crate::clock::now();
    let dir = StateDir::open(&home);
    let take = |present, at| Stamps::take(&home, &dir, &id, present, at, true, None);
    let before = take(present, now);
    // Just written: not settled, so read again.
    assert!(!before.still(&take(present, now)));
    // Read long after it was written: settled and unchanged.
    let later = take(present, now + 5);
    assert!(later.still(&take(present, now + 5)));
    // A brief appearing matters only when the facts depend on it.
    std::fs::create_dir_all(home.task_data(&id)).unwrap();
    std::fs::write(home.brief(&id), "---\nkind: scout\n---\n").unwrap();
    assert!(!later.still(&take(present, now + 5)));
    assert!(later.still(&Stamps::take(
        &home,
        &dir,
        &id,
        present,
        now + 5,
        false,
        None
    )));
    // Replaced (a new inode), appended to, or a new file appearing.
    std::fs::write(home.meta(&id), "kind=ship\nx=1\n").unwrap();
    assert!(!later.still(&take(present, now + 5)));
    let more = Present(Present::META | Present::STATUS);
    assert!(!later.still(&take(more, now + 5)));
}

/// The plain reading of a task's own files, each by its path with the
/// ordinary readers and the status grammar's naive fold: what the fast
/// reader must find. (Meta, log, busy and run records, the pending count
/// and the escalated record; the rest of [`Facts`] is compared between
/// the fast and the by-path reader.)
mod naive {
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    pub(super) struct Seen {
        pub(super) repo: Option<String>,
        pub(super) open: Vec<crate::status::Decision>,
        pub(super) last_state: Option<crate::status::StatusLine>,
        pub(super) last_at: Option<u64>,
        pub(super) busy: Option<BusyRecord>,
        pub(super) run: Option<RunRecord>,
        pub(super) pending: usize,
        pub(super) escalated: Option<String>,
    }

    pub(super) fn read(home: &Home, id: &TaskId, paused: &str) -> Seen {
        let read = |p: std::path::PathBuf| fsx::read_optional_mtime(&p).unwrap();
        let meta = read(home.meta(id)).map(|(b, _)| TaskMeta::parse(&b));
        let fold = read(home.status(id))
            .map(|(b, _)| crate::status::grammar_tests::naive::fold(&b, paused));
        let pending = fsx::list_numbered(&home.inbox(id), inbox::EXT).unwrap_or_default();
        let escalated = read(home.escalated(id)).and_then(|(b, _)| {
            let text = String::from_utf8_lossy(&b).into_owned();
            let record = text.split_whitespace().next()?.to_string();
            let n = fsx::parse_numbered(&record, inbox::EXT)?;
            pending.contains(&n).then_some(record)
        });
        Seen {
            repo: meta.and_then(|m| m.repo),
            open: fold.as_ref().map(|f| f.open.clone()).unwrap_or_default(),
            last_state: fold.as_ref().and_then(|f| f.last_state.clone()),
            last_at: fold.as_ref().and_then(|f| f.last_at),
            busy: read(home.busy(id)).and_then(|(b, _)| BusyRecord::parse(&b)),
            run: read(home.run(id)).map(|(b, at)| RunRecord::parse(&b, at)),
            pending: pending.len(),
            escalated,
        }
    }
}

mod props {
    use proptest::prelude::*;

    use super::*;

    /// Status lines, meta, busy and run records from the pieces their
    /// grammars turn on.
    fn lines(pieces: &'static [&'static str], most: usize) -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(pieces), 0..most).prop_map(|v| v.concat())
    }

    const LOG: &[&str] = &[
        "working [at=5]: on it\n",
        "needs-decision [key=a]: which?\n",
        "blocked [key=b] [at=7]: held\n",
        "resolved [key=a]: this\n",
        "hold: paused\n",
        "done [at=9]: shipped\n",
        "free prose\n",
        "note: n\n",
        "\u{e9}\n",
        "\n",
        "working",
    ];
    const META: &[&str] = &[
        "kind=ship\n",
        "repo=r\n",
        "repo=other\n",
        "#c\n",
        "=\n",
        "x",
    ];
    const BUSY: &[&str] = &["busy 5 hook\n", "idle 7\n", "busy\n", "odd 1\n", " "];
    const RUN: &[&str] = &[
        "status=running\n",
        "branch=fm/t\n",
        "head=0\n",
        "gate=review\n",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any task files read fast (relative to `state/`) read as by
        /// their paths and as the plain reading.
        #[test]
        fn the_fast_reader_reads_as_the_plain_one(
            meta in lines(META, 6),
            pad in prop::sample::select(&[0usize, READ_FIRST - 3, READ_FIRST + 5][..]),
            log in prop::option::of(lines(LOG, 12)),
            busy in prop::option::of(lines(BUSY, 2)),
            run in prop::option::of(lines(RUN, 4)),
            records in prop::option::of(0..4u64),
            escalated in prop::option::of(0..5u64),
        ) {
            let d = tempfile::tempdir().unwrap();
            let home = Home::at(d.path()).unwrap();
            let state = home.state_dir();
            std::fs::create_dir_all(&state).unwrap();
            let id = TaskId::parse("t").unwrap();
            std::fs::write(home.meta(&id), format!("{}{meta}", "#".repeat(pad))).unwrap();
            for (text, path) in [(&log, home.status(&id)), (&busy, home.busy(&id)), (&run, home.run(&id))] {
                if let Some(t) = text {
                    std::fs::write(path, t).unwrap();
                }
            }
            if let Some(n) = records {
                std::fs::create_dir_all(home.inbox(&id)).unwrap();
                for seq in 1..=n {
                    std::fs::write(home.inbox(&id).join(fsx::numbered_name(seq, inbox::EXT)), "m\n").unwrap();
                }
                if let Some(e) = escalated {
                    std::fs::write(home.escalated(&id), format!("{}\n", fsx::numbered_name(e, inbox::EXT))).unwrap();
                }
            }
            let cfg = Config::default();
            let (fast, by_path) = both(&home, "t");
            prop_assert_eq!(format!("{fast:?}"), format!("{by_path:?}"));
            let want = naive::read(&home, &id, &cfg.brief.paused_verb);
            let got = naive::Seen {
                repo: fast.meta.as_ref().and_then(|m| m.repo.clone()),
                open: fast.fold.open.clone(),
                last_state: fast.fold.last_state.clone(),
                last_at: fast.fold.last_at,
                busy: fast.busy.clone(),
                run: fast.run.clone(),
                pending: fast.inbox_pending,
                escalated: fast.escalated.as_ref().map(|e| e.record.clone()),
            };
            prop_assert_eq!(got, want);
        }
    }
}
