//! What the dashboard does to a worker's life (docs/top.md, "Acting on
//! workers"): a new worker (`n`: project, mode, intent, harness, task id
//! asked one after another in the prompt line, then the brief written and
//! the worker spawned), and interrupt, relaunch and teardown of the
//! selected row — the destructive ones asked once.
//!
//! Each is the use case the plain tools call, never a copy of it: the
//! brief through [`crate::route::brief::write`] (as `fm-brief`), the
//! lifecycle through [`crate::route::lifecycle::run`] (as `fm-control`),
//! so a remote row is acted on on its host, a refusal (unlanded work at
//! teardown) is the same refusal, and under `FM_MATE` the same grants
//! apply. The flows' state and their prompts are pure; [`spawn_new`],
//! [`act`] and [`known`] are the I/O, run by the loop.

use std::path::PathBuf;

use crate::brief::BriefKind;
use crate::brief::request::{BriefRequest, Text};
use crate::config::Config;
use crate::control::Action;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::meta::{Mode, TaskMeta};
use crate::route::Task;
use crate::task_id::TaskId;

/// A lifecycle verb on the selected row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Interrupt,
    Relaunch,
    Teardown,
}

impl Act {
    /// Whether the key asks once before acting: relaunch ends the agent's
    /// conversation, teardown removes the worktree; an interrupt only
    /// stops the turn in progress (a message resumes it).
    pub fn asks(self) -> bool {
        !matches!(self, Act::Interrupt)
    }

    pub fn verb(self) -> &'static str {
        match self {
            Act::Interrupt => "interrupt",
            Act::Relaunch => "relaunch",
            Act::Teardown => "tear down",
        }
    }

    /// The question asked once: the choice first, so a narrow terminal
    /// cuts only the explanation.
    pub fn question(self, id: &str) -> String {
        match self {
            Act::Interrupt => format!("interrupt {id}? (y/n) its turn stops"),
            Act::Relaunch => {
                format!("relaunch {id}? (y/n) the agent restarts, its conversation lost")
            }
            Act::Teardown => {
                format!("tear down {id}? (y/n) worktree removed, state archived")
            }
        }
    }

    fn action(self, note: Option<String>) -> Action {
        match self {
            Act::Interrupt => Action::Interrupt,
            Act::Relaunch => Action::Relaunch {
                note,
                harness: None,
                force: false,
            },
            // Never forced from here: unlanded work is refused, and
            // `fm-control <id> teardown --force` stays in the shell.
            Act::Teardown => Action::Teardown { force: false },
        }
    }
}

/// What the home already knows, to offer in the new worker's questions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Known {
    /// Every project a task's meta names, sorted, once each.
    pub projects: Vec<String>,
    /// The harness of the task spawned last (the question's default).
    pub harness: Option<String>,
    /// Task ids in use.
    pub ids: Vec<String>,
}

/// The questions of `n`, one after another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Project,
    Mode,
    Intent,
    Harness,
    Id,
}

/// A new worker as far as it has been asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWorker {
    pub step: Step,
    pub known: Known,
    pub project: String,
    pub mode: Option<Mode>,
    pub intent: String,
    pub harness: String,
}

/// A new worker fully asked: what [`spawn_new`] writes and starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSpec {
    pub id: String,
    pub project: PathBuf,
    pub mode: Mode,
    pub intent: String,
    pub harness: String,
}

/// After an answer: the next question (with the text it starts with), or
/// the whole spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Ask(Box<NewWorker>, String),
    Done(NewSpec),
}

/// The harness asked for when the home has spawned none yet.
pub const DEFAULT_HARNESS: &str = "claude";

impl NewWorker {
    /// The first question, and its starting text (the first known project).
    pub fn start(known: Known) -> (NewWorker, String) {
        let text = known.projects.first().cloned().unwrap_or_default();
        let w = NewWorker {
            step: Step::Project,
            harness: known
                .harness
                .clone()
                .unwrap_or_else(|| DEFAULT_HARNESS.into()),
            known,
            project: String::new(),
            mode: None,
            intent: String::new(),
        };
        (w, text)
    }

    /// The prompt line's question.
    pub fn prompt(&self) -> String {
        match self.step {
            Step::Project => {
                let n = self.known.projects.len();
                if n == 0 {
                    "new worker \u{b7} project (path) \u{203a} ".into()
                } else {
                    format!("new worker \u{b7} project (path; Tab: {n} known) \u{203a} ")
                }
            }
            Step::Mode => {
                "new worker \u{b7} mode (Tab: local-only, direct-PR, no-mistakes) \u{203a} ".into()
            }
            Step::Intent => "new worker \u{b7} intent, one line \u{203a} ".into(),
            Step::Harness => "new worker \u{b7} harness \u{203a} ".into(),
            Step::Id => "new worker \u{b7} task id \u{203a} ".into(),
        }
    }

