//! Usage per worker: the tokens an agent spent, and the cost where its own
//! transcript records one (docs/crew-state.md, "Usage per worker").
//!
//! The counter ([`refresh`], [`count`]) reads the transcripts of a task's
//! worktree ([`transcript`]) from where it stopped last time and keeps
//! the result in `state/<id>.usage` (its only file: one JSON object, the
//! totals and a cursor per transcript, replaced atomically). Crew state
//! only reads that file ([`read_cached`]) — listed with the task's other
//! files, so a task without one costs the fleet view nothing — and shows
//! what was last counted. The counter runs off every hot path: on `fm
//! top`'s reader thread and beside `fm-watch`'s loop, each at most every
//! [`EVERY`], reading at most [`transcript::CHUNK`] bytes of a transcript
//! per pass.
//!
//! Prices are never looked up or invented: a cost is shown only when the
//! transcript carries one (Claude Code's `costUSD`).

pub mod transcript;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::Result;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::stamp::Stamp;
use crate::task_id::TaskId;
use crate::{fsx, harness};
use transcript::{Cursor, Kind};

/// How often the counter passes over the fleet, at most (`FM_USAGE_SECS`
/// overrides it: the tests count at once).
pub const EVERY: Duration = Duration::from_secs(10);

/// A counter lists `state/` at least once in this many passes.
const RELIST_EVERY: u32 = 30;

/// A transcript written this long before the worktree was made is still
/// the task's (clock granularity).
const SLACK_SECS: u64 = 5;

/// The counter's period: [`EVERY`], or `FM_USAGE_SECS`.
pub fn every() -> Duration {
    std::env::var("FM_USAGE_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(EVERY, Duration::from_secs)
}

/// Tokens spent (and a cost when the transcript gave one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input not read from the prompt cache.
    pub input: u64,
    pub output: u64,
    /// Input read from the prompt cache.
    pub cache_read: u64,
    /// Input written to the prompt cache (Claude).
    pub cache_write: u64,
    /// In millionths of a US dollar; `None` when no line carried a cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micro_usd: Option<u64>,
}

impl Tokens {
    /// Every token counted.
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }

    pub fn plus(&self, o: &Tokens) -> Tokens {
        Tokens {
            input: self.input + o.input,
            output: self.output + o.output,
            cache_read: self.cache_read + o.cache_read,
            cache_write: self.cache_write + o.cache_write,
            cost_micro_usd: match (self.cost_micro_usd, o.cost_micro_usd) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            },
        }
    }

    pub fn minus(&self, o: &Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_sub(o.input),
            output: self.output.saturating_sub(o.output),
            cache_read: self.cache_read.saturating_sub(o.cache_read),
            cache_write: self.cache_write.saturating_sub(o.cache_write),
            cost_micro_usd: match (self.cost_micro_usd, o.cost_micro_usd) {
                (Some(a), b) => Some(a.saturating_sub(b.unwrap_or(0))),
                (None, _) => None,
            },
        }
    }

    /// The cost in dollars, when known.
    #[expect(
        clippy::cast_precision_loss,
        reason = "millionths of a dollar, far below 2^52"
    )]
    pub fn cost_usd(&self) -> Option<f64> {
        self.cost_micro_usd.map(|m| m as f64 / 1e6)
    }

    /// The dashboard's short form: `12.3k $0.42`, `850`.
    pub fn short(&self) -> String {
        let mut s = si(self.total());
        if let Some(c) = self.cost_usd() {
            s.push_str(&format!(" ${c:.2}"));
        }
        s
    }
}

