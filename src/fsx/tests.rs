use super::append::untear;
use super::*;
use std::fs::OpenOptions;

/// Every operation refuses a symlinked directory anywhere below a
/// registered home root, naming the symlink, and touches nothing
/// outside the home.
#[test]
fn the_walk_refuses_a_symlinked_directory_below_the_root() {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().canonicalize().unwrap();
    let root = base.join("home");
    let outside = base.join("outside");
    fs::create_dir_all(root.join("state")).unwrap();
    fs::create_dir_all(outside.join("t1.inbox")).unwrap();
    fs::write(outside.join("t1.meta"), b"kind=ship\n").unwrap();
    fs::write(outside.join("t1.inbox/001.msg"), b"m").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("data")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("state/sub")).unwrap();
    register_root(&root);
    let before = snapshot(&outside);
    for link in [root.join("data"), root.join("state/sub")] {
        let f = link.join("t1.meta");
        let inbox = link.join("t1.inbox");
        let rec = inbox.join("001.msg");
        let is_link = |r: Result<()>| {
            let e = r.expect_err("followed a symlinked directory");
            assert!(
                matches!(&e, Error::Symlink(p) if *p == link),
                "{e} does not name {}",
                link.display()
            );
        };
        is_link(read_optional(&f).map(drop));
        is_link(open_read(&f).map(drop));
        is_link(stat(&f).map(drop));
        is_link(atomic_write(&f, b"x").map(drop));
        is_link(atomic_write_unsynced(&f, b"x").map(drop));
        is_link(append_line(&f, b"x\n").map(drop));
        is_link(touch(&f).map(drop));
        is_link(lock(&inbox.join(".lock"), LOCK_WAIT).map(drop));
        is_link(remove_optional(&rec).map(drop));
        is_link(rename_noclobber(&rec, &root.join("state/moved")).map(drop));
        is_link(rename_noclobber(&root.join("state/x"), &inbox.join("002.msg")).map(drop));
        is_link(ensure_dir(&inbox.join("handled")).map(drop));
        is_link(list_numbered(&inbox, "msg").map(drop));
        is_link(list_dir(&inbox).map(drop));
        is_link(stage(&inbox, b"x").map(drop));
        is_link(sync_dir(&inbox).map(drop));
        is_link(read_each_in(&inbox, &["001.msg".into()], |_, _| {}).map(drop));
    }
    assert_eq!(
        snapshot(&outside),
        before,
        "something changed outside the home"
    );
    // The same tree through its real path is not below the root.
    assert_eq!(read(&outside.join("t1.meta")).unwrap(), b"kind=ship\n");
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.push((p.clone(), Vec::new()));
            out.extend(snapshot(&p));
        } else {
            out.push((p.clone(), fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn the_walk_creates_directories_and_reaches_files_below_the_root() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap().join("h");
    register_root(&root);
    ensure_dir(&root.join("state/t1.inbox/handled")).unwrap();
    let f = root.join("state/t1.meta");
    atomic_write(&f, b"a").unwrap();
    append_line(&root.join("state/events.jsonl"), b"{}\n").unwrap();
    assert_eq!(read(&f).unwrap(), b"a");
    assert!(exists(&f).unwrap());
    assert!(!exists(&root.join("state/none/x")).unwrap());
    assert_eq!(read_optional(&root.join("nope/x")).unwrap(), None);
    assert!(rename_noclobber(&f, &root.join("state/t1.inbox/moved")).unwrap());
    assert!(remove_optional(&root.join("state/t1.inbox/moved")).unwrap());
    let mut names = list_dir(&root.join("state")).unwrap();
    names.sort();
    assert_eq!(names, ["events.jsonl", "t1.inbox"]);
    assert!(matches!(
        read(&root.join("state/../state/events.jsonl")),
        Err(Error::Refused(_))
    ));
}

#[test]
fn atomic_write_replaces_and_leaves_no_temp() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("f");
    atomic_write(&p, b"one").unwrap();
    atomic_write(&p, b"two").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"two");
    assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    assert_eq!(
        fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn an_unsynced_replace_hands_back_the_old_file_and_refuses_what_is_no_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("f");
    let names = || {
        let mut v: Vec<String> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    // Nothing to replace: renamed into place, nothing left over.
    assert!(atomic_write_unsynced(&p, b"one").unwrap().is_none());
    assert_eq!(names(), ["f"]);
    // Replaced: the new bytes in place at once, the old ones beside
    // under a dot-temp name until the leftover is dropped.
    let left = atomic_write_unsynced(&p, b"two").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"two");
    {
        let left = left.expect("the old file swapped out (RENAME_EXCHANGE)");
        let found = names();
        assert_eq!(found.len(), 2, "{found:?}");
        let temp = found.iter().find(|n| n.as_str() != "f").unwrap();
        assert!(temp.starts_with(".f.tmp."), "{temp}");
        assert_eq!(fs::read(d.path().join(temp)).unwrap(), b"one");
        drop(left);
    }
    assert_eq!(names(), ["f"]);
    // A directory in the way is an error, and stays as it was.
    let dir = d.path().join("dir");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("inside"), b"x").unwrap();
    assert!(atomic_write_unsynced(&dir, b"y").is_err());
    assert_eq!(fs::read(dir.join("inside")).unwrap(), b"x");
    assert_eq!(names(), ["dir", "f"]);
    // A symlink in the way is refused; its target is untouched.
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&p, &link).unwrap();
    assert!(matches!(
        atomic_write_unsynced(&link, b"z"),
        Err(Error::Symlink(_))
    ));
    assert_eq!(fs::read(&p).unwrap(), b"two");
    assert_eq!(names(), ["dir", "f", "link"]);
}

