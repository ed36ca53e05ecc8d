//! `sessiontree mcp` used by a real agent: Claude Code (npm `@anthropic-ai/claude-code`,
//! installed in `mcp-tests/`) is configured with the built binary as an MCP server and run
//! against a scripted model endpoint on 127.0.0.1 (`mcp-tests/scripted_model.py`) that asks
//! for a `search_sessions` call; the tool result Claude Code sends back to the model must
//! hold the expected hit (and no credential). Skips (visibly) without node, python3 or the
//! agent; `SESSIONTREE_REQUIRE_MCP=1` (set by CI) makes it fail instead.

mod mcp_support;

use mcp_support::{mcp_tests, needed, BIN};
use serde_json::{json, Value};
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn claude() -> Option<PathBuf> {
    let p = mcp_tests().join("node_modules/.bin/claude");
    let ok = p.exists()
        && Command::new("node").arg("--version").output().is_ok()
        && Command::new("python3").arg("--version").output().is_ok();
    needed(
        ok,
        "the agent end-to-end test needs node, python3 and mcp-tests/node_modules (cd mcp-tests && npm ci)",
    )
    .then_some(p)
}

/// Kills the scripted endpoint when the test ends, however it ends.
struct Endpoint(std::process::Child);

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn claude_code_calls_search_sessions_and_gets_the_hit() {
    let Some(claude) = claude() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let folder = agent.join("sessions/--work-orbit--");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("s.jsonl"),
        concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"0199dddd-0000-7000-8000-00000000000d\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/work/orbit\"}\n",
            "{\"type\":\"message\",\"id\":\"f00dcafe\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:01:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"With REDIS_URL=redis://app:hunter2hunter2@cache:6379 we decided to keep the wombat cache at 64 MiB.\",\"timestamp\":1767225660000}}\n",
        ),
    )
    .unwrap();
    let requests = tmp.path().join("requests.jsonl");
    let mut ep = Command::new("python3")
        .arg(mcp_tests().join("scripted_model.py"))
        .arg(&requests)
        .arg("wombat cache")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufReader::new(ep.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let _ep = Endpoint(ep);
    let port = port.trim().to_string();
    assert!(port.parse::<u16>().is_ok(), "endpoint port: {port:?}");

    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let config = tmp.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"sessiontree": {
            "command": BIN, "args": ["mcp"],
            "env": {"PI_CODING_AGENT_DIR": agent.to_string_lossy()}
        }}})
        .to_string(),
    )
    .unwrap();
    let out = Command::new(&claude)
        .current_dir(&project)
        .args(["-p", "Where did we decide the wombat cache size?"])
        .arg("--mcp-config")
        .arg(&config)
        .args([
            "--strict-mcp-config",
            "--allowedTools",
            "mcp__sessiontree__search_sessions",
        ])
        .args(["--output-format", "json"])
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env_remove("PI_CODING_AGENT_DIR")
        .output()
        .unwrap();
    let log = std::fs::read_to_string(&requests).unwrap_or_default();
    assert!(
        out.status.success(),
        "claude failed: {}\n{}\nrequests:\n{log}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The model was offered the tools under Claude Code's MCP names ...
    let bodies: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["body"].clone())
        .collect();
    assert!(bodies
        .iter()
        .any(|b| b["tools"].as_array().is_some_and(|t| t
            .iter()
            .any(|t| t["name"] == "mcp__sessiontree__read_session"))));
    // ... and the tool result it got back holds the hit, redacted. (Claude Code passes a
    // tool's structuredContent to the model when there is one, else its text.)
    let results: Vec<String> = bodies
        .iter()
        .flat_map(|b| b["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result")
        .map(|c| c["content"].to_string())
        .collect();
    let hit = results
        .iter()
        .find(|r| r.contains("f00dcafe"))
        .unwrap_or_else(|| {
            panic!("no tool result with the hit; tool results: {results:?}\nrequests:\n{log}")
        });
    assert!(
        hit.contains("0199dddd-0000-7000-8000-00000000000d"),
        "{hit}"
    );
    assert!(hit.contains("we decided to keep the wombat"), "{hit}");
    assert!(
        hit.contains("[REDACTED:") && !hit.contains("hunter2"),
        "{hit}"
    );
}