/// `1234` → `1.2k`, `4_500_000` → `4.5M`.
#[expect(clippy::cast_precision_loss, reason = "one decimal shown")]
fn si(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// A row's `usage` as `--json` prints it (docs/crew-state-schema.json).
#[derive(Serialize, Deserialize)]
struct Shown {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_tokens: u64,
    #[serde(default)]
    cache_write_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
}

/// A far row's `usage` (a host's `fm-crew-state --json`), read back.
pub(crate) fn from_row_json<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Tokens>, D::Error> {
    Ok(Option::<Shown>::deserialize(d)?.map(|s| Tokens {
        input: s.input_tokens,
        output: s.output_tokens,
        cache_read: s.cache_read_tokens,
        cache_write: s.cache_write_tokens,
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a cost in millionths of a dollar"
        )]
        cost_micro_usd: s
            .cost_usd
            .filter(|c| c.is_finite() && *c >= 0.0)
            .map(|c| (c * 1e6).round() as u64),
    }))
}

/// Serialises a row's usage (serde's `serialize_with` hands it by reference).
#[allow(clippy::ref_option)]
pub(crate) fn row_json<S: serde::Serializer>(
    t: &Option<Tokens>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    t.map(|t| Shown {
        input_tokens: t.input,
        output_tokens: t.output,
        cache_read_tokens: t.cache_read,
        cache_write_tokens: t.cache_write,
        total_tokens: t.total(),
        cost_usd: t.cost_usd(),
    })
    .serialize(s)
}

/// `state/<id>.usage`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cache {
    /// The sum over every transcript.
    pub tokens: Tokens,
    /// Each transcript's cursor, by path.
    #[serde(default)]
    pub files: BTreeMap<PathBuf, (Kind, Cursor)>,
}

/// `state/<id>.usage`.
pub fn cache_path(home: &Home, id: &TaskId) -> PathBuf {
    home.state_dir().join(format!("{}.usage", id.as_str()))
}

/// The totals a `.usage` file records; `None` when it does not parse.
pub fn read_cached(bytes: &[u8]) -> Option<Tokens> {
    #[derive(Deserialize)]
    struct Totals {
        tokens: Tokens,
    }
    serde_json::from_slice::<Totals>(bytes)
        .ok()
        .map(|t| t.tokens)
}

/// Which agent `meta`'s harness launches, if it writes a transcript the
/// counter reads.
fn kind_of(cfg: &Config, meta: &TaskMeta) -> Option<(Kind, harness::HarnessProfile)> {
    let profile = harness::profile(&cfg.harness, meta.harness.as_deref()?)?;
    let program = profile.launch.first()?;
    let kind = match Path::new(program).file_name()?.to_str()? {
        "claude" => Kind::Claude,
        "codex" => Kind::Codex,
        _ => return None,
    };
    Some((kind, profile))
}

/// `NAME` from the launch's environment, else firstmate's own.
fn env_of(profile: &harness::HarnessProfile, name: &str) -> Option<PathBuf> {
    profile
        .env
        .iter()
        .rev()
        .find_map(|e| e.strip_prefix(name)?.strip_prefix('=').map(str::to_string))
        .or_else(|| std::env::var(name).ok())
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// Where a task's transcripts are: the agent, the worktree (their cwd) and
/// the directory they are written under (Claude Code's project directory
/// for the worktree, Codex's `sessions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    kind: Kind,
    worktree: PathBuf,
    dir: PathBuf,
}

impl Source {
    /// The source of a local task whose agent writes a transcript the
    /// counter reads. The environment looked at is the launch's, then
    /// firstmate's; Codex's home is the one spawn noted.
    pub fn of(home: &Home, cfg: &Config, id: &TaskId, meta: &TaskMeta) -> Option<Source> {
        if meta.host_name().is_some() {
            return None;
        }
        let worktree = meta.worktree.clone()?;
        let (kind, profile) = kind_of(cfg, meta)?;
        let dir = match kind {
            Kind::Codex => crate::agent_report::noted_codex_home(home, id)
                .or_else(|| env_of(&profile, "CODEX_HOME"))
                .or_else(|| env_of(&profile, "HOME").map(|h| h.join(".codex")))?
                .join("sessions"),
            // Claude Code names the directory after the cwd it started
            // in: the physical worktree, which is what spawn records.
            Kind::Claude => env_of(&profile, "CLAUDE_CONFIG_DIR")
                .or_else(|| env_of(&profile, "HOME").map(|h| h.join(".claude")))?
                .join("projects")
                .join(transcript::claude_slug(&worktree.to_string_lossy())),
        };
        Some(Source {
            kind,
            worktree,
            dir,
        })
    }