#[test]
fn symlinks_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("real");
    fs::write(&real, b"x").unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert!(matches!(atomic_write(&link, b"y"), Err(Error::Symlink(_))));
    assert!(matches!(append_line(&link, b"y\n"), Err(Error::Symlink(_))));
    assert!(matches!(read_optional(&link), Err(Error::Symlink(_))));
    assert_eq!(fs::read(&real).unwrap(), b"x");
}

#[test]
fn numbered_names_round_trip_past_999() {
    assert_eq!(numbered_name(7, "msg"), "007.msg");
    assert_eq!(numbered_name(1000, "msg"), "1000.msg");
    assert_eq!(parse_numbered("1000.msg", "msg"), Some(1000));
    assert_eq!(parse_numbered("002.msg", "msg"), Some(2));
    assert_eq!(
        parse_numbered("9999999999999999999.msg", "msg"),
        Some(9_999_999_999_999_999_999)
    );
    assert_eq!(parse_numbered("10000000000000000000.msg", "msg"), None);
    assert_eq!(parse_numbered_bytes(b"0\xff1.msg", "msg"), None);
    assert_eq!(parse_numbered_bytes(b"003.msg", "msg"), Some(3));
    for bad in [
        ".002.msg",
        "002.msg.tmp",
        "x.msg",
        ".msg",
        "002.md",
        "-1.msg",
        "1.msg",
        "12.msg",
        "0007.msg",
        "01000.msg",
        "000.msg",
    ] {
        assert_eq!(parse_numbered(bad, "msg"), None, "{bad}");
    }
}

proptest::proptest! {
    /// A name is read as a number exactly when it is that number's
    /// canonical name.
    #[test]
    fn a_numbered_name_is_read_only_in_its_canonical_spelling(
        stem in "[0-9]{0,20}|[0-9a ]{0,4}",
    ) {
        let name = format!("{stem}.msg");
        let canonical = stem
            .parse::<u64>()
            .ok()
            .filter(|&n| n > 0 && stem.len() <= 19 && numbered_name(n, "msg") == name);
        proptest::prop_assert_eq!(parse_numbered(&name, "msg"), canonical);
    }
}

#[test]
fn numbered_create_counts_other_dirs_and_never_clobbers() {
    let d = tempfile::tempdir().unwrap();
    let handled = d.path().join("handled");
    fs::create_dir(&handled).unwrap();
    fs::write(handled.join("004.msg"), b"old").unwrap();
    let lock = d.path().join(".lock");
    let (n, p) = create_numbered(d.path(), &[&handled], "msg", &lock, b"hello").unwrap();
    assert_eq!(n, 5);
    assert_eq!(fs::read(p).unwrap(), b"hello");
    let (n, _) = create_numbered(d.path(), &[&handled], "msg", &lock, b"again").unwrap();
    assert_eq!(n, 6);
}

#[test]
fn lock_wait_is_bounded() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(".lock");
    let _held = lock(&p, LOCK_WAIT).unwrap();
    let err = lock(&p, Duration::from_millis(50)).unwrap_err();
    assert_eq!(err.exit_code(), 3);
}

#[test]
fn a_torn_append_is_cut_back_off_only_while_it_is_the_tail() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("log");
    fs::write(&p, b"one\n").unwrap();
    let mut f = OpenOptions::new().read(true).append(true).open(&p).unwrap();
    f.write_all(b"tw").unwrap();
    untear(&f, b"tw");
    assert_eq!(fs::read(&p).unwrap(), b"one\n");
    f.write_all(b"tw").unwrap();
    let mut other = OpenOptions::new().append(true).open(&p).unwrap();
    other.write_all(b"x\n").unwrap();
    untear(&f, b"tw");
    assert_eq!(fs::read(&p).unwrap(), b"one\ntwx\n");
}

#[test]
fn read_each_in_reads_small_and_large_files_and_skips_missing() {
    let d = tempfile::tempdir().unwrap();
    let big = vec![b'x'; 200_000];
    fs::write(d.path().join("a"), b"small").unwrap();
    fs::write(d.path().join("b"), &big).unwrap();
    std::os::unix::fs::symlink(d.path().join("a"), d.path().join("l")).unwrap();
    let names: Vec<String> = ["a", "gone", "b", "l"]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    let mut seen = Vec::new();
    read_each_in(d.path(), &names, |i, r| {
        seen.push((i, r.map(<[u8]>::len).map_err(|_| ())));
    })
    .unwrap();
    assert_eq!(seen, vec![(0, Ok(5)), (2, Ok(200_000)), (3, Err(()))]);
}

