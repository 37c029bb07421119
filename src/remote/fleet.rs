//! The fleet view across hosts (docs/spec/crew-state.md#output with `[hosts.<name>]`): the rows
//! of tasks whose meta names a host come from that host.
//!
//! Every configured host is asked once per view — one `fm-crew-state
//! --json` round trip — on its own thread, started before the local rows
//! are gathered, so the hosts and the local fleet are read at the same
//! time and a slow host costs at most its `timeout_ms`, never the other
//! rows. A host that gives no answer turns its tasks into `unknown ·
//! source: none · host unreachable: <why>`; a task the host does not know,
//! or a host that is not configured, is `unknown` too, saying so.

use std::collections::{BTreeMap, HashMap};
use std::thread::JoinHandle;

use serde::Deserialize;

use super::ssh::Ssh;
use crate::clock;
use crate::config::Config;
use crate::config::HostCfg;
use crate::crew_state::{Attention, OpenDecision, Row, Source, State};
use crate::home::Home;
use crate::status::Decision;

/// One row as the far `fm-crew-state --json` prints it.
#[derive(Debug, Deserialize)]
struct FarRow {
    id: String,
    state: String,
    source: String,
    #[serde(default)]
    detail: String,
    #[serde(default)]
    age_secs: Option<u64>,
    #[serde(default)]
    inbox_pending: usize,
    #[serde(default)]
    open_decisions: Vec<Decision>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    current_at: Option<String>,
    #[serde(default)]
    attention: Option<FarAttention>,
    /// The far side's usage count, as its `--json` prints it.
    #[serde(default, deserialize_with = "crate::usage::from_row_json")]
    usage: Option<crate::usage::Tokens>,
}

/// A row's `attention` as the far `--json` prints it: `{kind, since, …the
/// kind's own fields}`.
#[derive(Debug, Deserialize)]
struct FarAttention {
    kind: String,
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    text: String,
    #[serde(default)]
    which: String,
    #[serde(default)]
    record: String,
    #[serde(default)]
    unread: usize,
    #[serde(default)]
    rings: u64,
}

impl FarAttention {
    /// The attention this side knows by that kind; a kind it does not
    /// know (a newer far side) is none.
    fn into_attention(self) -> Option<Attention> {
        let at = self.since.as_deref().and_then(clock::parse_rfc3339);
        let text = self.text;
        Some(match self.kind.as_str() {
            "decision" => Attention::Decision {
                key: self.key.unwrap_or_else(|| "default".into()),
                text,
                at,
            },
            "blocked" => Attention::Blocked {
                key: self.key,
                text,
                at,
            },
            "approval" => Attention::Approval { text, at },
            "dialog" => Attention::Dialog { which: self.which },
            "escalated" => Attention::Escalated {
                record: self.record,
                unread: self.unread,
                rings: self.rings,
                at,
            },
            "dead-agent" => Attention::DeadAgent {
                which: self.which,
                unread: self.unread,
            },
            "failed" => Attention::Failed { text, at },
            _ => return None,
        })
    }
}

/// A host's rows by task id, or why there are none.
type Answer = Result<HashMap<String, FarRow>, Why>;

#[derive(Debug)]
enum Why {
    Unreachable(String),
    Failed(String),
}

/// The hosts' answers, arriving; each is waited for when a row first
/// needs it.
pub(crate) struct Pending {
    hosts: BTreeMap<String, JoinHandle<Answer>>,
    answers: BTreeMap<String, Answer>,
}

/// Starts asking every configured host; no threads when there are none.
pub(crate) fn start(home: &Home, cfg: &Config) -> Pending {
    start_hosts(home, cfg, |_| true)
}

/// Starts asking the configured hosts among `names` (the hosts some rows
/// are on); none at all for local rows only.
pub(crate) fn start_only(home: &Home, cfg: &Config, names: &[&str]) -> Pending {
    start_hosts(home, cfg, |n| names.contains(&n))
}

