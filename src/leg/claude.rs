//! The Claude Code leg (`leg = "hook"`, docs/spec/ring.md#legs): the
//! doorbell handed over by an `asyncRewake` hook.
//!
//! Spawn gives the worker `SessionStart` and `Stop` command hooks with
//! `"asyncRewake": true` ([`hook_command`]): each runs a waiter,
//! `fm leg-wait <id>`, which blocks until a ring asks it for the doorbell
//! and then prints it on stderr and exits 2 — Claude Code then starts a
//! turn with that text (an idle agent at once, a busy one after its turn;
//! an open dialog and half-typed text are left alone). The waiter exits
//! without a word when a newer one starts (one starts at every turn's
//! end), when its agent goes (its parent process changes), at a signal,
//! and at its own bound below the hook's timeout.
//!
//! Files (all under `state/`):
//! - `<id>.leg`: the waiter listening now — `pid`, its start time (clock
//!   ticks since boot, so a reused pid is not taken for it), the spawn id
//!   it is bound to (its pane's mark) and its pane. Newest wins.
//! - `.leg-<id>.rings`: `<rung> <delivered> <seq>` then the doorbell text:
//!   every ring through the leg counts `rung` up; the waiter that hands it
//!   over sets `delivered` to it (and `seq` to the newest pending record),
//!   so no ring is handed over twice, by however many waiters. A ring
//!   the waiter did not take within `[send] leg_wait_ms` is withdrawn
//!   (`delivered` set by the ring itself) and typed instead.
//! - `.leg-<id>.lock`: held only while that file is read and changed,
//!   never while waiting.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{Delivered, Leg};
use crate::config::Config;
use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;

/// The hook's `timeout` (seconds): a day. Claude Code kills a hook at
/// its timeout (600 s when none is given) and starts no other until the
/// next turn ends, so the waiter ends itself before it.
pub const HOOK_TIMEOUT_SECS: u64 = 86_400;

/// The waiter's own bound (seconds): an hour under the hook's timeout.
pub const WAIT_SECS: u64 = HOOK_TIMEOUT_SECS - 3_600;

/// The exit that hands stderr to the model.
const HAND_OVER: u8 = 2;

/// How long the lock on the rings file is waited for.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// The shell command of the waiter's hook: `fm leg-wait` by absolute
/// path, every word quoted; stdout dropped (a start hook's stdout would
/// reach the model's context), stderr kept (the doorbell).
pub(crate) fn hook_command(home: &Home, id: &TaskId) -> String {
    let fm = crate::stand_in::sibling_bin("fm");
    format!(
        "{} leg-wait --home {} {} >/dev/null",
        crate::shq::quote_path(&fm),
        crate::shq::quote_path(home.root()),
        crate::shq::quote(id.as_str()),
    )
}

/// The hook entry of one event: the waiter, async, re-waking.
pub(crate) fn hook_entry(home: &Home, id: &TaskId) -> serde_json::Value {
    serde_json::json!({
        "type": "command",
        "command": hook_command(home, id),
        "asyncRewake": true,
        "timeout": HOOK_TIMEOUT_SECS,
    })
}

/// A waiter as `<id>.leg` records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Waiter {
    pub(crate) pid: u32,
    /// Start time of the process, clock ticks since boot.
    pub(crate) start: u64,
    pub(crate) spawn: String,
    pub(crate) pane: String,
}

