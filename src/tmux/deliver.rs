//! Doorbell delivery (SPEC §5.2–5.3): the only text firstmate ever types
//! into a worker's pane is a short constant line pointing at the inbox.
//!
//! [`deliver`] is the ring protocol: it types the line at most once, then
//! presses Enter (and only Enter) up to `enter_retries` more times while it
//! still sits unsent. It never types into a dead agent's pane, never over
//! someone else's half-typed text, and never into a pane other than the
//! recorded pane id. What the screen shows (busy, a composer's text, an
//! unsent doorbell) is read by the pure checks of [`super::screen`].

use std::time::Duration;

use serde::Serialize;

use super::owner::Claim;
use super::pane::{Pane, PaneInfo};
use super::screen::{
    Composer, Screen, busy, composer, dialog, holds_doorbell, holds_input, overrules_busy_record,
    rules_of, unsent_plain as unsent,
};
use crate::config::SendCfg;
use crate::harness::HarnessProfile;
use crate::home::Home;
use crate::task_id::TaskId;

/// What happened to a ring (SPEC §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Rang,
    Queued,
    Skipped,
    Failed,
    Dead,
    NoPane,
    Quiet,
    /// A dialog owns the agent's keyboard: nothing was typed or pressed.
    Dialog,
    /// The agent was spawned or relaunched moments ago and does not take
    /// input yet (no composer on screen, or the typed line never showed):
    /// owed, and rung once its composer shows.
    Booting,
    /// Another ring of the same task held its ring lock past the longest
    /// ring (a ring in progress, or one stopped mid-way: a captain's
    /// `fm-send` suspended with Ctrl-Z): nothing typed, owed. Reported
    /// as `queued` (SPEC §5.3's outcome), with its own reason on stderr.
    #[serde(rename = "queued")]
    RingLocked,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Rang => "rang",
            // A held ring lock is reported as the SPEC's `queued`.
            Outcome::Queued | Outcome::RingLocked => "queued",
            Outcome::Skipped => "skipped",
            Outcome::Failed => "failed",
            Outcome::Dead => "dead",
            Outcome::NoPane => "no-pane",
            Outcome::Quiet => "quiet",
            Outcome::Dialog => "dialog",
            Outcome::Booting => "booting",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The doorbell line for a task: constant per task, printable characters
/// only, and a true shell no-op — `: ` followed by ONE single-quoted word
/// holding the whole notice (inbox path included, a `'` in it written as
/// `'\''`), so a bare shell that reads it runs `:` and nothing else: no
/// `<n>` redirection, no `(…)` syntax error, no glob.
pub fn doorbell(home: &Home, id: &TaskId) -> String {
    let inbox = home.inbox(id).display().to_string();
    let notice = format!(
        "firstmate inbox: new mail in {inbox} - read each *.msg in numeric order, act on it, then run fm-ack {id} <n> (or move it into handled/)"
    );
    let printable: String = notice
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    format!(": {}", crate::shq::quote(&printable))
}

/// What the caller knows about the target before ringing.
#[derive(Debug, Clone)]
pub(crate) struct Target<'a> {
    /// The recorded pane id (`%N`); `None` when meta has none.
    pub pane: Option<&'a str>,
    /// What the pane must prove to be the task's ([`super::owner`]);
    /// `None` rings any pane with that id (tests on a fake pane).
    pub(crate) claim: Option<&'a Claim>,
    pub(crate) profile: Option<&'a HarnessProfile>,
    /// When the busy record that says busy (newer than the last status
    /// line) was written, Unix seconds; `None` when none does.
    pub(crate) busy_record: Option<u64>,
    /// When the agent was last spawned or relaunched (meta's
    /// `spawned_at`), Unix seconds.
    pub(crate) spawned_at: Option<u64>,
    /// The task's ring lock ([`Home::ring_lock`]), held for the whole
    /// ring; `None` rings without one (tests on a fake pane).
    pub(crate) ring_lock: Option<std::path::PathBuf>,
}

impl Target<'_> {
    /// Whether the agent was started so recently that a screen without a
    /// composer (or a typed line that never showed) means it is still
    /// booting rather than that something else owns the keyboard.
    fn booting(&self, now: u64) -> bool {
        self.spawned_at
            .is_some_and(|at| now.saturating_sub(at) < BOOT_WINDOW_SECS)
    }
}

