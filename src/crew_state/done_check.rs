//! The done gate (SPEC §8.2) for every ship of a view at once, with git
//! processes per repository instead of per task.
//!
//! The gate's own rules decide first ([`crate::dod::gate::plan`]). A
//! worktree's HEAD is read from git's files ([`crate::gitfiles`]); the
//! question "is HEAD on some ref outside the worktree" is then asked once
//! per repository for all the heads of that repository: `git rev-list
//! <heads…> --not --remotes [--branches]` prints the commits reachable
//! from the heads and from no such ref, so a head it does not print is
//! contained in one — the same answer as the gate's `for-each-ref
//! --contains` per head. A project that is another repository than the
//! worktree's may lack a head altogether (the gate then finds no ref
//! holding it), so there the heads it has are asked first (`rev-list
//! --no-walk --ignore-missing`). A repository with no such ref at all needs
//! no git. Anything unusual — a layout the file reader does not follow, a
//! git call that fails — runs the gate's own checks for that task
//! ([`crate::dod::gate::Check::run`]), which answer exactly as before.
//!
//! Answers are memoised per (repository, ref set, head): a view reuses
//! them across tasks, and a reader kept across frames reuses them while
//! the refs' stamp ([`crate::gitfiles::RefsState`]) is unchanged.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::facts::Gate;
use super::read::Dirs;
use crate::config::Config;
use crate::dod::gate::{Check, HeadFact, Plan, judge};
use crate::dod::{self, Verdict};
use crate::git;
use crate::gitfiles::{GitFiles, Head};
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::status::StatusLine;
use crate::task_id::TaskId;

/// One `done` line to judge.
pub(crate) struct Request<'a> {
    pub(crate) id: &'a TaskId,
    pub(crate) meta: &'a TaskMeta,
    pub(crate) line: StatusLine,
}

/// Heads asked about in one git call at most.
const HEADS_PER_CALL: usize = 2000;

/// (common directory, `refs/heads/*` counts too, head).
type MemoKey = (PathBuf, bool, String);

/// The memo of answers, kept by a reader across frames.
#[derive(Debug, Default)]
pub(crate) struct DoneCheck {
    memo: HashMap<MemoKey, (u64, bool)>,
    used: HashSet<MemoKey>,
}

fn gate_of(v: Verdict) -> Gate {
    match v {
        Verdict::Accepted(_) => Gate::Accepted,
        Verdict::Refused(why) => Gate::Refused(why),
        Verdict::NotGated(_) => Gate::NotGated,
    }
}

/// A head waiting for its repository's answer.
struct Pending {
    req: usize,
    check: Check,
    sha: String,
    /// The worktree's common directory.
    common: PathBuf,
}

/// Unpushed: what the gate says when no outside ref holds the head.
fn unreachable(p: &Pending) -> Gate {
    gate_of(judge(
        &p.check.worktree,
        &HeadFact::Head(p.sha.clone()),
        None,
    ))
}

impl DoneCheck {
    /// The gate's verdict on each request, in order.
    pub(crate) fn verdicts(
        &mut self,
        home: &Home,
        cfg: &Config,
        git: &GitFiles,
        dirs: &Dirs,
        reqs: &[Request],
        now: u64,
    ) -> Vec<Gate> {
        let mut out: Vec<Option<Gate>> = vec![None; reqs.len()];
        let mut pending = Vec::new();
        for (i, r) in reqs.iter().enumerate() {
            let physical = |p: &Path| dirs.physical(p, Some(git));
            let check = match dod::gate::plan_with(home, cfg, r.id, r.meta, &r.line, &physical) {
                Plan::Decided(v) => {
                    out[i] = Some(gate_of(v));
                    continue;
                }
                Plan::Check(c) => c,
            };
            if !matches!(dirs.is_dir_nofollow(&check.worktree, Some(git)), Ok(true)) {
                out[i] = Some(gate_of(judge(&check.worktree, &HeadFact::Missing, None)));
                continue;
            }
            match git.head(&check.worktree) {
                Head::NotRepo => {
                    out[i] = Some(gate_of(judge(&check.worktree, &HeadFact::NotRepo, None)));
                }
                Head::Found(h) => pending.push(Pending {
                    req: i,
                    check,
                    sha: h.head,
                    common: h.common_dir,
                }),
                Head::Unusual(_) => out[i] = Some(gate_of(check.run())),
            }
        }

        // The worktrees' own remote-tracking refs, per repository.
        let mut by_repo: BTreeMap<PathBuf, Vec<Pending>> = BTreeMap::new();
        for p in pending {
            by_repo.entry(p.common.clone()).or_default().push(p);
        }
        let mut to_project: Vec<Pending> = Vec::new();
        for (common, group) in by_repo {
            let shas: Vec<&str> = group.iter().map(|p| p.sha.as_str()).collect();
            let run_in = group[0].check.worktree.clone();
            match self.contained(git, &common, false, &run_in, &shas, false, now) {
                Some(held) => {
                    for p in group {
                        if held[&p.sha] {
                            out[p.req] = Some(Gate::Accepted);
                        } else if p.check.project.is_some() {
                            to_project.push(p);
                        } else {
                            out[p.req] = Some(unreachable(&p));
                        }
                    }
                }
                None => {
                    for p in group {
                        let head = HeadFact::Head(p.sha.clone());
                        let reach = dod::gate::reach(&p.check, &p.sha);
                        out[p.req] = Some(gate_of(p.check.verdict(&head, reach)));
                    }
                }
            }
        }

        // Then the project's, per (repository, ref set).
        let mut by_project: BTreeMap<(PathBuf, bool), (PathBuf, Vec<Pending>)> = BTreeMap::new();
        for p in to_project {
            let project = p.check.project.clone().expect("a project");
            if let Some(pc) = git.common_dir(&project) {
                by_project
                    .entry((pc, p.check.local_only))
                    .or_insert_with(|| (project, Vec::new()))
                    .1
                    .push(p);
            } else {
                let reach = project_reach(&p.check, &project, &p.sha);
                let head = HeadFact::Head(p.sha.clone());
                out[p.req] = Some(gate_of(p.check.verdict(&head, reach)));
            }
        }
        for ((pc, heads), (project, group)) in by_project {
            let shas: Vec<&str> = group.iter().map(|p| p.sha.as_str()).collect();
            let other_repo = group.iter().any(|p| p.common != pc);
            match self.contained(git, &pc, heads, &project, &shas, other_repo, now) {
                Some(held) => {
                    for p in group {
                        out[p.req] = Some(if held[&p.sha] {
                            Gate::Accepted
                        } else {
                            unreachable(&p)
                        });
                    }
                }
                None => {
                    for p in group {
                        let reach = project_reach(&p.check, &project, &p.sha);
                        let head = HeadFact::Head(p.sha.clone());
                        out[p.req] = Some(gate_of(p.check.verdict(&head, reach)));
                    }
                }
            }
        }
        out.into_iter()
            .map(|g| g.expect("every request judged"))
            .collect()
    }

