//! # sessiontree-core
//!
//! The pure core of [sessiontree](https://crates.io/crates/sessiontree): bytes in, trees and
//! projections out. No file system, no locks, no clocks beyond "now" for new timestamps.
//! Agent authors normally depend on `sessiontree`, which re-exports all of this and adds
//! the files, locks and durability.
//!
//! The layers, bottom up: [`json`] (JavaScript-exact JSON: a validating scanner, a
//! `JSON.stringify` canonicalizer, borrowed [`json::Raw`] values and owned [`json::Json`]),
//! [`message`] (Pi's message shapes as typed structs), [`entry`] and [`parse`] (lines to
//! entries, with diagnostics), [`migrate`] (versions 1 and 2 to 3), [`tree`] (the index, leaf, labels, branches), [`context`] (what the model
//! sees), [`interrupted`] (work a crash left half done) and [`repair`] (planning a repair).

#![warn(missing_docs)]

pub mod context;
pub mod date;
pub mod diag;
pub mod entry;
pub mod error;
pub mod ids;
pub mod interrupted;
pub mod json;
pub mod message;
pub mod migrate;
pub mod parse;
pub mod repair;
pub mod tree;

pub use context::{build_context, to_llm, Context, Message};
pub use diag::{Diagnostic, DiagnosticKind};
pub use entry::{Entry, EntryType, Header, Parent, Releaser};
pub use error::{Error, LockHolder, Result};
pub use json::Json;
pub use tree::{LeafArg, SessionTree, TreeView};