    /// Tab: the next of the step's choices after `text`.
    pub fn tab(&self, text: &str) -> Option<String> {
        let modes: Vec<String> = [Mode::LocalOnly, Mode::DirectPr, Mode::NoMistakes]
            .iter()
            .map(|m| m.as_str().to_string())
            .collect();
        let choices = match self.step {
            Step::Project => &self.known.projects,
            Step::Mode => &modes,
            _ => return None,
        };
        if choices.is_empty() {
            return None;
        }
        let at = choices.iter().position(|c| c == text).map_or(0, |i| i + 1);
        Some(choices[at % choices.len()].clone())
    }

    /// Takes the answer `text` to the current question.
    pub fn answer(mut self, text: &str) -> std::result::Result<Next, String> {
        let text = text.trim();
        match self.step {
            Step::Project => {
                if text.is_empty() {
                    return Err("a project path is needed".into());
                }
                self.project = text.to_string();
                self.step = Step::Mode;
                Ok(Next::Ask(Box::new(self), Mode::LocalOnly.as_str().into()))
            }
            Step::Mode => {
                self.mode = Some(Mode::parse(text).map_err(|e| e.to_string())?);
                self.step = Step::Intent;
                Ok(Next::Ask(Box::new(self), String::new()))
            }
            Step::Intent => {
                if text.is_empty() {
                    return Err("the intent is blank".into());
                }
                self.intent = text.to_string();
                self.step = Step::Harness;
                let h = self.harness.clone();
                Ok(Next::Ask(Box::new(self), h))
            }
            Step::Harness => {
                if text.is_empty() {
                    return Err("a harness is needed".into());
                }
                self.harness = text.to_string();
                self.step = Step::Id;
                let id = slug(&self.intent, &self.known.ids);
                Ok(Next::Ask(Box::new(self), id))
            }
            Step::Id => {
                let id = TaskId::parse(text).map_err(|e| e.to_string())?;
                if self.known.ids.iter().any(|k| k == id.as_str()) {
                    return Err(format!("task {id} exists already"));
                }
                Ok(Next::Done(NewSpec {
                    id: id.to_string(),
                    project: PathBuf::from(self.project),
                    mode: self.mode.unwrap_or(Mode::LocalOnly),
                    intent: self.intent,
                    harness: self.harness,
                }))
            }
        }
    }
}

/// A task id from the intent: its first words, lower case, letters and
/// digits joined by `-`, at most 32 characters; `-2`, `-3` … when taken.
pub fn slug(intent: &str, taken: &[String]) -> String {
    let mut s = String::new();
    for word in intent
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(5)
    {
        let word = word.to_ascii_lowercase();
        if !s.is_empty() && s.len() + 1 + word.len() > 32 {
            break;
        }
        if !s.is_empty() {
            s.push('-');
        }
        s.push_str(&word[..word.len().min(32)]);
    }
    if s.is_empty() {
        s = "task".into();
    }
    let mut id = s.clone();
    let mut n = 2;
    while taken.contains(&id) {
        id = format!("{s}-{n}");
        n += 1;
    }
    id
}

/// The projects (the config's, then the tasks'), last harness and ids of the
/// home's tasks.
pub fn known(home: &Home, cfg: &Config) -> Known {
    let mut k = Known::default();
    // The projects the config names with their checkout (a
    // `[projects.<name>]` table with `path`), then those of the tasks.
    k.projects.extend(
        cfg.projects
            .values()
            .filter_map(|p| p.path.as_ref())
            .map(|p| p.display().to_string()),
    );
    let Ok(listing) = crate::listing::Listing::read(home) else {
        k.projects.sort();
        k.projects.dedup();
        return k;
    };
    let mut last: Option<(u64, String)> = None;
    for t in listing.tasks {
        k.ids.push(t.id.to_string());
        let Ok(Some(m)) = TaskMeta::load(home, &t.id) else {
            continue;
        };
        if let Some(p) = &m.project {
            k.projects.push(p.display().to_string());
        }
        if let (Some(h), Some(at)) = (&m.harness, m.spawned_at)
            && last.as_ref().is_none_or(|(t, _)| at >= *t)
        {
            last = Some((at, h.clone()));
        }
    }
    k.projects.sort();
    k.projects.dedup();
    k.harness = last.map(|(_, h)| h);
    k
}

/// The firstmate spec of a brief written from the dashboard: the intent
/// is all the captain gave.
pub const SPEC: &str = "Given from the dashboard in one line: work from the captain's intent \
above. Where it leaves open a choice that matters, ask (needs-decision) rather than guess.";

