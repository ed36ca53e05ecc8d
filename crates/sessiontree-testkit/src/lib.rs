//! # sessiontree-testkit
//!
//! What the workspace's tests would otherwise write again per crate: temp agent dirs and
//! session folders ([`agent`]), running the command ([`run`]), the throwaway PostgreSQL
//! cluster ([`pg`]), every agent's folder in one temp home for import tests ([`home`]), a raw HTTP client for the web server ([`http`]), the seeded
//! generators ([`Rng`] for tests, [`gen`] for realistic benchmark sessions), test sizes
//! from the environment ([`env_or`]), the reference implementation through `interop/`
//! ([`interop`]), headless Chromium through `export-tests/` ([`browser`]), generated
//! credentials ([`creds`]), reading a command's JSON answer ([`json`]), OpenCode's recorded database ([`opencode`])
//! and file walks ([`files`]).
//!
//! A dev-dependency only (`publish = false`); it depends on no crate of the workspace.

// The generators' `next` is what every test calls; they are not iterators.
#![allow(clippy::should_implement_trait)]

pub mod agent;
pub mod browser;
pub mod creds;
pub mod env;
pub mod files;
pub mod gen;
pub mod home;
pub mod http;
pub mod interop;
pub mod json;
pub mod opencode;
pub mod pg;
pub mod rng;
pub mod run;

pub use agent::AgentDir;
pub use env::env_or;
pub use rng::Rng;

use std::path::{Path, PathBuf};

/// The workspace's root folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `load_clean!(path)`: the session at `path` (anything `AsRef<Path>`), loaded by
/// `sessiontree::load`, after asserting that it loads without a diagnostic (the message
/// names the file and the diagnostics). A macro, so that it names the store of the crate
/// whose test uses it: the testkit depends on no crate of the workspace.
#[macro_export]
macro_rules! load_clean {
    ($path:expr) => {{
        let path: &::std::path::Path = ::std::convert::AsRef::as_ref(&$path);
        let l = sessiontree::load(path).unwrap();
        assert!(
            l.tree.diagnostics().is_empty(),
            "{}: {:?}",
            path.display(),
            l.tree.diagnostics()
        );
        l
    }};
}
