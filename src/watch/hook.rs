//! The `on_wake` hook (docs/spec/watch.md#wakes): an argv template run once per wake with
//! `{task}`, `{kind}` and `{text}` substituted inside each element — never
//! through a shell, so wake text reaches the program as one literal
//! argument. The values are the wake as stored in `wakes.log` (cleaned by
//! [`crate::wakes::append`]), so the hook sees exactly what the log and
//! stdout show. Hooks run beside the watcher, bounded in time; a failure is
//! logged on stderr and never stops the watcher.

use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::wakes::Wake;

/// Longest a hook may run before it is killed.
pub(crate) const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

static RUNNING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// The argv for one wake.
pub(crate) fn argv(template: &[String], task: &str, kind: &str, text: &str) -> Vec<String> {
    template
        .iter()
        .map(|a| {
            // One pass over the template, so substituted text is never
            // itself searched for placeholders.
            let mut out = String::new();
            let mut rest = a.as_str();
            while let Some(i) = rest.find('{') {
                out.push_str(&rest[..i]);
                let tail = &rest[i..];
                let (val, len) = if tail.starts_with("{task}") {
                    (task, 6)
                } else if tail.starts_with("{kind}") {
                    (kind, 6)
                } else if tail.starts_with("{text}") {
                    (text, 6)
                } else {
                    ("{", 1)
                };
                out.push_str(val);
                rest = &tail[len..];
            }
            out.push_str(rest);
            out
        })
        .collect()
}

/// Starts the hook for one appended wake in the background (nothing when
/// no hook is configured).
pub(crate) fn spawn(template: &[String], wake: &Wake) {
    let argv = argv(template, &wake.task, &wake.kind, &wake.text);
    let Some((program, args)) = argv.split_first() else {
        return;
    };
    // The caller's environment as it is: the hook is the user's program.
    let cmd = crate::proc::Cmd::new(program)
        .args(args)
        .timeout(HOOK_TIMEOUT);
    let program = program.clone();
    let handle = std::thread::spawn(move || match cmd.run() {
        Ok(out) if out.success() => {}
        Ok(out) => crate::output::err_line(&format!(
            "fm-watch: warning: on_wake hook {program} exited {}: {}",
            out.code()
                .map_or_else(|| "by signal".into(), |c| c.to_string()),
            out.stderr.trim()
        )),
        Err(f) => crate::output::err_line(&format!(
            "fm-watch: warning: on_wake hook {program}: {}",
            f.cause
        )),
    });
    if let Ok(mut v) = RUNNING.lock() {
        v.retain(|h| !h.is_finished());
        v.push(handle);
    }
}

/// Waits for running hooks (before a one-shot run exits).
pub(crate) fn wait_all() {
    let handles: Vec<_> = RUNNING
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default();
    for h in handles {
        let _ = h.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_substituted_once_and_literally() {
        let t: Vec<String> = ["notify", "{task}/{kind}", "{text}", "{other}"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let a = argv(&t, "t1", "escalation", "$(rm -rf /) {task}");
        assert_eq!(
            a,
            ["notify", "t1/escalation", "$(rm -rf /) {task}", "{other}"]
        );
    }
}