impl Waiter {
    fn line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\n",
            self.pid, self.start, self.spawn, self.pane
        )
    }

    fn parse(raw: &[u8]) -> Option<Waiter> {
        let text = std::str::from_utf8(raw).ok()?;
        let mut f = text.trim_end().split('\t');
        Some(Waiter {
            pid: f.next()?.parse().ok()?,
            start: f.next()?.parse().ok()?,
            spawn: f.next()?.to_string(),
            pane: f.next().unwrap_or_default().to_string(),
        })
    }

    /// Whether this process still runs (same pid, same start time).
    pub(crate) fn alive(&self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// The start time of process `pid` (field 22 of `/proc/<pid>/stat`).
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    // Outside the home: the kernel's view of a process.
    let raw = fsx::read_optional(Path::new(&format!("/proc/{pid}/stat")))
        .ok()
        .flatten()?;
    let text = String::from_utf8_lossy(&raw);
    // The command name (field 2) may hold spaces and parentheses: the
    // fields after it start past its last `)`.
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The waiter `<id>.leg` names, if any.
pub(crate) fn waiter(home: &Home, id: &TaskId) -> Option<Waiter> {
    Waiter::parse(&fsx::read_optional(&home.leg_waiter(id)).ok()??)
}

/// `.leg-<id>.rings`: rings counted, rings handed over, the newest
/// record then pending, the doorbell text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rings {
    pub(crate) rung: u64,
    pub(crate) delivered: u64,
    pub(crate) seq: u64,
    pub(crate) text: String,
}

impl Rings {
    fn load(home: &Home, id: &TaskId) -> Result<Rings> {
        let Some(raw) = fsx::read_optional(&home.leg_rings(id))? else {
            return Ok(Rings::default());
        };
        let text = String::from_utf8_lossy(&raw);
        let (head, body) = text.split_once('\n').unwrap_or((&text, ""));
        let mut n = head.split(' ').map(|w| w.parse::<u64>().unwrap_or(0));
        Ok(Rings {
            rung: n.next().unwrap_or(0),
            delivered: n.next().unwrap_or(0),
            seq: n.next().unwrap_or(0),
            text: body.to_string(),
        })
    }

    fn save(&self, home: &Home, id: &TaskId) -> Result<()> {
        let s = format!(
            "{} {} {}\n{}",
            self.rung, self.delivered, self.seq, self.text
        );
        fsx::atomic_write(&home.leg_rings(id), s.as_bytes())
    }
}

/// Changes the rings file under its lock; `f`'s answer.
fn with_rings<T>(home: &Home, id: &TaskId, f: impl FnOnce(&mut Rings) -> T) -> Result<(T, Rings)> {
    let _held = fsx::lock(&home.leg_lock(id), LOCK_WAIT)?;
    let mut r = Rings::load(home, id)?;
    let before = r.clone();
    let out = f(&mut r);
    if r != before {
        r.save(home, id)?;
    }
    Ok((out, r))
}

/// Whether a live waiter of this spawn listens for task `id`.
pub fn available(home: &Home, id: &TaskId, meta: &TaskMeta) -> std::result::Result<(), String> {
    let Some(w) = waiter(home, id) else {
        return Err("no waiter".into());
    };
    if let Some(spawn) = &meta.spawn_id
        && *spawn != w.spawn
    {
        return Err("the waiter is another spawn's".into());
    }
    if !w.alive() {
        return Err("the waiter is gone".into());
    }
    Ok(())
}

/// How long a ring waits for a waiter to start when none runs: Claude
/// Code starts the turn's `Stop` hooks together, and the watcher, woken
/// by the idle record one of them writes, may ring before the waiter
/// another one starts is up.
const ARM_WAIT: Duration = Duration::from_millis(500);

