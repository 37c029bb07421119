//! `fm-brief`'s use cases (docs/spec/brief.md#history, docs/spec/chains.md): write or re-apply a
//! brief,
//! revoke it, write a structured response — each with its `brief.*` event,
//! produced here and nowhere else.
//!
//! A re-applied or revoked brief is announced to a live worker: a
//! `brief updated: re-read <path>` record queued and rung through
//! [`crate::inbox::send`]. The announcement never undoes the brief: a
//! failure to queue is reported in the report's notice and warnings.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{BriefHeader, BriefSpec, Lineage, MetaSync, response, store};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::{Entry, Event, Tool};
use crate::home::Home;
use crate::inbox::{self, Outgoing, Ring};
use crate::meta::{self, Mode, TaskMeta};
use crate::task_id::TaskId;
use crate::tmux::pane::Pane;
use crate::tmux::recipient::Recipient;
use crate::{clock, fsx};

/// What writing or revoking a brief did (`--json` prints it as is).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `written`, `scaffolded` or `revoked`.
    pub(crate) action: &'static str,
    pub(crate) path: PathBuf,
    /// `ship`, `scout`, `secondmate`, or `revoked`.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mode: Option<Mode>,
    /// Placeholders the brief still holds (a scaffold).
    pub(crate) placeholders: Vec<&'static str>,
    /// Where the replaced brief went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) history: Option<PathBuf>,
    /// What the live worker was told, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) notice: Option<String>,
    /// Problems that did not stop the write, for stderr.
    #[serde(skip)]
    pub(crate) warnings: Vec<String>,
}

/// Writes the brief `spec` renders (`force` replaces an existing one,
/// keeping it in history) and records `brief.written` by `actor`. A filled
/// brief its own `--check` would refuse is never written.
pub(crate) fn write(
    home: &Home,
    cfg: &Config,
    spec: &BriefSpec,
    force: bool,
    actor: &str,
) -> Result<Report> {
    let text = render_checked(home, spec, force)?;
    write_notifying(home, cfg, spec, &text, force, actor, true)
}

/// [`write`] of the captain's copy of a brief whose task runs on another
/// host (`text` is [`render_checked`]'s): the same checks, history and
/// meta, no notice (the worker is there, told by the far side) and no
/// event (the far side records it).
pub(crate) fn write_here(
    home: &Home,
    cfg: &Config,
    spec: &BriefSpec,
    text: &str,
    force: bool,
) -> Result<()> {
    write_notifying(home, cfg, spec, text, force, "", false).map(|_| ())
}

/// The brief `spec` renders, refused as [`write`] would refuse it (a
/// filled brief its own `--check` would refuse; an existing brief without
/// `force`), writing nothing.
pub(crate) fn render_checked(home: &Home, spec: &BriefSpec, force: bool) -> Result<String> {
    let text = super::render(spec);
    if spec.placeholders().is_empty() {
        // An unclosed code fence in the intent, say, would hide a heading.
        let problems = super::check::problems(&text, None);
        if !problems.is_empty() {
            return Err(Error::usage(format!(
                "the brief would not pass fm-brief --check: {}",
                problems.join("; ")
            )));
        }
    }
    store::refuse_existing(home, &spec.id, force)?;
    Ok(text)
}

fn write_notifying(
    home: &Home,
    cfg: &Config,
    spec: &BriefSpec,
    text: &str,
    force: bool,
    actor: &str,
    notify: bool,
) -> Result<Report> {
    let id = &spec.id;
    let placeholders = spec.placeholders();
    if spec.lineage.as_ref().is_some_and(|l| l.parent.is_some()) {
        // Refuse a symlinked meta before the brief is written, not after.
        fsx::refuse_symlink(&home.meta(id))?;
    }
    let w = store::write(home, id, text.as_bytes(), force)?;
    if let Some(Lineage {
        parent: Some(p), ..
    }) = &spec.lineage
    {
        meta::update(home, id, |m| m.set("parent", p.as_str()))?;
    }
    if w.history.is_some() && fsx::exists(&home.meta(id))? {
        follow_brief_in_meta(home, id, text)?;
    }
    let mut warnings = Vec::new();
    let notice = w
        .history
        .as_ref()
        .filter(|_| notify)
        .map(|_| notify_live_worker(home, cfg, id, &w.path, &mut warnings));
    let written = Done {
        w,
        kind: spec.kind,
        placeholders,
        notice,
        warnings,
    };
    Ok(written.report(home, id, notify.then_some(actor)))
}

