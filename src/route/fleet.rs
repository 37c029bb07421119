//! The fleet's rows wherever the tasks live: the local rows read by crew
//! state's [`FleetReader`], a remote task's row replaced by its host's
//! answer ([`crate::remote::fleet`]). Above both, so neither imports the
//! other's caller.

use crate::config::Config;
use crate::crew_state::{FleetReader, Row};
use crate::home::Home;
use crate::task_id::TaskId;

pub(crate) use crate::remote::fleet::Pending;

/// Starts asking every configured host for its rows (no threads when
/// there are none); [`Pending::overlay`] puts them in place.
pub(crate) fn ask_hosts(home: &Home, cfg: &Config) -> Pending {
    crate::remote::fleet::start(home, cfg)
}

/// The rows of `ids` (in the order given), read by a one-view
/// [`FleetReader`] at `now` with the real tmux and the done gate, a remote
/// task's row from its host (`remote::fleet`; only the hosts these tasks
/// are on are asked), and the warnings to print (tmux could not be asked).
pub fn rows(home: &Home, cfg: &Config, ids: &[TaskId], now: u64) -> (Vec<Row>, Vec<String>) {
    let (mut rows, warnings) = FleetReader::new().tasks(home, cfg, ids, now);
    let on: Vec<&str> = rows.iter().filter_map(|r| r.host.as_deref()).collect();
    let mut hosts = crate::remote::fleet::start_only(home, cfg, &on);
    hosts.overlay(&mut rows);
    (rows, warnings)
}

/// The whole fleet (every task with a meta file, in id order), as [`rows`].
pub fn fleet(home: &Home, cfg: &Config, now: u64) -> crate::Result<(Vec<Row>, Vec<String>)> {
    let mut hosts = crate::remote::fleet::start(home, cfg);
    let mut rows = Vec::new();
    let warnings = FleetReader::new().fleet(home, cfg, now, &mut |r| {
        rows.push(r);
        Ok(())
    })?;
    hosts.overlay(&mut rows);
    Ok((rows, warnings))
}
