//! Passes over fleets of every shape, the fast read against the by-path
//! one.

use std::fs::File;
use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;
use rustix::fs::{FileType, Mode};

use super::super::read::gather_by_path;
use crate::tmux::pane::FakePane;
use crate::{clock, inbox};

const TASKS: usize = 300;

fn fake(_socket: &str) -> Box<dyn Pane> {
    Box::new(FakePane::default())
}

fn record(at: u64, fire_and_forget: bool) -> Vec<u8> {
    inbox::render(&clock::rfc3339(at), "captain", fire_and_forget, b"hello")
}

/// A fleet with every shape a pass meets, the same in every home made
/// with the same `base`: due and waiting records, fire-and-forget
/// ones, ladder files, records that are symlinks, FIFOs or unreadable,
/// an inbox that is a symlink, status logs with wakes, and tasks with
/// a status log only.
fn fleet(root: &Path, base: u64) -> Home {
    for sub in ["config", "data", "state"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    let home = Home::at(root).unwrap();
    let state = home.state_dir();
    for i in 0..TASKS {
        let id = TaskId::parse(&format!("t-{i:03}")).unwrap();
        let inbox = home.inbox(&id);
        let kind = i % 14;
        if kind != 10 {
            std::fs::write(state.join(format!("{id}.meta")), "kind=ship\n").unwrap();
        }
        if kind == 9 {
            std::fs::create_dir_all(root.join("elsewhere").join(id.as_str())).unwrap();
            symlink(root.join("elsewhere").join(id.as_str()), &inbox).unwrap();
        } else if kind != 10 {
            std::fs::create_dir_all(inbox.join("handled")).unwrap();
        }
        let put = |name: &str, bytes: &[u8]| std::fs::write(inbox.join(name), bytes).unwrap();
        match kind {
            0 => put("001.msg", &record(base - 1000, false)),
            1 => put("001.msg", &record(base - 5, false)),
            2 => {
                put("001.msg", &record(base - 1000, true));
                put("002.msg", &record(base - 1000, false));
            }
            3 => {
                symlink("/dev/null", inbox.join("001.msg")).unwrap();
                put("002.msg", &record(base - 1000, false));
            }
            4 => {
                rustix::fs::mknodat(
                    rustix::fs::CWD,
                    inbox.join("001.msg"),
                    FileType::Fifo,
                    Mode::from_raw_mode(0o600),
                    0,
                )
                .unwrap();
                put("002.msg", &record(base - 1000, false));
            }
            5 => put("001.msg", b"schema=1\nat=never\nno separator"),
            6 => {
                put("003.msg", &record(base - 1000, false));
                put(".ring-state", b"003.msg\t1\t1\n");
            }
            7 => {
                put("001.msg", &record(base - 5000, false));
                put(
                    ".ring-state",
                    format!("001.msg\t3\t{}\n", base - 4000).as_bytes(),
                );
                put(".escalated", b"001.msg\n");
            }
            8 => {
                put("001.msg", &record(base - 5, false));
                put(".ring-owed", format!("{}\n", base - 100).as_bytes());
            }
            11 => {
                put("001.msg", &record(base - 1000, false));
                symlink("/dev/null", inbox.join(".ring-state")).unwrap();
            }
            12 => {
                // Its time is the file's: the same in every home.
                put(
                    "001.msg",
                    b"schema=1\nat=not a time\nfrom=captain\n--\nhello\n",
                );
                let at = std::time::UNIX_EPOCH + Duration::from_secs(base - 1000);
                let f = File::options()
                    .write(true)
                    .open(inbox.join("001.msg"))
                    .unwrap();
                f.set_modified(at).unwrap();
            }
            13 => put("handled/001.msg", &record(base - 1000, false)),
            _ => {}
        }
        let status = match kind {
            0 | 10 => "working: on it\nneeds-decision: which way?\n",
            2 => "done: shipped\n",
            _ => "working: on it\n",
        };
        if kind == 11 {
            symlink("/dev/null", home.status(&id)).unwrap();
        } else {
            std::fs::write(home.status(&id), status).unwrap();
        }
    }
    home
}

/// What a pass answered, without the wall-clock parts.
fn answer(r: &Report, home: &Home) -> String {
    let root = home.state_dir().display().to_string();
    let rings: Vec<String> = r
        .rings
        .iter()
        .map(|g| format!("{} {} {} {:?}", g.task, g.seq, g.count, g.outcome))
        .collect();
    let wakes: Vec<String> = r
        .wakes
        .iter()
        .map(|w| format!("{} {} {}", w.task, w.kind, w.text.replace(&root, "<state>")))
        .collect();
    let dues: Vec<String> = r.dues.iter().map(|(id, d)| format!("{id} {d:?}")).collect();
    format!(
        "tasks {}\nrings {rings:#?}\nwakes {wakes:#?}\nnext {:?}\ndues {dues:#?}\ninboxes {}",
        r.tasks,
        r.next_due,
        r.inboxes.len()
    )
}

/// Every regular file under `state/` with its bytes, but the
/// watcher's own files (its offsets name inodes) and the wakes.
fn files(home: &Home) -> Vec<String> {
    let root = home.state_dir();
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            let name = e.path().strip_prefix(&root).unwrap().display().to_string();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() && !name.starts_with(".watch") && !name.contains("wakes") {
                let bytes = std::fs::read(e.path()).unwrap();
                out.push(format!("{name}: {}", String::from_utf8_lossy(&bytes)));
            }
        }
    }
    out.sort();
    out
}