fn start_hosts(home: &Home, cfg: &Config, wanted: impl Fn(&str) -> bool) -> Pending {
    let hosts = cfg
        .hosts
        .iter()
        .filter(|(name, _)| wanted(name))
        .map(|(name, host)| {
            let (home, name2, host) = (home.clone(), name.clone(), host.clone());
            (
                name.clone(),
                std::thread::spawn(move || ask(&home, &name2, &host)),
            )
        })
        .collect();
    Pending {
        hosts,
        answers: BTreeMap::new(),
    }
}

fn ask(home: &Home, name: &str, host: &HostCfg) -> Answer {
    let ssh = Ssh::new(home, name, host).map_err(|e| Why::Failed(e.to_string()))?;
    let reply = ssh
        .tool("fm-crew-state", &["--json"], None)
        .map_err(|u| Why::Unreachable(u.0))?;
    if reply.code != 0 {
        let why = reply.stderr.lines().rfind(|l| !l.trim().is_empty());
        return Err(Why::Failed(format!(
            "fm-crew-state exit {}: {}",
            reply.code,
            why.unwrap_or("").trim()
        )));
    }
    let rows: Vec<FarRow> = serde_json::from_str(&reply.stdout)
        .map_err(|e| Why::Failed(format!("unreadable answer: {e}")))?;
    Ok(rows.into_iter().map(|r| (r.id.clone(), r)).collect())
}

impl Pending {
    /// Replaces the rows of remote tasks (those whose meta names a host:
    /// [`Row::host`]) by their host's answer, and marks them with the
    /// host. Rows of local tasks are left alone, and cost nothing.
    pub(crate) fn overlay(&mut self, rows: &mut [Row]) {
        let remote: Vec<(usize, String)> = rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.host.clone().map(|h| (i, h)))
            .collect();
        for (_, host) in &remote {
            if let Some(h) = self.hosts.remove(host) {
                let answer = h
                    .join()
                    .unwrap_or_else(|_| Err(Why::Failed("the query panicked".into())));
                self.answers.insert(host.clone(), answer);
            }
        }
        let answers = &mut self.answers;
        for (i, host) in remote {
            let row = &mut rows[i];
            let got = match answers.get_mut(&host) {
                None => Err(format!("host {host} is not configured")),
                Some(Err(Why::Unreachable(why))) => Err(format!("host unreachable: {why}")),
                Some(Err(Why::Failed(why))) => Err(format!("host {host}: {why}")),
                Some(Ok(map)) => map
                    .remove(&row.id)
                    .ok_or_else(|| format!("no metadata for {} on host {host}", row.id)),
            };
            *row = match got {
                Ok(far) => from_far(far),
                Err(detail) => Row {
                    id: row.id.clone(),
                    state: State::Unknown,
                    source: Source::None,
                    detail,
                    age_secs: None,
                    inbox_pending: 0,
                    open_decisions: Vec::new(),
                    current_at: None,
                    attention: None,
                    project: None,
                    pane: None,
                    tmux_socket: String::new(),
                    host: None,
                    usage: None,
                },
            };
            row.host = Some(host);
        }
    }
}

const STATES: [State; 9] = [
    State::Working,
    State::Idle,
    State::Parked,
    State::Blocked,
    State::Paused,
    State::Done,
    State::Failed,
    State::Exited,
    State::Unknown,
];

const SOURCES: [Source; 4] = [Source::Run, Source::Pane, Source::StatusLog, Source::None];

