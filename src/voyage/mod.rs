//! The end of a worker's voyage (docs/voyage.md): what it changed
//! ([`review`]) and delivering it the way its mode says ([`land`]).
//!
//! Both read the same facts about the task's branch ([`work`]): the
//! commit the worktree started from, the branch tip, the branch the work
//! goes back to. Every git call goes through [`crate::git`] (an argument
//! vector, bounded in time); a name from meta or a brief reaches git only
//! inside a full ref (`refs/heads/<name>`), never where it could read as
//! an option. These are the local use cases; [`crate::route::review`] and
//! [`crate::route::land`] carry them to a task on a host.

mod guard;
pub mod land;
pub mod review;
mod work;

pub use work::Work;
