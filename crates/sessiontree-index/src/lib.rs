//! # sessiontree-index
//!
//! The listing and search cache of sessiontree: [`index::Index`] keeps, per session file,
//! what a listing needs and the searchable texts, in SQLite beside an append-only listing
//! store, and refreshes only what changed on disk. [`search`] holds the
//! query language. The index is a cache: deleting it loses nothing, and every answer
//! equals what a full scan (`sessiontree::list`) gives.

// The library's modules, visible to this crate's modules as `crate::X`.
use sessiontree::{context, date, error, list};
pub use sessiontree::{Error, Result};

pub mod index;
mod listing_store;
pub mod search;

pub use index::Index;
