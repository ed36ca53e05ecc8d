//! Typed messages on a real session written by Pi: every message of the fixture reads as
//! its typed form and writes back as the same bytes.

use sessiontree_core::entry::{Backing, EntryType};
use sessiontree_core::json::canonicalize;
use sessiontree_core::message::{AgentMessage, ContentBlock};
use std::path::Path;
use std::sync::Arc;

#[test]
fn every_message_of_a_real_pi_session_round_trips_typed() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/pi-v1-linear-large.jsonl");
    let bytes: Backing = Arc::new(std::fs::read(&p).unwrap());
    let parsed = sessiontree_core::parse::parse(bytes).unwrap();
    let (mut n, mut other, mut calls) = (0, 0, 0);
    for e in parsed
        .entries
        .iter()
        .filter(|e| e.entry_type == EntryType::Message)
    {
        let m = AgentMessage::from_entry(e).unwrap().unwrap();
        n += 1;
        match &m {
            AgentMessage::Other(_) => other += 1,
            AgentMessage::Assistant(a) => {
                calls += a.tool_calls().count();
                assert!(!a
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Other(_))));
            }
            _ => {}
        }
        let stored = canonicalize(e.message().unwrap().bytes()).unwrap();
        assert_eq!(
            m.to_json().unwrap().as_str(),
            stored,
            "line {}: typed round trip changed the message",
            e.line
        );
    }
    assert_eq!((n, other), (914, 0));
    assert_eq!(calls, 391);
}