/// Writes the brief `spec` asks for (`fm-brief <id> <repo> --mode …
/// --intent …`) and spawns its worker (`fm-control <id> spawn`); the
/// line to show.
pub fn spawn_new(home: &Home, cfg: &Config, spec: &NewSpec) -> Result<String> {
    let id = TaskId::parse(&spec.id)?;
    let repo = spec
        .project
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Error::usage(format!("project {} has no name", spec.project.display())))?;
    let request = BriefRequest {
        id: id.clone(),
        kind: BriefKind::Ship(spec.mode),
        rest: vec![repo.into()],
        no_projects: false,
        charter: None,
        scope: None,
        intent: Some(Text::Inline(spec.intent.clone())),
        spec: Some(Text::Inline(SPEC.into())),
        mission: None,
        constraints: Vec::new(),
        shares: Vec::new(),
        parent: None,
        max_depth: None,
        delegator: None,
        branch_prefix: None,
    };
    request.check_flags()?;
    let task = Task::open(home, cfg, &id)?;
    let brief = request.validate(home, cfg, crate::clock::now())?;
    crate::route::brief::write(home, cfg, &task, &brief, false, "captain", None)?;
    let r = crate::route::lifecycle::run(
        home,
        cfg,
        &id,
        Action::Spawn {
            project: spec.project.clone(),
            harness: Some(spec.harness.clone()),
            base: None,
        },
        None,
        None,
        crate::grant::Actor::from_env(),
    )?;
    Ok(r.result)
}

/// Runs `what` on task `id` as `fm-control` would (a relaunch with its
/// progress `note`); the line to show.
pub fn act(home: &Home, cfg: &Config, id: &str, what: Act, note: Option<String>) -> Result<String> {
    let id = TaskId::parse(id)?;
    let r = crate::route::lifecycle::run(
        home,
        cfg,
        &id,
        what.action(note),
        None,
        None,
        crate::grant::Actor::from_env(),
    )?;
    Ok(r.result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_comes_from_the_intent() {
        assert_eq!(slug("Make login fast (9 s!)", &[]), "make-login-fast-9-s");
        assert_eq!(
            slug("fix login", &["fix-login".into(), "fix-login-2".into()]),
            "fix-login-3"
        );
        assert_eq!(slug("¿¡!", &[]), "task");
        let long = slug("internationalisation of the whole checkout", &[]);
        assert!(long.len() <= 32, "{long}");
        assert!(TaskId::parse(&long).is_ok());
    }

    #[test]
    fn the_projects_offered_are_the_configs_then_the_tasks() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("fix-login").unwrap();
        crate::meta::update(&home, &id, |m| m.set("project", "/src/web")).unwrap();
        let mut cfg = Config::default();
        for (name, path) in [
            ("shop", Some("/src/shop")),
            ("pathless", None),
            ("web", Some("/src/web")),
        ] {
            cfg.projects.insert(
                name.into(),
                crate::config::ProjectCfg {
                    path: path.map(PathBuf::from),
                    ..Default::default()
                },
            );
        }
        let k = known(&home, &cfg);
        assert_eq!(k.projects, ["/src/shop", "/src/web"]);
        assert_eq!(k.ids, ["fix-login"]);
    }

    #[test]
    fn the_questions_come_one_after_another() {
        let known = Known {
            projects: vec!["/src/a".into(), "/src/b".into()],
            harness: Some("stand-in".into()),
            ids: vec!["fix-it".into()],
        };
        let (w, text) = NewWorker::start(known);
        assert_eq!(text, "/src/a");
        assert_eq!(w.tab("/src/a").as_deref(), Some("/src/b"));
        assert_eq!(w.tab("/src/b").as_deref(), Some("/src/a"));
        let Ok(Next::Ask(w, text)) = w.answer("/src/b") else {
            panic!()
        };
        assert_eq!((w.step, text.as_str()), (Step::Mode, "local-only"));
        assert_eq!(w.tab("local-only").as_deref(), Some("direct-PR"));
        assert!(w.clone().answer("sideways").is_err());
        let Ok(Next::Ask(w, _)) = w.answer("direct-PR") else {
            panic!()
        };
        assert!(w.clone().answer("  ").is_err());
        let Ok(Next::Ask(w, text)) = w.answer("Fix it now") else {
            panic!()
        };
        assert_eq!((w.step, text.as_str()), (Step::Harness, "stand-in"));
        let Ok(Next::Ask(w, text)) = w.answer("stand-in") else {
            panic!()
        };
        assert_eq!((w.step, text.as_str()), (Step::Id, "fix-it-now"));
        assert!(w.clone().answer("fix-it").is_err(), "an id in use");
        assert!(w.clone().answer("../x").is_err());
        assert_eq!(
            w.answer("fix-it-now"),
            Ok(Next::Done(NewSpec {
                id: "fix-it-now".into(),
                project: "/src/b".into(),
                mode: Mode::DirectPr,
                intent: "Fix it now".into(),
                harness: "stand-in".into(),
            }))
        );
    }

    #[test]
    fn only_relaunch_and_teardown_ask() {
        assert!(!Act::Interrupt.asks());
        assert!(Act::Relaunch.asks() && Act::Teardown.asks());
        assert!(Act::Teardown.question("t1").starts_with("tear down t1?"));
    }
}