/// What a brief's write did, for its event and its report.
struct Done {
    w: store::Written,
    kind: super::BriefKind,
    placeholders: Vec<&'static str>,
    notice: Option<String>,
    warnings: Vec<String>,
}

impl Done {
    /// Records `brief.written` by `actor` (none: no event) and reports.
    fn report(self, home: &Home, id: &TaskId, actor: Option<&str>) -> Report {
        let Done {
            w,
            kind,
            placeholders,
            notice,
            warnings,
        } = self;
        if let Some(actor) = actor {
            let event = Event::BriefWritten {
                kind: kind.name(),
                forced: w.history.is_some(),
                scaffold: !placeholders.is_empty(),
                mode: kind.mode().map(Mode::as_str),
            };
            Entry::new(clock::now(), Tool::Brief, id.as_str(), event)
                .by(actor)
                .record(home);
        }
        Report {
            action: if placeholders.is_empty() {
                "written"
            } else {
                "scaffolded"
            },
            path: w.path,
            kind: kind.name(),
            mode: kind.mode(),
            placeholders,
            history: w.history,
            notice,
            warnings,
        }
    }
}

/// Replaces task `id`'s brief by `text`, a brief rendered elsewhere (the
/// captain's side of a task on this host, a brief change of the far entry):
/// the old one goes to history, meta follows the new frontmatter, a live
/// worker is told, and `brief.written` is recorded as for `--force`. The
/// text must be a brief of this task (frontmatter whose `delegatee` is
/// `id`) and the task must be known here (exit 2 and 1 otherwise).
pub(crate) fn install(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    text: &str,
    force: bool,
    actor: &str,
) -> Result<Report> {
    let Ok(header) = BriefHeader::parse(text) else {
        return Err(Error::usage("the brief on stdin has no frontmatter"));
    };
    match header.delegatee.as_deref() {
        Some(d) if d == id.as_str() => {}
        other => {
            return Err(Error::usage(format!(
                "the brief on stdin is for task {}, not {id}",
                other.unwrap_or("(none)")
            )));
        }
    }
    let kind = match header.kind.as_deref() {
        Some("ship") => {
            super::BriefKind::Ship(Mode::parse(header.mode.as_deref().unwrap_or_default())?)
        }
        Some("scout") => super::BriefKind::Scout,
        Some("secondmate") => super::BriefKind::Secondmate,
        other => {
            return Err(Error::usage(format!(
                "the brief on stdin has kind {}: not ship, scout or secondmate",
                other.unwrap_or("(none)")
            )));
        }
    };
    if !meta::task_known(home, id)? {
        return Err(Error::refused(format!(
            "unknown task {id} on this host: no meta and no brief to replace"
        )));
    }
    let placeholders: Vec<&'static str> = [super::TASK_PLACEHOLDER, super::SPEC_PLACEHOLDER]
        .into_iter()
        .filter(|p| text.contains(p))
        .collect();
    let w = store::write(home, id, text.as_bytes(), force)?;
    if fsx::exists(&home.meta(id))? {
        follow_brief_in_meta(home, id, text)?;
    }
    let mut warnings = Vec::new();
    let notice = Some(notify_live_worker(home, cfg, id, &w.path, &mut warnings));
    let written = Done {
        w,
        kind,
        placeholders,
        notice,
        warnings,
    };
    Ok(written.report(home, id, Some(actor)))
}

/// [`revoke`] of the captain's copy of a brief whose task runs on another
/// host: history kept, no notice and no event (the far side's).
pub(crate) fn revoke_here(home: &Home, id: &TaskId) -> Result<()> {
    store::revoke(home, id, clock::now()).map(|_| ())
}

