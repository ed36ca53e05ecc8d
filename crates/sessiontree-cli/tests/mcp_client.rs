//! `sessiontree mcp` through an independent MCP client: the official TypeScript SDK
//! (`mcp-tests/client.mjs`, npm `@modelcontextprotocol/sdk`) starts the built binary over
//! stdio and calls every tool; this test checks the answers: hits and branch marks,
//! listings, the four views of `read_session`, paging with the cursor, usage, errors as tool
//! errors (the server keeps answering), and redaction of every answer.
//! Skips (visibly) without node or `mcp-tests/node_modules`; `SESSIONTREE_REQUIRE_MCP=1`
//! (set by CI) makes it fail instead.

mod mcp_support;

use mcp_support::{all_items, client_available, is_error, only, page_text, session_with, Raw, BIN};
use serde_json::{json, Value};
use sessiontree_testkit::agent::{header, session_folder};
use sessiontree_testkit::pg::Cluster;
use std::path::{Path, PathBuf};

fn ts(n: u64) -> String {
    // 2026-01-01T00:00:00Z plus n minutes.
    let ms = 1_767_225_600_000u64 + n * 60_000;
    let secs = ms / 1000;
    let (h, m) = ((secs / 3600) % 24, (secs / 60) % 60);
    let day = 1 + secs.saturating_sub(1_767_225_600) / 86_400;
    format!("2026-01-{day:02}T{h:02}:{m:02}:00.000Z")
}

fn entry(id: &str, parent: Option<&str>, n: u64, body: &str) -> String {
    let p = parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into());
    format!(
        "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{p},\"timestamp\":\"{}\",\"message\":{body}}}\n",
        ts(n)
    )
}

fn user(text: &str, n: u64) -> String {
    format!(
        "{{\"role\":\"user\",\"content\":{},\"timestamp\":{}}}",
        serde_json::to_string(text).unwrap(),
        1_767_225_600_000u64 + n * 60_000
    )
}

fn assistant(text: &str, model: &str, n: u64) -> String {
    format!(
        "{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"provider\":\"anthropic\",\"model\":\"{model}\",\"usage\":{{\"input\":100,\"output\":20,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":120,\"cost\":{{\"total\":0.5}}}},\"stopReason\":\"stop\",\"timestamp\":{}}}",
        serde_json::to_string(text).unwrap(),
        1_767_225_600_000u64 + n * 60_000
    )
}

fn write_session(agent: &Path, cwd: &str, id: &str, body: &str) -> PathBuf {
    let p = session_folder(agent, cwd).join(format!("{id}.jsonl"));
    std::fs::write(&p, format!("{}\n{body}", header(id, &ts(0), cwd))).unwrap();
    p
}

const A: &str = "0199aaaa-0000-7000-8000-00000000000a";
const B: &str = "0177bbbb-0000-7000-8000-00000000000b";
const L: &str = "0199cccc-0000-7000-8000-00000000000c";

/// Session A: a fork with an abandoned branch, labels, a name and usage, with
/// credential-like markers in a message, a tool result, a label, the name and a model.
/// B: imported from Claude Code. L: long (a context of many pages, one entry of 40,000
/// characters with markers all through it).
fn fixture(agent: &Path) -> (PathBuf, PathBuf) {
    // (id, parent, minute, text; a model for an assistant's): u2-a2 is the abandoned branch,
    // u3 the current one.
    let turns = [
        (
            "u1",
            None,
            1,
            "The quokka simulation drifts. REDIS_URL is MARKER-a1b2c3 here.",
            None,
        ),
        (
            "a1",
            Some("u1"),
            2,
            "Looking at the quokka integrator.",
            Some("claude-MARKER-feed01"),
        ),
        (
            "u2",
            Some("a1"),
            3,
            "Try the quokka leapfrog variant first",
            None,
        ),
        (
            "a2",
            Some("u2"),
            4,
            "Leapfrog tried; the quokka still drifts.",
            Some("claude-MARKER-feed01"),
        ),
        ("u3", Some("a1"), 5, "Apply the exact phrase fix now", None),
    ];
    let mut a = String::new();
    for (id, parent, n, text, model) in turns {
        let body = match model {
            Some(m) => assistant(text, m, n),
            None => user(text, n),
        };
        a += &entry(id, parent, n, &body);
    }
    a += &format!(
        "{{\"type\":\"message\",\"id\":\"t3\",\"parentId\":\"u3\",\"timestamp\":\"{}\",\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"bash\",\"content\":[{{\"type\":\"text\",\"text\":\"token=MARKER-0ff1ce done\"}}],\"isError\":false,\"timestamp\":1767225900000}}}}\n",
        ts(6)
    );
    a += &entry(
        "a3",
        Some("t3"),
        7,
        &assistant("Done: the quokka fix is in.", "claude-sonnet", 7),
    );
    a += &format!("{{\"type\":\"label\",\"id\":\"l1\",\"parentId\":\"a3\",\"timestamp\":\"{}\",\"targetId\":\"a1\",\"label\":\"diagnosis MARKER-1abe1\"}}\n", ts(8));
    a += &format!("{{\"type\":\"session_info\",\"id\":\"n1\",\"parentId\":\"l1\",\"timestamp\":\"{}\",\"name\":\"Quokka drift MARKER-aa11\"}}\n", ts(9));
    let pa = write_session(agent, "/work/orbit", A, &a);

    let b = entry(
        "b1",
        None,
        20,
        "{\"role\":\"user\",\"content\":\"An imported question\",\"timestamp\":1767226800000,\"claudeCode\":{\"uuid\":\"x\"}}",
    );
    write_session(agent, "/work/other", B, &b);

    let mut l = String::new();
    let mut parent: Option<String> = None;
    for i in 0..120u64 {
        let id = format!("e{i:04}");
        let text = format!("Step {i}: {}", "lorem ipsum dolor sit amet ".repeat(10));
        let body = if i % 2 == 0 {
            user(&text, 30 + i)
        } else {
            assistant(&text, "m", 30 + i)
        };
        l += &entry(&id, parent.as_deref(), 30 + i, &body);
        parent = Some(id);
    }
    let mut huge = String::new();
    for k in 0..400 {
        huge += &format!(
            "part {k:03} of the long answer, key MARKER-{k:04x}beef and more words here; "
        );
    }
    l += &entry("big1", parent.as_deref(), 200, &assistant(&huge, "m", 200));
    l += &entry(
        "fin1",
        Some("big1"),
        201,
        &user("the end of the long session", 201),
    );
    let pl = write_session(agent, "/work/long", L, &l);
    (pa, pl)
}

