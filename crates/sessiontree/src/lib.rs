//! # sessiontree
//!
//! Read, index, project and append coding-agent session files: the JSONL trees of the Pi
//! coding agent (format version 3, and versions 1 and 2 migrated on load), byte-compatible
//! with the reference implementation and safe to write.
//!
//! ```no_run
//! use sessiontree::{Session, WriteOptions, Json, LeafArg};
//! let mut s = Session::create("/home/me/project", None, WriteOptions::default(), None)?;
//! let hello = Json::parse(r#"{"role":"user","content":"hello","timestamp":1733234400000}"#)?;
//! let id = s.append_message(&hello)?;
//! let ctx = sessiontree::build_context(s.tree(), LeafArg::Default);
//! println!("{} {}", id, ctx.to_json());
//! # Ok::<(), sessiontree::Error>(())
//! ```
//!
//! The layers: [`json`] (JavaScript-exact JSON), [`parse`] and [`tree`] and [`context`]
//! (pure: bytes in, tree and projections out), [`store`] and [`session`] (files, locks,
//! fsync), [`export`] (HTML, Markdown and JSONL for people). See ARCHITECTURE.md for the invariants.

pub mod context;
pub mod date;
pub mod diag;
pub mod dirs;
pub mod entry;
mod error;
pub mod export;
pub mod folder;
pub(crate) mod ids;
pub mod index;
pub mod interrupted;
pub mod json;
pub mod list;
mod listing_store;
pub mod migrate;
pub mod parse;
pub mod repair;
pub mod search;
pub mod session;
pub mod store;
pub mod summary;
pub mod tree;
pub mod usage;

pub use context::{build_context, to_llm, Context, Message};
pub use diag::{Diagnostic, DiagnosticKind};
pub use entry::{Entry, EntryType, Header, Parent, Releaser};
pub use error::{Error, LockHolder, Result};
pub use session::{load, Forked, Json, Loaded, Session};
pub use store::{Creation, Durability, WriteOptions};
pub use tree::{LeafArg, SessionTree, TreeView};