/// Rings the doorbell `line` in `target` (SPEC §5.3). `sleep` is injected
/// so tests run without waiting.
pub(crate) fn deliver(
    pane: &dyn Pane,
    target: &Target,
    line: &str,
    cfg: &SendCfg,
    sleep: &dyn Fn(Duration),
) -> Outcome {
    let Some(id) = target.pane else {
        return Outcome::NoPane;
    };
    match pane.info(id) {
        Ok(Some(info)) => deliver_to(pane, target, &info, line, cfg, sleep),
        // A vanished pane is a dead agent: nothing to type into (SPEC §6.2).
        Ok(None) => Outcome::Dead,
        Err(_) => Outcome::Failed,
    }
}

/// [`deliver`] for a caller that already asked tmux about the pane (e.g.
/// `fm-send --all`, which lists every pane once). `info` must be the
/// target's pane.
pub(crate) fn deliver_to(
    pane: &dyn Pane,
    target: &Target,
    info: &PaneInfo,
    line: &str,
    cfg: &SendCfg,
    sleep: &dyn Fn(Duration),
) -> Outcome {
    let id = info.id.as_str();
    if target.pane != Some(id) {
        return Outcome::Failed;
    }
    // A pane that is not provably the task's is no agent of it: a gone
    // pane, as a vanished one is (nothing is typed into someone else's).
    if target
        .claim
        .is_some_and(|c| c.check(Some(info), None).is_err())
    {
        return Outcome::Dead;
    }
    if !crate::harness::is_alive(target.profile, info.dead, &info.command) {
        return Outcome::Dead;
    }
    // Copy mode (or any tmux mode) would take the keys as mode commands.
    if info.in_mode {
        return Outcome::Skipped;
    }
    // One ringer at a time: two that both saw an empty composer would
    // type two doorbells into one line. The second rings once the first
    // is done, on the screen the first left. A lock that cannot be made
    // (a read-only state/) does not stop the ring; one held past the
    // longest ring holds this one back, owed.
    let (_ring, waited) = match &target.ring_lock {
        Some(path) => match crate::fsx::try_lock(path) {
            Ok(Some(held)) => (Some(held), false),
            Ok(None) => match crate::fsx::lock(path, ring_lock_wait(cfg)) {
                Ok(held) => (Some(held), true),
                Err(crate::error::Error::LockTimeout { .. }) => return Outcome::RingLocked,
                Err(_) => (None, false),
            },
            Err(_) => (None, false),
        },
        None => (None, false),
    };
    // Seconds may have passed waiting for another ring: the pane is asked
    // again, and must still be the task's agent.
    if waited && let Some(claim) = target.claim {
        match pane.info(id) {
            Ok(Some(now))
                if claim.check(Some(&now), None).is_ok()
                    && crate::harness::is_alive(target.profile, now.dead, &now.command) => {}
            Ok(_) => return Outcome::Dead,
            Err(_) => return Outcome::Failed,
        }
    }
    let rules = rules_of(target.profile);
    let has_composer = rules.composer.is_some();
    // A composer not on screen yet (an agent still booting) is waited for,
    // a bounded while; a dialog is never typed into.
    let mut waited = 0;
    let screen = loop {
        let Ok(captured) = pane.capture(id, 0) else {
            return Outcome::Failed;
        };
        let screen = Screen::parse(&captured);
        if dialog(&rules, &screen).is_some() {
            return Outcome::Dialog;
        }
        // A screen that shows every turn and reads idle overrules a
        // record no hook closed (a turn interrupted from the keyboard).
        let record = target.busy_record.is_some_and(|at| {
            !overrules_busy_record(&rules, &screen, crate::clock::now().saturating_sub(at))
        });
        if record || busy(&rules, &screen) {
            return Outcome::Queued;
        }
        if !has_composer || composer(&rules, &screen) != Composer::Absent {
            break screen;
        }
        if waited >= COMPOSER_WAIT_MS {
            // Nothing recognisable owns the keyboard: type nothing. Right
            // after a spawn that is the agent still starting up: the ring
            // is owed, not dropped.
            if target.booting(crate::clock::now()) {
                return Outcome::Booting;
            }
            return Outcome::Skipped;
        }
        sleep(Duration::from_millis(COMPOSER_POLL_MS));
        waited += COMPOSER_POLL_MS;
    };
    // A doorbell left unsent by an earlier ring is pressed, never retyped.
    let mut typed_before = false;
    if has_composer {
        if let Composer::Holds(text) = composer(&rules, &screen)
            && !text.is_empty()
        {
            if !holds_doorbell(&text, line) {
                return Outcome::Skipped;
            }
            typed_before = true;
        }
    } else {
        // No composer regex: the line under the cursor stands in for it.
        match pane.cursor_line(id) {
            Ok(Some(cur)) if unsent(None, "", Some(&cur), line) => typed_before = true,
            Ok(Some(cur)) if holds_input(&cur) => return Outcome::Skipped,
            Ok(_) => {}
            Err(_) => return Outcome::Failed,
        }
    }
    if !typed_before {
        if pane.type_text(id, line).is_err() {
            return Outcome::Failed;
        }
        if has_composer && target.booting(crate::clock::now()) {
            // An agent that draws its composer before it reads its input
            // (Claude Code right after launch) drops what was typed: the
            // line must show before Enter, or the ring is owed. A line
            // that shows later is pressed, never retyped, by the next ring.
            if !settle(pane, target.profile, id, line, cfg, sleep) {
                return Outcome::Booting;
            }
        } else {
            sleep(Duration::from_millis(cfg.settle_ms));
        }
    }
    press_until_taken(pane, target.profile, id, line, cfg, sleep, &|| false).0
}

