//! The done gate (docs/spec/dod.md#gate) for every ship of a view at once, with git
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
use crate::gitfiles::{GitFiles, Head, RefsState};
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
        // A repository's refs are walked once per view and ref set.
        let mut states: HashMap<(PathBuf, bool), Option<RefsState>> = HashMap::new();
        let jobs: Vec<Job> = by_repo
            .iter()
            .map(|(common, group)| Job {
                common: common.clone(),
                heads: false,
                run_in: group[0].check.worktree.clone(),
                shas: group.iter().map(|p| p.sha.clone()).collect(),
                check_exist: false,
            })
            .collect();
        let answers = self.contained(git, &jobs, &mut states, now);
        for ((_, group), held) in by_repo.into_iter().zip(answers) {
            match held {
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
        // Many ships share a project: its layout is read once per view.
        let mut commons: HashMap<PathBuf, Option<PathBuf>> = HashMap::new();
        for p in to_project {
            let project = p.check.project.clone().expect("a project");
            let pc = commons
                .entry(project.clone())
                .or_insert_with(|| git.common_dir(&project))
                .clone();
            if let Some(pc) = pc {
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
        let jobs: Vec<Job> = by_project
            .iter()
            .map(|((pc, heads), (project, group))| Job {
                common: pc.clone(),
                heads: *heads,
                run_in: project.clone(),
                shas: group.iter().map(|p| p.sha.clone()).collect(),
                check_exist: group.iter().any(|p| &p.common != pc),
            })
            .collect();
        let answers = self.contained(git, &jobs, &mut states, now);
        for ((_, (project, group)), held) in by_project.into_iter().zip(answers) {
            match held {
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

    /// For each job, for each of its heads, whether some ref under
    /// `refs/remotes/` (and `refs/heads/` when `heads`) of the repository
    /// at `common` holds it, asked by running git in `run_in`; `None` when
    /// that cannot be told this way. The memo answers first; the git calls
    /// of different repositories run at once, one thread per job up to the
    /// cores (each call waits on its own process).
    fn contained<'j>(
        &mut self,
        git: &GitFiles,
        jobs: &'j [Job],
        states: &mut HashMap<(PathBuf, bool), Option<RefsState>>,
        now: u64,
    ) -> Vec<Option<Held>> {
        let mut known: Vec<Option<(RefsState, Held, Vec<&'j str>)>> =
            Vec::with_capacity(jobs.len());
        for job in jobs {
            let state = *states
                .entry((job.common.clone(), job.heads))
                .or_insert_with(|| git.refs_state(&job.common, job.heads, now));
            let Some(state) = state else {
                known.push(None);
                continue;
            };
            let mut held: Held = HashMap::new();
            let mut ask: Vec<&str> = Vec::new();
            for sha in &job.shas {
                let sha = sha.as_str();
                if held.contains_key(sha) || ask.contains(&sha) {
                    continue;
                }
                let key = (job.common.clone(), job.heads, sha.to_string());
                match self.memo.get(&key) {
                    Some(&(stamp, c)) if state.settled && stamp == state.stamp => {
                        self.used.insert(key);
                        held.insert(sha.to_string(), c);
                    }
                    _ => ask.push(sha),
                }
            }
            known.push(Some((state, held, ask)));
        }
        // The git calls: pure, one job's at a time per thread.
        let asks: Vec<Option<(&Job, &[&str], bool)>> = jobs
            .iter()
            .zip(&known)
            .map(|(job, k)| {
                k.as_ref()
                    .filter(|(_, _, ask)| !ask.is_empty())
                    .map(|(state, _, ask)| (job, ask.as_slice(), state.any))
            })
            .collect();
        let answers = run_all(&asks);
        let mut out = Vec::with_capacity(jobs.len());
        for ((job, k), answer) in jobs.iter().zip(known).zip(answers) {
            let Some((state, mut held, ask)) = k else {
                out.push(None);
                continue;
            };
            if !ask.is_empty() {
                let Some(answers) = answer else {
                    out.push(None);
                    continue;
                };
                for (sha, c) in answers {
                    if state.settled {
                        let key = (job.common.clone(), job.heads, sha.clone());
                        self.memo.insert(key.clone(), (state.stamp, c));
                        self.used.insert(key);
                    }
                    held.insert(sha, c);
                }
            }
            out.push(Some(held));
        }
        out
    }
}

/// Whether each head is held by a ref outside the worktree.
type Held = HashMap<String, bool>;

/// One repository's question: its heads, against `refs/remotes/` (and
/// `refs/heads/` when `heads`) of the repository at `common`, asked in
/// `run_in`. `check_exist`: the repository may lack some heads.
struct Job {
    common: PathBuf,
    heads: bool,
    run_in: PathBuf,
    shas: Vec<String>,
    check_exist: bool,
}

/// Runs [`ask`] for each present entry, at once on up to the cores.
fn run_all(asks: &[Option<(&Job, &[&str], bool)>]) -> Vec<Option<Held>> {
    let one =
        |a: &Option<(&Job, &[&str], bool)>| a.and_then(|(job, shas, any)| ask(job, shas, any));
    let busy = asks.iter().filter(|a| a.is_some()).count();
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(busy);
    if threads < 2 {
        return asks.iter().map(one).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Held>>> =
        asks.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(a) = asks.get(i) else { break };
                    let r = one(a);
                    *slots[i].lock().expect("done check slot") = r;
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|s| s.into_inner().expect("done check slot"))
        .collect()
}

/// The git calls for the heads `shas` of `job`; `any`: the repository
/// has some ref to hold them (else none is held, and no git is run).
fn ask(job: &Job, shas: &[&str], any: bool) -> Option<Held> {
    let mut answers: Held = shas.iter().map(|s| (s.to_string(), false)).collect();
    if !any {
        return Some(answers);
    }
    let run_in = job.run_in.as_path();
    for chunk in shas.chunks(HEADS_PER_CALL) {
        let mut present: Vec<&str> = chunk.to_vec();
        if job.check_exist {
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
        if job.heads {
            args.push("--branches");
        }
        args.push("--");
        let out = git::run(run_in, &args).ok().filter(|o| o.ok)?;
        let outside: HashSet<&str> = out.stdout.lines().map(str::trim).collect();
        for s in present {
            answers.insert(s.to_string(), !outside.contains(s));
        }
    }
    Some(answers)
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

/// The gate's own project step for one head (docs/spec/dod.md#gate).
fn project_reach(check: &Check, project: &Path, sha: &str) -> crate::Result<Option<String>> {
    let shown = project.display();
    git::ref_containing(project, sha, check.project_prefixes())
        .map(|r| r.map(|r| format!("{r} of {shown}")))
}
