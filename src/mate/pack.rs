//! `fm mate init` (docs/spec/mate.md#init): turns a home into the first
//! mate's workplace — its manual (`AGENTS.md`, and `CLAUDE.md` pointing
//! at it), its skills, and the harness's own configuration with the
//! hooks that hand it a digest at start and wake it with a packet.
//!
//! Every file written is recorded with its SHA-256 in `state/.mate.pack`
//! (`<path>\t<hex>` lines). A re-run replaces a file only while it still
//! holds what firstmate wrote; a file the captain edited is left as it
//! is, firstmate's version put beside it as `<file>.fm-new`, and both
//! are named in the output (`--force` replaces it, keeping the edit as
//! `<file>.orig`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::fsx;
use crate::home::Home;

/// The manual.
pub const MANUAL: &str = include_str!("../../mate/AGENTS.md");
const CLAUDE_MD: &str = include_str!("../../mate/CLAUDE.md");

/// The skills: name, text.
pub const SKILLS: [(&str, &str); 5] = [
    (
        "take-an-ask",
        include_str!("../../mate/skills/take-an-ask/SKILL.md"),
    ),
    (
        "answer-a-decision",
        include_str!("../../mate/skills/answer-a-decision/SKILL.md"),
    ),
    (
        "recover-a-worker",
        include_str!("../../mate/skills/recover-a-worker/SKILL.md"),
    ),
    (
        "land-finished-work",
        include_str!("../../mate/skills/land-finished-work/SKILL.md"),
    ),
    (
        "run-while-away",
        include_str!("../../mate/skills/run-while-away/SKILL.md"),
    ),
];

/// The environment variable that marks the first mate's processes.
pub const MARK: &str = "FM_MATE";

/// How long one waiter of the Stop hook may run (seconds) before the
/// harness ends it; the waiter gives up a little earlier by itself.
pub const WAIT_SECS: u64 = 86_400;

/// The lead's harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    Claude,
    Codex,
}

impl Harness {
    pub fn parse(s: &str) -> Option<Harness> {
        match s {
            "claude" => Some(Harness::Claude),
            "codex" => Some(Harness::Codex),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
        }
    }
}

/// One file of the pack: its path below the home and its bytes.
#[derive(Debug, Clone)]
pub struct File {
    pub rel: String,
    pub bytes: Vec<u8>,
}

fn hook_command(fm: &Path, event: &str, harness: Harness, home: &Path) -> String {
    format!(
        "{} mate hook {event} --harness {} --home {}",
        crate::shq::quote_path(fm),
        harness.as_str(),
        crate::shq::quote_path(home)
    )
}

