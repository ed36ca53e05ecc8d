//! What the archive crate's tests share: the throwaway PostgreSQL cluster (the testkit's
//! `pg`), and the push and pull options for an agent dir.

#![allow(dead_code, unused_imports)]

pub use sessiontree_testkit::pg::{self, *};

use sessiontree_archive::pull::PullOptions;
use sessiontree_archive::push::PushOptions;
use std::path::Path;

/// A push of every session under the agent dir `agent`, as this machine, unredacted.
pub fn opts(agent: &Path) -> PushOptions {
    PushOptions {
        agent_dir: agent.to_path_buf(),
        paths: vec![],
        machine_name: None,
        redact: Default::default(),
    }
}

/// A pull of every session into the agent dir `agent`'s own session folders.
pub fn pull_opts(agent: &Path) -> PullOptions {
    PullOptions {
        agent_dir: agent.to_path_buf(),
        session_dir: None,
        sessions: vec![],
    }
}

/// The ids of the sessions that `who` can read in the archive, one a line.
pub fn session_ids(c: &Cluster, who: &str) -> String {
    c.psql(
        who,
        "archive",
        "SELECT session_id FROM sessiontree.sessions",
    )
    .unwrap()
}