/// [`available`], waiting up to [`ARM_WAIT`] for a waiter of this spawn
/// when none runs (a turn that just ended starts one).
pub(crate) fn armed(home: &Home, id: &TaskId, meta: &TaskMeta) -> std::result::Result<(), String> {
    let deadline = Instant::now() + ARM_WAIT;
    loop {
        match available(home, id, meta) {
            Ok(()) => return Ok(()),
            Err(why) if Instant::now() >= deadline => return Err(why),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Asks the waiter for doorbell `text` and waits `[send] leg_wait_ms`
/// for it to take it; a ring not taken by then is withdrawn (`Err`: the
/// caller types it).
pub fn ring(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    meta: &TaskMeta,
    text: &str,
) -> std::result::Result<Delivered, String> {
    let _ = meta;
    fsx::ensure_dir(&home.state_dir()).map_err(|e| e.to_string())?;
    let (mine, _) = with_rings(home, id, |r| {
        r.rung = r.rung.max(r.delivered) + 1;
        r.text = text.to_string();
        r.rung
    })
    .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_millis(cfg.send.leg_wait_ms);
    let mut pause = Duration::from_millis(2);
    loop {
        let r = Rings::load(home, id).map_err(|e| e.to_string())?;
        if r.delivered >= mine {
            return Ok(Delivered {
                leg: Leg::Hook,
                detail: Some(format!("ring {mine}, records up to {}", r.seq)),
            });
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    let (taken, _) = with_rings(home, id, |r| {
        if r.delivered >= mine {
            return true;
        }
        r.delivered = mine;
        false
    })
    .map_err(|e| e.to_string())?;
    if taken {
        return Ok(Delivered {
            leg: Leg::Hook,
            detail: Some(format!("ring {mine}")),
        });
    }
    Err(format!(
        "the waiter did not take it within {} ms",
        cfg.send.leg_wait_ms
    ))
}

/// What one look at the leg's files tells a waiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Hand this doorbell over (the ring is marked delivered).
    Deliver(String),
    /// Nothing asked yet (or asked with nothing pending): wait on.
    Wait,
    /// A newer waiter took over: end without a word.
    Superseded,
}

/// One look: superseded, a ring to hand over, or nothing. A ring asked
/// while no record is pending any more (acknowledged meanwhile) is
/// marked delivered and not handed over.
pub(crate) fn step(home: &Home, id: &TaskId, me: &Waiter) -> Result<Step> {
    if waiter(home, id).as_ref() != Some(me) {
        return Ok(Step::Superseded);
    }
    if !fsx::exists(&home.leg_rings(id))? {
        return Ok(Step::Wait);
    }
    let (step, _) = with_rings(home, id, |r| {
        if r.rung <= r.delivered {
            return Step::Wait;
        }
        // Listed under the lock, after the ring was seen: a listing made
        // before it could miss the record the ring is for.
        // An inbox that cannot be listed may hold mail: handed over.
        let pending = crate::inbox::pending(home, id);
        r.delivered = r.rung;
        match pending.as_deref().map(<[u64]>::last) {
            Ok(Some(&seq)) => {
                r.seq = seq;
                Step::Deliver(r.text.clone())
            }
            Ok(None) => Step::Wait,
            Err(_) => Step::Deliver(r.text.clone()),
        }
    })?;
    Ok(step)
}

/// This process as a waiter bound to `spawn` in `pane`.
pub(crate) fn me(spawn: &str, pane: &str) -> Waiter {
    let pid = std::process::id();
    Waiter {
        pid,
        start: start_time(pid).unwrap_or(0),
        spawn: spawn.to_string(),
        pane: pane.to_string(),
    }
}

/// The spawn the waiter serves: its pane's mark (read once, at start,
/// from the tmux server the pane is on: `$TMUX` names it), else meta's
/// spawn id; empty when neither says.
fn bind(home: &Home, id: &TaskId, pane: Option<&str>) -> String {
    if let Some(pane) = pane.filter(|p| !p.is_empty())
        && let Ok(mark) = crate::proc::Cmd::tmux(None)
            .args(["display-message", "-p", "-t", pane])
            .arg(format!("#{{{}}}", crate::tmux::owner::MARK_OPTION))
            .run_ok()
        && let Some((task, spawn)) = mark.trim().split_once('/')
        && task == id.as_str()
    {
        return spawn.to_string();
    }
    TaskMeta::load(home, id)
        .ok()
        .flatten()
        .and_then(|m| m.spawn_id)
        .unwrap_or_default()
}

/// Removes `<id>.leg` if it still names `me`.
fn forget(home: &Home, id: &TaskId, me: &Waiter) {
    if waiter(home, id).as_ref() == Some(me) {
        let _ = fsx::remove_optional(&home.leg_waiter(id));
    }
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ended {
    Deliver(String),
    Superseded,
    Timeout,
    Signal,
}

/// Waits as waiter `me` until a ring asks for the doorbell, a newer
/// waiter starts, `bound` passes or a signal comes. Notices come from
/// inotify on `state/`; a look every half second covers a lost one.
pub(crate) fn wait(home: &Home, id: &TaskId, me: &Waiter, bound: Duration) -> Result<Ended> {
    use rustix::fs::inotify::WatchFlags;
    let deadline = Instant::now() + bound;
    fsx::ensure_dir(&home.state_dir())?;
    let mut notices = crate::fsnotice::Inotify::new().ok();
    if let Some(n) = &notices {
        let _ = n.add_watch(
            &home.state_dir(),
            WatchFlags::CLOSE_WRITE | WatchFlags::MOVED_TO | WatchFlags::DELETE,
        );
    }
    fsx::atomic_write(&home.leg_waiter(id), me.line().as_bytes())?;
    loop {
        if crate::watch::daemon::stop_signal().is_some() {
            forget(home, id, me);
            return Ok(Ended::Signal);
        }
        match step(home, id, me)? {
            Step::Deliver(text) => {
                forget(home, id, me);
                return Ok(Ended::Deliver(text));
            }
            Step::Superseded => return Ok(Ended::Superseded),
            Step::Wait => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            forget(home, id, me);
            return Ok(Ended::Timeout);
        }
        let slice = left.min(Duration::from_millis(500));
        match &mut notices {
            Some(n) => {
                {
                    let fd = n.fd();
                    let mut fds = [rustix::event::PollFd::new(
                        &fd,
                        rustix::event::PollFlags::IN,
                    )];
                    let ts = rustix::event::Timespec::try_from(slice).unwrap_or_default();
                    let _ = rustix::event::poll(&mut fds, Some(&ts));
                }
                n.drain(|_, _, _| {});
            }
            None => std::thread::sleep(slice.min(Duration::from_millis(50))),
        }
    }
}

/// `fm leg-wait <id>`: the hook's waiter. Exit 2 with the doorbell on
/// stderr, else 0 and nothing said.
pub fn run(home: &Home, id: &TaskId, bound: Option<f64>) -> Result<u8> {
    crate::mate::hook::orphan_guard();
    crate::watch::daemon::install_signals();
    let pane = std::env::var("TMUX_PANE").ok();
    let spawn = bind(home, id, pane.as_deref());
    let me = me(&spawn, pane.as_deref().unwrap_or(""));
    let bound = crate::mate::wait::secs(bound.unwrap_or(WAIT_SECS as f64));
    match wait(home, id, &me, bound)? {
        Ended::Deliver(text) => {
            crate::output::err_line(&text);
            Ok(HAND_OVER)
        }
        Ended::Superseded | Ended::Timeout | Ended::Signal => Ok(0),
    }
}

/// Ends task `id`'s waiter (teardown): the process `<id>.leg` names,
/// signalled only while it is still that process, and the record.
pub(crate) fn stop(home: &Home, id: &TaskId) {
    if let Some(w) = waiter(home, id)
        && w.alive()
        && let Some(pid) = rustix::process::Pid::from_raw(w.pid.cast_signed())
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    let _ = fsx::remove_optional(&home.leg_waiter(id));
    let _ = fsx::remove_optional(&home.leg_rings(id));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Home, TaskId, Config) {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t1").unwrap();
        fsx::ensure_dir(&home.inbox(&id)).unwrap();
        let mut cfg = Config::default();
        cfg.send.leg_wait_ms = 50;
        (d, home, id, cfg)
    }

    fn meta(spawn: &str) -> TaskMeta {
        TaskMeta {
            spawn_id: Some(spawn.into()),
            ..TaskMeta::default()
        }
    }

    #[test]
    fn a_waiter_is_alive_only_as_the_same_process_of_the_same_spawn() {
        let (_d, home, id, _cfg) = setup();
        assert_eq!(available(&home, &id, &meta("a")), Err("no waiter".into()));
        let w = me("a", "%1");
        fsx::atomic_write(&home.leg_waiter(&id), w.line().as_bytes()).unwrap();
        assert_eq!(waiter(&home, &id), Some(w.clone()));
        assert_eq!(available(&home, &id, &meta("a")), Ok(()));
        assert!(available(&home, &id, &meta("b")).is_err(), "another spawn");
        // The same pid with another start time is another process.
        let reused = Waiter {
            start: w.start + 1,
            ..w.clone()
        };
        fsx::atomic_write(&home.leg_waiter(&id), reused.line().as_bytes()).unwrap();
        assert_eq!(
            available(&home, &id, &meta("a")),
            Err("the waiter is gone".into())
        );
    }

    /// A ring is handed over once, by the current waiter only: an older
    /// one is superseded, a second look finds nothing, a ring with
    /// nothing pending is marked and not handed over.
    #[test]
    fn the_waiter_hands_each_ring_over_once() {
        let (_d, home, id, _cfg) = setup();
        let w = me("a", "%1");
        let old = Waiter {
            pid: w.pid + 1,
            ..w.clone()
        };
        fsx::atomic_write(&home.leg_waiter(&id), w.line().as_bytes()).unwrap();
        assert_eq!(step(&home, &id, &old).unwrap(), Step::Superseded);
        assert_eq!(step(&home, &id, &w).unwrap(), Step::Wait);
        fsx::atomic_write(&home.inbox_record(&id, 3), b"hi").unwrap();
        with_rings(&home, &id, |r| {
            r.rung = 1;
            r.text = "bell".into();
        })
        .unwrap();
        assert_eq!(step(&home, &id, &w).unwrap(), Step::Deliver("bell".into()));
        let r = Rings::load(&home, &id).unwrap();
        assert_eq!((r.rung, r.delivered, r.seq), (1, 1, 3));
        assert_eq!(step(&home, &id, &w).unwrap(), Step::Wait, "not twice");
        // Acknowledged before the waiter looked: marked, not handed over.
        std::fs::remove_file(home.inbox_record(&id, 3)).unwrap();
        with_rings(&home, &id, |r| r.rung = 2).unwrap();
        assert_eq!(step(&home, &id, &w).unwrap(), Step::Wait);
        assert_eq!(Rings::load(&home, &id).unwrap().delivered, 2);
    }

    /// A ring no waiter takes is withdrawn, so a waiter starting later
    /// does not hand over a doorbell that was typed.
    #[test]
    fn a_ring_not_taken_is_withdrawn() {
        let (_d, home, id, cfg) = setup();
        fsx::atomic_write(&home.inbox_record(&id, 1), b"hi").unwrap();
        let err = ring(&home, &cfg, &id, &meta("a"), "bell").unwrap_err();
        assert!(err.contains("did not take it"), "{err}");
        let w = me("a", "%1");
        fsx::atomic_write(&home.leg_waiter(&id), w.line().as_bytes()).unwrap();
        assert_eq!(step(&home, &id, &w).unwrap(), Step::Wait);
    }

    /// A waiting waiter takes a ring at once, and its record goes.
    #[test]
    fn a_ring_reaches_a_waiting_waiter() {
        let (_d, home, id, mut cfg) = setup();
        cfg.send.leg_wait_ms = 5_000;
        fsx::atomic_write(&home.inbox_record(&id, 1), b"hi").unwrap();
        let w = me("a", "%1");
        let (h2, id2, w2) = (home.clone(), id.clone(), w.clone());
        let t = std::thread::spawn(move || wait(&h2, &id2, &w2, Duration::from_secs(10)));
        let began = Instant::now();
        while waiter(&home, &id).is_none() {
            assert!(began.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(5));
        }
        let d = ring(&home, &cfg, &id, &meta("a"), "bell").unwrap();
        assert_eq!(d.leg, Leg::Hook);
        assert_eq!(t.join().unwrap().unwrap(), Ended::Deliver("bell".into()));
        assert!(waiter(&home, &id).is_none());
        // A newer waiter supersedes a waiting one.
        let (h3, id3) = (home.clone(), id.clone());
        let t = std::thread::spawn(move || wait(&h3, &id3, &w, Duration::from_secs(10)));
        while waiter(&home, &id).is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let newer = Waiter {
            pid: 1,
            ..me("a", "%1")
        };
        fsx::atomic_write(&home.leg_waiter(&id), newer.line().as_bytes()).unwrap();
        assert_eq!(t.join().unwrap().unwrap(), Ended::Superseded);
        assert_eq!(waiter(&home, &id), Some(newer), "its record stays");
    }
}
