use super::*;

fn task(status: Status) -> Task {
    let mut t = Task::new(BoardId(1), "s", 0);
    t.status = status;
    t
}

fn claim() -> Op {
    Op::Claim { by: "w1".into() }
}

#[test]
fn claim_only_from_pending_and_refusal_names_status() {
    let t = apply(&task(Status::Pending), &claim(), 9).unwrap();
    assert_eq!(
        (t.status, t.owner.as_deref(), t.updated_at),
        (Status::InProgress, Some("w1"), 9)
    );
    let e = apply(&t, &claim(), 10).unwrap_err();
    assert_eq!(e.exit_code(), 1);
    assert!(
        e.to_string().contains("T-001 is in_progress (owner w1)"),
        "{e}"
    );
    assert!(
        apply(&task(Status::Blocked), &claim(), 1)
            .unwrap_err()
            .to_string()
            .contains("blocked")
    );
}

#[test]
fn approval_flow() {
    let mut t = task(Status::InProgress);
    let e = apply(&t, &Op::Review, 1).unwrap_err();
    assert!(
        e.to_string().contains("is in_progress") && e.to_string().contains("--require-approval"),
        "{e}"
    );
    t.require_approval = true;
    let e = apply(&t, &Op::Approve, 1).unwrap_err();
    assert!(e.to_string().contains("is in_progress"), "{e}");
    let r = apply(&t, &Op::Review, 1).unwrap();
    assert_eq!(r.status, Status::InReview);
    assert_eq!(
        apply(&r, &Op::Approve, 2).unwrap().status,
        Status::Completed
    );
    let rej = apply(
        &r,
        &Op::Reject {
            reason: "no".into(),
        },
        2,
    )
    .unwrap();
    assert_eq!(
        (rej.status, rej.reason.as_deref()),
        (Status::Cancelled, Some("rejected: no"))
    );
    let c = apply(
        &t,
        &Op::Complete {
            result: "r".into(),
            by: None,
        },
        3,
    )
    .unwrap();
    assert_eq!(c.status, Status::InReview);
}

#[test]
fn complete_claims_a_pending_task_and_refuses_finished() {
    let c = apply(
        &task(Status::Pending),
        &Op::Complete {
            result: "ok".into(),
            by: Some("w2".into()),
        },
        1,
    )
    .unwrap();
    assert_eq!(
        (c.status, c.owner.as_deref(), c.result.as_deref()),
        (Status::Completed, Some("w2"), Some("ok"))
    );
    let e = apply(
        &task(Status::Cancelled),
        &Op::Complete {
            result: "x".into(),
            by: None,
        },
        1,
    )
    .unwrap_err();
    assert!(e.to_string().contains("is cancelled"), "{e}");
}

#[test]
fn blocker_fails_and_retry_requeues() {
    let op = Op::Comment {
        text: "no creds".into(),
        by: "w1".into(),
        blocker: true,
    };
    let f = apply(&task(Status::InProgress), &op, 4).unwrap();
    assert_eq!(
        (f.status, f.reason.as_deref()),
        (Status::Failed, Some("blocker: no creds"))
    );
    assert!(f.comments[0].blocker);
    assert!(
        apply(&f, &op, 5)
            .unwrap_err()
            .to_string()
            .contains("is failed")
    );
    let mut f2 = f.clone();
    f2.blocked_by = vec![BoardId(9)];
    assert_eq!(apply(&f2, &Op::Retry, 6).unwrap().status, Status::Blocked);
    let r = apply(&f, &Op::Retry, 6).unwrap();
    assert_eq!(
        (r.status, r.owner.clone(), r.reason.clone()),
        (Status::Pending, None, None)
    );
}

#[test]
fn dispatch_counts() {
    let mut t = task(Status::Pending);
    assert!(apply(&t, &Op::Dispatch { seq: 1 }, 1).is_err());
    t.assignee = Some("w1".into());
    let d = apply(&t, &Op::Dispatch { seq: 3 }, 1).unwrap();
    assert_eq!(
        (d.status, d.dispatches, d.dispatch_seq, d.owner.as_deref()),
        (Status::InProgress, 1, Some(3), Some("w1"))
    );
    let d2 = apply(&d, &Op::Dispatch { seq: 4 }, 2).unwrap();
    assert_eq!((d2.dispatches, d2.dispatch_seq), (2, Some(4)));
}

#[test]
fn release_unblocks_only_when_empty() {
    let mut c = task(Status::Blocked);
    c.blocked_by = vec![BoardId(2), BoardId(3)];
    assert!(release(&c, BoardId(9), 1).is_none());
    let c = release(&c, BoardId(2), 1).unwrap();
    assert_eq!(c.status, Status::Blocked);
    assert_eq!(release(&c, BoardId(3), 2).unwrap().status, Status::Pending);
}

#[test]
fn blockers_unknown_self_and_cycles_are_refused() {
    let board: HashMap<BoardId, Vec<BoardId>> = [
        (BoardId(1), vec![]),
        (BoardId(2), vec![BoardId(1)]),
        (BoardId(3), vec![BoardId(4)]),
        (BoardId(4), vec![BoardId(3)]),
    ]
    .into_iter()
    .collect();
    let fin: HashSet<BoardId> = [BoardId(1)].into_iter().collect();
    assert_eq!(
        check_blockers(
            BoardId(5),
            &[BoardId(2), BoardId(1), BoardId(2)],
            &board,
            &fin
        )
        .unwrap(),
        vec![BoardId(2)]
    );
    assert!(
        check_blockers(BoardId(5), &[BoardId(9)], &board, &fin)
            .unwrap_err()
            .to_string()
            .contains("unknown task")
    );
    assert!(
        check_blockers(BoardId(5), &[BoardId(5)], &board, &fin)
            .unwrap_err()
            .to_string()
            .contains("cycle")
    );
    let e = check_blockers(BoardId(5), &[BoardId(3)], &board, &fin).unwrap_err();
    assert!(e.to_string().contains("T-003 -> T-004 -> T-003"), "{e}");
}
