//! The browser's list comes from the rows `ls` keeps (`index::listed_rows`, found from a
//! watch's journal alone while nothing changed): it is what a full scan lists, before and
//! after a change the journal names. Alone in its binary: it sets the agent dir in its
//! own environment, which the browser reads.

use sessiontree::changes::Journal;
use sessiontree::list::{self, ListOptions, SessionInfo};
use sessiontree_testkit::agent::{message, write_session};
use std::ffi::OsStr;
use std::io::Write;

fn shown(v: &[SessionInfo]) -> Vec<String> {
    v.iter().map(|i| i.to_json().to_string()).collect()
}

#[test]
fn the_browsers_list_is_the_kept_rows_and_a_full_scans_list() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    std::env::set_var("PI_CODING_AGENT_DIR", agent);
    std::env::set_var("SESSIONTREE_NO_BACKGROUND_INDEX", "1");
    let mut paths = Vec::new();
    for k in 0..8u64 {
        let cwd = ["/w/a", "/w/b"][k as usize % 2];
        let body = message("u1", None, 1_000 * (k % 3), "user", &format!("task {k}"));
        paths.push(write_session(agent, cwd, &format!("s{k}.jsonl"), &body));
    }
    let no_text = ListOptions {
        with_text: false,
        ..Default::default()
    };
    let kept = || sessiontree_index::index::unchanged_rows(agent).map(|l| l.len());
    let mut j = Journal::start(agent).unwrap();
    for _ in 0..3 {
        let browsed = sessiontree_cli::browse::sessions(None).unwrap();
        assert_eq!(shown(&browsed), shown(&list::list_all(agent, no_text)));
    }
    assert_eq!(kept(), Some(8), "the rows are kept under the list's digest");
    // One appended entry, named by the journal: the list follows it.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&paths[3])
        .unwrap();
    f.write_all(message("u2", Some("u1"), 9_000, "user", "later").as_bytes())
        .unwrap();
    let folder = paths[3].parent().unwrap().file_name().unwrap();
    j.file_changed(folder, OsStr::new("s3.jsonl")).unwrap();
    assert_eq!(kept(), None);
    let browsed = sessiontree_cli::browse::sessions(None).unwrap();
    assert_eq!(shown(&browsed), shown(&list::list_all(agent, no_text)));
    let s3 = browsed.iter().find(|i| i.path == paths[3]).unwrap();
    assert_eq!(s3.message_count, 2, "the appended entry is counted");
    assert_eq!(kept(), Some(8), "kept again");
}
