//! The delivery legs (docs/spec/ring.md#legs) in `fm doctor`: per harness
//! with a leg, which leg its workers' doorbells take and for how many of
//! its tasks with a pane the leg can take one now (a live waiter of the
//! current spawn, a known thread); the rest are typed.

use std::collections::BTreeMap;

use super::{Check, Level};
use crate::config::Config;
use crate::home::Home;
use crate::leg::Leg;
use crate::meta::TaskMeta;

/// One `legs` line; `None` when no task with a pane has a harness with a
/// leg (and the legs are on).
pub(super) fn legs_check(home: &Home, cfg: &Config) -> Option<Check> {
    if !cfg.send.legs {
        return Some(Check::new(
            "legs",
            Level::Ok,
            "off ([send] legs = false): every doorbell is typed",
        ));
    }
    // harness → (leg, ready, tasks, why not by task, its program)
    let mut by: BTreeMap<String, (Leg, usize, usize, Vec<String>, String)> = BTreeMap::new();
    for id in home.task_ids_with_meta().unwrap_or_default() {
        let Ok(Some(meta)) = TaskMeta::load(home, &id) else {
            continue;
        };
        let Some(name) = meta.harness.clone().filter(|_| meta.pane.is_some()) else {
            continue;
        };
        let Some(profile) = crate::harness::profile(&cfg.harness, &name) else {
            continue;
        };
        let ready = match profile.leg {
            Leg::Typed => continue,
            Leg::Hook => crate::leg::claude::available(home, &id, &meta),
            Leg::Queue => crate::leg::codex::available(home, &id, &meta),
        };
        let program = profile.launch.first().cloned().unwrap_or_default();
        let e = by
            .entry(name)
            .or_insert((profile.leg, 0, 0, Vec::new(), program));
        e.2 += 1;
        match ready {
            Ok(()) => e.1 += 1,
            Err(why) => e.3.push(format!("{id}: {why}")),
        }
    }
    if by.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    let mut level = Level::Ok;
    for (name, (leg, ready, tasks, not, program)) in &by {
        let what = match leg {
            Leg::Hook => "waiters alive",
            Leg::Queue => "ready",
            Leg::Typed => "",
        };
        let mut part = format!("{name}: {leg} leg, {ready}/{tasks} {what}");
        if !not.is_empty() {
            level = Level::Warn;
            part.push_str(&format!(" (typed for {})", not.join(", ")));
        }
        // The queue leg needs the program's `queue` subcommand (asked once
        // per harness, in a throwaway home).
        if *leg == Leg::Queue
            && let Err(why) = crate::leg::codex::queue_present(program)
        {
            level = Level::Warn;
            part.push_str(&format!(" (no `{program} queue`: {why})"));
        }
        parts.push(part);
    }
    Some(Check::new("legs", level, parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legs_line_counts_live_waiters_per_harness() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let cfg = Config::default();
        assert!(legs_check(&home, &cfg).is_none());
        for (id, h) in [("a", "claude"), ("b", "claude"), ("s", "shell")] {
            let id = crate::task_id::TaskId::parse(id).unwrap();
            crate::meta::update(&home, &id, |m| {
                m.set("harness", h);
                m.set("pane", "%1");
                m.set("spawn_id", "00000000000000aa");
            })
            .unwrap();
        }
        let c = legs_check(&home, &cfg).unwrap();
        assert_eq!(c.level, Level::Warn);
        assert_eq!(
            c.detail,
            "claude: hook leg, 0/2 waiters alive (typed for a: no waiter, b: no waiter)"
        );
        let mut off = cfg.clone();
        off.send.legs = false;
        assert!(legs_check(&home, &off).unwrap().detail.starts_with("off"));
    }
}
