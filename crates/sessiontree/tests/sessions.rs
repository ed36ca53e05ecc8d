//! Sessions from sessions and session folders (FORMAT.md sections 2, 10, 11): forks,
//! navigation, continue-recent, find-by-id, ids, and where files go. One test per process
//! state (environment variables are process-wide), so they run in sequence here.

use sessiontree::{Creation, Durability, Json, LeafArg, Session, WriteOptions};
use std::path::Path;

fn eager() -> WriteOptions {
    WriteOptions {
        creation: Creation::Eager,
        durability: Durability::None,
        ..Default::default()
    }
}

fn user(t: &str) -> Json {
    Json::parse(&format!(
        r#"{{"role":"user","content":[{{"type":"text","text":"{t}"}}],"timestamp":1764450000000}}"#
    ))
    .unwrap()
}

fn assistant(t: &str) -> Json {
    Json::parse(&format!(r#"{{"role":"assistant","content":[{{"type":"text","text":"{t}"}}],"provider":"p","model":"m","timestamp":1764450000001}}"#)).unwrap()
}

fn texts(tree: &sessiontree::SessionTree, leaf: LeafArg<'_>) -> Vec<String> {
    sessiontree::build_context(tree, leaf)
        .messages
        .iter()
        .map(|m| {
            let r = m.raw();
            match r.get("content") {
                Some(c) if c.kind() == sessiontree::json::Kind::Array => c.elements()[0]
                    .get("text")
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .into_owned(),
                _ => r
                    .get("summary")
                    .map(|s| s.as_str().unwrap().into_owned())
                    .unwrap_or_default(),
            }
        })
        .collect()
}

#[test]
fn folders_files_ids_and_environment() {
    let home = tempfile::tempdir().unwrap();
    std::env::set_var("HOME", home.path());
    std::env::remove_var("PI_CODING_AGENT_DIR");
    std::env::remove_var("PI_CODING_AGENT_SESSION_DIR");
    assert_eq!(
        sessiontree::dirs::agent_dir(),
        home.path().join(".pi/agent")
    );
    std::env::set_var("PI_CODING_AGENT_DIR", "~/agent-x");
    assert_eq!(sessiontree::dirs::agent_dir(), home.path().join("agent-x"));
    assert_eq!(
        sessiontree::dirs::default_session_dir("/w/p/../q/"),
        home.path().join("agent-x/sessions/--w-q--")
    );
    assert_eq!(sessiontree::dirs::session_dir_override(None), None);
    std::env::set_var("PI_CODING_AGENT_SESSION_DIR", "~/s");
    assert_eq!(
        sessiontree::dirs::session_dir_override(None),
        Some(home.path().join("s"))
    );
    assert_eq!(
        sessiontree::dirs::session_dir_override(Some("/flag")),
        Some("/flag".into())
    );
    std::env::remove_var("PI_CODING_AGENT_SESSION_DIR");

    // create: default folder of the resolved cwd, file named after the header.
    let mut s = Session::create("/w/p/../q", None, eager(), None).unwrap();
    s.append_message(&user("hi")).unwrap();
    let path = s.path().unwrap().to_path_buf();
    assert_eq!(
        path.parent().unwrap(),
        home.path().join("agent-x/sessions/--w-q--")
    );
    let header = sessiontree::load(&path).unwrap().tree.header().clone();
    assert_eq!(header.cwd().as_deref(), Some("/w/q"));
    let ts = header
        .field("timestamp")
        .unwrap()
        .as_str()
        .unwrap()
        .into_owned();
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        sessiontree::dirs::session_file_name(&ts, &header.id)
    );
    assert_eq!(&header.id[14..15], "7", "UUID v7");
    drop(s);

    // A caller's id is checked.
    assert!(matches!(
        Session::create("/w/q", None, eager(), Some("-bad")),
        Err(sessiontree::Error::InvalidSessionId(_))
    ));
    let s = Session::create("/w/q", None, eager(), Some("my.session-1")).unwrap();
    assert_eq!(s.session_id(), "my.session-1");
    drop(s);

    // find_by_id and continue_recent (newest mtime).
    assert_eq!(
        sessiontree::folder::find_by_id("/w/q", &header.id, None).as_deref(),
        Some(path.as_path())
    );
    assert_eq!(sessiontree::folder::find_by_id("/w/q", "nope", None), None);
    let newer = sessiontree::folder::find_by_id("/w/q", "my.session-1", None).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let t = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(t)
        .unwrap();
    let recent = Session::continue_recent("/w/q", None, eager()).unwrap();
    assert_eq!(recent.path(), Some(path.as_path()));
    assert_eq!(recent.entry_count(), 1);
    drop(recent);
    assert_ne!(newer, path);

    // With a custom folder, only sessions whose header cwd is the cwd count.
    let custom = home.path().join("custom");
    let mut other = Session::create("/elsewhere", Some(&custom), eager(), None).unwrap();
    other.append_message(&user("x")).unwrap();
    drop(other);
    assert_eq!(
        sessiontree::folder::most_recent("/w/q", Some(&custom)),
        None
    );
    assert!(sessiontree::folder::most_recent("/elsewhere", Some(&custom)).is_some());
    let fresh = Session::continue_recent("/w/q", Some(&custom), eager()).unwrap();
    assert_eq!(
        fresh.entry_count(),
        0,
        "no session of this cwd there: a new one"
    );
    std::env::remove_var("PI_CODING_AGENT_DIR");
}

#[test]
fn forks_navigation_and_in_memory_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create("/w/p", Some(dir.path()), eager(), None).unwrap();
    let u1 = s.append_message(&user("one")).unwrap();
    let a1 = s.append_message(&assistant("two")).unwrap();
    let u2 = s.append_message(&user("three")).unwrap();
    let a2 = s.append_message(&assistant("four")).unwrap();
    let src = s.path().unwrap().to_path_buf();
    drop(s);

    // Fork at an entry keeps the path up to and including it.
    let at = Session::fork_at(&src, &u2, false, eager()).unwrap();
    assert_eq!(at.text, None);
    let t = sessiontree::load(&at.path).unwrap().tree;
    assert_eq!(texts(&t, LeafArg::Default), ["one", "two", "three"]);
    assert_eq!(
        t.header().parent_session().as_deref(),
        Some(src.to_str().unwrap())
    );
    // Fork before a user message keeps its parent's path and hands back its text.
    let before = Session::fork_at(&src, &u2, true, eager()).unwrap();
    assert_eq!(before.text.as_deref(), Some("three"));
    assert_eq!(
        texts(
            &sessiontree::load(&before.path).unwrap().tree,
            LeafArg::Default
        ),
        ["one", "two"]
    );
    assert!(matches!(
        Session::fork_at(&src, &a1, true, eager()),
        Err(sessiontree::Error::NotAUserMessage(_))
    ));
    // Before the first message: a new empty session whose parent is the old file.
    let first = Session::fork_at(&src, &u1, true, eager()).unwrap();
    let t = sessiontree::load(&first.path).unwrap().tree;
    assert_eq!(t.entries().len(), 0);
    assert_eq!(
        t.header().parent_session().as_deref(),
        Some(src.to_str().unwrap())
    );

    // forkFrom copies every entry into the target cwd's folder.
    let target = dir.path().join("target-folder");
    let f = Session::fork_from(&src, "/w/other", Some(&target), eager(), None).unwrap();
    let t = sessiontree::load(f.path().unwrap()).unwrap().tree;
    assert_eq!(t.entries().len(), 4);
    assert_eq!(t.header().cwd().as_deref(), Some("/w/other"));
    assert_eq!(
        t.header().parent_session().as_deref(),
        Some(src.to_str().unwrap())
    );
    drop(f);

    // Navigating in place: a user message moves the leaf to its parent and gives its text;
    // with a summary, a branch summary of the abandoned path is appended there.
    let mut s = Session::open(&src, eager()).unwrap();
    assert_eq!(
        s.abandoned_path(&a1)
            .iter()
            .map(|e| e.id().unwrap().to_string())
            .collect::<Vec<_>>(),
        [a2.clone(), u2.clone()]
    );
    let text = s
        .navigate(&u2, Some("tried three"), Some("retry here"))
        .unwrap();
    assert_eq!(text.as_deref(), Some("three"));
    assert_eq!(
        texts(s.tree(), LeafArg::Id(s.leaf_id().unwrap())),
        ["one", "two", "tried three"]
    );
    assert_eq!(s.get_label(&u2).unwrap().label, "\"retry here\"");
    let summary = s
        .get_branch(None)
        .into_iter()
        .find(|e| e.entry_type == sessiontree::EntryType::BranchSummary)
        .unwrap();
    assert_eq!(summary.str_field("fromId").as_deref(), Some(a2.as_str()));
    // Choosing a non-user entry moves the leaf to it.
    assert_eq!(s.navigate(&a2, None, None).unwrap(), None);
    assert_eq!(s.leaf_id(), Some(a2.as_str()));

    // In memory: nothing is written anywhere.
    let before_files = std::fs::read_dir(dir.path()).unwrap().count();
    let mut m = Session::in_memory("/w/mem");
    let id = m.append_message(&user("memory")).unwrap();
    m.append_label_change(&id, Some("l")).unwrap();
    assert_eq!(m.path(), None);
    assert_eq!(texts(m.tree(), LeafArg::Default), ["memory"]);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), before_files);
    assert!(!Path::new("/w/mem").exists());
}
