//! Specification tests: one or more per rule of FORMAT.md sections 3-11.

use sessiontree::json::canonicalize;
use sessiontree::{build_context, load, DiagnosticKind, Json, LeafArg, Session, WriteOptions};
use std::path::Path;

fn load_str(s: &str) -> sessiontree::Loaded {
    sessiontree::session::load_bytes(Path::new("test.jsonl"), s.as_bytes().to_vec()).expect("loads")
}

const H: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p"}"#;

fn msg(id: &str, parent: Option<&str>, role: &str, text: &str, ts: &str) -> String {
    let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{p},"timestamp":"{ts}","message":{{"role":"{role}","content":"{text}","timestamp":1}}}}"#
    )
}

fn file(lines: &[String]) -> String {
    let mut s = String::from(H);
    s.push('\n');
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn kinds(l: &sessiontree::Loaded) -> Vec<DiagnosticKind> {
    l.tree.diagnostics().iter().map(|d| d.kind).collect()
}

fn ctx_roles(l: &sessiontree::Loaded, leaf: LeafArg<'_>) -> Vec<String> {
    build_context(&l.tree, leaf)
        .messages
        .iter()
        .map(|m| m.role().unwrap_or_default())
        .collect()
}

fn ctx_texts(l: &sessiontree::Loaded, leaf: LeafArg<'_>) -> Vec<String> {
    build_context(&l.tree, leaf)
        .messages
        .iter()
        .map(|m| {
            let r = m.raw();
            r.get("content")
                .or(r.get("summary"))
                .map(|c| c.text().to_string())
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn bad_lines_are_skipped_and_reported_with_line_and_offset() {
    let s = format!(
        "{H}\n\n{{not json\nnull\n42\n[1]\n\"\"\n{}\n",
        msg("a", None, "user", "hi", "2024-12-03T14:00:01.000Z")
    );
    let l = load_str(&s);
    assert_eq!(l.tree.entries().len(), 1);
    assert_eq!(
        kinds(&l),
        [
            DiagnosticKind::MalformedLine,
            DiagnosticKind::NotAnObject,
            DiagnosticKind::NotAnObject,
            DiagnosticKind::NotAnObject,
            DiagnosticKind::NotAnObject
        ]
    );
    let d = &l.tree.diagnostics()[0];
    assert_eq!((d.line, d.offset), (3, H.len() as u64 + 2));
}

#[test]
fn torn_tail_and_missing_newline_are_told_apart() {
    let torn = format!(
        "{}{}",
        file(&[msg("a", None, "user", "hi", "2024-12-03T14:00:01.000Z")]),
        r#"{"type":"message","id":"b","par"#
    );
    let l = load_str(&torn);
    assert_eq!(kinds(&l), [DiagnosticKind::TornTail]);
    assert!(matches!(l.tail, sessiontree::parse::Tail::Torn { .. }));
    let unterminated = file(&[msg("a", None, "user", "hi", "2024-12-03T14:00:01.000Z")]);
    let l = load_str(unterminated.trim_end());
    assert_eq!(kinds(&l), [DiagnosticKind::MissingNewline]);
    assert_eq!(l.tree.entries().len(), 1);
}

#[test]
fn the_first_parsed_line_must_be_a_header() {
    for bad in [
        "{\"type\":\"message\",\"id\":\"a\"}\n",
        "42\n",
        "{\"type\":\"session\",\"id\":5}\n",
    ] {
        let e = sessiontree::session::load_bytes(Path::new("x.jsonl"), bad.as_bytes().to_vec())
            .err()
            .expect(bad);
        assert!(e.to_string().contains("x.jsonl"), "{e}");
        assert!(
            matches!(e, sessiontree::Error::NotASession { line: 1, .. }),
            "{e}"
        );
    }
    // Blank and malformed lines before the header are skipped.
    let l = load_str(&format!("\n{{bad\n{H}\n"));
    assert_eq!(l.tree.session_id(), "s1");
}

#[test]
fn a_bad_header_file_is_never_touched_by_open() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.jsonl");
    std::fs::write(&p, "{\"type\":\"message\"}\nsecond line\n").unwrap();
    let err = Session::open(&p, WriteOptions::default()).unwrap_err();
    assert!(
        matches!(err, sessiontree::Error::NotASession { .. }),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "{\"type\":\"message\"}\nsecond line\n"
    );
}

#[test]
fn duplicated_header_of_0_73_1_is_tolerated() {
    let a = msg("a", None, "user", "hi", "2024-12-03T14:00:01.000Z");
    let l = load_str(&file(&[
        a.clone(),
        H.to_string(),
        a.clone(),
        msg(
            "b",
            Some("a"),
            "assistant",
            "yo",
            "2024-12-03T14:00:02.000Z",
        ),
    ]));
    assert_eq!(
        kinds(&l),
        [DiagnosticKind::ExtraHeader, DiagnosticKind::DuplicateId]
    );
    assert_eq!(l.tree.entry_count(), 2);
    assert_eq!(l.tree.leaf_id(), Some("b"));
    assert_eq!(l.tree.get_branch(None).len(), 2);
}

#[test]
fn orphans_self_parents_and_cycles_become_roots_and_never_hang() {
    let l = load_str(&file(&[
        msg("a", None, "user", "1", "2024-12-03T14:00:01.000Z"),
        msg(
            "o",
            Some("missing"),
            "user",
            "2",
            "2024-12-03T14:00:02.000Z",
        ),
        msg("s", Some("s"), "user", "3", "2024-12-03T14:00:03.000Z"),
        msg("x", Some("y"), "user", "4", "2024-12-03T14:00:04.000Z"),
        msg("y", Some("x"), "user", "5", "2024-12-03T14:00:05.000Z"),
    ]));
    assert!(kinds(&l).contains(&DiagnosticKind::OrphanParent));
    assert!(kinds(&l).contains(&DiagnosticKind::Cycle));
    let roots: Vec<&str> = l
        .tree
        .get_tree()
        .roots
        .iter()
        .map(|&i| l.tree.entry_at(i).id().unwrap())
        .collect();
    assert_eq!(roots, ["a", "o", "s"]);
    assert_eq!(l.tree.get_branch(Some("s")).len(), 1);
    assert_eq!(l.tree.get_branch(Some("y")).len(), 2);
    assert_eq!(build_context(&l.tree, LeafArg::Id("x")).messages.len(), 2);
    let _ = l.tree.tree_json();
}

#[test]
fn leaf_labels_and_name_replay_in_file_order() {
    let l = load_str(&file(&[
        msg("a", None, "user", "1", "2024-12-03T14:00:01.000Z"),
        r#"{"type":"label","id":"l1","parentId":"a","timestamp":"2024-12-03T14:00:02.000Z","targetId":"a","label":"first"}"#.into(),
        r#"{"type":"session_info","id":"n1","parentId":"l1","timestamp":"2024-12-03T14:00:03.000Z","name":"  Named \n"}"#.into(),
        r#"{"type":"label","id":"l2","parentId":"n1","timestamp":"2024-12-03T14:00:04.000Z","targetId":"a","label":"second"}"#.into(),
        r#"{"type":"label","id":"l3","parentId":"l2","timestamp":"2024-12-03T14:00:05.000Z","targetId":"l1","label":"x"}"#.into(),
        r#"{"type":"label","id":"l4","parentId":"l3","timestamp":"2024-12-03T14:00:06.000Z","targetId":"l1"}"#.into(),
    ]));
    assert_eq!(l.tree.leaf_id(), Some("l4"));
    let lab = l.tree.get_label("a").unwrap();
    assert_eq!(
        (lab.label.as_str(), lab.timestamp.as_deref()),
        ("\"second\"", Some("\"2024-12-03T14:00:04.000Z\""))
    );
    assert!(l.tree.get_label("l1").is_none());
    assert_eq!(l.tree.name().as_deref(), Some("Named"));
    let cleared = load_str(&file(&[
        msg("a", None, "user", "1", "2024-12-03T14:00:01.000Z"),
        r#"{"type":"session_info","id":"n1","parentId":"a","timestamp":"t","name":"x"}"#.into(),
        r#"{"type":"session_info","id":"n2","parentId":"n1","timestamp":"t","name":"  "}"#.into(),
    ]));
    assert_eq!(cleared.tree.name(), None);
}

#[test]
fn tree_children_sort_by_time_with_ties_in_file_order() {
    let l = load_str(&file(&[
        msg("r", None, "user", "r", "2024-12-03T14:00:00.000Z"),
        msg("c3", Some("r"), "user", "3", "2024-12-03T14:00:09.000Z"),
        msg("c1", Some("r"), "user", "1", "2024-12-03T14:00:01.000Z"),
        msg("c2a", Some("r"), "user", "2a", "2024-12-03T14:00:05.000Z"),
        msg("c2b", Some("r"), "user", "2b", "2024-12-03T14:00:05.000Z"),
    ]));
    let v = l.tree.get_tree();
    let kids: Vec<&str> = v.children[0]
        .iter()
        .map(|&i| l.tree.entry_at(i).id().unwrap())
        .collect();
    assert_eq!(kids, ["c1", "c2a", "c2b", "c3"]);
}

#[test]
fn a_200000_deep_chain_does_not_overflow() {
    let mut lines = vec![msg("e0", None, "user", "x", "2024-12-03T14:00:00.000Z")];
    for i in 1..200_000 {
        lines.push(format!(r#"{{"type":"custom","customType":"c","id":"e{i}","parentId":"e{}","timestamp":"2024-12-03T14:00:00.000Z"}}"#, i - 1));
    }
    let l = load_str(&file(&lines));
    assert_eq!(l.tree.get_branch(None).len(), 200_000);
    let json = l.tree.tree_json();
    // The deepest node's empty children, then every ancestor closing, then the root list.
    assert!(json.ends_with(&format!("[]}}{}]", "]}".repeat(199_999))));
    assert!(sessiontree::json::Raw::parse(json.as_bytes()).is_ok());
    assert_eq!(build_context(&l.tree, LeafArg::Default).messages.len(), 1);
}

#[test]
fn context_path_leaf_rules() {
    let l = load_str(&file(&[
        msg("a", None, "user", "1", "2024-12-03T14:00:01.000Z"),
        msg("b", Some("a"), "assistant", "2", "2024-12-03T14:00:02.000Z"),
        msg("c", Some("a"), "assistant", "3", "2024-12-03T14:00:03.000Z"),
    ]));
    assert!(build_context(&l.tree, LeafArg::Null).messages.is_empty());
    assert_eq!(ctx_texts(&l, LeafArg::Id("b")), ["\"1\"", "\"2\""]);
    assert_eq!(ctx_texts(&l, LeafArg::Id("unknown")), ["\"1\"", "\"3\""]);
    assert_eq!(ctx_texts(&l, LeafArg::Default), ["\"1\"", "\"3\""]);
}

fn compaction(id: &str, parent: &str, first_kept: &str, summary: &str) -> String {
    format!(
        r#"{{"type":"compaction","id":"{id}","parentId":"{parent}","timestamp":"2024-12-03T14:01:00.000Z","summary":"{summary}","firstKeptEntryId":"{first_kept}","tokensBefore":100}}"#
    )
}

#[test]
fn compaction_keeps_its_range_without_system_messages_and_older_compactions_give_nothing() {
    let sys = r#"{"type":"message","id":"s","parentId":"a","timestamp":"2024-12-03T14:00:01.500Z","message":{"role":"system","content":"SYS","timestamp":1}}"#;
    let l = load_str(&file(&[
        msg("a", None, "user", "1", "2024-12-03T14:00:01.000Z"),
        sys.to_string(),
        msg("b", Some("s"), "assistant", "2", "2024-12-03T14:00:02.000Z"),
        compaction("c1", "b", "a", "old"),
        msg("d", Some("c1"), "user", "3", "2024-12-03T14:00:03.000Z"),
        compaction("c2", "d", "b", "new"),
        msg(
            "e",
            Some("c2"),
            "assistant",
            "4",
            "2024-12-03T14:00:04.000Z",
        ),
    ]));
    assert_eq!(
        ctx_roles(&l, LeafArg::Default),
        ["compactionSummary", "assistant", "user", "assistant"]
    );
    assert_eq!(
        ctx_texts(&l, LeafArg::Default),
        ["\"new\"", "\"2\"", "\"3\"", "\"4\""]
    );
    // At c1's branch point the first compaction keeps from `a`, skipping the system message.
    assert_eq!(
        ctx_texts(&l, LeafArg::Id("d")),
        ["\"old\"", "\"1\"", "\"2\"", "\"3\""]
    );
}

#[test]
fn compaction_with_first_kept_off_path_or_itself_keeps_nothing_before() {
    let l = load_str(&file(&[
        msg("a", None, "user", "1", "2024-12-03T14:00:01.000Z"),
        msg(
            "x",
            Some("a"),
            "user",
            "other branch",
            "2024-12-03T14:00:01.000Z",
        ),
        msg("b", Some("a"), "assistant", "2", "2024-12-03T14:00:02.000Z"),
        compaction("c", "b", "x", "S"),
        msg("d", Some("c"), "user", "3", "2024-12-03T14:00:03.000Z"),
        compaction("n", "b", "n", "none kept"),
    ]));
    assert_eq!(ctx_texts(&l, LeafArg::Id("d")), ["\"S\"", "\"3\""]);
    assert_eq!(ctx_texts(&l, LeafArg::Id("n")), ["\"none kept\""]);
}

#[test]
fn message_kinds_project_as_the_reference_does() {
    let l = load_str(&file(&[
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"2024-12-03T14:00:00.000Z","message":{"role":"user","content":null,"timestamp":1}}"#.into(),
        r#"{"type":"message","id":"s","parentId":"a","timestamp":"2024-12-03T14:00:00.000Z","message":{"role":"system","timestamp":2}}"#.into(),
        r#"{"type":"custom_message","customType":"ext","content":null,"display":true,"id":"cm","parentId":"s","timestamp":"2024-12-03T14:00:00.000Z"}"#.into(),
        r#"{"type":"branch_summary","id":"bs0","parentId":"cm","timestamp":"2024-12-03T14:00:00.000Z","fromId":"x","summary":""}"#.into(),
        r#"{"type":"branch_summary","id":"bs","parentId":"bs0","timestamp":"2024-12-03T14:00:00.000Z","fromId":"x","summary":"went elsewhere"}"#.into(),
        r#"{"type":"custom","customType":"state","data":{"k":1},"id":"cu","parentId":"bs","timestamp":"2024-12-03T14:00:00.000Z"}"#.into(),
        r#"{"type":"usage","id":"u","parentId":"cu","timestamp":"2024-12-03T14:00:00.000Z","kind":"cache_warm","provider":"p","model":"m","usage":{}}"#.into(),
        r#"{"type":"thinking_level_change","id":"t","parentId":"u","timestamp":"2024-12-03T14:00:00.000Z","thinkingLevel":"high"}"#.into(),
        r#"{"type":"model_change","id":"m","parentId":"t","timestamp":"2024-12-03T14:00:00.000Z","provider":"anthropic","modelId":"claude"}"#.into(),
        r#"{"type":"future_type","id":"f","parentId":"m","timestamp":"2024-12-03T14:00:00.000Z","x":1}"#.into(),
    ]));
    let ctx = build_context(&l.tree, LeafArg::Default);
    assert_eq!(
        ctx.to_json(),
        concat!(
            r#"{"messages":[{"role":"user","content":[],"timestamp":1},{"role":"system","timestamp":2,"content":""},"#,
            r#"{"role":"custom","customType":"ext","content":[],"display":true,"timestamp":1733234400000},"#,
            r#"{"role":"branchSummary","summary":"went elsewhere","fromId":"x","timestamp":1733234400000}],"#,
            r#""thinkingLevel":"high","model":{"provider":"anthropic","modelId":"claude"}}"#
        )
    );
}

#[test]
fn context_edits_last_wins_and_only_on_the_selected_path() {
    let l = load_str(&file(&[
        msg("a", None, "user", "1", "2024-12-03T14:00:01.000Z"),
        msg("b", Some("a"), "assistant", "2", "2024-12-03T14:00:02.000Z"),
        r#"{"type":"context_edit","id":"e1","parentId":"b","timestamp":"t","targetId":"b","replacement":{"content":"first"}}"#.into(),
        r#"{"type":"context_edit","id":"e2","parentId":"e1","timestamp":"t","targetId":"b","replacement":{"content":[{"type":"text","text":"second"}]}}"#.into(),
        r#"{"type":"context_edit","id":"e3","parentId":"e2","timestamp":"t","targetId":"a","replacement":null}"#.into(),
        r#"{"type":"context_edit","id":"other","parentId":"b","timestamp":"t","targetId":"a","replacement":{"content":"elsewhere"}}"#.into(),
    ]));
    assert_eq!(
        ctx_texts(&l, LeafArg::Id("e3")),
        [r#"[{"type":"text","text":"second"}]"#]
    );
    assert_eq!(
        ctx_texts(&l, LeafArg::Id("other")),
        ["\"elsewhere\"", "\"2\""]
    );
}

#[test]
fn role_mapping_for_a_model_request() {
    let l = load_str(&file(&[
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"bashExecution","command":"ls","output":"x","exitCode":2,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/o","timestamp":5}}"#.into(),
        r#"{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"bashExecution","command":"ls","output":"","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true,"timestamp":6}}"#.into(),
        r#"{"type":"custom_message","customType":"x","content":"hello","display":false,"id":"c","parentId":"b","timestamp":"2024-12-03T14:00:00.000Z"}"#.into(),
    ]));
    let ctx = build_context(&l.tree, LeafArg::Default);
    let llm: Vec<String> = sessiontree::to_llm(&ctx.messages)
        .iter()
        .map(|m| m.json().to_string())
        .collect();
    assert_eq!(
        llm,
        [
            r#"{"role":"user","content":[{"type":"text","text":"Ran `ls`\n```\nx\n```\n\nCommand exited with code 2\n\n[Output truncated. Full output: /tmp/o]"}],"timestamp":5}"#,
            r#"{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":1733234400000}"#,
        ]
    );
}

fn session_file(dir: &Path, creation: sessiontree::Creation) -> Session {
    let opts = WriteOptions {
        creation,
        durability: sessiontree::Durability::None,
        ..WriteOptions::default()
    };
    Session::create("/proj", Some(dir), opts, None).unwrap()
}

fn user(text: &str) -> Json {
    Json::parse(&format!(
        r#"{{"role":"user","content":"{text}","timestamp":1733234400000}}"#
    ))
    .unwrap()
}

#[test]
fn appended_lines_are_canonical_in_the_reference_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session_file(dir.path(), sessiontree::Creation::Eager);
    let a = s.append_message(&user(r#"hi \u0001 \"q\" é"#)).unwrap();
    s.append_thinking_level_change("high").unwrap();
    s.append_model_change("anthropic", "claude").unwrap();
    s.append_custom_entry(
        "ext",
        Some(&Json::parse(r#"{"b":1,"10":2.50,"2":1e21}"#).unwrap()),
    )
    .unwrap();
    s.append_custom_message("ext", &Json::string("x"), true, None)
        .unwrap();
    s.append_label_change(&a, Some("mark")).unwrap();
    s.append_label_change(&a, None).unwrap();
    s.append_session_info("a\r\n\nb  ").unwrap();
    s.append_usage(
        "cache_warm",
        "p",
        "m",
        &Json::parse("{\"input\":1}").unwrap(),
        None,
    )
    .unwrap();
    s.append_context_edit(&a, Some(&Json::parse(r#"{"content":"edited"}"#).unwrap()))
        .unwrap();
    s.append_compaction("sum", Some(&a), 1234.0, None, None, None)
        .unwrap();
    s.branch_with_summary(Some(&a), "left", None, Some(true), None)
        .unwrap();
    s.append_usage(
        "cache_warm",
        "p",
        "m",
        &Json::parse("{}").unwrap(),
        Some("a \"note\""),
    )
    .unwrap();
    let text = std::fs::read_to_string(s.path().unwrap()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for l in &lines {
        assert_eq!(*l, canonicalize(l.as_bytes()).unwrap());
    }
    let keys = |l: &str| -> Vec<String> {
        sessiontree::json::Raw::parse(l.as_bytes())
            .unwrap()
            .members()
            .into_iter()
            .map(|(k, _)| k.into_owned())
            .collect()
    };
    assert_eq!(
        keys(lines[0]),
        ["type", "version", "id", "timestamp", "cwd"]
    );
    assert_eq!(
        keys(lines[1]),
        ["type", "id", "parentId", "timestamp", "message"]
    );
    assert_eq!(
        keys(lines[4]),
        ["type", "customType", "data", "id", "parentId", "timestamp"]
    );
    assert!(lines[4].contains(r#""data":{"2":1e+21,"10":2.5,"b":1}"#));
    assert_eq!(
        keys(lines[5]),
        [
            "type",
            "customType",
            "content",
            "display",
            "id",
            "parentId",
            "timestamp"
        ]
    );
    assert_eq!(
        keys(lines[7]),
        ["type", "id", "parentId", "timestamp", "targetId"]
    );
    assert!(lines[6].ends_with(r#""label":"mark"}"#), "{}", lines[6]);
    assert!(lines[8].ends_with(r#""name":"a b"}"#));
    assert!(
        lines[13].ends_with(r#""usage":{},"note":"a \"note\""}"#),
        "{}",
        lines[13]
    );
    assert_eq!(
        keys(lines[9]),
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "kind",
            "provider",
            "model",
            "usage"
        ]
    );
    assert_eq!(
        keys(lines[11]),
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "firstKeptEntryId",
            "tokensBefore"
        ]
    );
    assert_eq!(
        keys(lines[12]),
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "fromId",
            "summary",
            "fromHook"
        ]
    );
    assert!(lines[12].contains(&format!(r#""parentId":"{a}""#)));
}

#[test]
fn validation_matches_the_reference() {
    let mut s = Session::in_memory("/p");
    assert!(matches!(
        s.append_label_change("nope", Some("x")),
        Err(sessiontree::Error::EntryNotFound(_))
    ));
    let a = s.append_message(&user("1")).unwrap();
    let t = s.append_thinking_level_change("high").unwrap();
    assert!(matches!(
        s.append_context_edit(&t, None),
        Err(sessiontree::Error::NotEditable(_))
    ));
    assert!(matches!(
        s.append_context_edit(&a, Some(&Json::parse("{\"x\":1}").unwrap())),
        Err(sessiontree::Error::BadReplacement)
    ));
    s.branch(&a).unwrap();
    let b = s.append_message(&user("2")).unwrap();
    s.branch(&a).unwrap();
    assert!(matches!(
        s.append_context_edit(&b, None),
        Err(sessiontree::Error::NotOnBranch(_))
    ));
    assert!(s.branch("zzz").is_err());
}

#[test]
fn compaction_stores_the_system_message_fold() {
    let mut s = Session::in_memory("/p");
    s.append_message(&Json::parse(r#"{"role":"system","content":"base","sections":{"b":"B","a":"A"},"toolsAdded":[{"name":"read"},{"name":"bash"}],"timestamp":7}"#).unwrap()).unwrap();
    s.append_message(&user("1")).unwrap();
    s.append_message(&Json::parse(r#"{"role":"system","content":[{"type":"text","text":"more"}],"sections":{"a":null,"c":"C"},"toolsRemoved":[{"name":"read"}],"timestamp":9}"#).unwrap()).unwrap();
    let c = s
        .append_compaction("sum", None, 10.0, None, None, None)
        .unwrap();
    let e = s.get_entry(&c).unwrap();
    let ts = sessiontree::date::parse_iso(&e.str_field("timestamp").unwrap()).unwrap();
    assert_eq!(
        e.field("firstKeptEntryId").unwrap().text(),
        format!("\"{c}\"")
    );
    assert_eq!(
        e.field("systemMessage").unwrap().text(),
        format!(
            r#"{{"role":"system","content":"base\n\nmore","sections":{{"b":"B","c":"C"}},"toolsAdded":[{{"name":"bash"}}],"timestamp":{ts}}}"#
        )
    );
    // After the compaction the kept range holds no system message, the fold leads.
    assert_eq!(
        build_context(s.tree(), LeafArg::Default).messages[0]
            .role()
            .as_deref(),
        Some("system")
    );
}

#[test]
fn the_file_appears_at_the_first_user_message_in_pi_mode() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session_file(dir.path(), sessiontree::Creation::OnFirstMessage);
    s.append_model_change("p", "m").unwrap();
    s.append_thinking_level_change("low").unwrap();
    let path = s.path().unwrap().to_path_buf();
    assert!(!path.exists());
    s.append_message(&user("go")).unwrap();
    let l = load(&path).unwrap();
    assert_eq!(l.tree.entries().len(), 3);
    drop(s);
    // Nothing said: no file, and no lock file left behind.
    let s = session_file(dir.path(), sessiontree::Creation::OnFirstMessage);
    let p2 = s.path().unwrap().to_path_buf();
    drop(s);
    assert!(!p2.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn the_seed_variant_waits_for_the_first_assistant_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session_file(dir.path(), sessiontree::Creation::OnFirstAssistant);
    s.append_message(&user("go")).unwrap();
    assert!(!s.path().unwrap().exists());
    s.append_message(
        &Json::parse(
            r#"{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}"#,
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(load(s.path().unwrap()).unwrap().tree.entries().len(), 2);
}

#[test]
fn branched_session_drops_labels_rechains_and_recreates_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session_file(dir.path(), sessiontree::Creation::Eager);
    let a = s.append_message(&user("1")).unwrap();
    let l1 = s.append_label_change(&a, Some("start")).unwrap();
    let b = s.append_message(&user("2")).unwrap();
    let c = s
        .append_compaction("sum", Some(&l1), 5.0, None, None, None)
        .unwrap();
    let old = s.path().unwrap().to_path_buf();
    let new = s.create_branched_session(&c).unwrap().unwrap();
    assert_ne!(new, old);
    let l = load(&new).unwrap();
    assert_eq!(
        l.tree.header().parent_session().as_deref(),
        Some(old.to_str().unwrap())
    );
    let ids: Vec<&str> = l.tree.entries().iter().map(|e| e.id().unwrap()).collect();
    assert_eq!(&ids[..3], [a.as_str(), b.as_str(), c.as_str()]);
    assert_eq!(
        l.tree.get_entry(&b).unwrap().parent.walk_id(),
        Some(a.as_str())
    );
    assert_eq!(
        l.tree
            .get_entry(&c)
            .unwrap()
            .str_field("firstKeptEntryId")
            .as_deref(),
        Some(b.as_str())
    );
    let label = &l.tree.entries()[3];
    assert_eq!(label.parent.walk_id(), Some(c.as_str()));
    assert_eq!(l.tree.get_label(&a).unwrap().label, "\"start\"");
    assert!(
        l.tree.diagnostics().is_empty(),
        "{:?}",
        l.tree.diagnostics()
    );
}

#[test]
fn v1_files_migrate_with_unique_ids_and_first_kept_index() {
    let v1 = concat!(
        r#"{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/p"}"#,
        "\n",
        r#"{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}"#,
        "\n",
        r#"{"type":"message","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"hookMessage","content":"h","timestamp":2}}"#,
        "\n",
        r#"{"type":"compaction","timestamp":"2024-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":1}"#,
        "\n",
    );
    let l = load_str(v1);
    assert!(l.migrated);
    let e = l.tree.entries();
    assert_eq!(e[0].parent, sessiontree::Parent::Null);
    assert_eq!(e[1].parent.walk_id(), e[0].id());
    assert_eq!(e[2].str_field("firstKeptEntryId").as_deref(), e[1].id());
    assert!(e[2].field("firstKeptEntryIndex").is_none());
    assert_eq!(e[1].role(), Some("custom"));
    assert_eq!(l.tree.header().field("version").unwrap().text(), "3");
    assert!(e[0].text().ends_with(&format!(
        r#""id":"{}","parentId":null}}"#,
        e[0].id().unwrap()
    )));
}

#[test]
fn reading_never_writes_and_opening_migrates_by_rename() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v1.jsonl");
    let v1 = "{\"type\":\"session\",\"id\":\"old\",\"timestamp\":\"2024-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n{\"type\":\"message\",\"timestamp\":\"2024-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"a\",\"timestamp\":1}}\n{\"torn";
    std::fs::write(&p, v1).unwrap();
    let before = std::fs::metadata(&p).unwrap();
    load(&p).unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), v1);
    let s = Session::open(&p, WriteOptions::default()).unwrap();
    drop(s);
    let after = std::fs::metadata(&p).unwrap();
    assert_ne!(
        before.ino(),
        after.ino(),
        "migration must write a new file and rename it"
    );
    let l = load(&p).unwrap();
    assert!(!l.migrated);
    assert_eq!(l.tree.entries().len(), 1);
    assert!(
        std::fs::read_to_string(&p).unwrap().contains("{\"torn\n"),
        "unparsed lines are kept"
    );
}

#[test]
fn the_real_pi_v1_session_loads_migrates_and_projects() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/pi-v1-linear-large.jsonl");
    let l = load(&p).unwrap();
    assert!(l.migrated);
    assert!(
        l.tree.diagnostics().is_empty(),
        "{:?}",
        l.tree.diagnostics()
    );
    assert_eq!(l.tree.entry_count(), 1018);
    let ids: std::collections::HashSet<&str> =
        l.tree.entries().iter().filter_map(|e| e.id()).collect();
    assert_eq!(ids.len(), 1018);
    assert_eq!(l.tree.get_branch(None).len(), 1018);
    let ctx = build_context(&l.tree, LeafArg::Default);
    assert_eq!(ctx.messages.len(), 914);
    assert_eq!(ctx.thinking_level.unwrap().text(), "\"off\"");
    let m = ctx.model.unwrap();
    assert_eq!(m.provider.unwrap().text(), "\"anthropic\"");
}
