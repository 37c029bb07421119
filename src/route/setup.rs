//! A project's worktree set-up (`fm setup`, docs/spec/setup.md) here or
//! on a host: shown, or approved by the captain. On a host the request
//! goes to its far entry and the set-up, its approval and the checkout
//! are that home's, as a spawn there uses them. The first mate's approval
//! is refused here, before anything travels.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::wire::{self, Envelope, FarRequest};
use crate::config::Config;
use crate::control::setup::{self, Report};
use crate::error::{Error, Result};
use crate::grant::Actor;
use crate::home::Home;

/// What `fm setup` asks of a home: show a project's set-up, or approve it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SetupRequest {
    /// A directory of the checkout, or a `[projects.<name>]` name (on a
    /// host: an absolute path or a name).
    pub project: PathBuf,
    pub approve: bool,
    /// The ref the files the commands name are read at (default: the
    /// project's default base).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Approve only a set-up whose hash starts with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

impl FarRequest for SetupRequest {
    const OP: &'static str = "setup";
}

/// Serves `req` for `actor`, on the host `host` names or here.
pub(crate) fn setup(
    home: &Home,
    cfg: &Config,
    host: Option<&str>,
    req: &SetupRequest,
    actor: Actor,
) -> Result<Report> {
    if req.approve {
        setup::approval::captain_only(actor)?;
    }
    let Some(name) = host else {
        return serve_here(home, cfg, req, actor);
    };
    let remote = super::host_named(cfg, name)?;
    let p = &req.project;
    if p.is_relative() && p.components().count() > 1 {
        return Err(Error::usage(format!(
            "--host {name}: give the project as an absolute path there, or a [projects.<name>] name"
        )));
    }
    let env = Envelope::new(
        crate::remote::call::new_key_for("setup"),
        String::new(),
        req.clone(),
    );
    wire::call_once(home, &remote, &env, std::time::Duration::ZERO)
}

/// The request served in this home.
pub(crate) fn serve_here(
    home: &Home,
    cfg: &Config,
    req: &SetupRequest,
    actor: Actor,
) -> Result<Report> {
    let base = req.base.as_deref();
    if req.approve {
        setup::approve(home, cfg, actor, &req.project, base, req.hash.as_deref())
    } else {
        setup::show(home, cfg, &req.project, base)
    }
}
