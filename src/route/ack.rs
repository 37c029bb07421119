//! Acknowledging a task's records (docs/spec/inbox.md#fm-ack) wherever it lives: the
//! typed request and report, here or through the far entry.

use serde::{Deserialize, Serialize};

use super::keys::{self, Keys};
use super::wire::{self, Envelope, FarRequest};
use super::{Place, Task};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::inbox::{self, AckOutcome, record_name};

/// What an acknowledgement asks for: the records named, or every pending
/// one numbered up to `through`, acknowledged by `actor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckRequest {
    pub actor: String,
    #[serde(default)]
    pub seqs: Vec<u64>,
    #[serde(default)]
    pub through: Option<u64>,
}

/// One acknowledged record: `handled`, or `already` handled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acked {
    pub seq: u64,
    pub name: String,
    pub result: String,
}

/// `handled 002.msg`.
impl std::fmt::Display for Acked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.result, self.name)
    }
}

/// A record that was not acknowledged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NotAcked {
    /// No such record.
    Missing(u64),
    /// Refused (a symlinked record, …): why.
    Refused(String),
}

/// What an acknowledgement did; `code` is 1 when a record named was
/// missing or refused (after every one was tried).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckReport {
    pub task: String,
    pub acked: Vec<Acked>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_acked: Vec<NotAcked>,
    pub code: u8,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Acknowledges `req` on `task` under idempotency key `key`, here or on
/// its host.
pub fn ack(
    home: &Home,
    cfg: &Config,
    task: &Task,
    req: &AckRequest,
    key: Option<&str>,
) -> Result<AckReport> {
    let _ = cfg;
    if let Some(k) = key {
        keys::validate(k)?;
    }
    match task.place() {
        Place::Host(host) => wire::call(
            home,
            host,
            &Envelope::new(
                key.map_or_else(|| crate::remote::call::new_key(task.id()), str::to_string),
                task.id().to_string(),
                req.clone(),
            ),
            &[],
        ),
        Place::Here => ack_here(home, task, req, key),
    }
}

/// The local acknowledgement; a task that lives on a host is refused.
pub(crate) fn ack_here(
    home: &Home,
    task: &Task,
    req: &AckRequest,
    key: Option<&str>,
) -> Result<AckReport> {
    task.here()?;
    let id = task.id();
    if !inbox::has_inbox(home, id)? {
        return Err(Error::NoInbox { id: id.to_string() });
    }
    let what = format!("seqs={:?} through={:?}", req.seqs, req.through);
    let parts: [&[u8]; 2] = [req.actor.as_bytes(), what.as_bytes()];
    let kept = keys::keyed(home, Keys::Task(id), key, "ack", &parts, |_| {
        let (seqs, quiet_missing) = match req.through {
            Some(n) => {
                let upto: Vec<u64> = inbox::pending(home, id)?
                    .into_iter()
                    .filter(|&s| s <= n)
                    .collect();
                (upto, true)
            }
            None => (req.seqs.clone(), false),
        };
        let mut report = AckReport {
            task: id.to_string(),
            acked: Vec::new(),
            not_acked: Vec::new(),
            code: 0,
            warnings: Vec::new(),
        };
        for seq in seqs {
            let result = match inbox::acknowledge(home, id, seq, &req.actor) {
                Ok(AckOutcome::Handled) => "handled",
                Ok(AckOutcome::Already) => "already",
                Ok(AckOutcome::Missing) => {
                    if !quiet_missing {
                        report.not_acked.push(NotAcked::Missing(seq));
                        report.code = 1;
                    }
                    continue;
                }
                Err(e) if e.exit_code() == 1 => {
                    report.not_acked.push(NotAcked::Refused(e.to_string()));
                    report.code = 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            report.acked.push(Acked {
                seq,
                name: record_name(seq),
                result: result.to_string(),
            });
        }
        Ok(report)
    })?;
    let mut report = kept.report;
    // The acks are done: a key that cannot be kept is a warning, never a
    // failure after the fact.
    if let Some(e) = kept.not_kept {
        report.warnings.push(keys::not_kept("acknowledged", &e));
    }
    Ok(report)
}

impl FarRequest for AckRequest {
    const OP: &'static str = "ack";
}
