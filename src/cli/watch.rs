//! `fm-watch` (docs/spec/watch.md#modes): the daemon, `--once`, `--until-wake`,
//! `--drain`, `--status` and `--crontab`.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use serde::Serialize;

use super::common::{self, Ctx, HomeArg};
use crate::error::{Result, exit};
use crate::home::Home;
use crate::inbox::ladder_files::LadderFiles;
use crate::notify::Notifier;
use crate::task_id::TaskId;
use crate::wakes::{self, Wake};
use crate::watch::daemon::{self, End, Followed, Options};
use crate::watch::ladder;
use crate::watch::pass::{self, Report, State};
use crate::{clock, fsx, inbox};

const TOOL: &str = "fm-watch";

/// Re-ring unacknowledged messages, escalate, and feed the captain's wakes.
#[derive(Debug, Parser)]
#[command(
    name = "fm-watch",
    version,
    group = clap::ArgGroup::new("mode").args(["once", "until_wake", "drain", "status", "crontab", "wakes_from"]),
    after_help = "Examples:\n  fm-watch                      # foreground daemon until Ctrl-C\n  fm-watch --once               # one pass (for cron)\n  fm-watch --drain --json       # new wakes since the last drain\n  fm-watch --status\n  fm-watch --crontab >> my.crontab"
)]
pub(crate) struct Args {
    /// Run one pass, then exit
    #[arg(long)]
    once: bool,
    /// Run until the first new wake, print it (with any others already
    /// logged by then) and exit 0
    #[arg(long)]
    until_wake: bool,
    /// Print wakes not yet drained and advance the cursor
    #[arg(long)]
    drain: bool,
    /// Lock holder, heartbeat age, tasks with pending records
    #[arg(long)]
    status: bool,
    /// Print a crontab line running `fm-watch --once` for this home
    #[arg(long)]
    crontab: bool,
    /// JSON output
    #[arg(long)]
    json: bool,
    /// Poll only, without filesystem events
    #[arg(long, hide = true)]
    no_notify: bool,
    /// Print, as one JSON line, the wakes past this byte offset of the log
    /// and the new end; no cursor moves (a captain's drain across hosts)
    #[arg(long, value_name = "OFFSET")]
    wakes_from: Option<u64>,
    #[command(flatten)]
    home: HomeArg,
}

pub(crate) fn command() -> clap::Command {
    Args::command()
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    common::run_tool(TOOL, args, run)
}

fn run(a: Args) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    if a.crontab {
        return crontab(&ctx.home);
    }
    if let Some(offset) = a.wakes_from {
        return crate::route::wakes::answer(&ctx.home, offset);
    }
    if a.drain {
        return drain(&ctx.home, &ctx.cfg, a.json);
    }
    if a.status {
        return status(&ctx, a.json);
    }
    daemon::install_signals();
    let start = if a.until_wake {
        Some(wakes::end_offset(&ctx.home)?)
    } else {
        None
    };
    // `--until-wake` also ends on a configured host's new wake.
    let hosts = start.and_then(|_| {
        crate::route::wakes::Feed::start(
            &ctx.home,
            &ctx.cfg,
            crate::route::wakes::From::Now,
            crate::route::wakes::FEED_EVERY,
        )
        .map(std::sync::Arc::new)
    });
    let mut lock = match (daemon::acquire(&ctx.home)?, start) {
        (Ok(lock), _) => lock,
        // Another watcher acts: wait for its wakes, or take over if it dies.
        (Err(_), Some(start)) => match daemon::follow(&ctx.home, start, hosts.as_deref(), None)? {
            Followed::End(end) => return finish_loop(end, a.json, hosts.as_deref()),
            Followed::Lock(lock) => lock,
        },
        (Err(pid), None) => {
            let pid = pid.map_or_else(|| "?".into(), |p| p.to_string());
            common::out(&format!("{TOOL}: already running (pid {pid})"))?;
            return Ok(exit::OK);
        }
    };
    // Before any wake of this run, so a channel's first cursor is not
    // placed past them.
    let notifier = Notifier::start(&ctx.home, &ctx.cfg);
    let recovered = daemon::recovered_wake(&ctx.home, &ctx.cfg, &lock);
    lock.record_pid()?;
    let result = if a.once {
        once(&ctx, a.json, recovered)
    } else {
        if start.is_none() {
            crate::output::err_line(&format!(
                "{TOOL}: watching {} (pid {}); Ctrl-C to stop",
                ctx.home.root().display(),
                std::process::id()
            ));
            if let Some(w) = &recovered {
                let _ = common::out(&wake_line(w, a.json));
            }
            // Usage per worker, counted beside the loop (docs/crew-state.md).
            crate::usage::count_in_background(&ctx.home, &ctx.cfg);
        }
        let opts = Options {
            until_wake: start,
            no_notify: a.no_notify,
            hosts: hosts.clone(),
            deadline: None,
        };
        let quiet = start.is_some();
        let json = a.json;
        let mut show = |r: &Report| {
            if !r.wakes.is_empty() {
                notifier.poke();
            }
            if !quiet {
                show_report(r, json);
            }
        };
        daemon::run(&ctx.home, &ctx.cfg, &opts, &mut lock, &mut show)
            .and_then(|end| finish_loop(end, json, hosts.as_deref()))
    };
    notifier.finish();
    lock.release();
    crate::watch::hook::wait_all();
    result
}

