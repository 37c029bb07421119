//! Doorbell delivery (docs/spec/ring.md#doorbell, #delivery): the only text firstmate ever types
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

/// What happened to a ring (docs/spec/ring.md#outcomes).
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
    /// as `queued` (an outcome of docs/spec/ring.md#outcomes), with its own reason on stderr.
    #[serde(rename = "queued")]
    RingLocked,
}

impl Outcome {
    /// A ring held back with nothing typed, owed to the agent once it can
    /// take it (docs/spec/watch.md#ring-owed, `.ring-owed`): a busy agent, a dialog, an agent
    /// still booting, another ring holding the lock.
    pub fn owed(self) -> bool {
        matches!(
            self,
            Outcome::Queued | Outcome::RingLocked | Outcome::Dialog | Outcome::Booting
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Rang => "rang",
            // A held ring lock is reported as the `queued` of docs/spec/ring.md#outcomes.
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
    format!(": {}", crate::shq::quote(&notice(home, id)))
}

/// The doorbell's notice itself, printable characters only: what a
/// delivery leg hands over (docs/spec/ring.md#legs), and what the typed
/// line quotes.
pub fn notice(home: &Home, id: &TaskId) -> String {
    let inbox = home.inbox(id).display().to_string();
    let notice = format!(
        "firstmate inbox: new mail in {inbox} - read each *.msg in numeric order, act on it, then run fm-ack {id} <n> (or move it into handled/)"
    );
    notice
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
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
    /// The task's ring lock, held for the whole ring.
    pub(crate) ring_lock: RingLock,
    /// The profile's delivery leg could not take this ring
    /// (docs/spec/ring.md#legs): an agent still booting then gets nothing
    /// typed (`booting`, owed) — its leg arms itself as it starts.
    pub(crate) hold_for_leg: bool,
}

/// How a ring keeps to one ringer at a time.
#[derive(Debug, Clone)]
pub(crate) enum RingLock {
    /// Take the lock at this path ([`Home::ring_lock`]), waiting a bounded
    /// while for another ring to end.
    Wait(std::path::PathBuf),
    /// The caller holds it already (the watcher, which writes its ladder
    /// files under it first).
    Held,
    /// None at all (tests on a fake pane).
    #[cfg(test)]
    Without,
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

/// Rings the doorbell `line` in `target` (docs/spec/ring.md#delivery). `sleep` is injected
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
        // A vanished pane is a dead agent: nothing to type into (docs/spec/watch.md#ladder).
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
        RingLock::Wait(path) => match crate::fsx::try_lock(path) {
            Ok(Some(held)) => (Some(held), false),
            Ok(None) => match crate::fsx::lock(path, ring_lock_wait(cfg)) {
                Ok(held) => (Some(held), true),
                Err(crate::error::Error::LockTimeout { .. }) => return Outcome::RingLocked,
                Err(_) => (None, false),
            },
            Err(_) => (None, false),
        },
        RingLock::Held => (None, false),
        #[cfg(test)]
        RingLock::Without => (None, false),
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
        if target.hold_for_leg && target.booting(crate::clock::now()) {
            return Outcome::Booting;
        }
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

/// Presses Enter until `line`, typed into pane `id`, is taken (docs/spec/ring.md#delivery):
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
#[path = "deliver_tests.rs"]
mod tests;
