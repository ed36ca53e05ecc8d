//! # sessiontree-index
//!
//! Listing and search over session folders: [`index::Index`] keeps, per session file, what
//! a listing needs, in SQLite beside an append-only listing store, and refreshes only what
//! changed on disk. [`search`] scans the files themselves (no full-text index) and
//! [`summary`] keeps small per-file summaries that let later searches skip files. Both are
//! caches: deleting them loses nothing, and every answer equals what a full scan gives.

// The library's modules, visible to this crate's modules as `crate::X`.
use sessiontree::{context, date, error, json, list};
pub use sessiontree::{Error, Result};

mod escapes;
pub mod index;
mod listing_store;
pub mod search;
pub mod summary;

pub use index::Index;
