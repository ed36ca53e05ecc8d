//! `sessiontree mcp` through an independent MCP client: the official TypeScript SDK
//! (`mcp-tests/client.mjs`, npm `@modelcontextprotocol/sdk`) starts the built binary over
//! stdio and calls every tool; this test checks the answers: hits and branch marks,
//! listings, the four views of `read_session`, paging with the cursor, usage, errors as tool
//! errors (the server keeps answering), and redaction of every answer.
//! Skips (visibly) without node or `mcp-tests/node_modules`; `SESSIONTREE_REQUIRE_MCP=1`
//! (set by CI) makes it fail instead.

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn client_available() -> bool {
    let ok = root()
        .join("mcp-tests/node_modules/@modelcontextprotocol/sdk/package.json")
        .exists()
        && Command::new("node").arg("--version").output().is_ok();
    if !ok {
        let m =
            "the MCP client test needs node and mcp-tests/node_modules (cd mcp-tests && npm ci)";
        if std::env::var("SESSIONTREE_REQUIRE_MCP").as_deref() == Ok("1") {
            panic!("{m}");
        }
        eprintln!("SKIPPED: {m}");
    }
    ok
}

/// Runs the client against `sessiontree mcp ARGS` over `agent`, making `calls`; returns
/// the tools it listed and one result per call.
fn session_with(agent: &Path, server_args: &[&str], calls: &Value) -> (Vec<Value>, Vec<Value>) {
    let mut c = Command::new("node");
    c.arg(root().join("mcp-tests/client.mjs"))
        .arg(BIN)
        .arg("mcp")
        .args(server_args)
        .env("PI_CODING_AGENT_DIR", agent)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("node");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(calls.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let first = lines.next().expect("the tools line");
    let tools = first["tools"].as_array().unwrap().clone();
    let results: Vec<Value> = lines.collect();
    assert_eq!(results.len(), calls.as_array().unwrap().len(), "{stdout}");
    (tools, results)
}

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
    let dir = agent
        .join("sessions")
        .join(format!("--{}--", cwd.trim_matches('/').replace('/', "-")));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{id}.jsonl"));
    std::fs::write(
        &p,
        format!("{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"{}\",\"cwd\":\"{cwd}\"}}\n{body}", ts(0)),
    )
    .unwrap();
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
    let mut a = String::new();
    a += &entry(
        "u1",
        None,
        1,
        &user(
            "The quokka simulation drifts. REDIS_URL is MARKER-a1b2c3 here.",
            1,
        ),
    );
    a += &entry(
        "a1",
        Some("u1"),
        2,
        &assistant(
            "Looking at the quokka integrator.",
            "claude-MARKER-feed01",
            2,
        ),
    );
    // The abandoned branch.
    a += &entry(
        "u2",
        Some("a1"),
        3,
        &user("Try the quokka leapfrog variant first", 3),
    );
    a += &entry(
        "a2",
        Some("u2"),
        4,
        &assistant(
            "Leapfrog tried; the quokka still drifts.",
            "claude-MARKER-feed01",
            4,
        ),
    );
    // The current branch.
    a += &entry(
        "u3",
        Some("a1"),
        5,
        &user("Apply the exact phrase fix now", 5),
    );
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

fn page_text(r: &Value) -> String {
    r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn only(results: &[Value], i: usize) -> &Value {
    let r = &results[i];
    assert!(r.get("error").is_none(), "call {i}: {r}");
    &r["pages"][0]["result"]
}

fn is_error(r: &Value) -> bool {
    r["isError"] == json!(true)
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
    assert!(page_text(r).contains(&format!("until=\"{}\"", ts(7))));
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

/// Raw JSON-RPC on the server's stdin (no SDK): a line that is not JSON, arguments that are
/// not an object and a huge limit are answered or skipped, and the server keeps answering.
#[test]
fn the_server_survives_bad_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    fixture(&agent);
    let mut child = Command::new(BIN)
        .arg("mcp")
        .env("PI_CODING_AGENT_DIR", &agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        "this is not json {".to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_session", "arguments": "not an object"}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_sessions", "arguments": {"limit": 1e308}}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "read_session", "arguments": {"session": A, "cursor": "context:18446744073709551615:0:n1"}}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "list_sessions", "arguments": {}}}).to_string(),
    ];
    for l in &lines {
        writeln!(stdin, "{l}").unwrap();
    }
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut by_id = std::collections::HashMap::new();
    let mut line = String::new();
    while by_id.len() < 5 {
        line.clear();
        if std::io::BufRead::read_line(&mut reader, &mut line).unwrap() == 0 {
            break;
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        by_id.insert(v["id"].as_u64().unwrap(), v);
    }
    drop(stdin);
    let _ = child.wait();
    assert!(by_id[&2].get("error").is_some() || by_id[&2]["result"]["isError"] == true);
    let t = |id: u64| {
        by_id[&id]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(by_id[&3]["result"]["isError"], true);
    assert!(t(3).contains("limit must be a whole number"), "{}", t(3));
    assert_eq!(by_id[&4]["result"]["isError"], true);
    assert!(
        t(4).contains("cursor is past the end") || t(4).contains("not a cursor"),
        "{}",
        t(4)
    );
    assert_eq!(by_id[&5]["result"]["isError"], false);
    assert!(t(5).starts_with("3 sessions"), "{}", t(5));
}
