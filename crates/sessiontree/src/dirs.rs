//! Where sessions live (FORMAT.md section 2): agent dir, session folders, file names, ids.

use crate::error::{Error, Result};
use std::path::{Component, Path, PathBuf};

/// The user's home folder.
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Node's `path.resolve` of `input` against `base`: lexical, `..` resolved, no trailing `/`.
pub(crate) fn resolve_lexically(base: &Path, input: &Path) -> PathBuf {
    let joined = if input.is_absolute() {
        input.to_path_buf()
    } else {
        base.join(input)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
        }
    }
    out
}

/// Expands `~`, `~/...` and `file://` URLs (the reference's `normalizePath`).
pub(crate) fn expand(input: &str) -> PathBuf {
    if input == "~" {
        return home_dir();
    }
    if let Some(rest) = input.strip_prefix("~/") {
        return home_dir().join(rest);
    }
    if let Some(rest) = input.strip_prefix("file://") {
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        return PathBuf::from(percent_decode(rest));
    }
    PathBuf::from(input)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The reference's `resolvePath`: expand, then resolve against the process's cwd.
pub fn resolve(input: &str) -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    resolve_lexically(&cwd, &expand(input))
}

/// The agent dir: `$PI_CODING_AGENT_DIR` if set and non-empty, else `~/.pi/agent`.
pub fn agent_dir() -> PathBuf {
    match std::env::var("PI_CODING_AGENT_DIR") {
        Ok(v) if !v.is_empty() => resolve(&v),
        _ => home_dir().join(".pi").join("agent"),
    }
}

/// `<agent dir>/sessions`.
pub fn sessions_dir() -> PathBuf {
    agent_dir().join("sessions")
}

/// A session folder given on the command line or in `$PI_CODING_AGENT_SESSION_DIR`.
pub fn session_dir_override(flag: Option<&str>) -> Option<PathBuf> {
    if let Some(f) = flag.filter(|f| !f.is_empty()) {
        return Some(resolve(f));
    }
    match std::env::var("PI_CODING_AGENT_SESSION_DIR") {
        Ok(v) if !v.is_empty() => Some(resolve(&v)),
        _ => None,
    }
}

/// Encodes a cwd as a folder name: `/home/u/proj` -> `--home-u-proj--`.
pub fn encode_cwd(resolved_cwd: &Path) -> String {
    let s = resolved_cwd.to_string_lossy();
    let s = s.strip_prefix(['/', '\\']).unwrap_or(&s);
    format!("--{}--", s.replace(['/', '\\', ':'], "-"))
}

/// The default session folder of a cwd: `<agent dir>/sessions/--encoded--`.
pub fn default_session_dir(cwd: &str) -> PathBuf {
    sessions_dir_in(&agent_dir(), cwd)
}

/// The session folder of a cwd under a given agent dir.
pub(crate) fn sessions_dir_in(agent_dir: &Path, cwd: &str) -> PathBuf {
    agent_dir.join("sessions").join(encode_cwd(&resolve(cwd)))
}

/// `<timestamp>_<id>.jsonl`, the timestamp with `:` and `.` replaced by `-`.
pub fn session_file_name(iso_timestamp: &str, session_id: &str) -> String {
    format!(
        "{}_{}.jsonl",
        iso_timestamp.replace([':', '.'], "-"),
        session_id
    )
}

/// Checks a session id that is to name a file (one given by a caller, or read from a
/// transcript): what Pi accepts, and never more than one path component.
pub fn validate_session_id(id: &str) -> Result<()> {
    let b = id.as_bytes();
    let ok_inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-');
    let valid = !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(ok_inner);
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidSessionId(id.to_string()))
    }
}

/// A new session id: a UUID v7 (time-ordered, monotonic within this process).
pub fn new_session_id() -> String {
    use std::sync::Mutex;
    static CONTEXT: Mutex<Option<uuid::ContextV7>> = Mutex::new(None);
    let mut guard = CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
    let ctx = guard.get_or_insert_with(uuid::ContextV7::new);
    uuid::Uuid::new_v7(uuid::Timestamp::now(&*ctx))
        .hyphenated()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_encoding() {
        assert_eq!(encode_cwd(Path::new("/home/u/proj")), "--home-u-proj--");
        assert_eq!(encode_cwd(Path::new("/a:b\\c")), "--a-b-c--");
        assert_eq!(encode_cwd(Path::new("/")), "----");
    }

    #[test]
    fn lexical_resolution() {
        assert_eq!(
            resolve_lexically(Path::new("/a/b"), Path::new("../c/./d/")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(
            resolve_lexically(Path::new("/a"), Path::new("/x/../../y")),
            PathBuf::from("/y")
        );
    }

    #[test]
    fn session_ids() {
        for ok in ["a", "abc-1.2_x", "0193aaaa-bbbb"] {
            validate_session_id(ok).unwrap();
        }
        for bad in ["", "-a", "a-", "a b", "a/b", "é"] {
            assert!(validate_session_id(bad).is_err(), "{bad}");
        }
        let a = new_session_id();
        let b = new_session_id();
        assert!(a < b, "{a} {b}");
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "7");
    }

    #[test]
    fn file_names() {
        assert_eq!(
            session_file_name("2024-12-03T14:00:00.000Z", "x"),
            "2024-12-03T14-00-00-000Z_x.jsonl"
        );
    }
}