/// Prints the wakes that ended the loop: the local ones, merged in time
/// order with the hosts' (a host's line ends with ` · host <name>`, its
/// JSON object has `"host"`, as `--drain` prints them).
fn finish_loop(end: End, json: bool, hosts: Option<&crate::route::wakes::Feed>) -> Result<u8> {
    match end {
        End::Wakes(ws) => {
            let Some(hosts) = hosts else {
                for w in &ws {
                    common::out(&wake_line(w, json))?;
                }
                return Ok(exit::OK);
            };
            for m in &hosts.merge(ws) {
                let line = if json {
                    crate::output::json_line(m)?
                } else {
                    let line = wake_line(&m.wake, false);
                    match &m.host {
                        Some(h) => format!("{line} \u{b7} host {h}"),
                        None => line,
                    }
                };
                common::out(&line)?;
            }
            Ok(exit::OK)
        }
        End::Superseded(pid) => {
            let pid = pid.map_or_else(|| "?".into(), |p| p.to_string());
            crate::output::err_line(&format!(
                "{TOOL}: state/ was replaced and another watcher (pid {pid}) holds its lock; stopping"
            ));
            Ok(exit::OK)
        }
        End::Signal(signal_hook::consts::SIGINT) => Ok(exit::INTERRUPTED),
        End::Signal(_) | End::Deadline => Ok(exit::OK),
    }
}

fn once(ctx: &Ctx, json: bool, recovered: Option<Wake>) -> Result<u8> {
    crate::usage::count(&ctx.home, &ctx.cfg);
    let mut state = State::load(&ctx.home)?;
    let mut report = pass::run(
        &ctx.home,
        &ctx.cfg,
        &daemon::tmux_for,
        &std::thread::sleep,
        &mut state,
        clock::now(),
    )?;
    if let Some(w) = recovered {
        report.wakes.insert(0, w);
    }
    if json {
        common::out_json(&report)?;
    } else {
        show_report(&report, false);
    }
    Ok(exit::OK)
}

/// Progress lines for one pass: every ring and every wake.
fn show_report(r: &Report, json: bool) {
    for ring in &r.rings {
        let line = if json {
            crate::output::json_line(ring).unwrap_or_default()
        } else {
            format!(
                "rang {} {} (attempt {}) \u{b7} {}",
                ring.task,
                fsx::numbered_name(ring.seq, inbox::EXT),
                ring.count,
                ring.outcome
            )
        };
        let _ = common::out(&line);
    }
    for w in &r.wakes {
        let _ = common::out(&wake_line(w, json));
    }
}

fn wake_line(w: &Wake, json: bool) -> String {
    if json {
        crate::output::json_line(w).unwrap_or_default()
    } else {
        format!(
            "wake {} {} {} {} \u{b7} {}",
            w.seq,
            clock::rfc3339(w.epoch),
            w.task,
            w.kind,
            w.text
        )
    }
}

