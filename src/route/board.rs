//! A dispatch of this home's board under an idempotency key, the far
//! side of `fm-board --host <name> dispatch` (docs/remote.md, "A dispatch
//! across the link, exactly once").

use super::keys::Printed;
use crate::board::BoardId;
use crate::board::dispatch::{self, Outcome};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::remote::kept;

/// The far side of `fm-board --host <name> dispatch`: a dispatch under a
/// key. A key already served prints its answer again and does nothing; a
/// new one runs the dispatch with each task's step noted beside the key
/// ([`dispatch::Journal`]), so a run killed midway and retried under the
/// same key finishes what it began and acts on no task twice. Once the
/// records are queued the answer is kept with the doorbells `ringing`
/// and the key lock released (a retry during the rings gets it at once),
/// then the final answer after the rings (docs/remote.md).
pub fn dispatch_keyed(
    home: &Home,
    cfg: &Config,
    key: &str,
    asked: &str,
    now: u64,
    render: &dyn Fn(&[Outcome]) -> Result<String>,
) -> Result<Printed> {
    let fresh = match kept::lookup_board(home, key, &board_request(asked))? {
        kept::Lookup::Seen(answer) => {
            return Ok(Printed {
                code: answer.code,
                stdout: answer.stdout,
            });
        }
        kept::Lookup::Fresh(f) => f,
    };
    let mut journal = KeyJournal(&fresh);
    let mut outcomes = dispatch::queue_all(home, cfg, now, Some(&mut journal))?;
    let code = u8::from(outcomes.iter().any(|o| o.action == "error"));
    let mut ringing = outcomes.clone();
    for o in ringing
        .iter_mut()
        .filter(|o| matches!(o.action, "dispatched" | "resent"))
    {
        o.doorbell = Some("ringing".into());
    }
    let provisional = kept::Answer {
        code,
        stdout: render(&ringing)?,
    };
    let held = fresh.hold(&provisional);
    dispatch::ring_and_record(home, cfg, now, &mut outcomes);
    let answer = kept::Answer {
        code,
        stdout: render(&outcomes)?,
    };
    if let Err(e) = held.and_then(|h| h.finish(&answer)) {
        crate::output::err_line(&format!(
            "fm-board: warning: dispatched, but its idempotency key was not kept: {e}"
        ));
    }
    Ok(Printed {
        code: answer.code,
        stdout: answer.stdout,
    })
}

/// The request a board key is bound to: `asked` is the command as given.
fn board_request(asked: &str) -> kept::Request {
    kept::Request::new("fm-board", "board", &[asked.as_bytes()])
}

/// A keyed dispatch's notes, one per task, beside its key in the board's
/// keys (`<key>#T-NNN`, the note as JSON).
struct KeyJournal<'a>(&'a kept::Fresh);

impl dispatch::Journal for KeyJournal<'_> {
    fn get(&mut self, task: BoardId) -> Result<Option<dispatch::Note>> {
        Ok(self
            .0
            .noted(&task.to_string())?
            .and_then(|a| serde_json::from_str(&a.stdout).ok()))
    }

    fn put(&mut self, task: BoardId, note: &dispatch::Note) -> Result<()> {
        let stdout = serde_json::to_string(note).map_err(|e| Error::External {
            program: "serde_json".into(),
            msg: e.to_string(),
        })?;
        self.0
            .note(&task.to_string(), &kept::Answer { code: 0, stdout })
    }
}