/// The same change in both homes.
fn change(home: &Home, base: u64) {
    let id = |i: usize| TaskId::parse(&format!("t-{i:03}")).unwrap();
    // A new record behind a waiting one, an ack, a new ring state, an
    // inbox gone, a record edited by hand through a rename.
    std::fs::write(home.inbox(&id(1)).join("002.msg"), record(base, false)).unwrap();
    std::fs::rename(
        home.inbox(&id(15)).join("001.msg"),
        home.inbox(&id(15)).join("handled/001.msg"),
    )
    .unwrap();
    std::fs::write(home.inbox(&id(20)).join(".ring-state"), b"003.msg\t2\t1\n").unwrap();
    std::fs::remove_dir_all(home.inbox(&id(28))).unwrap();
    let p = home.inbox(&id(29)).join("001.msg");
    std::fs::write(p.with_extension("new"), record(base - 10, true)).unwrap();
    std::fs::rename(p.with_extension("new"), p).unwrap();
    fsx::append_line(&home.status(&id(30)), b"blocked: stuck\n").unwrap();
}

#[test]
fn the_fast_read_answers_as_the_read_by_path_does_and_remembers_only_what_is_unchanged() {
    let base = clock::now();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (fast, slow) = (fleet(a.path(), base), fleet(b.path(), base));
    let cfg = Config::default();
    let (mut sf, mut ss) = (State::load(&fast).unwrap(), State::load(&slow).unwrap());
    let pass = |home: &Home, state: &mut State, now: u64, how: Read| {
        let tasks = scan(home).unwrap();
        run_over(home, &cfg, &fake, &|_| {}, state, now, &tasks, how).unwrap()
    };
    let mut hits = Vec::new();
    // Passes right after the fleet was written (nothing settled), a
    // pass that re-rings once the inboxes settled, passes once the
    // re-rung ones settled too (the first remembers, the second
    // answers from memory), and one after the same changes in both.
    let steps = [
        (base, 0),
        (base + 1, 3),
        (base + 200, 3),
        (base + 201, 0),
        (base + 202, 0),
        (base + 203, 0),
    ];
    for (step, (now, sleep)) in steps.into_iter().enumerate() {
        if step == 5 {
            change(&fast, base);
            change(&slow, base);
        }
        let rf = pass(&fast, &mut sf, now, Read::Fast);
        let rs = pass(&slow, &mut ss, now, Read::ByPath);
        let (af, as_) = (answer(&rf, &fast), answer(&rs, &slow));
        if af != as_ {
            let diff: Vec<_> = af
                .lines()
                .zip(as_.lines())
                .filter(|(x, y)| x != y)
                .take(5)
                .collect();
            panic!("step {step}: the fast read answered differently: {diff:?}");
        }
        let (ff, fs) = (files(&fast), files(&slow));
        let diff: Vec<_> = ff.iter().zip(&fs).filter(|(x, y)| x != y).take(5).collect();
        assert!(
            diff.is_empty() && ff.len() == fs.len(),
            "step {step}: {diff:?}"
        );
        assert_eq!(rs.memo_hits, 0);
        hits.push(rf.memo_hits);
        std::thread::sleep(Duration::from_secs(sleep));
    }
    // The clean inboxes (7 shapes of 14: 150 of 300) are answered from
    // memory once settled, but for the 21 whose third ring escalated at
    // step 3; of the changed ones, four were remembered and are read
    // again.
    assert_eq!(hits[4], 129, "{hits:?}");
    assert_eq!(hits[5], 125, "{hits:?}");
    // What is remembered is what a read by path finds now.
    let now = base + 203;
    for (id, m) in &sf.inboxes {
        let g = gather_by_path(&fast, id, now, &cfg.watch, false);
        let t = g.task.unwrap();
        assert_eq!(
            (&t.pending, t.target.as_ref().map(|r| r.seq), t.files),
            (&m.pending, m.target.as_ref().map(|r| r.seq), m.files),
            "{id}"
        );
    }
    assert!(!sf.inboxes.contains_key(&TaskId::parse("t-028").unwrap()));
}
