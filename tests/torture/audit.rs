//! The audit: reads the home after the storm and checks every claim
//! against what the participants recorded. Each check pushes a readable
//! failure; the test fails if there is any.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use firstmate::home::Home;
use firstmate::status::{self, Parsed};
use firstmate::task_id::TaskId;
use firstmate::wakes::Wake;
use firstmate::watch::status_wakes::wake_text;

use crate::participants::{AckRun, Appended, Sent, WatchLog};
use crate::world::{Ran, World, run};

/// Everything the participants recorded.
pub struct Evidence {
    pub sent: Vec<Sent>,
    pub appended: Vec<Appended>,
    pub acks: Vec<AckRun>,
    pub watch: WatchLog,
}

/// Counts for the closing summary.
#[derive(Debug, Default)]
pub struct Tally {
    pub records: usize,
    pub lines: usize,
    pub wakes: usize,
    pub status_wakes: usize,
    pub repeats: usize,
    pub temps: usize,
    pub rings: usize,
    /// Lines cut at a page boundary by a SIGKILL inside `write`.
    pub fragments: usize,
    /// `--dedupe` sends answered with another send's record.
    pub dedupe_shared: usize,
    /// Filler lines padding an `fm-status` record to the next page.
    pub fillers: usize,
    /// Doorbell outcomes per pane task (events).
    pub outcomes: Vec<String>,
}

/// A line whose content ends exactly at a 4 KiB boundary: where Linux
/// stops an append when the writer is `SIGKILLed` between pages.
fn page_cut(start: u64, content_len: usize) -> bool {
    (start + content_len as u64).is_multiple_of(4096)
}

pub struct Audit<'a> {
    world: &'a World,
    ev: &'a Evidence,
    /// (check, problem) pairs.
    pub failures: Vec<(&'static str, String)>,
    pub tally: Tally,
    check: &'static str,
    killed: HashSet<u32>,
}

fn short(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    s.chars().take(60).collect::<String>().replace('\n', "⏎")
}

fn ran_ok(r: &Ran) -> bool {
    !r.killed && r.code == Some(0)
}