/// Claude Code's project settings: the mark in the environment of every
/// command (tools and hooks), a digest at session start, and a waiter
/// at start and after every turn that wakes the lead with a packet
/// (`asyncRewake`: the lead stays idle, the captain can type meanwhile).
fn claude_settings(fm: &Path, home: &Path) -> String {
    let cmd = |e: &str| hook_command(fm, e, Harness::Claude, home);
    let waiter = serde_json::json!({
        "type": "command",
        "command": cmd("stop"),
        "asyncRewake": true,
        "timeout": WAIT_SECS,
    });
    let v = serde_json::json!({
        "env": { MARK: "1", "FM_HOME": home.to_string_lossy() },
        "hooks": {
            "SessionStart": [{ "hooks": [
                { "type": "command", "command": cmd("session-start") },
                waiter,
            ]}],
            "Stop": [{ "hooks": [waiter] }],
        }
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// Codex's files: the hooks (`.codex/hooks.json`) and the project
/// config marking the lead's commands.
fn codex_files(fm: &Path, home: &Path) -> Vec<File> {
    let cmd = |e: &str| hook_command(fm, e, Harness::Codex, home);
    let hooks = serde_json::json!({
        "hooks": {
            "SessionStart": [{ "hooks": [{ "type": "command", "command": cmd("session-start") }]}],
            "Stop": [{ "hooks": [{ "type": "command", "command": cmd("stop"), "timeout": WAIT_SECS }]}],
        }
    });
    let config = format!(
        "# Written by `fm mate init --harness codex`: the first mate's commands are marked.\n[shell_environment_policy]\nset = {{ {MARK} = \"1\", FM_HOME = {} }}\n",
        toml_string(&home.to_string_lossy())
    );
    vec![
        File {
            rel: ".codex/hooks.json".into(),
            bytes: (serde_json::to_string_pretty(&hooks).unwrap_or_default() + "\n").into_bytes(),
        },
        File {
            rel: ".codex/config.toml".into(),
            bytes: config.into_bytes(),
        },
    ]
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Every file of the pack for `harness`, in the order written.
pub fn files(harness: Harness, fm: &Path, home: &Path) -> Vec<File> {
    let mut out = vec![
        File {
            rel: "AGENTS.md".into(),
            bytes: MANUAL.as_bytes().to_vec(),
        },
        File {
            rel: "CLAUDE.md".into(),
            bytes: CLAUDE_MD.as_bytes().to_vec(),
        },
    ];
    for (name, text) in SKILLS {
        out.push(File {
            rel: format!(".agents/skills/{name}/SKILL.md"),
            bytes: text.as_bytes().to_vec(),
        });
    }
    match harness {
        Harness::Claude => {
            // Claude Code reads skills from .claude/skills only.
            for (name, text) in SKILLS {
                out.push(File {
                    rel: format!(".claude/skills/{name}/SKILL.md"),
                    bytes: text.as_bytes().to_vec(),
                });
            }
            out.push(File {
                rel: ".claude/settings.json".into(),
                bytes: claude_settings(fm, home).into_bytes(),
            });
        }
        Harness::Codex => out.extend(codex_files(fm, home)),
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn read_record(home: &Home) -> Result<BTreeMap<String, String>> {
    let bytes = fsx::read_optional(&home.mate_pack())?.unwrap_or_default();
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| {
            let (p, h) = l.split_once('\t')?;
            Some((p.to_string(), h.to_string()))
        })
        .collect())
}

/// What init did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Wrote,
    Updated,
    Unchanged,
    /// The captain's edit kept; firstmate's version written beside it.
    KeptEdit {
        beside: String,
    },
    /// `--force`: replaced, the edit kept at `orig`.
    Replaced {
        orig: String,
    },
}

/// Writes the pack into `home`: each file as [`Outcome`] says.
pub fn init(
    home: &Home,
    harness: Harness,
    fm: &Path,
    force: bool,
) -> Result<Vec<(String, Outcome)>> {
    let _guard = super::ledger::lock(home)?;
    let mut record = read_record(home)?;
    let mut done = Vec::new();
    let files = files(harness, fm, home.root());
    // Every path checked before anything is written: a refusal leaves
    // the home as it was.
    for f in &files {
        let mut at = home.root().to_path_buf();
        for c in Path::new(&f.rel).components() {
            at.push(c);
            fsx::refuse_symlink(&at)?;
        }
    }
    for f in files {
        let path = home.root().join(&f.rel);
        if let Some(dir) = path.parent() {
            ensure_dirs(home.root(), dir)?;
        }
        let current = fsx::read_optional(&path)?;
        let new_hash = hex(&f.bytes);
        let outcome = match current {
            None => {
                fsx::atomic_write(&path, &f.bytes)?;
                Outcome::Wrote
            }
            Some(cur) if cur == f.bytes => Outcome::Unchanged,
            Some(cur) if record.get(&f.rel) == Some(&hex(&cur)) => {
                fsx::atomic_write(&path, &f.bytes)?;
                Outcome::Updated
            }
            Some(cur) if force => {
                let orig = format!("{}.orig", f.rel);
                fsx::atomic_write(&home.root().join(&orig), &cur)?;
                fsx::atomic_write(&path, &f.bytes)?;
                Outcome::Replaced { orig }
            }
            Some(_) => {
                let beside = format!("{}.fm-new", f.rel);
                fsx::atomic_write(&home.root().join(&beside), &f.bytes)?;
                done.push((f.rel.clone(), Outcome::KeptEdit { beside }));
                continue;
            }
        };
        record.insert(f.rel.clone(), new_hash);
        done.push((f.rel, outcome));
    }
    // A new first mate starts at the feed's end: what happened before it
    // is history, not news (one packet per 40 old wakes otherwise).
    if !fsx::exists(&home.mate_cursor())? {
        let mut ledger = super::ledger::Ledger::load(home)?;
        ledger.cursor.local = crate::wakes::end_offset(home)?;
        ledger.save(home)?;
    }
    let text = record.iter().fold(String::new(), |mut s, (p, h)| {
        s.push_str(p);
        s.push('\t');
        s.push_str(h);
        s.push('\n');
        s
    });
    fsx::atomic_write(&home.mate_pack(), text.as_bytes())?;
    Ok(done)
}

/// Makes `dir` and its parents below `root`, refusing a symlink on the way.
fn ensure_dirs(root: &Path, dir: &Path) -> Result<()> {
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    let mut at: PathBuf = root.to_path_buf();
    for c in rel.components() {
        at.push(c);
        fsx::refuse_symlink(&at)?;
        fsx::ensure_dir(&at)?;
    }
    Ok(())
}

/// The absolute path of the running `fm` (what the hooks run).
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the running binary's own path"
)]
fn fm_path() -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(|e| Error::io("find", "the running fm", e))?;
    // `fm-<tool>` shares the binary's directory with `fm`.
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let fm = dir.join("fm");
    Ok(if fm.is_file() { fm } else { exe })
}

