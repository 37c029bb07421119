//! `fm grant` (docs/spec/grant.md): the captain's word that lets the first
//! mate do one irreversible verb to one task; `--list` and `--revoke`.

use std::ffi::OsString;

use super::common::{self, HomeArg};
use crate::clock;
use crate::error::{Error, Result};
use crate::grant::{self, Actor, Verb};
use crate::task_id::TaskId;

const TOOL: &str = "fm";

/// `fm grant`'s arguments (a subcommand of `fm`).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Verbs: teardown (teardown --force), exit (exit --force, relaunch --force), land.\n\nExamples:\n  fm grant fix-login teardown\n  fm grant fix-login exit --for 10m\n  fm grant --list\n  fm grant --revoke fix-login teardown"
)]
pub(crate) struct GrantArgs {
    /// Task id
    #[arg(value_name = "ID", required_unless_present = "list")]
    id: Option<OsString>,
    /// teardown, exit or land
    #[arg(value_name = "VERB", required_unless_present = "list")]
    verb: Option<String>,
    /// How long the grant stays open: 90s, 10m, 2h (default 1h)
    #[arg(long = "for", value_name = "DURATION", conflicts_with_all = ["list", "revoke"])]
    duration: Option<String>,
    /// Print the grants open now
    #[arg(long, conflicts_with = "revoke")]
    list: bool,
    /// Withdraw the grant of VERB on ID
    #[arg(long)]
    revoke: bool,
    /// Print the result as JSON
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    home: HomeArg,
}

pub(crate) fn run(a: GrantArgs) -> Result<u8> {
    let actor = Actor::from_env();
    let now = clock::now();
    if a.list {
        if a.id.is_some() {
            return Err(Error::usage("--list takes no ID or VERB"));
        }
        let ctx = a.home.ctx(TOOL)?;
        let open = grant::list(&ctx.home, now)?;
        if a.json {
            return common::out_json(&open).map(|()| 0);
        }
        if open.is_empty() {
            common::out("no grants open")?;
        }
        for g in &open {
            common::out(&g.line(now))?;
        }
        return Ok(0);
    }
    let (Some(id), Some(verb)) = (a.id.as_ref(), a.verb.as_deref()) else {
        return Err(Error::usage("give ID and VERB"));
    };
    let id = TaskId::parse_os(id)?;
    let verb = Verb::parse(verb)?;
    let for_secs = a
        .duration
        .as_deref()
        .map_or(Ok(grant::DEFAULT_FOR), parse_for)?;
    if !a.revoke {
        // Refused before the home is read: the first mate changes nothing.
        grant::captain_only(actor)?;
    }
    let ctx = a.home.ctx(TOOL)?;
    // Narrowing what the first mate may do needs no captain.
    if a.revoke {
        let gone = grant::revoke(&ctx.home, &id, verb, now)?;
        let text = if gone {
            format!("revoked {id} {}", verb.as_str())
        } else {
            format!("no grant of {} on {id} was open", verb.as_str())
        };
        if a.json {
            common::out_json(&serde_json::json!({"id": id, "verb": verb, "revoked": gone}))?;
        } else {
            common::out(&text)?;
        }
        return Ok(0);
    }
    let g = grant::give(&ctx.home, actor, &id, verb, for_secs, now)?;
    if a.json {
        common::out_json(&g)?;
    } else {
        common::out(&format!("granted {}", g.line(now)))?;
    }
    Ok(0)
}

/// `--for`: a duration with units (`90s`, `10m`, `1h30m`, ISO `PT2H`) or
/// bare seconds.
fn parse_for(s: &str) -> Result<u64> {
    let bad = || {
        Error::usage(format!(
            "--for {}: a duration such as 90s, 10m or 2h",
            crate::error::quoted(s)
        ))
    };
    if let Ok(n) = s.parse::<u64>() {
        return Ok(n);
    }
    let d: jiff::SignedDuration = s.trim().parse().map_err(|_| bad())?;
    u64::try_from(d.as_secs()).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_with_units_or_as_seconds() {
        assert_eq!(super::parse_for("90").unwrap(), 90);
        assert_eq!(super::parse_for("90s").unwrap(), 90);
        assert_eq!(super::parse_for("10m").unwrap(), 600);
        assert_eq!(super::parse_for("1h30m").unwrap(), 5400);
        assert_eq!(super::parse_for("PT2H").unwrap(), 7200);
        assert_eq!(super::parse_for("soon").unwrap_err().exit_code(), 2);
        assert_eq!(super::parse_for("-5m").unwrap_err().exit_code(), 2);
    }
}