impl<'a> Audit<'a> {
    pub fn new(world: &'a World, ev: &'a Evidence) -> Audit<'a> {
        let killed = world.killed.lock().unwrap().clone();
        Audit {
            world,
            ev,
            failures: Vec::new(),
            tally: Tally::default(),
            check: "",
            killed,
        }
    }

    fn fail(&mut self, msg: String) {
        self.failures.push((self.check, msg));
    }

    pub fn run(&mut self) {
        self.check = "exits";
        self.participants_exited_cleanly();
        self.check = "inbox";
        self.inboxes();
        self.check = "temp files";
        self.temp_files(&self.world.state());
        self.readers_ignore_temps();
        self.check = "status logs";
        let lines = self.status_logs();
        self.check = "wakes";
        self.wakes(&lines);
        self.check = "events";
        self.events();
        self.check = "acks";
        self.acks();
        self.check = "panes";
        self.panes();
    }

    /// Failures grouped by check: a count and the first few of each.
    pub fn report(&self) -> String {
        let mut by: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
        for (c, m) in &self.failures {
            by.entry(c).or_default().push(m);
        }
        let mut out = String::new();
        for (c, ms) in by {
            out.push_str(&format!("AUDIT FAIL [{c}]: {} problem(s)\n", ms.len()));
            for m in ms.iter().take(4) {
                out.push_str(&format!("  - {m}\n"));
            }
        }
        out
    }

    /// Every participant we did not kill succeeded.
    fn participants_exited_cleanly(&mut self) {
        let mut bad = Vec::new();
        for s in &self.ev.sent {
            if !s.ran.killed && (s.ran.code != Some(0) || s.seq.is_none()) {
                bad.push(format!(
                    "fm-send {} (pid {}, {:?}, quiet {}, fire-and-forget {}) exit {:?}: {}{}",
                    s.task,
                    s.ran.pid,
                    s.via,
                    s.quiet,
                    s.fire_and_forget,
                    s.ran.code,
                    s.ran.stdout,
                    s.ran.stderr
                ));
            }
        }
        for a in &self.ev.appended {
            if !a.ran.killed && a.ran.code != Some(0) {
                let how = if a.by_hand { "echo >>" } else { "fm-status" };
                bad.push(format!(
                    "{how} {} (pid {}) exit {:?}: {}",
                    a.task, a.ran.pid, a.ran.code, a.ran.stderr
                ));
            }
        }
        for a in &self.ev.acks {
            if !a.ran.killed && a.ran.code != Some(0) {
                bad.push(format!(
                    "fm-ack {} {:?} (pid {}) exit {:?}: {}{}",
                    a.task, a.args, a.ran.pid, a.ran.code, a.ran.stdout, a.ran.stderr
                ));
            }
        }
        for w in &self.ev.watch.runs {
            if !w.killed && w.code != Some(0) {
                let mode = if w.daemon { "daemon" } else { "--once" };
                bad.push(format!(
                    "fm-watch {mode} pid {} (sent signal {:?}) exit {:?}: {}",
                    w.pid, w.signal, w.code, w.output
                ));
            }
        }
        for v in &self.ev.watch.violations {
            bad.push(format!("singleton: {v}"));
        }
        for b in bad {
            self.fail(b);
        }
    }

    /// Every sent body exists exactly once (pending or handled), byte-exact,
    /// at the number `fm-send` printed; killed senders' bodies at most once;
    /// numbers never repeat; nothing else is in an inbox.
    fn inboxes(&mut self) {
        // Sends grouped by body: one send per unique body, several for a
        // `--dedupe` body (they share one record).
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut by_body: HashMap<&[u8], usize> = HashMap::new();
        for (i, s) in self.ev.sent.iter().enumerate() {
            let g = *by_body.entry(s.body.as_slice()).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(i);
        }
        let mut found: Vec<Vec<(u64, bool)>> = vec![Vec::new(); groups.len()];
        for task in &self.world.tasks {
            let inbox = self.world.state().join(format!("{task}.inbox"));
            let mut seen: HashSet<u64> = HashSet::new();
            for (dir, handled) in [(inbox.clone(), false), (inbox.join("handled"), true)] {
                let Ok(rd) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for e in rd {
                    let name = e.unwrap().file_name().to_string_lossy().into_owned();
                    let Some(seq) = firstmate::fsx::parse_numbered(&name, "msg") else {
                        let known = name.starts_with('.')
                            && (name.contains(".tmp.")
                                || [".lock", ".ring-state", ".escalated"].contains(&name.as_str()))
                            || (!handled && name == "handled");
                        if !known {
                            self.fail(format!(
                                "unexpected file {task}.inbox/{}{name}",
                                if handled { "handled/" } else { "" }
                            ));
                        }
                        continue;
                    };
                    self.tally.records += 1;
                    if !seen.insert(seq) {
                        self.fail(format!(
                            "{task}: record number {seq} exists both pending and handled"
                        ));
                    }
                    let bytes = std::fs::read(dir.join(&name)).unwrap();
                    let Some(rec) = firstmate::inbox::parse(seq, &bytes) else {
                        self.fail(format!(
                            "{task}: {name} is not a complete record: {}",
                            short(&bytes)
                        ));
                        continue;
                    };
                    match by_body.get(rec.body.as_slice()) {
                        None => self.fail(format!(
                            "{task}: {name} holds a body nobody sent (partial or mixed?): {}",
                            short(&rec.body)
                        )),
                        Some(&g) => {
                            let s = &self.ev.sent[groups[g][0]];
                            if &s.task != task || s.fire_and_forget != rec.fire_and_forget {
                                self.fail(format!("{task}: {name} was sent to {} (fire-and-forget {}) but sits here with fire-and-forget {}", s.task, s.fire_and_forget, rec.fire_and_forget));
                            }
                            found[g].push((seq, handled));
                        }
                    }
                }
            }
        }
        for (group, places) in groups.iter().zip(&found) {
            let first = &self.ev.sent[group[0]];
            let what = short(&first.body);
            let finished: Vec<&Sent> = group
                .iter()
                .map(|&i| &self.ev.sent[i])
                .filter(|s| ran_ok(&s.ran))
                .collect();
            let all_killed = group.iter().all(|&i| self.ev.sent[i].ran.killed);
            match (finished.is_empty(), places.len()) {
                (false, 1) => {
                    self.tally.dedupe_shared += finished.len().saturating_sub(1);
                    for s in finished {
                        if Some(places[0].0) != s.seq {
                            self.fail(format!(
                                "{}: body {what} printed as {:?} but stored as {}",
                                s.task, s.seq, places[0].0
                            ));
                        }
                    }
                }
                (false, n) => self.fail(format!(
                    "{}: body {what} ({} sender(s) exited 0{}) exists {n} times",
                    first.task,
                    finished.len(),
                    if first.dedupe { ", --dedupe" } else { "" }
                )),
                (true, 0 | 1) if all_killed => {}
                (true, n) => self.fail(format!(
                    "{}: body {what} of failed/killed senders exists {n} times",
                    first.task
                )),
            }
        }
    }

    /// A dot-temp file may only be left by a process we `SIGKILLed`.
    fn temp_files(&mut self, dir: &Path) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                self.temp_files(&e.path());
                continue;
            }
            let Some((_, rest)) = name.split_once(".tmp.") else {
                continue;
            };
            self.tally.temps += 1;
            let pid: Option<u32> = rest.split('.').next().and_then(|p| p.parse().ok());
            if !name.starts_with('.') || firstmate::fsx::parse_numbered(&name, "msg").is_some() {
                self.fail(format!(
                    "temp file {} is visible as a record name",
                    e.path().display()
                ));
            }
            if !pid.is_some_and(|p| self.killed.contains(&p)) {
                self.fail(format!(
                    "temp file {} left by a process that was not killed",
                    e.path().display()
                ));
            }
        }
    }

    /// Readers see exactly the `NNN.msg` files: `fm-ack --list` and
    /// `fm-status --json` agree with the directory, temps or not.
    fn readers_ignore_temps(&mut self) {
        for task in self.world.tasks.clone() {
            let mut cmd = self.world.fm("ack");
            cmd.args([&task, "--list", "--json"]);
            let r = run(self.world, cmd, None, None);
            let listed: Vec<u64> = serde_json::from_str::<serde_json::Value>(&r.stdout)
                .ok()
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|o| o["seq"].as_u64())
                .collect();
            let inbox = self.world.state().join(format!("{task}.inbox"));
            let mut on_disk = firstmate::fsx::list_numbered(&inbox, "msg").unwrap();
            on_disk.sort_unstable();
            if r.code != Some(0) || listed != on_disk {
                self.fail(format!("{task}: fm-ack --list shows {listed:?}, the inbox holds {on_disk:?} (exit {:?} {})", r.code, r.stderr));
            }
        }
    }

    /// Whether a flawed status line at byte `start` is what a SIGKILL leaves:
    /// it ends exactly at a page boundary and is the start of a line some
    /// killed appender of `task` was writing.
    fn status_fragment(&self, task: &str, start: u64, line: &[u8]) -> bool {
        page_cut(start, line.len())
            && self
                .ev
                .appended
                .iter()
                .any(|a| a.ran.killed && a.task == task && a.could_leave(line))
    }

    /// Every status log ends with a newline and every line is one we
    /// appended, intact and parseable; lines of finished appenders appear
    /// exactly once, of killed ones at most once. Returns the wake-worthy
    /// lines: (task, wake text, byte offset of the line).
    fn status_logs(&mut self) -> Vec<(String, String, u64)> {
        let by_tag: HashMap<&str, usize> = self
            .ev
            .appended
            .iter()
            .enumerate()
            .map(|(i, a)| (a.tag.as_str(), i))
            .collect();
        let mut count = vec![0usize; self.ev.appended.len()];
        let mut wake_lines = Vec::new();
        for task in self.world.tasks.clone() {
            let path = self.world.state().join(format!("{task}.status"));
            let bytes = std::fs::read(&path).unwrap_or_default();
            let mut offset = 0u64;
            for raw in bytes.split_inclusive(|&b| b == b'\n') {
                let start = offset;
                offset += raw.len() as u64;
                let line = raw.strip_suffix(b"\n").unwrap_or(raw);
                self.tally.lines += 1;
                if line.len() == raw.len() {
                    // A tail without `\n`: readers ignore it; only a killed
                    // writer's fragment may be there.
                    if self.status_fragment(&task, start, line) {
                        self.tally.fragments += 1;
                    } else {
                        self.fail(format!(
                            "{task}.status ends in a torn line: {}",
                            short(line)
                        ));
                    }
                    continue;
                }
                let parsed = status::parse_line(line, "paused");
                if let Parsed::Line(l) = &parsed
                    && l.kind.wakes()
                {
                    wake_lines.push((task.clone(), wake_text(l), start));
                }
                let problem = match &parsed {
                    Parsed::Line(l) => {
                        let tag = l.text.split_whitespace().nth(2).unwrap_or("");
                        match by_tag.get(tag) {
                            None => Some("was never appended"),
                            Some(&i) => {
                                let a = &self.ev.appended[i];
                                if a.task == task
                                    && a.verb == l.verb
                                    && a.key == l.key
                                    && a.text == l.text
                                {
                                    count[i] += 1;
                                    None
                                } else {
                                    Some("differs from what was appended")
                                }
                            }
                        }
                    }
                    // A blank line: an append that saw a line still being
                    // written and ended it (prose, harmless). Spaces: the
                    // filler that keeps an `fm-status` record inside one
                    // page (it ends on a boundary unless a hand append
                    // was mid-write when it was measured).
                    Parsed::Prose if line.iter().all(|&b| b == b' ') => {
                        if !line.is_empty() {
                            self.tally.fillers += 1;
                        }
                        None
                    }
                    _ => Some("does not parse"),
                };
                let Some(problem) = problem else { continue };
                if self.status_fragment(&task, start, line) {
                    self.tally.fragments += 1;
                } else {
                    self.fail(format!(
                        "{task}.status: line at byte {start} {problem}: {}",
                        short(line)
                    ));
                }
            }
        }
        for (a, n) in self.ev.appended.iter().zip(count) {
            let ok = if ran_ok(&a.ran) {
                n == 1
            } else {
                a.ran.killed && n <= 1
            };
            if !ok {
                self.fail(format!(
                    "{}: status line {} ({}) appears {n} times",
                    a.task,
                    a.tag,
                    if a.ran.killed { "killed" } else { "finished" }
                ));
            }
        }
        wake_lines
    }

    /// The wakes log: intact, seqs strictly increasing; every wake-worthy
    /// line surfaced as one `status` wake — a second copy only when a
    /// watcher was `SIGKILLed` between the two copies while the line lay
    /// past its saved offset (appended, offset not yet saved); ladder
    /// wakes never repeated; a `watcher-recovered` wake for every watcher
    /// that died holding the lock, and for no other.
    fn wakes(&mut self, lines: &[(String, String, u64)]) {
        let bytes = std::fs::read(self.world.state().join("wakes.log")).unwrap_or_default();
        let status_texts: HashSet<(String, String)> = lines
            .iter()
            .map(|(t, x, _)| (t.clone(), firstmate::wakes::clean(x)))
            .collect();
        let known_kind = |k: &str| {
            [
                "status",
                "escalation",
                "overdue",
                "dead-agent",
                "watcher-recovered",
            ]
            .contains(&k)
        };
        let mut wakes: Vec<Wake> = Vec::new();
        let mut offset = 0u64;
        for raw in bytes.split_inclusive(|&b| b == b'\n') {
            let start = offset;
            offset += raw.len() as u64;
            let line = raw.strip_suffix(b"\n").unwrap_or(raw);
            let w = firstmate::wakes::parse_line(line).filter(|_| line.len() < raw.len());
            let sound = w.as_ref().is_some_and(|w| {
                w.seq > wakes.last().map_or(0, |p: &Wake| p.seq)
                    && known_kind(&w.kind)
                    && (w.kind != "status"
                        || status_texts.contains(&(w.task.clone(), w.text.clone())))
            });
            if !sound && page_cut(start, line.len()) && !self.ev.watch.boundaries.is_empty() {
                self.tally.fragments += 1;
                continue;
            }
            match w {
                Some(w) => wakes.push(w),
                None => self.fail(format!(
                    "wakes.log: malformed line at byte {start}: {}",
                    short(line)
                )),
            }
        }
        self.tally.wakes = wakes.len();
        for pair in wakes.windows(2) {
            if pair[1].seq <= pair[0].seq {
                self.fail(format!(
                    "wakes.log: seq {} follows {}",
                    pair[1].seq, pair[0].seq
                ));
            }
        }
        let bounds = &self.ev.watch.boundaries;
        let mut status: HashMap<(String, String), Vec<u64>> = HashMap::new();
        let mut ladder: HashMap<(String, String, String), u64> = HashMap::new();
        let mut recovered: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        let tasks: HashSet<&String> = self.world.tasks.iter().collect();
        let mut bad = Vec::new();
        for w in &wakes {
            if w.task != "-" && !tasks.contains(&w.task) {
                bad.push(format!("wake {} names unknown task {}", w.seq, w.task));
            }
            match w.kind.as_str() {
                "status" => status
                    .entry((w.task.clone(), w.text.clone()))
                    .or_default()
                    .push(w.seq),
                "escalation" | "overdue" | "dead-agent" => {
                    if w.text.contains("not writable") {
                        bad.push(format!("wake {}: {}", w.seq, w.text));
                    }
                    let k = (w.task.clone(), w.kind.clone(), w.text.clone());
                    if let Some(first) = ladder.insert(k, w.seq) {
                        bad.push(format!(
                            "ladder wake {} repeats wake {first}: {} {}",
                            w.seq, w.kind, w.text
                        ));
                    }
                }
                "watcher-recovered" => {
                    let pid = w
                        .text
                        .split("(pid ")
                        .nth(1)
                        .and_then(|r| r.split(')').next())
                        .and_then(|p| p.parse().ok());
                    match pid {
                        Some(p) => recovered.entry(p).or_default().push(w.seq),
                        None => bad.push(format!("wake {}: unreadable {}", w.seq, w.text)),
                    }
                }
                other => bad.push(format!("wake {} has unexpected kind {other}", w.seq)),
            }
        }
        for (task, text, offset) in lines {
            let Some(copies) = status.remove(&(task.clone(), firstmate::wakes::clean(text))) else {
                bad.push(format!(
                    "{task}: status line at byte {offset} never surfaced: {text}"
                ));
                continue;
            };
            self.tally.status_wakes += 1;
            for pair in copies.windows(2) {
                let justified = bounds.iter().any(|b| {
                    pair[0] <= b.last_seq
                        && b.last_seq < pair[1]
                        && *offset >= b.offsets.get(task).copied().unwrap_or(0)
                });
                if justified {
                    self.tally.repeats += 1;
                } else {
                    bad.push(format!("{task}: status line at byte {offset} surfaced again as wake {} (first {}) with no watcher killed before its offset was saved: {text}", pair[1], pair[0]));
                }
            }
        }
        for ((task, text), seqs) in status {
            bad.push(format!(
                "status wakes {seqs:?} for {task} match no line: {text}"
            ));
        }
        let held: HashSet<u32> = bounds.iter().filter(|b| b.held).map(|b| b.pid).collect();
        for pid in &held {
            if !recovered.contains_key(pid) {
                bad.push(format!(
                    "watcher {pid} died holding the lock but no watcher-recovered wake names it"
                ));
            }
        }
        for (pid, seqs) in &recovered {
            if !held.contains(pid) {
                bad.push(format!("watcher-recovered wakes {seqs:?} name pid {pid}, which did not die holding the lock"));
            }
            for pair in seqs.windows(2) {
                if !bounds
                    .iter()
                    .any(|b| pair[0] <= b.last_seq && b.last_seq < pair[1])
                {
                    bad.push(format!("watcher-recovered for {pid} repeated (wakes {pair:?}) without a kill between"));
                }
            }
        }
        for b in bad {
            self.fail(b);
        }
    }

    /// The audit trail: every line complete JSON.
    fn events(&mut self) {
        let bytes = std::fs::read(self.world.state().join("events.jsonl")).unwrap_or_default();
        let mut offset = 0u64;
        for raw in bytes.split_inclusive(|&b| b == b'\n') {
            let start = offset;
            offset += raw.len() as u64;
            let line = raw.strip_suffix(b"\n").unwrap_or(raw);
            if line.len() < raw.len() && serde_json::from_slice::<serde_json::Value>(line).is_ok() {
                continue;
            }
            if page_cut(start, line.len()) && !self.killed.is_empty() {
                self.tally.fragments += 1;
            } else {
                self.fail(format!(
                    "events.jsonl: line at byte {start} is not JSON: {}",
                    short(line)
                ));
            }
        }
    }

    /// Racing ackers: each record reported `handled` by at most one run,
    /// and whatever was reported handled/already is in `handled/` now.
    fn acks(&mut self) {
        let mut handled_by: HashMap<(String, u64), usize> = HashMap::new();
        let mut bad = Vec::new();
        for a in self.ev.acks.iter().filter(|a| ran_ok(&a.ran)) {
            for line in a.ran.stdout.lines() {
                let Some((word, name)) = line.split_once(' ') else {
                    bad.push(format!("fm-ack {}: odd output {line}", a.task));
                    continue;
                };
                let seq = firstmate::fsx::parse_numbered(name, "msg");
                let (Some(seq), "handled" | "already") = (seq, word) else {
                    bad.push(format!("fm-ack {}: odd output {line}", a.task));
                    continue;
                };
                if word == "handled" {
                    *handled_by.entry((a.task.clone(), seq)).or_default() += 1;
                }
                let id = TaskId::parse(&a.task).unwrap();
                let home = Home::new_unchecked(self.world.home.root());
                if !home.handled_record(&id, seq).exists() || home.inbox_record(&id, seq).exists() {
                    bad.push(format!(
                        "{}: {name} reported {word} but is not (only) in handled/",
                        a.task
                    ));
                }
            }
        }
        for ((task, seq), n) in handled_by {
            if n > 1 {
                bad.push(format!(
                    "{task}: record {seq} reported handled by {n} ackers"
                ));
            }
        }
        for b in bad {
            self.fail(b);
        }
    }

    /// Panes were only ever typed the doorbell, and the watcher tried to
    /// ring each. Whether a ring lands is not required: a slow agent can
    /// leave the doorbell on screen past the Enter retries (`failed`), and
    /// concurrent ringers see each other's doorbell mid-flight.
    fn panes(&mut self) {
        let home = Home::new_unchecked(self.world.home.root());
        let events =
            std::fs::read_to_string(self.world.state().join("events.jsonl")).unwrap_or_default();
        for task in self.world.pane_tasks.clone() {
            let id = TaskId::parse(&task).unwrap();
            let bell = firstmate::tmux::deliver::doorbell(&home, &id);
            let log = std::fs::read_to_string(self.world.agent_log(&task)).unwrap_or_default();
            for line in log.lines() {
                if !line.replace(&bell, "").trim().is_empty() {
                    self.fail(format!(
                        "{task}: the pane was typed something other than the doorbell: {}",
                        short(line.as_bytes())
                    ));
                }
                self.tally.rings += line.matches(&bell).count();
            }
            let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
            for l in events
                .lines()
                .filter(|l| l.contains(&format!("\"task\":\"{task}\"")))
            {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
                    continue;
                };
                if let (Some(a), Some(d)) = (v["action"].as_str(), v["doorbell"].as_str()) {
                    *outcomes.entry(format!("{a}:{d}")).or_default() += 1;
                }
            }
            if !outcomes.keys().any(|k| k.starts_with("watch.rang:")) {
                self.fail(format!(
                    "{task}: the watcher never rang its pane; doorbell outcomes {outcomes:?}"
                ));
            }
            self.tally.outcomes.push(format!("{task} {outcomes:?}"));
        }
    }
}