fn from_far(far: FarRow) -> Row {
    let state = STATES.into_iter().find(|s| s.as_str() == far.state);
    let source = SOURCES
        .into_iter()
        .find(|s| s.as_str() == far.source)
        .unwrap_or(Source::None);
    let detail = match state {
        Some(_) => far.detail,
        // A newer far side with a state this side does not know.
        None => format!("host says {}: {}", far.state, far.detail),
    };
    Row {
        id: far.id,
        state: state.unwrap_or(State::Unknown),
        source,
        detail,
        age_secs: far.age_secs,
        inbox_pending: far.inbox_pending,
        open_decisions: far.open_decisions.iter().map(OpenDecision::from).collect(),
        // The far side's own times and attention: the fleet ranks a remote
        // row as the far side sees it.
        current_at: far.current_at.as_deref().and_then(clock::parse_rfc3339),
        attention: far.attention.and_then(FarAttention::into_attention),
        project: far.project,
        pane: None,
        tmux_socket: String::new(),
        host: None,
        usage: far.usage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's usage count comes back as the row's (docs/crew-state.md,
    /// "Usage per worker"); a far side that counted nothing sends none.
    #[test]
    fn a_far_rows_usage_is_kept() {
        let far: FarRow = serde_json::from_str(
            r#"{"id":"t1","state":"working","source":"pane","usage":{"input_tokens":10,"output_tokens":5,"cache_read_tokens":3,"cache_write_tokens":2,"total_tokens":20,"cost_usd":0.5}}"#,
        )
        .unwrap();
        let u = from_far(far).usage.unwrap();
        assert_eq!(
            (u.input, u.output, u.cache_read, u.cache_write),
            (10, 5, 3, 2)
        );
        assert_eq!(u.cost_micro_usd, Some(500_000));
        let far: FarRow =
            serde_json::from_str(r#"{"id":"t1","state":"working","source":"pane"}"#).unwrap();
        assert_eq!(from_far(far).usage, None);
    }

    #[test]
    fn a_far_row_keeps_its_fields_and_an_unknown_state_says_so() {
        let far: FarRow = serde_json::from_str(
            r#"{"id":"t1","state":"blocked","source":"status-log","detail":"needs x","age_secs":5,"inbox_pending":2,"open_decisions":[{"key":"default","verb":"blocked","text":"needs x","at":7}],"future":1}"#,
        )
        .unwrap();
        let row = from_far(far);
        assert_eq!(
            (
                row.state,
                row.source,
                &*row.detail,
                row.age_secs,
                row.inbox_pending
            ),
            (State::Blocked, Source::StatusLog, "needs x", Some(5), 2)
        );
        assert_eq!(row.open_decisions[0].at, Some(7));
        assert_eq!((row.current_at, row.attention), (None, None));
        let far: FarRow = serde_json::from_str(
            r#"{"id":"t1","state":"parked","source":"status-log","current_at":"2026-11-30T09:15:02Z","attention":{"kind":"decision","reason":"needs decision: db \u2014 which?","since":"2026-11-30T09:15:02Z","key":"db","text":"which?"}}"#,
        )
        .unwrap();
        let row = from_far(far);
        let at = clock::parse_rfc3339("2026-11-30T09:15:02Z");
        assert!(at.is_some());
        assert_eq!(row.current_at, at);
        assert_eq!(
            row.attention,
            Some(Attention::Decision {
                key: "db".into(),
                text: "which?".into(),
                at
            })
        );
        // Every kind this side prints reads back as itself.
        for a in [
            Attention::Blocked {
                key: None,
                text: "gate".into(),
                at,
            },
            Attention::Approval {
                text: "run".into(),
                at,
            },
            Attention::Dialog {
                which: "trust".into(),
            },
            Attention::Escalated {
                record: "003.msg".into(),
                unread: 2,
                rings: 3,
                at,
            },
            Attention::DeadAgent {
                which: "pane gone".into(),
                unread: 1,
            },
            Attention::Failed {
                text: "x".into(),
                at,
            },
        ] {
            let json = serde_json::to_string(&a).unwrap();
            let back: FarAttention = serde_json::from_str(&json).unwrap();
            assert_eq!(back.into_attention(), Some(a), "{json}");
        }
        let newer: FarAttention = serde_json::from_str(r#"{"kind":"telepathy"}"#).unwrap();
        assert_eq!(newer.into_attention(), None);
        let far: FarRow =
            serde_json::from_str(r#"{"id":"t1","state":"dreaming","source":"new","detail":"z"}"#)
                .unwrap();
        let row = from_far(far);
        assert_eq!(
            (row.state, row.source, &*row.detail),
            (State::Unknown, Source::None, "host says dreaming: z")
        );
    }
}