/// Whether `line` still sits unsent in the pane: the composer (with a
/// composer regex) or the cursor's line (one tmux call) shows it.
fn still_unsent(
    pane: &dyn Pane,
    profile: Option<&HarnessProfile>,
    id: &str,
    line: &str,
) -> Option<bool> {
    let has_composer = profile.is_some_and(|p| p.composer_regex.is_some());
    // Without a composer regex the cursor's line is enough: one tmux call.
    let cursor = if has_composer {
        None
    } else {
        pane.cursor_line(id).ok().flatten()
    };
    let screen = match cursor {
        Some(_) => Ok(String::new()),
        None => pane.capture(id, 0),
    };
    screen
        .ok()
        .map(|s| unsent(profile, &s, cursor.as_deref(), line))
}

/// Presses Enter until `line`, typed into pane `id`, is taken (SPEC §5.3):
/// at most `1 + enter_retries` presses, `enter_wait_ms` apart, each one
/// only while the line still sits unsent. `gone` is asked after each
/// press: an agent that went away on the line (an exit command) took it.
/// Returns the outcome and how many times Enter was pressed.
pub(crate) fn press_until_taken(
    pane: &dyn Pane,
    profile: Option<&HarnessProfile>,
    id: &str,
    line: &str,
    cfg: &SendCfg,
    sleep: &dyn Fn(Duration),
    gone: &dyn Fn() -> bool,
) -> (Outcome, u64) {
    let mut presses = 0;
    for _ in 0..=cfg.enter_retries {
        if pane.press(id, "Enter").is_err() {
            return (Outcome::Failed, presses);
        }
        presses += 1;
        sleep(Duration::from_millis(cfg.enter_wait_ms));
        if gone() {
            return (Outcome::Rang, presses);
        }
        match still_unsent(pane, profile, id, line) {
            Some(true) => {}
            Some(false) => return (Outcome::Rang, presses),
            None => return (Outcome::Failed, presses),
        }
    }
    (Outcome::Failed, presses)
}

/// Waits (bounded by [`SETTLE_WAIT_MS`]) until `line`, just typed into
/// pane `id`, shows on the screen, then `settle_ms` more: an Enter that
/// comes in the same burst as the text is swallowed by some agents (Codex
/// turns it into a newline). True when the line was seen.
pub(crate) fn settle(
    pane: &dyn Pane,
    profile: Option<&HarnessProfile>,
    id: &str,
    line: &str,
    cfg: &SendCfg,
    sleep: &dyn Fn(Duration),
) -> bool {
    let mut waited = 0;
    let seen = loop {
        if still_unsent(pane, profile, id, line) == Some(true) {
            break true;
        }
        if waited >= SETTLE_WAIT_MS {
            break false;
        }
        sleep(Duration::from_millis(SETTLE_POLL_MS));
        waited += SETTLE_POLL_MS;
    };
    sleep(Duration::from_millis(cfg.settle_ms));
    seen
}

