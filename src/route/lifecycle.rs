//! A task's lifecycle wherever it lives (`fm-control`, docs/remote.md,
//! "Lifecycle"): the typed request of the far side, the typed report both
//! sides render, and the use case `fm-control` calls. A task on a host
//! (or a spawn `--host` names) is acted on there through the far entry
//! ([`super::far`]); the captain's side of that call and the far side's
//! keyed serve are in [`crate::remote::control`].

use super::keys;
use crate::config::Config;
use crate::control::{self, Action};
use crate::error::Result;
use crate::grant::{self, Actor};
use crate::home::Home;
use crate::task_id::TaskId;

pub use crate::remote::control::rehome_brief;
pub use crate::remote::control::request::{LifecycleReport, LifecycleRequest};

/// Runs `action` on task `id` for `actor` under idempotency key `key`:
/// on the host `host` names (a spawn) or the task's meta names, through
/// the far entry; else here (under the key, a key served before gives its
/// report and does nothing). The first mate's irreversible verbs need the
/// captain's grant, checked here in the captain's home before the request
/// goes anywhere ([`grant::guard`]); a grant taken for an action that
/// fails is given back.
pub(crate) fn run(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    action: Action,
    host: Option<&str>,
    key: Option<&str>,
    actor: Actor,
) -> Result<LifecycleReport> {
    if let Some(k) = key {
        keys::validate(k)?;
    }
    let now = crate::clock::now();
    let taken = grant::guard(home, actor, id, &action, now)?;
    let r = route(home, cfg, id, action, host, key);
    if let (Err(_), Some(g)) = (&r, taken) {
        // The action's own error is the one to report; a grant that could
        // not be put back only means the captain grants again.
        let _ = grant::give_back(home, g, crate::clock::now());
    }
    r
}

fn route(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    action: Action,
    host: Option<&str>,
    key: Option<&str>,
) -> Result<LifecycleReport> {
    if let Some(report) = crate::remote::control::captain(home, cfg, id, &action, host, key)? {
        return Ok(report);
    }
    if key.is_some() {
        let req = LifecycleRequest {
            action,
            brings_brief: false,
            brief_paths: Vec::new(),
        };
        return crate::remote::control::serve(home, cfg, id, &req, key, None);
    }
    let result = control::run(home, cfg, id, action)?;
    Ok(LifecycleReport {
        id: id.to_string(),
        result,
        warnings: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lifecycle_request_travels_as_data_and_its_report_renders() {
        let req = LifecycleRequest {
            action: Action::Relaunch {
                note: Some("it's $HOME\n--force".into()),
                harness: None,
                force: true,
            },
            brings_brief: false,
            brief_paths: vec![],
        };
        let line = serde_json::to_string(&req).unwrap();
        assert_eq!(
            line,
            r#"{"action":"relaunch","note":"it's $HOME\n--force","harness":null,"force":true,"brings_brief":false}"#
        );
        assert_eq!(
            serde_json::from_str::<LifecycleRequest>(&line).unwrap(),
            req
        );
        let r = LifecycleReport {
            id: "t1".into(),
            result: "interrupted t1".into(),
            warnings: vec!["w".into()],
        };
        assert_eq!(r.text(false).unwrap(), "interrupted t1\n");
        assert_eq!(
            r.text(true).unwrap(),
            "{\"id\":\"t1\",\"result\":\"interrupted t1\"}\n"
        );
    }
}
