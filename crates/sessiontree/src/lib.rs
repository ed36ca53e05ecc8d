//! # sessiontree
//!
//! Read, project and append coding-agent session files: the JSONL trees of the Pi coding
//! agent (format version 3, and versions 1 and 2 migrated on load), byte-compatible with
//! the reference implementation and safe to write (one writer at a time, fsync when asked,
//! nothing ever truncated or rewritten in place).
//!
//! ## Appending
//!
//! A [`Session`] holds the file's writer lock from open to drop. Every append writes one
//! line exactly as Pi would, and only then adds the entry to memory.
//!
//! ```
//! use sessiontree::{Json, LeafArg, Session, WriteOptions};
//! # let dir = std::env::temp_dir().join(format!("st-doc-append-{}", std::process::id()));
//! let mut s = Session::create("/home/me/project", Some(&dir), WriteOptions::default(), None)?;
//! s.append_model_change("anthropic", "claude-sonnet-4-5")?;
//! let hello = Json::parse(r#"{"role":"user","content":"hello","timestamp":1733234400000}"#)?;
//! let id = s.append_message(&hello)?;
//! assert_eq!(s.tree().leaf_id(), Some(id.as_str()));
//!
//! // What the model sees from the leaf (Pi's `buildSessionContext`).
//! let ctx = sessiontree::build_context(s.tree(), LeafArg::Default);
//! assert_eq!(ctx.messages.len(), 1);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), sessiontree::Error>(())
//! ```
//!
//! ## Reading
//!
//! [`load`] reads a file without writing anything (no lock, no repair, no migration on
//! disk). It never fails on a bad line: those become [`Diagnostic`]s.
//!
//! ```
//! # use sessiontree::{Json, Session, WriteOptions};
//! # let dir = std::env::temp_dir().join(format!("st-doc-read-{}", std::process::id()));
//! # let mut s = Session::create("/w", Some(&dir), WriteOptions::default(), None)?;
//! # s.append_message(&Json::parse(r#"{"role":"user","content":"hi","timestamp":1}"#)?)?;
//! # let path = s.path().unwrap().to_path_buf();
//! # drop(s);
//! # std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"not json\n").unwrap();
//! # use std::io::Write;
//! let loaded = sessiontree::load(&path)?;
//! let tree = &loaded.tree;
//! println!("{} entries, leaf {:?}", tree.entries().len(), tree.leaf_id());
//! for d in tree.diagnostics() {
//!     eprintln!("line {}: {}", d.line, d.message);
//! }
//! assert_eq!(tree.diagnostics().len(), 1);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), sessiontree::Error>(())
//! ```
//!
//! ## Branching
//!
//! Moving the leaf to an earlier entry starts a new branch there; the next append hangs
//! under it, and the abandoned branch stays in the file (and in [`SessionTree::get_tree`]).
//!
//! ```
//! # use sessiontree::{Json, LeafArg, Session, WriteOptions};
//! # let dir = std::env::temp_dir().join(format!("st-doc-branch-{}", std::process::id()));
//! # let mut s = Session::create("/w", Some(&dir), WriteOptions::default(), None)?;
//! let msg = |text: &str| Json::parse(&format!(r#"{{"role":"user","content":"{text}","timestamp":1}}"#));
//! let first = s.append_message(&msg("first")?)?;
//! s.append_message(&msg("a path we abandon")?)?;
//! s.branch(&first)?;
//! let second = s.append_message(&msg("another way")?)?;
//! let path: Vec<&str> = s.tree().get_branch(None).iter().filter_map(|e| e.id()).collect();
//! assert_eq!(path, [first.as_str(), second.as_str()]);
//! // Or leave a summary of the abandoned branch where the new one starts:
//! s.branch_with_summary(Some(&first), "Tried X; it failed.", None, None, None)?;
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), sessiontree::Error>(())
//! ```
//!
//! ## Typed messages
//!
//! [`message`] has Pi's message shapes as serde structs. Built in Rust, a message writes
//! the bytes Pi's own agent loop writes for it; read back from an entry, it keeps every
//! field (unknown ones in `extra`). The raw path above stays available for anything else.
//!
//! ```
//! use sessiontree::message::{AgentMessage, AssistantMessage, StopReason, ToolResultMessage, UserMessage};
//! use sessiontree::{Session, WriteOptions};
//! # let dir = std::env::temp_dir().join(format!("st-doc-typed-{}", std::process::id()));
//! let mut s = Session::create("/home/me/project", Some(&dir), WriteOptions::default(), None)?;
//!
//! s.append_message(&UserMessage::text("List the sources").to_json()?)?;
//! let call = AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
//!     .with_tool_call("toolu_1", "bash", serde_json::json!({"command": "ls src"}))
//!     .with_stop_reason(StopReason::ToolUse);
//! s.append_message(&call.to_json()?)?;
//! s.append_message(&ToolResultMessage::text("toolu_1", "bash", "lib.rs\nmain.rs").to_json()?)?;
//!
//! // Reading: every message entry of the branch, typed.
//! for entry in s.tree().get_branch(None) {
//!     match AgentMessage::from_entry(entry) {
//!         Some(Ok(AgentMessage::Assistant(a))) => {
//!             assert_eq!(a.tool_calls().next().unwrap().name, "bash")
//!         }
//!         Some(Ok(m)) => println!("{:?} at {:?}", m.role(), m.timestamp()),
//!         Some(Err(e)) => eprintln!("line {}: {e}", entry.line),
//!         None => {} // not a message: a model change, a label, ...
//!     }
//! }
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), sessiontree::Error>(())
//! ```
//!
//! ## The layers
//!
//! The pure core (crate `sessiontree-core`, re-exported here at the same paths: [`json`],
//! [`message`], [`parse`], [`migrate`], [`tree`], [`context`], [`interrupted`] detection,
//! [`repair`] planning) and, on top of it, the files: [`store`] (locks, appends, durability, atomic
//! replacement), [`session`] (the [`Session`] handle), [`folder`] and [`dirs`] (where
//! sessions live), [`list`] (listing without an index), [`usage`] (tokens and cost). The
//! index, the exports and the command are separate crates, so depending on this one pulls
//! in no SQLite, no async runtime and no terminal UI. ARCHITECTURE.md has the invariants.

#![warn(missing_docs)]

pub use sessiontree_core::{
    context, date, diag, entry, error, ids, json, message, migrate, parse, tree,
};

pub mod changes;
pub mod dirs;
pub mod folder;
pub mod interrupted;
pub mod list;
pub mod repair;
pub mod session;
pub mod store;
pub mod usage;

pub use context::{build_context, to_llm, Context, Message};
pub use diag::{Diagnostic, DiagnosticKind};
pub use entry::{Entry, EntryType, Header, Parent, Releaser};
pub use error::{Error, LockHolder, Result};
pub use json::Json;
pub use session::{load, Forked, Loaded, Session};
pub use store::{Creation, Durability, WriteOptions};
pub use tree::{LeafArg, SessionTree, TreeView};