/// Revokes task `id`'s brief (history kept) and records `brief.revoked`.
pub(crate) fn revoke(home: &Home, cfg: &Config, id: &TaskId, actor: &str) -> Result<Report> {
    let w = store::revoke(home, id, clock::now())?;
    let mut warnings = Vec::new();
    let notice = Some(notify_live_worker(home, cfg, id, &w.path, &mut warnings));
    let event = Event::BriefRevoked {
        path: w.path.display().to_string(),
    };
    Entry::new(clock::now(), Tool::Brief, id.as_str(), event)
        .by(actor)
        .record(home);
    Ok(Report {
        action: "revoked",
        path: w.path,
        kind: "revoked",
        mode: None,
        placeholders: vec![],
        history: w.history,
        notice,
        warnings,
    })
}

/// Writes `data/<id>/response.md` and records `brief.responded` by
/// `actor`. A response belongs to a task someone briefed or spawned: a
/// mistyped id must not create a response nobody reads (exit 1).
pub(crate) fn respond(
    home: &Home,
    id: &TaskId,
    status: &str,
    body: &str,
    actor: &str,
) -> Result<PathBuf> {
    if !meta::task_known(home, id)? {
        return Err(Error::UnknownTask {
            id: id.to_string(),
            lacks: "no meta and no brief to respond to",
        });
    }
    let path = response::write(home, id, status, body, clock::now())?;
    let event = Event::BriefResponded {
        status: status.to_string(),
    };
    Entry::new(clock::now(), Tool::Brief, id.as_str(), event)
        .by(actor)
        .record(home);
    Ok(path)
}

/// Queues `brief updated: re-read <path>` in the inbox of a task whose
/// agent is alive (docs/spec/brief.md#history: one tmux call for the pane, then the
/// harness's liveness rule) and rings its doorbell as `fm-send` does (a
/// ring that does not land is the watcher's to retry). Without a live
/// agent nothing is queued and the notice says so.
fn notify_live_worker(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    path: &Path,
    warnings: &mut Vec<String>,
) -> String {
    let meta = TaskMeta::load(home, id).ok().flatten().unwrap_or_default();
    let r = Recipient::from_meta(cfg, id, &meta);
    let Some(pane) = r.pane.as_deref() else {
        return "no live worker notified (no pane recorded)".into();
    };
    let info = match r.tmux.info(pane) {
        Ok(Some(info)) if r.alive(&info) => info,
        Ok(Some(info))
            if r.claim
                .as_ref()
                .is_some_and(|c| c.check(Some(&info), None).is_err()) =>
        {
            return format!("no live worker notified (pane {pane} is gone: it is not this task's)");
        }
        Ok(Some(_)) => {
            return format!("no live worker notified (the agent in pane {pane} has exited)");
        }
        Ok(None) => return format!("no live worker notified (pane {pane} is gone)"),
        Err(e) => return format!("no live worker notified ({e})"),
    };
    let body = format!("brief updated: re-read {}", path.display());
    let msg = Outgoing {
        from: &cfg.brief.delegator,
        body: body.as_bytes(),
        fire_and_forget: false,
        dedupe: false,
    };
    let ring = Ring::Known(&r, &info);
    match inbox::send(home, cfg, Tool::Brief, id, &msg, ring, clock::now()) {
        Ok(sent) => sent.to_string(),
        Err(e) => {
            warnings.push(format!("brief written but the notice was not queued: {e}"));
            format!("not queued: {e}")
        }
    }
}

/// A re-applied brief may change what the task is (kind, mode, repo,
/// branch); spawn copied those into meta, and the gate and crew state read
/// them there. So a `--force` over a task that has a meta brings those keys
/// in line with the new brief: set from its frontmatter, or removed when it
/// has none (a scout has no mode).
fn follow_brief_in_meta(home: &Home, id: &TaskId, text: &str) -> Result<()> {
    let Ok(header) = BriefHeader::parse(text) else {
        return Ok(());
    };
    meta::update(home, id, |m| header.apply_to_meta(m, MetaSync::Follow))?;
    Ok(())
}
