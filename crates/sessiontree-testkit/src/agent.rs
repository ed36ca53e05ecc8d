//! Temp agent dirs laid out as Pi lays them out: `<agent dir>/sessions/--<cwd>--/*.jsonl`.

use std::path::{Path, PathBuf};

/// A fresh agent dir in a temp folder (removed when dropped).
pub struct AgentDir {
    tmp: tempfile::TempDir,
}

impl AgentDir {
    /// An empty agent dir.
    pub fn new() -> AgentDir {
        AgentDir {
            tmp: tempfile::Builder::new()
                .prefix("st-agent")
                .tempdir()
                .unwrap(),
        }
    }

    /// The agent dir (what `PI_CODING_AGENT_DIR` names).
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// The session folder of the working directory `cwd` (created).
    pub fn folder(&self, cwd: &str) -> PathBuf {
        session_folder(self.path(), cwd)
    }

    /// Writes a session for `cwd` named `name` (a file name ending in `.jsonl`): a v3
    /// header with `name` as the id, then `body` (JSON lines, each ending in `\n`).
    pub fn session(&self, cwd: &str, name: &str, body: &str) -> PathBuf {
        write_session(self.path(), cwd, name, body)
    }

    /// `n` sessions for `cwd`, `s0.jsonl` to `s<n-1>.jsonl`, the `k`th holding one user
    /// message `first message <k>` (time `k` ms).
    pub fn numbered(&self, cwd: &str, n: u64) -> Vec<PathBuf> {
        (0..n)
            .map(|k| {
                let body = message("u1", None, k, "user", &format!("first message {k}"));
                self.session(cwd, &format!("s{k}.jsonl"), &body)
            })
            .collect()
    }
}

impl Default for AgentDir {
    fn default() -> Self {
        AgentDir::new()
    }
}

/// `<agent>/sessions/--<cwd>--/`, created: where Pi keeps `cwd`'s sessions (its first
/// `/` dropped, every other `/`, `\` and `:` written as `-`).
pub fn session_folder(agent: &Path, cwd: &str) -> PathBuf {
    let rest = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    let dir = agent
        .join("sessions")
        .join(format!("--{}--", rest.replace(['/', '\\', ':'], "-")));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// A session header line (v3, no newline) with this id, time and working directory.
pub fn header(id: &str, timestamp: &str, cwd: &str) -> String {
    format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"{timestamp}\",\"cwd\":{}}}",
        json_string(cwd)
    )
}

/// Writes `<session folder of cwd>/<name>`: a header (id `name`, 2025-01-01) and `body`.
pub fn write_session(agent: &Path, cwd: &str, name: &str, body: &str) -> PathBuf {
    let p = session_folder(agent, cwd).join(name);
    let text = format!("{}\n{body}", header(name, "2025-01-01T00:00:00.000Z", cwd));
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    p
}

/// The header line (no newline) of the small sessions store tests write: v3, id `s1`,
/// working directory `/w`.
pub const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/w"}"#;

/// A user message line (no newline) saying `hi <id>`, under `parent` (None: a root).
pub fn user_hi(id: &str, parent: Option<&str>) -> String {
    let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{p},"timestamp":"2024-12-03T14:00:01.000Z","message":{{"role":"user","content":"hi {id}","timestamp":1733234401000}}}}"#
    )
}

/// A message entry line (with its newline): `role` says `text` at `ts` (ms), under
/// `parent` (None: a root).
pub fn message(id: &str, parent: Option<&str>, ts: u64, role: &str, text: &str) -> String {
    let p = parent.map_or("null".to_string(), json_string);
    format!(
        "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{p},\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"{role}\",\"content\":{},\"timestamp\":{ts}}}}}\n",
        json_string(text)
    )
}

/// A user message entry line (with its newline) of [`seeded_session`]'s kind: id `eid`
/// under `parent` (JSON: `null` or a quoted id), the `i`th entry of its session, saying
/// `text`.
pub fn user_entry(eid: &str, parent: &str, i: usize, text: &str) -> String {
    format!(
        "{{\"type\":\"message\",\"id\":\"{eid}\",\"parentId\":{parent},\"timestamp\":\"2025-04-01T00:00:{:02}.000Z\",\"message\":{{\"role\":\"user\",\"content\":{},\"timestamp\":1743465600000}}}}\n",
        i % 60,
        json_string(text)
    )
}

/// A Pi session of `n` chained user entries (the `i`th saying `text(i)`) in
/// `<agent>/sessions/--work-proj--`, its id, file name and entry ids derived from `seed`.
pub fn seeded_session(
    agent: &Path,
    seed: u64,
    n: usize,
    text: impl Fn(usize) -> String,
) -> PathBuf {
    let id = format!("0195{:04x}-0000-7000-8000-{:012x}", seed & 0xffff, seed);
    let p =
        session_folder(agent, "/work/proj").join(format!("2025-04-01T00-00-00-000Z_{id}.jsonl"));
    let mut s = format!(
        "{}\n",
        header(&id, "2025-04-01T00:00:00.000Z", "/work/proj")
    );
    let mut parent = "null".to_string();
    for i in 0..n {
        let eid = format!("{:08x}", (seed * 1_000_003 + i as u64) as u32);
        s.push_str(&user_entry(&eid, &parent, i, &text(i)));
        parent = format!("\"{eid}\"");
    }
    std::fs::write(&p, s).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    p
}

/// `s` as a JSON string literal, as `JSON.stringify` writes it (quotes, backslashes and
/// control characters escaped, `\b \f \n \r \t` by name, the rest as `\u00xx`).
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_land_where_pi_keeps_them() {
        let a = AgentDir::new();
        let p = a.session(
            "/home/u/web",
            "s1.jsonl",
            &message("m1", None, 1, "user", "hi \"x\"\n"),
        );
        assert_eq!(p, a.path().join("sessions/--home-u-web--/s1.jsonl"));
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(
            text,
            "{\"type\":\"session\",\"version\":3,\"id\":\"s1.jsonl\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/home/u/web\"}\n\
             {\"type\":\"message\",\"id\":\"m1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi \\\"x\\\"\\n\",\"timestamp\":1}}\n"
        );
        assert_eq!(json_string("a\u{1}"), "\"a\\u0001\"");
    }
}