#[test]
fn every_tool_through_the_typescript_sdk() {
    if !client_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let (pa, pl) = fixture(&agent);
    let calls = json!([
        {"name": "search_sessions", "arguments": {"query": "quokka"}},
        {"name": "search_sessions", "arguments": {"query": "quokka", "limit": 1}},
        {"name": "search_sessions", "arguments": {"query": "quokka", "role": "assistant"}},
        {"name": "search_sessions", "arguments": {"query": "\"exact phrase\""}},
        {"name": "search_sessions", "arguments": {"query": "phrase exact"}},
        {"name": "search_sessions", "arguments": {"query": "\"phrase exact\""}},
        {"name": "search_sessions", "arguments": {"query": "REDIS_URL"}},
        {"name": "search_sessions", "arguments": {"query": "quokka", "role": "wizard"}},
        {"name": "search_sessions", "arguments": {}},
        {"name": "search_sessions", "arguments": {"query": "x", "limt": 3}},
        {"name": "list_sessions", "arguments": {}},
        {"name": "list_sessions", "arguments": {"cwd": "/work/orbit"}},
        {"name": "list_sessions", "arguments": {"query": "imported"}},
        {"name": "read_session", "arguments": {"session": "0199aa"}},
        {"name": "read_session", "arguments": {"session": format!("{}#a2", pa.display())}},
        {"name": "read_session", "arguments": {"session": A, "view": "tree"}},
        {"name": "read_session", "arguments": {"session": A, "view": "branch", "entry": "a2"}},
        {"name": "read_session", "arguments": {"session": A, "view": "entry", "entry": "t3"}},
        {"name": "read_session", "arguments": {"session": L}, "follow": true},
        {"name": "read_session", "arguments": {"session": L, "view": "entry", "entry": "big1"}, "follow": true},
        {"name": "read_session", "arguments": {"session": "/etc/passwd"}},
        {"name": "read_session", "arguments": {"session": A, "entry": "nope"}},
        {"name": "read_session", "arguments": {"session": "0199"}},
        {"name": "read_session", "arguments": {"session": A, "cursor": "garbage"}},
        {"name": "read_session", "arguments": {"session": A, "view": "sideways"}},
        {"name": "usage_summary", "arguments": {}},
        {"name": "usage_summary", "arguments": {"by": "day"}},
        {"name": "usage_summary", "arguments": {"by": "colour"}},
        {"name": "no_such_tool", "arguments": {}},
        {"name": "list_sessions", "arguments": {"limit": 1}},
    ]);
    let (tools, res) = session_with(&agent, &["--redact", "MARKER-[0-9a-f]+"], &calls);

    // The tools, with their schemas and descriptions.
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "search_sessions",
            "list_sessions",
            "read_session",
            "usage_summary"
        ]
    );
    for t in &tools {
        assert!(t["description"].as_str().unwrap().len() > 100, "{t}");
        assert_eq!(t["inputSchema"]["type"], "object");
        assert_eq!(t["annotations"]["readOnlyHint"], true);
    }
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["query"]));
    let props: Vec<&String> = tools[2]["inputSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(props, ["session", "entry", "view", "cursor"]);

    // Redaction: no marker anywhere, in text or structured content, of any answer; and
    // each tool's answers went through the redactor (its mark is there).
    for (i, r) in res.iter().enumerate() {
        let s = r["pages"].to_string();
        assert!(!s.contains("MARKER"), "call {i} leaks a marker: {s}");
    }
    for i in [6, 10, 13, 15, 16, 17, 19, 25] {
        assert!(
            res[i]["pages"].to_string().contains("[redacted]"),
            "call {i}: {}",
            res[i]
        );
    }

    // search_sessions: newest first, both branches, marked.
    let r = only(&res, 0);
    let hits = r["structuredContent"]["hits"].as_array().unwrap();
    let ids: Vec<&str> = hits
        .iter()
        .map(|h| h["entryId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a3", "a2", "u2", "a1", "u1"], "{r}");
    let on: Vec<bool> = hits
        .iter()
        .map(|h| h["onCurrentBranch"].as_bool().unwrap())
        .collect();
    assert_eq!(on, [true, false, false, true, true]);
    assert_eq!(hits[1]["sessionId"], A);
    assert_eq!(hits[1]["role"], "assistant");
    assert_eq!(hits[1]["cwd"], "/work/orbit");
    assert_eq!(hits[1]["ref"], format!("{}#a2", pa.display()));
    assert!(hits[1]["snippet"]
        .as_str()
        .unwrap()
        .contains("quokka still drifts"));
    let text = page_text(r);
    assert!(
        text.starts_with("5 hits for \"quokka\", newest first"),
        "{text}"
    );
    assert!(text.contains("ABANDONED branch"), "{text}");
    // limit 1: the newest, and where to go on.
    let r = only(&res, 1);
    assert_eq!(r["structuredContent"]["hits"].as_array().unwrap().len(), 1);
    assert_eq!(r["structuredContent"]["moreOlder"], true);
    assert_eq!(r["structuredContent"]["nextUntil"], ts(7));
    assert!(
        page_text(r).contains("older hits exist: call again with cursor \"s1."),
        "{}",
        page_text(r)
    );
    let roles: Vec<&str> = only(&res, 2)["structuredContent"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["assistant", "assistant", "assistant"]);
    let n = |i: usize| {
        only(&res, i)["structuredContent"]["hits"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(
        (n(3), n(4), n(5)),
        (1, 1, 0),
        "a phrase in quotes, words in any order"
    );
    // The hit on a credential: the snippet is there, the secret is not.
    let s = only(&res, 6)["structuredContent"]["hits"][0]["snippet"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(s.contains("REDIS_URL is [redacted] here"), "{s}");
    // Bad arguments: tool errors, one sentence each.
    for (i, want) in [
        (7, "role must be one of"),
        (8, "query is required"),
        (9, "takes no argument \"limt\""),
    ] {
        let r = only(&res, i);
        assert!(is_error(r), "call {i}: {r}");
        assert!(page_text(r).contains(want), "call {i}: {}", page_text(r));
    }

    // list_sessions.
    let r = only(&res, 10);
    let s = r["structuredContent"]["sessions"].as_array().unwrap();
    let ids: Vec<&str> = s.iter().map(|x| x["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3);
    let a = s.iter().find(|x| x["id"] == A).unwrap();
    assert_eq!(a["title"], "Quokka drift [redacted]");
    assert_eq!(a["agent"], "Pi");
    assert_eq!(a["cwd"], "/work/orbit");
    assert_eq!(a["messageCount"], 7);
    let b = s.iter().find(|x| x["id"] == B).unwrap();
    assert_eq!(b["agent"], "Claude Code");
    assert_eq!(b["title"], "An imported question");
    let one = |i: usize| -> Vec<String> {
        only(&res, i)["structuredContent"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(one(11), [A]);
    assert_eq!(one(12), [B]);
    assert_eq!(one(29).len(), 1);
    assert!(page_text(only(&res, 29)).starts_with("3 sessions match; the 1 most recently"));

    // read_session, context at the leaf (an id prefix): the current branch only.
    let r = only(&res, 13);
    let items = r["structuredContent"]["items"].as_array().unwrap();
    let ids: Vec<&str> = items
        .iter()
        .map(|x| x["entryId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["u1", "a1", "u3", "t3", "a3"], "{r}");
    assert_eq!(r["structuredContent"]["anchor"], "n1");
    assert_eq!(r["structuredContent"]["nextCursor"], Value::Null);
    assert!(
        page_text(r).contains("result of bash c1:\ntoken=[REDACTED:secret-assignment] done"),
        "{}",
        page_text(r)
    );
    // ... at an abandoned entry, given as FILE#ID: what the model saw there.
    let ids: Vec<String> = only(&res, 14)["structuredContent"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["entryId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["u1", "a1", "u2", "a2"]);
    // tree: every entry, the label, the path and the leaf marked.
    let t = page_text(only(&res, 15));
    assert!(
        t.contains("* a1 assistant Looking at the quokka integrator. [diagnosis [redacted]]"),
        "{t}"
    );
    assert!(t.contains("- a2 assistant"), "{t}");
    assert!(
        t.contains("* n1 session_info") && t.contains("<leaf"),
        "{t}"
    );
    assert_eq!(
        only(&res, 15)["structuredContent"]["items"]
            .as_array()
            .unwrap()
            .len(),
        9
    );
    // branch to the abandoned entry.
    let ids: Vec<String> = only(&res, 16)["structuredContent"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["entryId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["u1", "a1", "u2", "a2"]);
    // one entry whole.
    let r = only(&res, 17);
    let e = &r["structuredContent"]["entry"];
    assert_eq!(e["parentId"], "u3");
    assert_eq!(e["children"], json!(["a3"]));
    assert_eq!(e["onCurrentBranch"], true);
    let j: Value = serde_json::from_str(e["json"].as_str().unwrap()).unwrap();
    assert_eq!(j["message"]["toolName"], "bash");

    // Paging the long context: every message once, in order, each page within the
    // budget, the 40,000-character entry split across pages and whole when joined.
    let pages = res[18]["pages"].as_array().unwrap();
    assert!(pages.len() >= 8, "{} pages", pages.len());
    let mut seen: Vec<(String, String)> = Vec::new();
    for (k, p) in pages.iter().enumerate() {
        let r = &p["result"];
        assert!(!is_error(r), "{r}");
        let chars = page_text(r).chars().count();
        assert!(chars <= 8_000, "page {k}: {chars} characters");
        assert!(
            chars > 2_000 || k == pages.len() - 1,
            "page {k}: {chars} characters"
        );
        for it in r["structuredContent"]["items"].as_array().unwrap() {
            let id = it["entryId"].as_str().unwrap().to_string();
            let text = it["text"].as_str().unwrap().to_string();
            match seen.last_mut() {
                Some(last) if last.0 == id => last.1.push_str(&text),
                _ => seen.push((id, text)),
            }
        }
    }
    assert_eq!(seen.len(), 122);
    assert_eq!(seen[0].0, "e0000");
    assert_eq!(seen[121].0, "fin1");
    let big = &seen[120];
    assert_eq!(big.0, "big1");
    let want: String = (0..400)
        .map(|k| format!("part {k:03} of the long answer, key [redacted] and more words here; "))
        .collect();
    assert_eq!(big.1, want, "the long entry, joined from its pages");
    let last = &pages.last().unwrap()["result"]["structuredContent"];
    assert_eq!(last["nextCursor"], Value::Null);
    // The entry view pages the same way.
    let pages = res[19]["pages"].as_array().unwrap();
    assert!(pages.len() >= 3);
    let joined: String = pages
        .iter()
        .map(|p| {
            p["result"]["structuredContent"]["entry"]["json"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let j: Value = serde_json::from_str(&joined).unwrap();
    assert_eq!(j["id"], "big1");

    // Errors: one sentence, the server still answering after each.
    for (i, want) in [
        (20, "is not under"),
        (21, "has no entry \"nope\""),
        (22, "is the start of 2 session ids"),
        (23, "is not a cursor"),
        (24, "view must be one of context, branch, tree, entry"),
        (27, "by must be one of"),
    ] {
        let r = only(&res, i);
        assert!(is_error(r), "call {i}: {r}");
        let t = page_text(r);
        assert!(t.contains(want), "call {i}: {t}");
        assert_eq!(t.lines().count(), 1, "call {i}: {t}");
    }
    // An unknown tool: refused (as a protocol or a tool error), and the next call works.
    let r = &res[28];
    assert!(
        r.get("error").is_some() || is_error(&r["pages"][0]["result"]),
        "{r}"
    );

    // usage_summary: as stats counts it, keys redacted.
    let r = only(&res, 25);
    let u = &r["structuredContent"];
    assert_eq!(u["total"]["records"], 2 + 1 + 60 + 1);
    assert_eq!(u["total"]["totalTokens"], 120 * 64);
    let keys: Vec<&str> = u["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert!(keys.contains(&"anthropic/claude-[redacted]"), "{keys:?}");
    assert!(
        page_text(r).starts_with("Total: 7,680 tokens"),
        "{}",
        page_text(r)
    );
    let days = only(&res, 26)["structuredContent"]["groups"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(days, 1);

    // Without the redactor the markers reach the answers: the checks above can fail.
    let (_, plain) = session_with(
        &agent,
        &[],
        &json!([{"name": "search_sessions", "arguments": {"query": "REDIS_URL"}}]),
    );
    assert!(plain[0]["pages"].to_string().contains("MARKER-a1b2c3"));

    // Nothing was written to any session.
    assert!(std::fs::read_to_string(&pa)
        .unwrap()
        .ends_with("MARKER-aa11\"}\n"));
    assert!(pl.exists());
}

/// Paging search_sessions and list_sessions with the cursor: every hit and every session
/// once, in order, also where many share one time (the cursor keeps which were shown at
/// that time) and where the budget cuts a page before the limit.
#[test]
fn search_and_list_page_with_the_cursor() {
    if !client_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    fixture(&agent);
    // Twelve entries of one time (an import writes such runs), each with the word.
    let mut t = String::new();
    let mut parent: Option<String> = None;
    for i in 0..12u64 {
        let id = format!("t{i:03}");
        let body = user(
            &format!("tiebreak number {i} {}", "padding words ".repeat(8)),
            300,
        );
        t += &entry(&id, parent.as_deref(), 300, &body);
        parent = Some(id);
    }
    write_session(
        &agent,
        "/work/ties",
        "0199eeee-0000-7000-8000-00000000000e",
        &t,
    );
    // Seven sessions last active at the same minute: ties in the listing.
    for k in 0..7u64 {
        let id = format!("0199ffff-0000-7000-8000-00000000001{k}");
        write_session(
            &agent,
            "/work/same",
            &id,
            &entry("s1", None, 400, &user("same time", 400)),
        );
    }
    let calls = json!([
        {"name": "search_sessions", "arguments": {"query": "quokka"}},
        {"name": "search_sessions", "arguments": {"query": "quokka", "limit": 2}, "follow": true},
        {"name": "search_sessions", "arguments": {"query": "tiebreak", "limit": 5}, "follow": true},
        {"name": "list_sessions", "arguments": {"limit": 200}},
        {"name": "list_sessions", "arguments": {"limit": 3}, "follow": true},
        {"name": "list_sessions", "arguments": {"cwd": "/work/same", "limit": 2}, "follow": true},
        {"name": "search_sessions", "arguments": {"query": "quokka", "cursor": "l1.x.1.a"}},
        {"name": "list_sessions", "arguments": {"cursor": "garbage"}},
    ]);
    let (_, res) = session_with(&agent, &[], &calls);
    let ids = |v: &[Value], k: &str| -> Vec<String> {
        v.iter()
            .map(|x| x[k].as_str().unwrap().to_string())
            .collect()
    };
    let whole = ids(&all_items(&res, 0, "hits"), "entryId");
    assert_eq!(whole, ["a3", "a2", "u2", "a1", "u1"]);
    assert_eq!(ids(&all_items(&res, 1, "hits"), "entryId"), whole);
    assert_eq!(res[1]["pages"].as_array().unwrap().len(), 3);
    let tied = ids(&all_items(&res, 2, "hits"), "entryId");
    let mut sorted = tied.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 12, "{tied:?}");
    assert_eq!(tied.len(), 12, "{tied:?}");
    assert_eq!(res[2]["pages"].as_array().unwrap().len(), 3);
    let listed = ids(&all_items(&res, 3, "sessions"), "id");
    assert_eq!(listed.len(), 11);
    assert_eq!(ids(&all_items(&res, 4, "sessions"), "id"), listed);
    assert_eq!(res[4]["pages"].as_array().unwrap().len(), 4);
    let same = ids(&all_items(&res, 5, "sessions"), "id");
    let mut u = same.clone();
    u.sort();
    u.dedup();
    assert_eq!((same.len(), u.len()), (7, 7), "{same:?}");
    for (i, want) in [
        (6, "is not a cursor of search_sessions"),
        (7, "is not a cursor of list_sessions"),
    ] {
        let r = only(&res, i);
        assert!(is_error(r), "call {i}: {r}");
        assert!(page_text(r).contains(want), "call {i}: {}", page_text(r));
    }

    // A small budget ends pages before the limit; the cursor goes on from there.
    let (_, res) = session_with(
        &agent,
        &["--budget", "1000"],
        &json!([{"name": "search_sessions", "arguments": {"query": "tiebreak", "limit": 100}, "follow": true}]),
    );
    let pages = res[0]["pages"].as_array().unwrap();
    assert!(pages.len() >= 3, "{} pages", pages.len());
    for p in pages {
        assert!(page_text(&p["result"]).chars().count() <= 1000, "{p}");
    }
    let got = ids(&all_items(&res, 0, "hits"), "entryId");
    let mut u = got.clone();
    u.sort();
    u.dedup();
    assert_eq!((got.len(), u.len()), (12, 12), "{got:?}");
}

const SHARED: &str = "0199a1a1-0000-7000-8000-0000000000a1";
const PRIVATE: &str = "0199a2a2-0000-7000-8000-0000000000a2";
const DESKTOP: &str = "0199a3a3-0000-7000-8000-0000000000a3";
const BOBS: &str = "0199b0b0-0000-7000-8000-0000000000b0";

/// What `sessiontree ARGS` prints, over `agent`; it must succeed.
fn st(agent: &Path, args: &[&str]) -> String {
    sessiontree_testkit::run::ok(sessiontree_testkit::run::run(BIN, agent, args))
}

/// The archive through the SDK client: alice pushes from two machines (her laptop's
/// sessions, one shared with the team, and one from her desktop), bob (in the team) pushes
/// one of his own. Each sees, with machine and owner in every hit and row: alice her two
/// machines' sessions, each once, and never bob's; bob his own and the one shared with
/// him, never alice's unshared ones, and the credential in the shared one redacted in
/// search, list and read alike. An archive-only session is read without a file written.
#[test]
fn the_archive_answers_with_machine_and_owner() {
    if !client_available() {
        return;
    }
    let Some(c) = Cluster::start("the_archive_answers_with_machine_and_owner") else {
        return;
    };
    c.setup_roles();
    c.psql("postgres", "postgres", "GRANT team TO bob").unwrap();
    let (alice_url, bob_url) = (c.url("alice", "archive"), c.url("bob", "archive"));
    let tmp = tempfile::tempdir().unwrap();
    let (laptop, desktop, bob) = (
        tmp.path().join("laptop"),
        tmp.path().join("desktop"),
        tmp.path().join("bob"),
    );
    let key = format!("AKIA{}", "QYLPMN5HHHFPZAM2");
    write_session(
        &laptop,
        "/work/orbit",
        SHARED,
        &(entry(
            "s1",
            None,
            10,
            &user(&format!("the wombat bucket key is {key} for now"), 10),
        ) + &entry(
            "s2",
            Some("s1"),
            11,
            &assistant("Noted the wombat bucket.", "m", 11),
        )),
    );
    write_session(
        &laptop,
        "/work/orbit",
        PRIVATE,
        &entry("p1", None, 20, &user("a private wombat note", 20)),
    );
    write_session(
        &desktop,
        "/work/desk",
        DESKTOP,
        &(entry("d1", None, 30, &user("the desktop wombat plan", 30))
            + &entry(
                "d2",
                Some("d1"),
                31,
                &assistant("The plan for the wombat, in steps.", "m", 31),
            )),
    );
    // The shared session grew on the desktop too (a copy of it, one entry more).
    write_session(
        &desktop,
        "/work/orbit",
        SHARED,
        &(std::fs::read_to_string(
            session_folder(&laptop, "/work/orbit").join(format!("{SHARED}.jsonl")),
        )
        .unwrap()
        .split_once('\n')
        .unwrap()
        .1
        .to_string()
            + &entry(
                "s3",
                Some("s2"),
                12,
                &user("the wombat bucket moved, on the desktop", 12),
            )),
    );
    write_session(
        &bob,
        "/work/bob",
        BOBS,
        &entry("b1", None, 40, &user("bob's own wombat idea", 40)),
    );
    st(
        &laptop,
        &["push", "--archive", &alice_url, "--machine", "laptop"],
    );
    st(
        &desktop,
        &["push", "--archive", &alice_url, "--machine", "desktop"],
    );
    st(
        &bob,
        &["push", "--archive", &bob_url, "--machine", "bobbox"],
    );
    st(
        &laptop,
        &[
            "share",
            SHARED,
            "--with",
            "team",
            "--allow-secrets",
            "--archive",
            &alice_url,
        ],
    );
    // The archive holds the credential as it was written: only the answers redact it.
    let stored = c
        .psql(
            "alice",
            "archive",
            "SELECT string_agg(convert_from(data, 'UTF8'), '') FROM sessiontree.chunks",
        )
        .unwrap();
    assert!(stored.contains(&key));

    let calls = json!([
        {"name": "search_sessions", "arguments": {"query": "wombat"}},
        {"name": "list_sessions", "arguments": {}},
        {"name": "read_session", "arguments": {"session": DESKTOP}},
        {"name": "read_session", "arguments": {"session": "0199a3"}},
        {"name": "search_sessions", "arguments": {"query": "wombat", "limit": 1}, "follow": true},
        {"name": "list_sessions", "arguments": {"limit": 1}, "follow": true},
        {"name": "read_session", "arguments": {"session": BOBS}},
        {"name": "search_sessions", "arguments": {"query": "wombat", "cwd": "/work/desk"}},
        {"name": "read_session", "arguments": {"session": format!("{SHARED}#s3")}},
        {"name": "read_session", "arguments": {"session": SHARED}},
    ]);
    let before = sessiontree_testkit::files::snapshot(&laptop.join("sessions"));
    let (_, res) = session_with(&laptop, &["--archive", &alice_url], &calls);
    let hits = all_items(&res, 0, "hits");
    let who: Vec<(String, String, String, bool)> = hits
        .iter()
        .map(|h| {
            (
                h["sessionId"].as_str().unwrap().to_string(),
                h["owner"].as_str().unwrap().to_string(),
                h["machine"].as_str().unwrap().to_string(),
                h["local"].as_bool().unwrap(),
            )
        })
        .collect();
    let w = |id: &str, m: &str, local: bool| {
        (id.to_string(), "alice".to_string(), m.to_string(), local)
    };
    assert_eq!(
        who,
        [
            w(DESKTOP, "desktop", false),
            w(DESKTOP, "desktop", false),
            w(PRIVATE, "laptop", true),
            w(SHARED, "desktop", false),
            w(SHARED, "laptop", true),
            w(SHARED, "laptop", true),
        ],
        "{hits:?}"
    );
    // Here and archived: once, with the archive's machines noted.
    assert_eq!(hits[2]["archivedOn"], json!(["laptop"]));
    assert_eq!(hits[4]["archivedOn"], json!(["desktop", "laptop"]));
    // The entry only the desktop's copy has: its ref reads that copy.
    assert_eq!(hits[3]["ref"], format!("{SHARED}#s3"));
    assert_eq!(hits[0]["ref"], format!("{DESKTOP}#d2"));
    assert_eq!(hits[0]["cwd"], "/work/desk");
    assert!(page_text(only(&res, 0)).contains("[alice@desktop]"));
    let rows = all_items(&res, 1, "sessions");
    let listed: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap(),
                r["owner"].as_str().unwrap(),
                r["machine"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (DESKTOP, "alice", "desktop"),
            (PRIVATE, "alice", "laptop"),
            (SHARED, "alice", "laptop")
        ],
        "{rows:?}"
    );
    assert_eq!(rows[0]["local"], false);
    assert_eq!(rows[0]["path"], Value::Null);
    assert_eq!(rows[2]["archivedOn"], json!(["desktop", "laptop"]));
    // The desktop's session, read from the archive by id and by prefix.
    for i in [2, 3] {
        let r = only(&res, i);
        let sc = &r["structuredContent"];
        assert_eq!(sc["session"]["machine"], "desktop", "{r}");
        assert_eq!(sc["session"]["owner"], "alice");
        assert_eq!(sc["session"]["archived"], true);
        assert_eq!(ids_of(&sc["items"]), ["d1", "d2"]);
        assert!(page_text(r).contains("alice@desktop"), "{}", page_text(r));
    }
    // Paging across both sources: the same hits, once each.
    let paged: Vec<String> = all_items(&res, 4, "hits")
        .iter()
        .map(|h| h["entryId"].as_str().unwrap().to_string())
        .collect();
    let whole: Vec<String> = hits
        .iter()
        .map(|h| h["entryId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paged, whole);
    assert_eq!(all_items(&res, 5, "sessions"), rows);
    // bob's session is not alice's to read.
    let r = only(&res, 6);
    assert!(is_error(r), "{r}");
    assert!(
        page_text(r).contains("no session here or in the archive"),
        "{}",
        page_text(r)
    );
    assert_eq!(
        ids_by(&all_items(&res, 7, "hits"), "sessionId"),
        [DESKTOP, DESKTOP]
    );
    let r = only(&res, 8);
    assert_eq!(
        r["structuredContent"]["session"]["machine"], "desktop",
        "{r}"
    );
    assert_eq!(ids_of(&r["structuredContent"]["items"]), ["s1", "s2", "s3"]);
    // Without the entry, the session here is read.
    let r = only(&res, 9);
    assert_eq!(r["structuredContent"]["session"]["archived"], false, "{r}");
    assert_eq!(ids_of(&r["structuredContent"]["items"]), ["s1", "s2"]);
    // Nothing written under the agent dir's sessions.
    assert_eq!(
        sessiontree_testkit::files::snapshot(&laptop.join("sessions")),
        before
    );
    // bob's session in no answer (but the one that was asked for it by id).
    for (i, r) in res.iter().enumerate().filter(|(i, _)| *i != 6) {
        assert!(!r["pages"].to_string().contains(BOBS), "call {i}: {r}");
    }

    let calls = json!([
        {"name": "search_sessions", "arguments": {"query": "wombat"}},
        {"name": "list_sessions", "arguments": {}},
        {"name": "read_session", "arguments": {"session": SHARED}},
        {"name": "read_session", "arguments": {"session": format!("{SHARED}#s1"), "view": "entry"}},
        {"name": "read_session", "arguments": {"session": PRIVATE}},
        {"name": "search_sessions", "arguments": {"query": "\"bucket key\""}},
    ]);
    let before = sessiontree_testkit::files::snapshot(&bob.join("sessions"));
    let (_, res) = session_with(&bob, &["--archive", &bob_url], &calls);
    let all = res
        .iter()
        .map(|r| r["pages"].to_string())
        .collect::<String>();
    assert!(!all.contains(&key), "a credential reached bob");
    // (Call 4 asks for PRIVATE by id: its error names the id.)
    let answers: String = res
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 4)
        .map(|(_, r)| r["pages"].to_string())
        .collect();
    for s in [PRIVATE, DESKTOP] {
        assert!(
            !answers.contains(s),
            "alice's unshared session {s} reached bob"
        );
    }
    let hits = all_items(&res, 0, "hits");
    let who: Vec<(&str, &str)> = hits
        .iter()
        .map(|h| {
            (
                h["sessionId"].as_str().unwrap(),
                h["owner"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        who,
        [
            (BOBS, "bob"),
            (SHARED, "alice"),
            (SHARED, "alice"),
            (SHARED, "alice")
        ],
        "{hits:?}"
    );
    assert_eq!(
        (&hits[0]["machine"], &hits[1]["machine"]),
        (&json!("bobbox"), &json!("desktop"))
    );
    assert_eq!(hits[2]["machines"].as_array().unwrap().len(), 2, "{hits:?}");
    let rows = all_items(&res, 1, "sessions");
    assert_eq!(ids_by(&rows, "id"), [BOBS, SHARED]);
    assert_eq!(rows[1]["owner"], "alice");
    let r = only(&res, 2);
    assert!(
        page_text(r).contains("the wombat bucket key is [REDACTED:aws-access-key] for now"),
        "{}",
        page_text(r)
    );
    assert_eq!(r["structuredContent"]["session"]["owner"], "alice");
    let r = only(&res, 3);
    assert!(
        r["structuredContent"]["entry"]["json"]
            .as_str()
            .unwrap()
            .contains("[REDACTED:aws-access-key]"),
        "{r}"
    );
    assert!(is_error(only(&res, 4)));
    let s = only(&res, 5)["structuredContent"]["hits"][0]["snippet"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(s.contains("bucket key is [REDACTED:aws-access-key]"), "{s}");
    assert_eq!(
        sessiontree_testkit::files::snapshot(&bob.join("sessions")),
        before
    );

    // An archive that cannot be reached at start: one line, exit 2.
    let o = sessiontree_testkit::run::run(
        BIN,
        &bob,
        &[
            "mcp",
            "--archive",
            &format!(
                "host={} port=1 user=bob dbname=archive sslmode=disable",
                tmp.path().display()
            ),
        ],
    );
    let (code, _, err) = sessiontree_testkit::run::code_out_err(&o);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("archive"), "{err}");

    // Later: a tool error while the server is down, answers again once it is back.
    let mut raw = Raw::start(&laptop, &["--archive", &alice_url]);
    let r = raw.call("list_sessions", json!({}));
    assert_eq!(r["isError"], false, "{r}");
    c.stop_server("fast");
    let r = raw.call("list_sessions", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    let t = r["content"][0]["text"].as_str().unwrap().to_string();
    assert!(t.contains("archive") && t.lines().count() == 1, "{t}");
    c.start_server();
    let r = raw.call("search_sessions", json!({"query": "wombat"}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(
        r["structuredContent"]["hits"].as_array().unwrap().len(),
        6,
        "{r}"
    );
}

fn ids_of(items: &Value) -> Vec<String> {
    ids_by(items.as_array().unwrap(), "entryId")
}

fn ids_by(v: &[Value], k: &str) -> Vec<String> {
    v.iter()
        .map(|x| x[k].as_str().unwrap().to_string())
        .collect()
}

/// Raw JSON-RPC on the server's stdin (no SDK): a line that is not JSON, arguments that are
/// not an object and a huge limit are answered or skipped, and the server keeps answering.
#[test]
fn the_server_survives_bad_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    fixture(&agent);
    let mut raw = Raw::start(&agent, &[]);
    raw.line("this is not json {");
    let r2 = raw.request(
        "tools/call",
        json!({"name": "read_session", "arguments": "not an object"}),
    );
    assert!(
        r2.get("error").is_some() || r2["result"]["isError"] == true,
        "{r2}"
    );
    let t = |r: &Value| r["content"][0]["text"].as_str().unwrap().to_string();
    let r = raw.call("list_sessions", json!({"limit": 1e308}));
    assert_eq!(r["isError"], true);
    assert!(t(&r).contains("limit must be a whole number"), "{}", t(&r));
    let r = raw.call(
        "read_session",
        json!({"session": A, "cursor": "context:18446744073709551615:0:n1"}),
    );
    assert_eq!(r["isError"], true);
    assert!(
        t(&r).contains("cursor is past the end") || t(&r).contains("not a cursor"),
        "{}",
        t(&r)
    );
    let r = raw.call("list_sessions", json!({}));
    assert_eq!(r["isError"], false);
    assert!(t(&r).starts_with("3 sessions"), "{}", t(&r));
}