    /// Forgets answers no view asked for since the last call.
    pub(crate) fn end_frame(&mut self) {
        let used = std::mem::take(&mut self.used);
        self.memo.retain(|k, _| used.contains(k));
    }

    /// For each head, whether some ref under `refs/remotes/` (and
    /// `refs/heads/` when `heads`) of the repository at `common` holds it,
    /// asked by running git in `run_in`; `None` when that cannot be told
    /// this way. `check_exist`: the repository may lack some heads.
    #[allow(clippy::too_many_arguments)]
    fn contained(
        &mut self,
        git: &GitFiles,
        common: &Path,
        heads: bool,
        run_in: &Path,
        shas: &[&str],
        check_exist: bool,
        now: u64,
    ) -> Option<HashMap<String, bool>> {
        let state = git.refs_state(common, heads, now)?;
        let mut held: HashMap<String, bool> = HashMap::new();
        let mut ask: Vec<&str> = Vec::new();
        for &sha in shas {
            if held.contains_key(sha) || ask.contains(&sha) {
                continue;
            }
            let key = (common.to_path_buf(), heads, sha.to_string());
            match self.memo.get(&key) {
                Some(&(stamp, c)) if state.settled && stamp == state.stamp => {
                    self.used.insert(key);
                    held.insert(sha.to_string(), c);
                }
                _ => ask.push(sha),
            }
        }
        if !ask.is_empty() {
            let mut answers: HashMap<String, bool> =
                ask.iter().map(|s| (s.to_string(), false)).collect();
            if state.any {
                for chunk in ask.chunks(HEADS_PER_CALL) {
                    let mut present: Vec<&str> = chunk.to_vec();
                    if check_exist {
                        let mut args = vec![NO_REFNAME_CHECK, NO_REFNAME_CHECK_VALUE];
                        args.extend(["rev-list", "--no-walk", "--ignore-missing"]);
                        args.extend(chunk);
                        args.push("--");
                        let out = git::run(run_in, &args).ok().filter(|o| o.ok)?;
                        let have: HashSet<&str> = out.stdout.lines().map(str::trim).collect();
                        present.retain(|s| have.contains(s));
                    }
                    if present.is_empty() {
                        continue;
                    }
                    let mut args = vec![NO_REFNAME_CHECK, NO_REFNAME_CHECK_VALUE, "rev-list"];
                    args.extend(&present);
                    args.extend(["--not", "--remotes"]);
                    if heads {
                        args.push("--branches");
                    }
                    args.push("--");
                    let out = git::run(run_in, &args).ok().filter(|o| o.ok)?;
                    let outside: HashSet<&str> = out.stdout.lines().map(str::trim).collect();
                    for s in present {
                        answers.insert(s.to_string(), !outside.contains(s));
                    }
                }
            }
            for (sha, c) in answers {
                if state.settled {
                    let key = (common.to_path_buf(), heads, sha.clone());
                    self.memo.insert(key.clone(), (state.stamp, c));
                    self.used.insert(key);
                }
                held.insert(sha, c);
            }
        }
        Some(held)
    }
}

/// `git -c core.warnAmbiguousRefs=false`: a full object name on the
/// command line is that object either way, but with the warning on git
/// also looks it up as a ref name, in each of the six places a short ref
/// may live (and in `packed-refs` each time), only to warn when one
/// exists. With hundreds of heads per call that was most of the call's
/// system calls. The closing `--` spares the check that each argument is
/// not a file of the worktree.
const NO_REFNAME_CHECK: &str = "-c";
const NO_REFNAME_CHECK_VALUE: &str = "core.warnAmbiguousRefs=false";

/// The gate's own project step for one head (SPEC §8.2).
fn project_reach(check: &Check, project: &Path, sha: &str) -> crate::Result<Option<String>> {
    let shown = project.display();
    git::ref_containing(project, sha, check.project_prefixes())
        .map(|r| r.map(|r| format!("{r} of {shown}")))
}
