//! Class 10: counters never wrap or overflow silently. A hand-made number
//! at the top of what readers parse makes the next writer refuse (exit 1,
//! naming the directory), never write a name no reader lists.

use crate::harness::TestHome;

#[test]
fn a_record_number_at_the_readers_limit_is_refused_not_passed() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    h.fm("send")
        .args(["t1", "--quiet", "one"])
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .run();
    // 19 digits is the most a reader parses; 20 digits is not a record.
    h.write("state/t1.inbox/handled/9999999999999999999.msg", "x");
    h.write("state/t1.inbox/99999999999999999999.msg", "x");
    let before = h.tree();
    h.fm("send")
        .args(["t1", "--quiet", "two"])
        .status(1)
        .stdout("")
        .stderr_has("refusing to count past 9999999999999999999 in ")
        .stderr_has("t1.inbox")
        .run();
    assert_eq!(h.tree(), before, "no record and no staged file left");
    // Below the limit the count goes on, and the record is listed.
    std::fs::remove_file(h.path("state/t1.inbox/handled/9999999999999999999.msg")).unwrap();
    h.write("state/t1.inbox/handled/9999999999999999997.msg", "x");
    h.fm("send")
        .args(["t1", "--quiet", "three"])
        .stdout("queued t1 9999999999999999998.msg \u{b7} doorbell quiet\n")
        .run();
    h.fm("ack")
        .args(["t1", "--list"])
        .stdout_has("9999999999999999998.msg")
        .run();
}

#[test]
fn a_board_id_at_the_readers_limit_is_refused_not_passed() {
    let h = TestHome::new();
    h.fm("board").args(["add", "one"]).stdout_any().run();
    let one = String::from_utf8(h.read("data/board/T-001.task")).unwrap();
    let top = "999999999999999999";
    h.write(
        &format!("data/board/T-{top}.task"),
        one.replace("T-001", &format!("T-{top}")),
    );
    h.fm("board")
        .args(["show", top])
        .stdout_has(&format!("T-{top}"))
        .run();
    let before = h.tree();
    h.fm("board")
        .args(["add", "two"])
        .status(1)
        .stdout("")
        .stderr_has(&format!("refusing to count past {top} in "))
        .run();
    assert_eq!(h.tree(), before);
}
