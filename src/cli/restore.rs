//! `fm restore` (docs/spec/restore.md): every task whose agent died with
//! its tmux server, brought back — and `fm session-hook`, the hook that
//! records the agent's conversation id for it.

use std::ffi::OsString;

use super::common::{self, HomeArg};
use crate::control::{self, Action, RestoreLine};
use crate::error::{Error, Result};
use crate::task_id::TaskId;

const TOOL: &str = "fm";

/// `fm restore`'s arguments.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each task with a meta whose pane is gone (a reboot, a tmux server restart) gets a new window in its worktree: its agent's conversation resumed where the harness can (claude, codex), else started afresh with its brief. A pane still the task's is left alone, so running it twice changes nothing.\n\nExamples:\n  fm restore --dry-run\n  fm restore\n  fm restore fix-login"
)]
pub(crate) struct RestoreArgs {
    /// Only these tasks (default: every task)
    #[arg(value_name = "ID")]
    ids: Vec<OsString>,
    /// Say what would be done; change nothing
    #[arg(long)]
    dry_run: bool,
    /// Print the result as JSON
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    home: HomeArg,
}

/// What one run did, task by task, and the counts of the summary.
#[derive(Debug, Default, serde::Serialize)]
struct Report {
    tasks: Vec<RestoreLine>,
    failed: Vec<Failed>,
    restored: usize,
    resumed: usize,
    fresh: usize,
    skipped: usize,
    dry_run: bool,
}

#[derive(Debug, serde::Serialize)]
struct Failed {
    id: String,
    error: String,
}

pub(crate) fn run(a: RestoreArgs) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    let ids = if a.ids.is_empty() {
        crate::listing::Listing::read(&ctx.home)?
            .tasks
            .into_iter()
            .map(|t| t.id)
            .collect()
    } else {
        a.ids
            .iter()
            .map(|i| TaskId::parse_os(i))
            .collect::<Result<Vec<_>>>()?
    };
    let mut report = Report {
        dry_run: a.dry_run,
        ..Report::default()
    };
    let action = Action::Restore { dry_run: a.dry_run };
    for id in &ids {
        // Through the route: a task on a host is restored there.
        let got = crate::route::lifecycle::run(
            &ctx.home,
            &ctx.cfg,
            id,
            action.clone(),
            None,
            None,
            crate::grant::Actor::from_env(),
        );
        let line = match got {
            Ok(r) => {
                for w in &r.warnings {
                    crate::output::err_line(&format!("{TOOL}: warning: {w}"));
                }
                control::restore_line(&r.result).ok_or_else(|| {
                    Error::refused(format!("unexpected answer: {}", r.result.trim()))
                })
            }
            Err(e) => Err(e),
        };
        match line {
            Ok(l) => {
                if !a.json {
                    common::out(&l.line())?;
                }
                match &l {
                    RestoreLine::Restored { session, .. } => {
                        report.restored += 1;
                        if session.is_some() {
                            report.resumed += 1;
                        } else {
                            report.fresh += 1;
                        }
                    }
                    RestoreLine::Skipped { .. } => report.skipped += 1,
                }
                report.tasks.push(l);
            }
            Err(e) => {
                let error = common::describe(&e);
                if !a.json {
                    common::out(&format!("failed {id}: {error}"))?;
                }
                report.failed.push(Failed {
                    id: id.to_string(),
                    error,
                });
            }
        }
    }
    if a.json {
        common::out_json(&report)?;
    } else {
        common::out(&summary(&report))?;
    }
    Ok(u8::from(!report.failed.is_empty()))
}

/// The last line: `restored 3 (resumed 2, fresh 1), skipped 1, failed 0`.
fn summary(r: &Report) -> String {
    let verb = if r.dry_run {
        "would restore"
    } else {
        "restored"
    };
    format!(
        "{verb} {} (resumed {}, fresh {}), skipped {}, failed {}",
        r.restored,
        r.resumed,
        r.fresh,
        r.skipped,
        r.failed.len()
    )
}

/// `fm session-hook`'s arguments (run by the agent's hooks, hidden).
#[derive(Debug, clap::Args)]
pub(crate) struct SessionHookArgs {
    #[arg(value_name = "ID")]
    id: OsString,
    #[command(flatten)]
    home: HomeArg,
}

/// Reads the hook's JSON on stdin and records its `session_id`; prints
/// what it did (the hook sends it nowhere).
pub(crate) fn session_hook(a: &SessionHookArgs) -> Result<u8> {
    use std::io::Read;
    let id = TaskId::parse_os(&a.id)?;
    let home = crate::home::Home::resolve(a.home.home.as_deref())?;
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .take(1 << 20)
        .read_to_end(&mut input)
        .map_err(|e| Error::io("read", "<stdin>", e))?;
    let var = |k: &str| std::env::var(k).ok();
    let learned = control::session::learn(
        &home,
        &id,
        &input,
        var("TMUX_PANE").as_deref(),
        var("TMUX").as_deref(),
        var(control::session::SPAWN_ENV).as_deref(),
    )?;
    common::out(&format!("{learned:?}"))?;
    Ok(0)
}
