//! What the MCP tests share: whether the clients are installed (`mcp-tests/`), running
//! the official TypeScript SDK client against the built binary, and reading its results.
//! Included as `mod mcp_support;` by `mcp_client.rs` and `mcp_agent.rs`.

#![allow(dead_code)]

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

/// `mcp-tests/` of the workspace.
pub fn mcp_tests() -> PathBuf {
    sessiontree_testkit::root().join("mcp-tests")
}

/// `ok`, or else a visible skip (a failure under `SESSIONTREE_REQUIRE_MCP=1`, as CI sets).
pub fn needed(ok: bool, what: &str) -> bool {
    if !ok {
        if std::env::var("SESSIONTREE_REQUIRE_MCP").as_deref() == Ok("1") {
            panic!("{what}");
        }
        eprintln!("SKIPPED: {what}");
    }
    ok
}

/// Whether node and the SDK in `mcp-tests/node_modules` are there.
pub fn client_available() -> bool {
    let ok = mcp_tests()
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .exists()
        && Command::new("node").arg("--version").output().is_ok();
    needed(
        ok,
        "the MCP client test needs node and mcp-tests/node_modules (cd mcp-tests && npm ci)",
    )
}

/// Runs the client against `sessiontree mcp ARGS` over `agent`, making `calls`; returns
/// the tools it listed and one result per call.
pub fn session_with(agent: &Path, server_args: &[&str], calls: &Value) -> (Vec<Value>, Vec<Value>) {
    let mut c = Command::new("node");
    c.arg(mcp_tests().join("client.mjs"))
        .arg(BIN)
        .arg("mcp")
        .args(server_args)
        .env("PI_CODING_AGENT_DIR", agent)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .env_remove("SESSIONTREE_ARCHIVE")
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

/// A result's text.
pub fn page_text(r: &Value) -> String {
    r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The first page of call `i`, which must not be a protocol error.
pub fn only(results: &[Value], i: usize) -> &Value {
    let r = &results[i];
    assert!(r.get("error").is_none(), "call {i}: {r}");
    &r["pages"][0]["result"]
}

/// Whether a result is a tool error.
pub fn is_error(r: &Value) -> bool {
    r["isError"] == Value::Bool(true)
}

/// Every page's `structuredContent[key]` items of call `i`, in order (a `follow` call).
pub fn all_items(results: &[Value], i: usize, key: &str) -> Vec<Value> {
    let r = &results[i];
    assert!(r.get("error").is_none(), "call {i}: {r}");
    r["pages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| {
            assert!(!is_error(&p["result"]), "call {i}: {p}");
            p["result"]["structuredContent"][key]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect()
}

/// The JSON-RPC server on its own (no SDK): requests written one line at a time, each
/// answer read before the next request.
pub struct Raw {
    pub child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    out: std::io::BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Raw {
    /// `sessiontree mcp ARGS` over `agent`, initialized.
    pub fn start(agent: &Path, args: &[&str]) -> Raw {
        let mut child = Command::new(BIN)
            .arg("mcp")
            .args(args)
            .env("PI_CODING_AGENT_DIR", agent)
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .env_remove("SESSIONTREE_ARCHIVE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut r = Raw {
            child,
            stdin,
            out,
            next: 1,
        };
        r.request(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}),
        );
        r.line(
            &serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
                .to_string(),
        );
        r
    }

    /// Writes one line as it is.
    pub fn line(&mut self, l: &str) {
        let w = self.stdin.as_mut().unwrap();
        writeln!(w, "{l}").unwrap();
        w.flush().unwrap();
    }

    /// A request; its answer (the line with its id).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.line(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
                .to_string(),
        );
        let mut line = String::new();
        loop {
            line.clear();
            let n = std::io::BufRead::read_line(&mut self.out, &mut line).unwrap();
            assert!(
                n > 0,
                "the server closed its output before answering {method}"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"].as_u64() == Some(id) {
                return v;
            }
        }
    }

    /// A tool call's result.
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            serde_json::json!({"name": name, "arguments": arguments}),
        )["result"]
            .clone()
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
