//! Where a task lives, chosen once (docs/architecture.md).
//!
//! [`Task::open`] reads a task's meta once and yields its [`Place`]: here,
//! or a configured host. The write use cases take the opened task and a
//! typed request and return a typed report; for a task on a host, the
//! request travels as data to the far side's one entry point
//! ([`far`]), which runs the same use case there and keeps the report
//! under the call's idempotency key. A caller (a tool of `cli/`, `fm top`)
//! never asks which place it is: it renders the report it gets back.

pub mod ack;
pub mod board;
pub mod brief;
pub mod broadcast;
pub mod dod;
pub mod far;
pub mod fleet;
pub mod keys;
pub mod land;
pub mod lifecycle;
pub mod press;
pub mod read;
pub mod review;
pub mod send;
pub(crate) mod setup;
pub mod status;
pub mod wakes;
pub(crate) mod wire;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;

pub use crate::remote::call::Remote;

/// Where a task lives.
#[derive(Debug, Clone)]
pub enum Place {
    /// In this home.
    Here,
    /// On a configured host: its name and table.
    Host(Remote),
}

/// A task opened once: its id, its meta as read then (none for a task
/// with no meta file yet) and its place.
#[derive(Debug, Clone)]
pub struct Task {
    id: TaskId,
    meta: Option<TaskMeta>,
    place: Place,
}

impl Task {
    /// Reads task `id`'s meta and finds its place. A meta naming a host the
    /// config does not define is refused ([`Error::HostNotConfigured`],
    /// exit 1): acting here instead would write where no worker reads.
    pub fn open(home: &Home, cfg: &Config, id: &TaskId) -> Result<Task> {
        let meta = TaskMeta::load(home, id)?;
        let place = match meta.as_ref().and_then(|m| m.host.as_deref()) {
            None => Place::Here,
            Some(name) => match cfg.hosts.get(name) {
                Some(h) => Place::Host(Remote {
                    name: name.to_string(),
                    cfg: h.clone(),
                }),
                None => {
                    return Err(Error::HostNotConfigured {
                        id: id.to_string(),
                        host: name.to_string(),
                    });
                }
            },
        };
        Ok(Task {
            id: id.clone(),
            meta,
            place,
        })
    }

    /// A task the caller knows lives here (a live pane of this home's
    /// server found by a broadcast), its meta not read again.
    pub(crate) fn known_here(id: TaskId) -> Task {
        Task {
            id,
            meta: None,
            place: Place::Here,
        }
    }

    pub fn id(&self) -> &TaskId {
        &self.id
    }

    pub fn meta(&self) -> Option<&TaskMeta> {
        self.meta.as_ref()
    }

    pub fn place(&self) -> &Place {
        &self.place
    }

    /// The task's host, when it lives on one.
    pub fn host(&self) -> Option<&Remote> {
        match &self.place {
            Place::Here => None,
            Place::Host(r) => Some(r),
        }
    }

    /// Refuses a local write to a task that lives on a host
    /// ([`Error::OnHost`], exit 1): its records there are the ones its
    /// worker reads. Every local use case asks this before writing.
    pub fn here(&self) -> Result<()> {
        match &self.place {
            Place::Here => Ok(()),
            Place::Host(r) => Err(Error::OnHost {
                id: self.id.to_string(),
                host: r.name.clone(),
            }),
        }
    }
}

/// The configured host `name`; one the config does not define is
/// [`Error::UnknownHost`] (exit 2), like an unknown `--host` of a spawn.
pub fn host_named(cfg: &Config, name: &str) -> Result<Remote> {
    if let Some(h) = cfg.hosts.get(name) {
        return Ok(Remote {
            name: name.to_string(),
            cfg: h.clone(),
        });
    }
    Err(Error::UnknownHost {
        name: name.to_string(),
        known: cfg.hosts.keys().cloned().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_with(cfg: &str, meta: &str) -> (tempfile::TempDir, Home, Config) {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        std::fs::create_dir_all(home.state_dir()).unwrap();
        std::fs::write(home.state_dir().join("t1.meta"), meta).unwrap();
        let cfg =
            Config::from_parts(std::path::Path::new("firstmate.toml"), Some(cfg), &[]).unwrap();
        (d, home, cfg)
    }

    const HOST: &str = "[hosts.far]\ndestination = \"me@box\"\nhome = \"/srv/fm\"\n";

    #[test]
    fn a_task_is_here_unless_its_meta_names_a_host() {
        let (_d, home, cfg) = home_with(HOST, "kind=ship\n");
        let t = Task::open(&home, &cfg, &TaskId::parse("t1").unwrap()).unwrap();
        assert!(matches!(t.place(), Place::Here));
        t.here().unwrap();
        let unknown = Task::open(&home, &cfg, &TaskId::parse("t2").unwrap()).unwrap();
        assert!(unknown.meta().is_none() && unknown.host().is_none());

        let (_d, home, cfg) = home_with(HOST, "kind=ship\nhost=far\n");
        let t = Task::open(&home, &cfg, &TaskId::parse("t1").unwrap()).unwrap();
        assert_eq!(t.host().unwrap().name, "far");
        let e = t.here().unwrap_err();
        assert!(matches!(e, Error::OnHost { .. }));
        assert_eq!(e.exit_code(), 1);
    }

    #[test]
    fn a_host_the_config_does_not_define_is_refused() {
        let (_d, home, cfg) = home_with("", "kind=ship\nhost=gone\n");
        let e = Task::open(&home, &cfg, &TaskId::parse("t1").unwrap()).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert_eq!(
            e.to_string(),
            "task t1 runs on host gone, which config does not define ([hosts.gone])"
        );
        let e = host_named(&cfg, "b x").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "unknown host \"b x\" (configured: none; define [hosts.<name>])"
        );
    }
}