/// How long a ring waits for another ring of the same task: the longest a
/// ring can take (a composer waited for, the typed line waited for, every
/// press), and a second more.
pub(crate) fn ring_lock_wait(cfg: &SendCfg) -> Duration {
    let presses = cfg
        .enter_retries
        .saturating_add(1)
        .saturating_mul(cfg.enter_wait_ms.saturating_add(100));
    let ms = (COMPOSER_WAIT_MS + SETTLE_WAIT_MS + 1000)
        .saturating_add(cfg.settle_ms)
        .saturating_add(presses);
    Duration::from_millis(ms.min(120_000))
}

/// How long [`settle`] looks for typed text to show, and how often.
const SETTLE_WAIT_MS: u64 = 2000;
const SETTLE_POLL_MS: u64 = 50;

/// How long a ring waits for a composer that is not on screen yet (an
/// agent still booting), and how often it looks.
const COMPOSER_WAIT_MS: u64 = 3000;
const COMPOSER_POLL_MS: u64 = 200;

/// How long after a spawn or relaunch an agent counts as booting
/// ([`Outcome::Booting`]).
pub(crate) const BOOT_WINDOW_SECS: u64 = 60;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::task_id::TaskId;
    use crate::tmux::pane::FakePane;

    fn profile() -> HarnessProfile {
        let mut p = crate::harness::builtin("claude").unwrap();
        p.agent_commands = Some(vec!["claude".into()]);
        p.composer_regex = Some(regex::Regex::new(r"^> ?(.*)$").unwrap());
        p.composer_below_regex = None;
        p.dialogs.clear();
        p.busy_regex = Some(regex::Regex::new("esc to interrupt").unwrap());
        p.busy_whole_turn = false;
        p
    }

    fn ring(f: &FakePane, p: Option<&HarnessProfile>, busy: bool) -> Outcome {
        let cfg = Config::default().send;
        deliver(
            f,
            &Target {
                pane: Some("%1"),
                claim: None,
                profile: p,
                busy_record: busy.then_some(0),
                spawned_at: None,
                ring_lock: None,
            },
            ": ring",
            &cfg,
            &|_| {},
        )
    }

    #[test]
    fn a_pane_that_is_not_the_tasks_is_never_typed_into() {
        let p = profile();
        let mut cfg = Config::default().send;
        (cfg.settle_ms, cfg.enter_wait_ms) = (0, 0);
        let claim = Claim {
            task: TaskId::parse("one").unwrap(),
            pane: "%1".into(),
            spawn_id: Some("00000000000000aa".into()),
            server: None,
        };
        for (mark, want) in [
            ("two/00000000000000aa", Outcome::Dead),
            ("", Outcome::Dead),
            ("one/00000000000000bb", Outcome::Dead),
            ("one/00000000000000aa", Outcome::Rang),
        ] {
            let f = FakePane::with("%1", "claude");
            f.edit("%1", |s| s.mark = mark.into());
            let t = Target {
                pane: Some("%1"),
                claim: Some(&claim),
                profile: Some(&p),
                busy_record: None,
                spawned_at: None,
                ring_lock: None,
            };
            assert_eq!(deliver(&f, &t, ": ring", &cfg, &|_| {}), want, "{mark:?}");
            let calls = f.screen("%1").calls;
            assert_eq!(
                calls.is_empty(),
                want == Outcome::Dead,
                "{mark:?}: {calls:?}"
            );
        }
    }

    #[test]
    fn a_ring_waits_for_another_ring_of_its_task_and_a_lock_it_cannot_make_stops_nothing() {
        let d = tempfile::tempdir().unwrap();
        let lock = d.path().join(".ring-t1.lock");
        let p = profile();
        let mut cfg = Config::default().send;
        (cfg.settle_ms, cfg.enter_wait_ms, cfg.enter_retries) = (0, 0, 0);
        let target = |l: std::path::PathBuf| Target {
            pane: Some("%1"),
            claim: None,
            profile: Some(&p),
            busy_record: None,
            spawned_at: None,
            ring_lock: Some(l),
        };
        // Held past the longest ring: nothing typed, held back.
        let f = FakePane::with("%1", "claude");
        let other = crate::fsx::lock(&lock, Duration::ZERO).unwrap();
        let started = std::time::Instant::now();
        assert_eq!(
            deliver(&f, &target(lock.clone()), ": ring", &cfg, &|_| {}),
            Outcome::RingLocked
        );
        assert_eq!(Outcome::RingLocked.as_str(), "queued");
        assert!(started.elapsed() >= ring_lock_wait(&cfg));
        assert!(
            f.screen("%1").calls.is_empty(),
            "{:?}",
            f.screen("%1").calls
        );
        // Released while this one waits: it rings, after the other.
        let f = FakePane::with("%1", "claude");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(other);
        });
        assert_eq!(
            deliver(&f, &target(lock.clone()), ": ring", &cfg, &|_| {}),
            Outcome::Rang
        );
        release.join().unwrap();
        assert_eq!(f.screen("%1").calls, vec!["type:: ring", "key:Enter"]);
        // A lock file that cannot be made (its directory is missing).
        let f = FakePane::with("%1", "claude");
        let missing = d.path().join("missing/.ring-t1.lock");
        assert_eq!(
            deliver(&f, &target(missing), ": ring", &cfg, &|_| {}),
            Outcome::Rang
        );
    }

    #[test]
    fn rings_once_and_submits() {
        let f = FakePane::with("%1", "claude");
        let p = profile();
        assert_eq!(ring(&f, Some(&p), false), Outcome::Rang);
        assert_eq!(f.screen("%1").calls, vec!["type:: ring", "key:Enter"]);
        assert_eq!(f.screen("%1").history, vec![": ring"]);
    }

    #[test]
    fn swallowed_enter_is_pressed_again_never_retyped() {
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.swallow_enters = 2);
        let p = profile();
        assert_eq!(ring(&f, Some(&p), false), Outcome::Rang);
        let calls = f.screen("%1").calls;
        assert_eq!(calls.iter().filter(|c| c.starts_with("type:")).count(), 1);
        assert_eq!(calls.iter().filter(|c| *c == "key:Enter").count(), 3);
    }

    #[test]
    fn enter_retries_are_bounded() {
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.swallow_enters = 100);
        let p = profile();
        assert_eq!(ring(&f, Some(&p), false), Outcome::Failed);
        assert_eq!(f.screen("%1").calls.len(), 1 + 4);
    }

    #[test]
    fn dead_gone_busy_and_someone_elses_text() {
        let p = profile();
        let f = FakePane::with("%1", "bash");
        assert_eq!(ring(&f, Some(&p), false), Outcome::Dead);
        let f = FakePane::with("%2", "claude");
        assert_eq!(ring(&f, Some(&p), false), Outcome::Dead);
        let f = FakePane::with("%1", "claude");
        assert_eq!(ring(&f, Some(&p), true), Outcome::Queued);
        f.edit("%1", |s| s.history.push("working… esc to interrupt".into()));
        assert_eq!(ring(&f, Some(&p), false), Outcome::Queued);
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.composer = "half a thought".into());
        assert_eq!(ring(&f, Some(&p), false), Outcome::Skipped);
        assert!(f.screen("%1").calls.is_empty());
        let f = FakePane {
            broken: true,
            ..FakePane::with("%1", "claude")
        };
        assert_eq!(ring(&f, Some(&p), false), Outcome::Failed);
        let cfg = Config::default().send;
        assert_eq!(
            deliver(
                &f,
                &Target {
                    pane: None,
                    claim: None,
                    profile: None,
                    busy_record: None,
                    spawned_at: None,
                    ring_lock: None,
                },
                "x",
                &cfg,
                &|_| {}
            ),
            Outcome::NoPane
        );
    }

    #[test]
    fn a_dialog_is_never_typed_into_and_a_missing_composer_is_waited_for() {
        let mut p = profile();
        p.dialogs = vec![crate::harness::Dialog {
            name: "trust".into(),
            regex: regex::Regex::new("trust this folder").unwrap(),
        }];
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.history.push("Do you trust this folder?".into()));
        assert_eq!(ring(&f, Some(&p), false), Outcome::Dialog);
        assert!(f.screen("%1").calls.is_empty());
        // No composer on the screen (an agent still booting): looked for
        // a bounded while, then nothing typed.
        let mut q = profile();
        q.composer_regex = Some(regex::Regex::new("^never (.*)$").unwrap());
        let f = FakePane::with("%1", "claude");
        let slept = std::cell::Cell::new(0u64);
        let cfg = Config::default().send;
        let target = Target {
            pane: Some("%1"),
            claim: None,
            profile: Some(&q),
            busy_record: None,
            spawned_at: None,
            ring_lock: None,
        };
        let out = deliver(&f, &target, ": ring", &cfg, &|d| {
            slept.set(slept.get() + u64::try_from(d.as_millis()).unwrap());
        });
        assert_eq!(out, Outcome::Skipped);
        assert!(f.screen("%1").calls.is_empty());
        assert_eq!(slept.get(), COMPOSER_WAIT_MS);
    }

    /// An exit command: it must show before Enter, and a swallowed Enter
    /// is pressed again (bounded); an agent gone after a press took it.
    #[test]
    fn settle_then_press_until_taken() {
        let cfg = Config::default().send;
        let p = profile();
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.swallow_enters = 1);
        f.type_text("%1", "/quit").unwrap();
        let slept = std::cell::Cell::new(0u64);
        let sleep = |d: Duration| slept.set(slept.get() + u64::try_from(d.as_millis()).unwrap());
        assert!(settle(&f, Some(&p), "%1", "/quit", &cfg, &sleep));
        assert_eq!(slept.get(), cfg.settle_ms, "seen at once: no polling");
        let (out, presses) =
            press_until_taken(&f, Some(&p), "%1", "/quit", &cfg, &|_| {}, &|| false);
        assert_eq!((out, presses), (Outcome::Rang, 2));
        assert_eq!(f.screen("%1").history, vec!["/quit"]);
        // Text that never shows is waited for a bounded while only.
        let f = FakePane::with("%1", "claude");
        slept.set(0);
        assert!(!settle(&f, Some(&p), "%1", "/quit", &cfg, &sleep));
        assert_eq!(slept.get(), SETTLE_WAIT_MS + cfg.settle_ms);
        // Never taken: 1 + enter_retries presses, then failed.
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.swallow_enters = 100);
        f.type_text("%1", "/quit").unwrap();
        let (out, presses) =
            press_until_taken(&f, Some(&p), "%1", "/quit", &cfg, &|_| {}, &|| false);
        assert_eq!((out, presses), (Outcome::Failed, 1 + cfg.enter_retries));
        // Gone after the first press: taken, no second press.
        let (out, presses) =
            press_until_taken(&f, Some(&p), "%1", "/quit", &cfg, &|_| {}, &|| true);
        assert_eq!((out, presses), (Outcome::Rang, 1));
    }

    /// A profile whose screen shows every turn: a busy record no hook
    /// closed is overruled by a screen that reads idle (the ring goes in),
    /// never by a busy screen, nor — while the record is fresh — by the
    /// prompt still sitting in the composer.
    #[test]
    fn an_idle_screen_overrules_a_busy_record_only_for_a_whole_turn_profile() {
        let cfg = Config::default().send;
        let mut p = profile();
        p.busy_whole_turn = true;
        let now = crate::clock::now();
        let ring_at = |f: &FakePane, p: &HarnessProfile, at: u64| {
            let t = Target {
                pane: Some("%1"),
                claim: None,
                profile: Some(p),
                busy_record: Some(at),
                spawned_at: None,
                ring_lock: None,
            };
            deliver(f, &t, ": ring", &cfg, &|_| {})
        };
        let f = FakePane::with("%1", "claude");
        assert_eq!(ring_at(&f, &p, now - 60), Outcome::Rang);
        assert_eq!(f.screen("%1").history, vec![": ring"]);
        let f = FakePane::with("%1", "claude");
        assert_eq!(ring_at(&f, &p, now), Outcome::Rang, "empty: at once");
        // A busy screen keeps it queued, record or not.
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| {
            s.history.push("* Working (esc to interrupt)".into());
        });
        assert_eq!(ring_at(&f, &p, now - 60), Outcome::Queued);
        assert!(f.screen("%1").calls.is_empty());
        // Text in the composer: the turn may not be drawn yet (queued),
        // or it is someone's text (skipped); never typed into.
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.composer = "wait".into());
        assert_eq!(ring_at(&f, &p, now), Outcome::Queued);
        assert_eq!(ring_at(&f, &p, now - 60), Outcome::Skipped);
        assert!(f.screen("%1").calls.is_empty());
        // Without the promise the record stands.
        p.busy_whole_turn = false;
        let f = FakePane::with("%1", "claude");
        assert_eq!(ring_at(&f, &p, now - 60), Outcome::Queued);
        assert!(f.screen("%1").calls.is_empty());
    }

    #[test]
    fn an_unsent_doorbell_from_before_is_pressed_not_retyped() {
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.composer = ": ring".into());
        let p = profile();
        assert_eq!(ring(&f, Some(&p), false), Outcome::Rang);
        assert_eq!(f.screen("%1").calls, vec!["key:Enter"]);
    }

    fn ring_spawned(f: &FakePane, p: &HarnessProfile, spawned_at: u64) -> Outcome {
        let cfg = Config::default().send;
        let t = Target {
            pane: Some("%1"),
            claim: None,
            profile: Some(p),
            busy_record: None,
            spawned_at: Some(spawned_at),
            ring_lock: None,
        };
        deliver(f, &t, ": ring", &cfg, &|_| {})
    }

    /// Right after a spawn, a screen with no composer is an agent still
    /// starting up: the ring is `booting` (owed), not `skipped`, and
    /// nothing is typed either way.
    #[test]
    fn no_composer_right_after_a_spawn_is_booting_later_skipped() {
        let p = profile();
        let now = crate::clock::now();
        for (at, want) in [
            (now, Outcome::Booting),
            (now - BOOT_WINDOW_SECS + 5, Outcome::Booting),
            (now - BOOT_WINDOW_SECS - 5, Outcome::Skipped),
        ] {
            let f = FakePane::with("%1", "claude");
            f.edit("%1", |s| s.no_composer = true);
            assert_eq!(ring_spawned(&f, &p, at), want, "spawned {}s ago", now - at);
            assert!(f.screen("%1").calls.is_empty());
        }
    }

    /// An agent that draws its composer before it reads its input drops
    /// the typed line: no Enter is pressed and the ring is owed, never a
    /// false `rang`. Once it reads, the same ring lands.
    #[test]
    fn a_typed_line_that_never_shows_while_booting_is_owed_not_rang() {
        let p = profile();
        let now = crate::clock::now();
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.deaf = true);
        assert_eq!(ring_spawned(&f, &p, now), Outcome::Booting);
        assert_eq!(f.screen("%1").calls, vec!["type:: ring"]);
        f.edit("%1", |s| s.deaf = false);
        assert_eq!(ring_spawned(&f, &p, now), Outcome::Rang);
        assert_eq!(f.screen("%1").history, vec![": ring"]);
    }

    #[test]
    fn without_a_composer_regex_the_cursor_line_decides() {
        let f = FakePane::with("%1", "cat");
        f.edit("%1", |s| s.swallow_enters = 1);
        assert_eq!(ring(&f, None, false), Outcome::Rang);
        assert_eq!(f.screen("%1").calls.len(), 3);
    }

    /// Someone's few typed characters are not "our unsent doorbell" just
    /// because the doorbell happens to contain them: pressing Enter would
    /// send their text.
    #[test]
    fn a_short_piece_of_text_is_not_taken_for_the_doorbell() {
        let door = ": 'firstmate inbox: new mail in /h/state/t1.inbox - read each *.msg'";
        let cfg = Config::default().send;
        let p = profile();
        let ring_door = |f: &FakePane| {
            let t = Target {
                pane: Some("%1"),
                claim: None,
                profile: Some(&p),
                busy_record: None,
                spawned_at: None,
                ring_lock: None,
            };
            deliver(f, &t, door, &cfg, &|_| {})
        };
        for theirs in ["m", "then run", "inbox", "read each"] {
            let f = FakePane::with("%1", "claude");
            f.edit("%1", |s| s.composer = theirs.into());
            assert_eq!(ring_door(&f), Outcome::Skipped, "{theirs:?}");
            assert!(f.screen("%1").calls.is_empty(), "{theirs:?}");
        }
        // A long enough start or end of the doorbell, or the doorbell twice,
        // is ours: pressed, never retyped.
        for ours in [
            &door[..30],
            &door[door.len() - 25..],
            &format!("{door}{door}")[..],
        ] {
            let f = FakePane::with("%1", "claude");
            f.edit("%1", |s| s.composer = ours.into());
            assert_eq!(ring_door(&f), Outcome::Rang, "{ours:?}");
            assert_eq!(f.screen("%1").calls, vec!["key:Enter"], "{ours:?}");
        }
    }

    #[test]
    fn without_a_composer_regex_half_typed_text_or_copy_mode_is_skipped() {
        let f = FakePane::with("%1", "bash");
        f.edit("%1", |s| s.composer = "echo HALF".into());
        assert_eq!(ring(&f, None, false), Outcome::Skipped);
        assert!(f.screen("%1").calls.is_empty());
        let f = FakePane::with("%1", "bash");
        f.edit("%1", |s| s.in_mode = true);
        assert_eq!(ring(&f, None, false), Outcome::Skipped);
        let p = profile();
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.in_mode = true);
        assert_eq!(ring(&f, Some(&p), false), Outcome::Skipped);
        assert!(f.screen("%1").calls.is_empty());
        // A doorbell left on the cursor line is pressed, not retyped.
        let f = FakePane::with("%1", "bash");
        f.edit("%1", |s| s.composer = ": ring".into());
        assert_eq!(ring(&f, None, false), Outcome::Rang);
        assert_eq!(f.screen("%1").calls, vec!["key:Enter"]);
    }

    #[test]
    fn doorbell_is_constant_quoted_and_printable() {
        let d = tempfile::tempdir().unwrap();
        let odd = d.path().join("it's here");
        std::fs::create_dir(&odd).unwrap();
        let home = Home::at(&odd).unwrap();
        let id = TaskId::parse("t1").unwrap();
        let a = doorbell(&home, &id);
        assert_eq!(a, doorbell(&home, &id));
        assert!(a.starts_with(": "));
        assert!(a.contains(r"it'\''s here"));
        assert!(a.contains("fm-ack t1"));
        assert!(!a.chars().any(char::is_control));
    }

    /// A bare shell reading the doorbell parses it, runs nothing, prints
    /// nothing and creates nothing — even with quotes, `$`, `*` and `<n>`.
    #[test]
    fn the_doorbell_is_a_shell_no_op() {
        let d = tempfile::tempdir().unwrap();
        let odd = d.path().join("it's $HOME `x` *");
        std::fs::create_dir(&odd).unwrap();
        let home = Home::at(&odd).unwrap();
        let id = TaskId::parse("t1").unwrap();
        let line = doorbell(&home, &id);
        let cwd = d.path().join("cwd");
        std::fs::create_dir(&cwd).unwrap();
        for (sh, flags) in [("sh", "-nc"), ("sh", "-c"), ("bash", "-c")] {
            let Ok(out) = std::process::Command::new(sh)
                .args([flags, &line])
                .current_dir(&cwd)
                .output()
            else {
                continue;
            };
            assert!(out.status.success(), "{sh} {flags}: {out:?}");
            assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
        }
        assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);
        // Everything after `: ` is one word: printed back, it is the whole
        // notice with the inbox path intact.
        let word = line.strip_prefix(": ").unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("printf '%s|' {word}")])
            .output()
            .unwrap();
        let said = String::from_utf8(out.stdout).unwrap();
        assert_eq!(said.matches('|').count(), 1, "{said}");
        assert!(said.starts_with("firstmate inbox: new mail in "), "{said}");
        assert!(
            said.contains(&home.inbox(&id).display().to_string()),
            "{said}"
        );
    }
}