/// `fm mate init [--harness H] [DIR] [--force]`.
pub fn init_cli(dir: Option<&Path>, harness: &str, force: bool) -> Result<u8> {
    let harness = Harness::parse(harness)
        .ok_or_else(|| Error::Usage(format!("unknown harness {harness}")))?;
    let home = Home::resolve(dir)?;
    let fm = fm_path()?;
    let done = init(&home, harness, &fm, force)?;
    let mut kept = 0;
    for (rel, o) in &done {
        let line = match o {
            Outcome::Wrote => format!("wrote {rel}"),
            Outcome::Updated => format!("updated {rel}"),
            Outcome::Unchanged => continue,
            Outcome::KeptEdit { beside } => {
                kept += 1;
                format!(
                    "kept your edit of {rel}; firstmate's version is {beside} (--force replaces yours, keeping it as .orig)"
                )
            }
            Outcome::Replaced { orig } => format!("replaced {rel}; your edit is {orig}"),
        };
        crate::output::out(&line)?;
    }
    // Codex runs its session-start hook at the first prompt only: a
    // kickoff prompt hands the lead its digest and arms its waiter.
    let start = match harness {
        Harness::Claude => "claude",
        Harness::Codex => "codex 'Take the watch.'",
    };
    crate::output::out(&format!(
        "first mate ready ({} files, {kept} kept as you edited them); start it: cd {} && {start}",
        done.len(),
        crate::shq::quote_path(home.root())
    ))?;
    if harness == Harness::Codex {
        crate::output::out(
            "codex asks once to review the home's hooks: choose \"Trust all\" (docs/mate.md, \"Codex\")",
        )?;
    }
    Ok(0)
}

/// What `fm doctor` says of the pack: `None` when `fm mate init` never
/// ran here; else whether it warns, and the detail.
pub fn health(home: &Home) -> Option<(bool, String)> {
    let record = read_record(home).ok().filter(|r| !r.is_empty())?;
    let fm = fm_path().unwrap_or_default();
    let mut current: BTreeMap<String, String> = BTreeMap::new();
    for h in [Harness::Claude, Harness::Codex] {
        for f in files(h, &fm, home.root()) {
            current.insert(f.rel, hex(&f.bytes));
        }
    }
    let (mut missing, mut edited, mut old) = (Vec::new(), Vec::new(), Vec::new());
    for (rel, written) in &record {
        match fsx::read_optional(&home.root().join(rel)) {
            Ok(Some(b)) if &hex(&b) == written => {}
            Ok(Some(_)) => edited.push(rel.as_str()),
            _ => missing.push(rel.as_str()),
        }
        if current.get(rel).is_some_and(|c| c != written) {
            old.push(rel.as_str());
        }
    }
    let harness = if record.contains_key(".codex/hooks.json") {
        "codex"
    } else {
        "claude"
    };
    let waiter = fsx::read_optional(&home.mate_waiter())
        .ok()
        .flatten()
        .and_then(|b| {
            String::from_utf8_lossy(&b)
                .split('\t')
                .next()
                .and_then(|p| p.trim().parse::<i32>().ok())
        })
        .filter(|&pid| {
            rustix::process::Pid::from_raw(pid)
                .is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
        });
    let mut parts = vec![format!("{harness} pack, {} files", record.len())];
    parts.push(waiter.map_or_else(
        || "no waiter running (the lead is not waiting for wakes)".to_string(),
        |p| format!("waiter pid {p}"),
    ));
    let warn = !missing.is_empty() || !old.is_empty();
    if !missing.is_empty() {
        parts.push(format!(
            "missing: {} (`fm mate init` writes them again)",
            missing.join(", ")
        ));
    }
    if !old.is_empty() {
        parts.push(format!(
            "written by another fm: {} (`fm mate init` updates them)",
            old.join(", ")
        ));
    }
    if !edited.is_empty() {
        parts.push(format!("edited by you: {}", edited.join(", ")));
    }
    Some((warn, parts.join("; ")))
}