    /// When the worktree was made (its `.git` file is written when it is
    /// added, never again), less the slack.
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: the worktree is git's"
    )]
    fn since(&self) -> Option<u64> {
        std::fs::metadata(self.worktree.join(".git"))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs().saturating_sub(SLACK_SECS))
    }

    /// The transcripts of the worktree written since it was made.
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: the agent's own transcripts"
    )]
    fn transcripts(&self) -> Vec<(Kind, PathBuf)> {
        let kind = self.kind;
        match kind {
            Kind::Codex => {
                let Some(since) = self.since() else {
                    return Vec::new();
                };
                let mut found = crate::agent_report::rollouts(&self.dir, &self.worktree, since);
                found.sort();
                found.into_iter().map(|(_, p)| (kind, p)).collect()
            }
            Kind::Claude => {
                // No directory (no session yet): one failed open.
                let Ok(rd) = std::fs::read_dir(&self.dir) else {
                    return Vec::new();
                };
                let Some(since) = self.since() else {
                    return Vec::new();
                };
                let mut found = Vec::new();
                for e in rd.flatten() {
                    let p = e.path();
                    let fresh = e
                        .metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .is_some_and(|d| d.as_secs() >= since);
                    if fresh && p.extension().is_some_and(|x| x == "jsonl") {
                        found.push((kind, p));
                    }
                }
                found.sort();
                found
            }
        }
    }
}

/// Reads what was appended to `path` since `cur` (at most a chunk).
/// Returns whether the cursor changed.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's own transcript"
)]
fn advance(kind: Kind, path: &Path, cur: &mut Cursor) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::MetadataExt;
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let Ok(m) = f.metadata() else { return false };
    let mut changed = false;
    if m.ino() != cur.ino || m.len() < cur.offset {
        // Another file at the path, or this one cut short: start over.
        changed = *cur != Cursor::default() || cur.ino != m.ino();
        *cur = Cursor {
            ino: m.ino(),
            ..Cursor::default()
        };
    }
    if m.len() == cur.offset {
        return changed;
    }
    let take = (m.len() - cur.offset).min(transcript::CHUNK);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(cur.offset)).is_err() || f.take(take).read_to_end(&mut buf).is_err() {
        return changed;
    }
    cur.feed(kind, &buf) || changed
}

/// Counts what task `id`'s transcripts added since the last count and
/// keeps it in `state/<id>.usage`; returns the totals, `None` when the
/// task has no transcript (and nothing is read or written).
pub fn refresh(home: &Home, cfg: &Config, id: &TaskId, meta: &TaskMeta) -> Result<Option<Tokens>> {
    match Source::of(home, cfg, id, meta) {
        Some(src) => refresh_from(home, id, &src),
        None => Ok(None),
    }
}

/// [`refresh`] from a task's [`Source`].
pub fn refresh_from(home: &Home, id: &TaskId, src: &Source) -> Result<Option<Tokens>> {
    let found = src.transcripts();
    if found.is_empty() {
        return Ok(None);
    }
    let path = cache_path(home, id);
    let old = fsx::read_optional(&path)?;
    let mut cache: Cache = old
        .as_deref()
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or_default();
    let mut changed = old.is_none();
    for (kind, p) in found {
        let entry = cache
            .files
            .entry(p.clone())
            .or_insert_with(|| (kind, Cursor::default()));
        entry.0 = kind;
        changed |= advance(kind, &p, &mut entry.1);
    }
    // A transcript removed since keeps what it was counted for.
    cache.tokens = cache
        .files
        .values()
        .fold(Tokens::default(), |a, (_, c)| a.plus(&c.tokens));
    if changed {
        let mut bytes = serde_json::to_vec(&cache)
            .map_err(|e| crate::Error::usage(format!("usage cache: {e}")))?;
        bytes.push(b'\n');
        fsx::atomic_write(&path, &bytes)?;
    }
    Ok(Some(cache.tokens))
}

