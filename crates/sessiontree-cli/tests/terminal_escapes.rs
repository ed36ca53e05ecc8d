//! Session data never reaches the terminal raw (issue 24): a session whose name, labels,
//! cwd, message texts, tool names, entry ids, model names and file name carry escape
//! sequences (OSC 52 clipboard writes, OSC 8 links, CSI 2J, a title change, a C1 CSI) and
//! bidi overrides is shown by every read command with those characters as visible escapes,
//! on stdout and stderr; `--json` still gives the exact strings.

use serde_json::{json, Value};
use sessiontree_testkit::pg;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

const NAME: &str = "name\u{1b}]2;pwned title\u{7}\u{9b}31m";
const CWD: &str = "/w/\u{1b}]8;;http://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\";
const SID: &str = "sess\u{1b}[2J\u{202e}";
const U1: &str = "u1\u{1b}[2J";
const USER_TEXT: &str = "needle \u{1b}]52;c;SGVsbG8=\u{7} and \u{202e}txt.exe";
const TOOL: &str = "bash\u{1b}[2J\u{1b}[H";
const LABEL: &str = "lab\u{2066}el\u{1b}[31m";

/// What a terminal acts on or reorders text by: C0 controls but newline and tab, DEL,
/// C1, bidi embeddings, overrides and isolates.
fn unsafe_chars(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| {
            matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}' | '\u{80}'..='\u{9f}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

fn line(v: Value) -> String {
    let mut s = serde_json::to_string(&v).unwrap();
    s.push('\n');
    s
}

/// The hostile session, in `<agent>/sessions/<folder>/`, with an escape in its file name.
fn hostile(agent: &Path) -> PathBuf {
    let dir = agent.join("sessions").join("--w-hostile--");
    std::fs::create_dir_all(&dir).unwrap();
    let ts = "2025-03-01T10:00:00.000Z";
    let mut s = line(json!({"type":"session","version":3,"id":SID,"timestamp":ts,"cwd":CWD}));
    let msg = |id: &str, parent: Option<&str>, t: &str, m: Value| {
        line(json!({"type":"message","id":id,"parentId":parent,"timestamp":t,"message":m}))
    };
    s += &line(
        json!({"type":"model_change","id":"mc\u{1b}[5m","parentId":null,
        "timestamp":"2025-03-01T10:00:01.000Z","provider":"prov\u{1b}[5m","modelId":"mod\u{202d}"}),
    );
    s += &line(
        json!({"type":"thinking_level_change","id":"tl1","parentId":"mc\u{1b}[5m",
        "timestamp":"2025-03-01T10:00:01.500Z","thinkingLevel":"high\u{1b}[8m"}),
    );
    s += &msg(
        U1,
        Some("tl1"),
        "2025-03-01T10:00:02.000Z",
        json!({"role":"user","content":USER_TEXT,"timestamp":1740823202000u64}),
    );
    let usage = json!({"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,
        "cost":{"input":0.1,"output":0.1,"cacheRead":0,"cacheWrite":0,"total":0.2}});
    s += &msg(
        "a1\u{9b}2J",
        Some(U1),
        "2025-03-01T10:00:03.000Z",
        json!({"role":"assistant","content":[
            {"type":"text","text":"sure \u{1b}]52;c;QUJD\u{7} needle"},
            {"type":"toolCall","id":"call1\u{1b}[2J","name":TOOL,"arguments":{"cmd":"ls \u{1b}[2J"}}],
            "provider":"anthropic\u{1b}]0;x\u{7}","model":"claude\u{202e}","usage":usage,
            "stopReason":"toolUse","timestamp":1740823203000u64}),
    );
    s += &msg(
        "r1",
        Some("a1\u{9b}2J"),
        "2025-03-01T10:00:04.000Z",
        json!({"role":"toolResult","toolCallId":"call1\u{1b}[2J","toolName":TOOL,
            "content":[{"type":"text","text":"out\u{1b}]52;c;AAAA\u{7}\nline two\r\u{1b}[1A"}],
            "isError":false,"timestamp":1740823204000u64}),
    );
    s += &msg(
        "b1",
        Some("r1"),
        "2025-03-01T10:00:05.000Z",
        json!({"role":"bashExecution","command":"echo \u{1b}[2J needle","output":"o\u{1b}[H",
            "exitCode":0,"cancelled":false,"truncated":false,"timestamp":1740823205000u64}),
    );
    s += &line(json!({"type":"label","id":"l1","parentId":"b1",
        "timestamp":"2025-03-01T10:00:06.000Z","targetId":U1,"label":LABEL}));
    s += &line(json!({"type":"session_info","id":"n1","parentId":"l1",
        "timestamp":"2025-03-01T10:00:07.000Z","name":NAME}));
    // A call left without a result at the leaf: interrupted and verify report it.
    s += &msg(
        "a2\u{1b}]8;;x\u{7}",
        Some("n1"),
        "2025-03-01T10:00:08.000Z",
        json!({"role":"assistant","content":[
            {"type":"toolCall","id":"call2\u{202e}","name":"rm\u{1b}[2J","arguments":{}}],
            "provider":"anthropic\u{1b}]0;x\u{7}","model":"claude\u{202e}","usage":usage,
            "stopReason":"toolUse","timestamp":1740823208000u64}),
    );
    // A line that is not JSON, with raw escapes in it: a diagnostic.
    s += "garbage \u{1b}]52;c;QUJD\u{7} \u{9b}2J\n";
    let p = dir.join("2025-03-01T10-00-00-000Z_x\u{1b}[2J\u{202e}.jsonl");
    std::fs::write(&p, s).unwrap();
    p
}

fn run(agent: &Path, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(BIN)
        .args(args)
        .env("PI_CODING_AGENT_DIR", agent)
        .env("HOME", agent)
        .env("SESSIONTREE_NO_BACKGROUND_INDEX", "1")
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A fresh agent dir with the hostile session (see `hostile`).
fn hostile_agent() -> (sessiontree_testkit::AgentDir, PathBuf) {
    let a = sessiontree_testkit::AgentDir::new();
    let p = hostile(a.path());
    (a, p)
}

#[test]
fn every_human_output_shows_escapes_and_bidi_controls_visibly() {
    let (a, p) = hostile_agent();
    let (agent, f) = (a.path(), p.to_str().unwrap());
    let dir = p.parent().unwrap().to_str().unwrap();
    let at_u1 = format!("{f}#{U1}");
    let cases: Vec<Vec<&str>> = vec![
        vec!["info", f],
        vec!["entries", f],
        vec!["branch", f],
        vec!["branch", f, "--from", U1],
        vec!["context", f],
        vec!["context", f, "--llm"],
        vec!["tree", f],
        vec!["tree", &at_u1],
        vec!["interrupted", f],
        vec!["interrupted", f, "--all-branches"],
        vec!["verify", f],
        vec!["verify", dir],
        vec!["repair", f, "--dry-run", "--close-interrupted"],
        vec!["ls", "--all"],
        vec!["ls", "--all", "--no-index"],
        vec!["ls", dir],
        vec!["ls", "--all", "--name", "name"],
        vec!["resume", "--session-dir", dir],
        vec!["search", "needle"],
        vec!["search", "needle", "--no-index", "--dir", dir],
        vec!["search", "needle", "--role", "assistant"],
        vec!["stats", f],
        vec!["stats", dir, "--by", "session"],
        vec!["stats", "--all", "--by", "provider"],
        vec!["context", f, "--leaf", "no\u{1b}]52;c;QUJD\u{7}such"],
        vec!["branch", f, "--from", "x\u{1b}[2J\u{202e}"],
    ];
    let mut shown = 0;
    for args in &cases {
        let (code, out, err) = run(agent, args);
        assert!(code != 101 && code >= 0, "{args:?} crashed: {err}");
        for (what, text) in [("stdout", &out), ("stderr", &err)] {
            let bad = unsafe_chars(text);
            assert!(
                bad.is_empty(),
                "{args:?}: {what} passes {bad:?} through:\n{text}"
            );
        }
        shown += out.len();
        // What was there is shown, visibly.
        if args[0] == "info" {
            assert!(
                out.contains("name\\x1b]2;pwned title\\x07\\u{9b}31m"),
                "{out}"
            );
            assert!(out.contains("sess\\x1b[2J\\u{202e}"), "{out}");
            assert!(out.contains("\\x1b]8;;http://evil.example/"), "{out}");
        }
        if args[0] == "entries" {
            assert!(out.contains("u1\\x1b[2J"), "{out}");
            assert!(out.contains("lab\\u{2066}el\\x1b[31m"), "{out}");
        }
        if args[0] == "search" && args.len() == 2 {
            assert!(out.contains("needle"), "{args:?}: {out}");
            assert!(out.contains("#u1\\x1b[2J"), "{out}");
        }
    }
    assert!(shown > 2000, "the commands printed little: {shown} bytes");
}

#[test]
fn json_outputs_keep_the_exact_strings() {
    let (a, p) = hostile_agent();
    let (agent, f) = (a.path(), p.to_str().unwrap());
    let json = |args: &[&str]| -> Value {
        let (code, out, err) = run(agent, args);
        assert!(code == 0 || code == 1, "{args:?}: {err}");
        serde_json::from_str(out.trim_end()).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    };
    let info = json(&["info", f, "--json"]);
    assert_eq!(info["name"], NAME);
    assert_eq!(info["sessionId"], SID);
    assert_eq!(info["header"]["cwd"], CWD);
    assert_eq!(info["path"], f);
    let entries = json(&["entries", f, "--json"]);
    assert_eq!(entries[2]["id"], U1);
    assert_eq!(entries[2]["message"]["content"], USER_TEXT);
    assert_eq!(entries[3]["message"]["content"][1]["name"], TOOL);
    assert_eq!(entries[6]["label"], LABEL);
    let ls = json(&["ls", "--all", "--json"]);
    let s = &ls["sessions"][0];
    assert_eq!(s["name"], NAME);
    assert_eq!(s["cwd"], CWD);
    assert_eq!(s["id"], SID);
    assert_eq!(s["firstMessage"], USER_TEXT);
    assert_eq!(json(&["ls", "--all", "--json", "--no-index"]), ls);
    let hits = json(&["search", "needle", "--json"]);
    let hit = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["entryId"] == U1)
        .expect("the user message is found");
    assert_eq!(hit["snippet"], USER_TEXT);
    assert_eq!(hit["path"], f);
    let tree = json(&["tree", f, "--json"]);
    let text = serde_json::to_string(&tree).unwrap();
    assert!(text.contains(&serde_json::to_string(LABEL).unwrap()));
    let stats = json(&["stats", f, "--json"]);
    assert_eq!(
        stats["groups"][0]["key"],
        "anthropic\u{1b}]0;x\u{7}/claude\u{202e}"
    );
    let found = json(&["interrupted", f, "--json"]);
    assert_eq!(found[0]["name"], "rm\u{1b}[2J");
    let verify = json(&["verify", f, "--json"]);
    assert_eq!(verify["files"][0]["path"], f);
}

/// The archive's print sites: `push`, `ls --archive`, `search --archive` and `pull` show
/// what the server sends (ids, owners, machine names, cwds, paths, texts) made safe.
#[test]
fn archive_outputs_show_escapes_visibly() {
    let Some(c) = pg::archive() else { return };
    let agent = c.path("a");
    hostile(&agent);
    let other = c.path("b");
    std::fs::create_dir_all(&other).unwrap();
    let machine = "lap\u{1b}]0;pwned\u{7}top\u{202e}";
    let cases: Vec<(&Path, Vec<&str>)> = vec![
        (
            &agent,
            vec!["push", "--archive", &c.url, "--machine", machine],
        ),
        (&agent, vec!["ls", "--archive", &c.url]),
        (&agent, vec!["search", "needle", "--archive", &c.url]),
        // The hostile id cannot be a file name: pull refuses it, naming it made safe.
        (&other, vec!["pull", "--archive", &c.url]),
    ];
    for (dir, args) in &cases {
        let (code, out, err) = run(dir, args);
        eprintln!("{args:?}: exit {code}\n{out}{err}");
        assert_eq!(code, 0, "{args:?}: {err}");
        for (what, text) in [("stdout", &out), ("stderr", &err)] {
            let bad = unsafe_chars(text);
            assert!(
                bad.is_empty(),
                "{args:?}: {what} passes {bad:?} through:\n{text}"
            );
        }
        if args[0] == "pull" {
            assert!(err.contains("sess\\x1b[2J\\u{202e}"), "{err}");
        }
        if args[0] == "ls" && args.len() > 2 {
            assert!(out.contains("lap\\x1b]0;pwned\\x07top\\u{202e}"), "{out}");
        }
    }
}