fn drain(home: &Home, cfg: &crate::config::Config, json: bool) -> Result<u8> {
    fsx::ensure_dir(&home.state_dir())?;
    let _guard = fsx::lock(&home.wakes_cursor_lock(), fsx::LOCK_WAIT)?;
    let cursor = fsx::read_optional(&home.wakes_cursor())?
        .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<u64>().ok())
        .unwrap_or(0);
    let (new, end) = wakes::read_since(home, cursor)?;
    if let Some(mut far) = crate::route::wakes::gather(home, cfg)? {
        for w in &far.warnings {
            crate::output::err_line(&format!("{TOOL}: warning: {w}"));
        }
        let merged = far.merge(new);
        if json {
            common::out_json(&merged)?;
        } else {
            for m in &merged {
                let line = wake_line(&m.wake, false);
                common::out(&match &m.host {
                    Some(h) => format!("{line} \u{b7} host {h}"),
                    None => line,
                })?;
            }
        }
        if end != cursor {
            fsx::atomic_write(&home.wakes_cursor(), format!("{end}\n").as_bytes())?;
        }
        far.commit(home)?;
        return Ok(exit::OK);
    }
    if json {
        common::out_json(&new)?;
    } else {
        for w in &new {
            common::out(&wake_line(w, false))?;
        }
    }
    if end != cursor {
        fsx::atomic_write(&home.wakes_cursor(), format!("{end}\n").as_bytes())?;
    }
    Ok(exit::OK)
}

#[derive(Debug, Serialize)]
struct TaskLine {
    id: String,
    pending: usize,
    oldest_age_secs: Option<u64>,
    ring_count: u64,
    escalated: bool,
}

#[derive(Debug, Serialize)]
struct StatusReport {
    running: bool,
    pid: Option<u32>,
    heartbeat_age_secs: Option<u64>,
    tasks: Vec<TaskLine>,
}

fn status(ctx: &Ctx, json: bool) -> Result<u8> {
    let home = &ctx.home;
    let lock = home.watch_lock();
    let running = fsx::exists(&lock)? && matches!(fsx::try_lock(&lock), Ok(None));
    let now = clock::now();
    let heartbeat_age_secs = fsx::stat(&home.watch_beat())
        .ok()
        .flatten()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.elapsed().ok())
        .map(|d| d.as_secs());
    let mut tasks = Vec::new();
    for id in pass::scan_tasks(home)? {
        let seqs = inbox::pending(home, &id).unwrap_or_default();
        if seqs.is_empty() {
            continue;
        }
        tasks.push(task_line(home, &id, &seqs, now));
    }
    let report = StatusReport {
        running,
        pid: running.then(|| daemon::recorded_pid(home)).flatten(),
        heartbeat_age_secs,
        tasks,
    };
    if json {
        common::out_json(&report)?;
        return Ok(exit::OK);
    }
    let beat = report.heartbeat_age_secs.map_or_else(
        || "no heartbeat yet".into(),
        |s| format!("heartbeat {} ago", clock::age(s)),
    );
    let who = match (report.running, report.pid) {
        (true, Some(p)) => format!("running (pid {p})"),
        (true, None) => "running".into(),
        (false, _) => "not running".into(),
    };
    common::out(&format!("watcher: {who} \u{b7} {beat}"))?;
    for t in &report.tasks {
        let age = t
            .oldest_age_secs
            .map(|s| format!(" \u{b7} oldest {}", clock::age(s)))
            .unwrap_or_default();
        let esc = if t.escalated { " \u{b7} escalated" } else { "" };
        common::out(&format!(
            "{}: {} pending{age} \u{b7} rung {}{esc}",
            t.id, t.pending, t.ring_count
        ))?;
    }
    Ok(exit::OK)
}