/// Counts every local task of the home whose agent writes a transcript
/// the counter reads ([`refresh`]); a task that cannot be counted is
/// left as it was.
pub fn count(home: &Home, cfg: &Config) {
    Counter::default().count(home, cfg);
}

/// The counter kept across passes: each task's meta is read again only
/// when its stamp changed, and while `state/` itself is unchanged (no
/// file made, replaced or removed in it: every meta write is a rename)
/// not even listed — an idle fleet costs one `stat` a pass, plus a look
/// at the transcripts of the tasks that have a [`Source`].
#[derive(Debug, Default)]
pub struct Counter {
    /// `state/`'s stamp at the last listing.
    state: Option<Stamp>,
    /// Passes since the last listing (a meta edited in place changes no
    /// stamp of `state/`: it is seen at the next change there, or after
    /// [`RELIST_EVERY`] passes).
    passes: u32,
    /// A task's meta stamp when read, and its source (`None`: nothing
    /// to count).
    metas: std::collections::HashMap<TaskId, (Stamp, Option<Source>)>,
}

impl Counter {
    /// One pass over the fleet ([`count`]).
    pub fn count(&mut self, home: &Home, cfg: &Config) {
        let now = crate::clock::now();
        let state = Stamp::of_path(&home.state_dir());
        let same = state.is_some()
            && self.state == state
            && state.is_some_and(|s| s.settled(now))
            && self.passes < RELIST_EVERY;
        if same {
            self.passes += 1;
        } else {
            self.relist(home, cfg, now);
            self.state = state;
            self.passes = 0;
        }
        for (id, (_, src)) in &self.metas {
            if let Some(src) = src {
                let _ = refresh_from(home, id, src);
            }
        }
    }

    /// Lists `state/` and reads the metas whose stamp changed.
    fn relist(&mut self, home: &Home, cfg: &Config, now: u64) {
        let Ok(listing) = crate::listing::Listing::read(home) else {
            return;
        };
        let mut seen = std::collections::HashSet::with_capacity(listing.tasks.len());
        for t in listing.tasks {
            let name = format!("{}.meta", t.id.as_str());
            let stamp = match &listing.dir {
                Some(dir) => {
                    rustix::fs::statat(dir, name.as_str(), rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                        .ok()
                        .map(|st| Stamp::of_stat(&st))
                }
                None => Stamp::of_path(&home.meta(&t.id)),
            };
            let Some(stamp) = stamp else { continue };
            let kept = self
                .metas
                .get(&t.id)
                .is_some_and(|(s, _)| *s == stamp && s.settled(now));
            if !kept {
                let src = TaskMeta::load(home, &t.id)
                    .ok()
                    .flatten()
                    .and_then(|m| Source::of(home, cfg, &t.id, &m));
                self.metas.insert(t.id.clone(), (stamp, src));
            }
            seen.insert(t.id);
        }
        self.metas.retain(|id, _| seen.contains(id));
    }
}

/// Counts the fleet every [`every`] on a thread of its own, for as long
/// as the process lives (`fm-watch`'s loop).
pub fn count_in_background(home: &Home, cfg: &Config) {
    let (home, cfg) = (home.clone(), cfg.clone());
    std::thread::spawn(move || {
        let mut counter = Counter::default();
        loop {
            counter.count(&home, &cfg);
            std::thread::sleep(every().max(Duration::from_secs(1)));
        }
    });
}

#[cfg(test)]
mod tests;
