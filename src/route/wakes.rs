//! The captain's feed across hosts (docs/remote.md): every configured
//! host's wakes, merged with the local ones.

pub use crate::remote::wakes::{FEED_EVERY, Feed, From, Merged, answer, gather, gather_past};