fn task_line(home: &Home, id: &TaskId, seqs: &[u64], now: u64) -> TaskLine {
    let oldest = seqs
        .first()
        .and_then(|&s| inbox::load_pending(home, id, s).ok().flatten())
        .and_then(|r| clock::parse_rfc3339(&r.at))
        .map(|at| now.saturating_sub(at));
    let (files, _) = LadderFiles::load(home, id);
    let tracked: Option<ladder::RingState> = files.ring.filter(|r| seqs.contains(&r.seq));
    TaskLine {
        id: id.to_string(),
        pending: seqs.len(),
        oldest_age_secs: oldest,
        ring_count: tracked.map_or(0, |r| r.count),
        escalated: files.escalated.is_some_and(|s| seqs.contains(&s)),
    }
}

/// The crontab line's log bound (bytes), before it moves to `.1`.
const LOG_MAX: u64 = 1024 * 1024;

#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the running binary's own directory"
)]
fn crontab(home: &Home) -> Result<u8> {
    use crate::shq::quote as shell_quote;
    let exe = std::env::current_exe().ok();
    let sibling = exe
        .as_ref()
        .and_then(|e| e.parent())
        .map(|d| d.join("fm-watch"))
        .filter(|p| p.is_file());
    let program = match sibling {
        Some(p) => shell_quote(&p.display().to_string()),
        None => "fm-watch".to_string(),
    };
    // cron's PATH is /usr/bin:/bin: the line carries this shell's (absolute
    // entries, fm-watch's own directory first) so tmux, git and the on_wake
    // hook's programs are found as they are here.
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    let own = exe
        .as_ref()
        .and_then(|e| e.parent())
        .map(std::path::Path::to_path_buf);
    let here = std::env::var_os("PATH").unwrap_or_default();
    for d in own.into_iter().chain(std::env::split_paths(&here)) {
        if d.is_absolute() && !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    for d in ["/usr/bin", "/bin"] {
        if !dirs.iter().any(|x| x.as_os_str() == d) {
            dirs.push(d.into());
        }
    }
    let path = std::env::join_paths(dirs).map_or_else(
        |_| "/usr/bin:/bin".into(),
        |p| p.to_string_lossy().into_owned(),
    );
    // The watcher's output goes to a log under state/, not /dev/null; past
    // LOG_MAX bytes it moves to `watch.log.1` (one generation kept).
    let log = shell_quote(&home.watch_log().display().to_string());
    let line = format!(
        "* * * * * FM_HOME={} PATH={} {program} --once >>{log} 2>&1; [ \"$(wc -c <{log})\" -le {LOG_MAX} ] || mv -f {log} {log}.1",
        shell_quote(&home.root().display().to_string()),
        shell_quote(&path),
    );
    common::out(&cron_escape(&line))?;
    Ok(exit::OK)
}

/// Cron turns an unescaped `%` in a command into a newline (and feeds the
/// rest to stdin), and turns `\%` into `%`: every `%` is written `\%`.
/// `line`'s paths are single-quoted, so a backslash right before a `%` is a
/// path character inside quotes; cron would read that pair as an escaped
/// `%` and drop the backslash, so the quote is closed and reopened (`''`)
/// between them.
fn cron_escape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if c == '%' {
            if out.ends_with('\\') {
                out.push_str("''");
            }
            out.push_str("\\%");
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What cron (vixie/cronie) hands the shell: `\%` becomes `%`, a
    /// backslash before anything else stays with it, and an unescaped `%`
    /// ends the command.
    fn as_cron_runs_it(cmd: &str) -> String {
        let mut out = String::new();
        let mut escaped = false;
        for c in cmd.chars() {
            if escaped {
                if c == '%' {
                    out.pop();
                }
                out.push(c);
                escaped = false;
                continue;
            }
            if c == '%' {
                break;
            }
            escaped = c == '\\';
            out.push(c);
        }
        out
    }

    #[test]
    fn percent_signs_reach_the_shell_intact() {
        assert_eq!(cron_escape("FM_HOME='/h/100%' x"), "FM_HOME='/h/100\\%' x");
        assert_eq!(cron_escape("plain"), "plain");
        for home in ["/h/100%", "/h/%%x%", "/h/a\\%b\\", "/h/it's 5%", "%"] {
            let line = cron_escape(&format!(
                "FM_HOME={} sh -c 'printf %s \"$FM_HOME\"'",
                crate::shq::quote(home)
            ));
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(as_cron_runs_it(&line))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), home, "{line}");
        }
    }
}