/// A FIFO that a writer holds open, with bytes waiting in it, is
/// refused like any FIFO, and its bytes are left for their reader.
#[test]
fn a_fifo_with_a_writer_is_refused_and_left_unread() {
    let d = tempfile::tempdir().unwrap();
    let mut w = test_fifo::with_writer(&d.path().join("001.msg"), b"from the pipe\n");
    let mut seen = Vec::new();
    read_each_in(d.path(), &["001.msg".to_string()], |i, r| {
        seen.push((i, r.map(<[u8]>::to_vec).map_err(|e| e.to_string())));
    })
    .unwrap();
    assert_eq!(seen.len(), 1);
    let err = seen[0].1.clone().unwrap_err();
    assert!(err.contains("FIFO"), "{err}");
    let mut back = [0u8; 14];
    std::io::Read::read_exact(&mut w, &mut back).unwrap();
    assert_eq!(&back, b"from the pipe\n");
}

#[test]
fn append_ends_a_torn_fragment_instead_of_gluing_to_it() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("log");
    append_line(&p, b"one\n").unwrap();
    fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .and_then(|mut f| f.write_all(b"frag"))
        .unwrap();
    append_line(&p, b"two\n").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"one\nfrag\ntwo\n");
}

/// Every record appended with `append_line_in_page` lies inside one
/// page; what pads up to a boundary is one line of spaces (or `\n`).
#[test]
fn in_page_records_never_straddle_a_page_boundary() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("status");
    let mut lines = Vec::new();
    for i in 0..400usize {
        let line = format!("note: line {i} {}\n", "x".repeat((i * 37) % 300));
        append_line_in_page(&p, line.as_bytes()).unwrap();
        lines.push(line);
        if i % 97 == 5 {
            // A torn tail, as a SIGKILLed writer leaves; sometimes
            // exactly at a boundary, as the kernel would leave it.
            let len = fs::metadata(&p).unwrap().len();
            let frag = if i % 2 == 0 {
                (PAGE - len % PAGE) as usize
            } else {
                7
            };
            let mut f = fs::OpenOptions::new().append(true).open(&p).unwrap();
            f.write_all(&b"done: cut"[..frag.min(9)]).unwrap();
            f.write_all(&vec![b'y'; frag.saturating_sub(9)]).unwrap();
        }
    }
    let bytes = fs::read(&p).unwrap();
    let mut start = 0u64;
    let mut found = 0;
    let mut fillers = 0;
    for raw in bytes.split_inclusive(|&b| b == b'\n') {
        let end = start + raw.len() as u64;
        if let Some(i) = lines.iter().position(|l| l.as_bytes() == raw) {
            assert_eq!(
                start / PAGE,
                (end - 1) / PAGE,
                "record {i} crosses a page boundary at {start}"
            );
            found += 1;
        } else if raw.iter().all(|&b| b == b' ' || b == b'\n') {
            assert!(
                end.is_multiple_of(PAGE),
                "a filler at {start} does not end on a boundary"
            );
            fillers += 1;
        } else {
            assert!(
                raw.starts_with(b"done: cut") || raw.starts_with(b"done: c"),
                "unexpected line at {start}"
            );
        }
        start = end;
    }
    assert_eq!(found, lines.len());
    assert!(
        fillers > 5,
        "only {fillers} fillers in {} bytes",
        bytes.len()
    );
}

#[test]
fn in_page_filler_shapes() {
    // Fits: nothing; a torn tail: just its `\n`.
    assert_eq!(append::page_filler(10, false, 100), b"");
    assert_eq!(append::page_filler(10, true, 100), b"\n");
    // Would cross: spaces up to the boundary, ending in `\n`.
    assert_eq!(append::page_filler(4090, false, 100), b"     \n");
    assert_eq!(append::page_filler(4090, true, 100), b"\n    \n");
    assert_eq!(append::page_filler(4095, false, 100), b"\n");
    // A torn tail one byte short of a boundary: its `\n` is enough.
    assert_eq!(append::page_filler(4095, true, 100), b"\n");
    // A record longer than a page cannot be kept inside one.
    assert_eq!(append::page_filler(4090, false, 5000), b"");
    // At a boundary already (a kernel cut): no filler.
    assert_eq!(append::page_filler(8192, false, 4096), b"");
    assert_eq!(append::page_filler(8192, true, 300), b"\n");
}

#[test]
fn complete_lines_drops_a_torn_tail() {
    assert_eq!(complete_lines(b"a\nb\npart"), b"a\nb\n");
    assert_eq!(complete_lines(b"part"), b"");
}
