//! Repair planning for a damaged session file: what to drop, what to add, and the
//! repaired content, computed from bytes alone. Applying a plan (backup, atomic replace
//! under the writer lock) is the store's job (`sessiontree::repair`).

use crate::entry::Header;
use crate::json::{self, scan};
use std::path::Path;

/// One change the repair makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    /// 1-based line number in the original file (0 for a line that is added).
    pub line: u64,
    /// Byte offset of that line in the original file.
    pub offset: u64,
    /// What the repair does there, for a person ("dropped a torn last line", ...).
    pub what: String,
}

/// What a repair would do.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The changes, in file order; empty when the file needs none.
    pub actions: Vec<Action>,
    /// The repaired content (every kept line ends with `\n`).
    pub content: Vec<u8>,
    /// The original bytes the plan was made from.
    pub original_len: u64,
}

impl Plan {
    /// True when the file needs no change.
    pub fn is_noop(&self) -> bool {
        self.actions.is_empty()
    }
}

/// Why a file cannot be repaired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No line of the file parses to an entry or header: nothing to keep.
    Empty,
    /// The header is unreadable and cannot be rebuilt (no working directory known).
    NoHeader {
        /// Why, for a person.
        reason: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Empty => write!(
                f,
                "no line of the file is a session entry; nothing to repair"
            ),
            Refusal::NoHeader { reason } => write!(f, "{reason}"),
        }
    }
}

/// Options for rebuilding a lost header.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// The working directory to write into a rebuilt header, when the file's own header
    /// is unreadable and its `cwd` cannot be recovered from the damaged line.
    pub cwd: Option<String>,
    /// The session id for a rebuilt header (default: from the file name `…_<id>.jsonl`,
    /// else a new UUID).
    pub id: Option<String>,
}

fn is_truthy_object(v: &json::Raw<'_>) -> bool {
    v.truthy() && v.kind() == json::Kind::Object
}

/// Recovers `"cwd":"…"` from a damaged header line, if the string is intact.
fn recover_string(line: &[u8], key: &str) -> Option<String> {
    let needle = format!("\"{key}\":");
    let text = String::from_utf8_lossy(line);
    let at = text.find(&needle)? + needle.len();
    let rest = text[at..].trim_start();
    if !rest.starts_with('"') {
        return None;
    }
    // Find the end of the string literal.
    let b = rest.as_bytes();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => {
                let lit = &rest[..=i];
                let v: serde_json::Value = serde_json::from_str(lit).ok()?;
                return v.as_str().map(str::to_string);
            }
            _ => i += 1,
        }
    }
    None
}

fn id_from_file_name(path: Option<&Path>) -> Option<String> {
    let name = path?.file_stem()?.to_string_lossy().into_owned();
    let id = name.rsplit('_').next()?;
    (id.len() >= 8 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        .then(|| id.to_string())
}

/// Plans the repair of `bytes` (the content of `path`, used for naming only). Pure.
///
/// Drops lines that are not JSON (a torn tail included), lines that are JSON but not
/// objects, and extra headers; ends the last line with `\n`; and rebuilds the header when
/// the first object is not one, if a working directory is known (recovered from the
/// damaged header line or given in `opts`). Entries are kept byte for byte.
pub fn plan(
    path: Option<&Path>,
    bytes: &[u8],
    opts: &PlanOptions,
) -> std::result::Result<Plan, Refusal> {
    let mut actions = Vec::new();
    let mut kept: Vec<&[u8]> = Vec::new();
    let mut header_found = false;
    let mut damaged_header: Option<&[u8]> = None;
    let mut bad_header_reason: Option<String> = None;
    let mut first_entry_ts: Option<String> = None;
    let mut pos = 0usize;
    let mut line_no = 0u64;
    while pos < bytes.len() {
        let (end, next, has_nl) = match memchr::memchr(b'\n', &bytes[pos..]) {
            Some(i) => (pos + i, pos + i + 1, true),
            None => (bytes.len(), bytes.len(), false),
        };
        line_no += 1;
        let line = &bytes[pos..end];
        let offset = pos as u64;
        pos = next;
        let act = |actions: &mut Vec<Action>, what: String| {
            actions.push(Action {
                line: line_no,
                offset,
                what,
            })
        };
        if scan::is_blank(line) {
            if !line.is_empty() {
                act(&mut actions, "drop a line of only whitespace".into());
            }
            continue;
        }
        let utf8 = std::str::from_utf8(line).is_ok();
        let value = if utf8 {
            json::Raw::parse(line).ok()
        } else {
            None
        };
        let Some(value) = value else {
            if !header_found && kept.is_empty() && damaged_header.is_none() {
                damaged_header = Some(line);
            }
            let what = if !utf8 {
                format!("drop a line of {} bytes that are not UTF-8", line.len())
            } else if !has_nl {
                format!(
                    "drop the torn last line ({} bytes, an interrupted write)",
                    line.len()
                )
            } else {
                format!("drop a line that is not JSON ({} bytes)", line.len())
            };
            act(&mut actions, what);
            continue;
        };
        if !is_truthy_object(&value) {
            act(
                &mut actions,
                format!("drop `{}`: not an entry", short(value.text())),
            );
            continue;
        }
        let is_session = value.get("type").and_then(|t| t.as_str()).as_deref() == Some("session");
        if is_session {
            let valid = Header::parse(String::from_utf8_lossy(line).into_owned()).is_some();
            if !header_found && kept.is_empty() && valid {
                header_found = true;
                kept.push(line);
                if !has_nl {
                    act(&mut actions, "end the last line with a newline".into());
                }
                continue;
            }
            if !header_found && kept.is_empty() {
                bad_header_reason = Some("the header has no string \"id\"".into());
                damaged_header = Some(line);
                act(
                    &mut actions,
                    "replace the header, which has no string \"id\"".into(),
                );
                continue;
            }
            act(&mut actions, "drop an extra session header".into());
            continue;
        }
        if first_entry_ts.is_none() {
            first_entry_ts = value
                .get("timestamp")
                .and_then(|t| t.as_str())
                .map(|t| t.into_owned());
        }
        kept.push(line);
        if !has_nl {
            act(&mut actions, "end the last line with a newline".into());
        }
    }
    let mut content = Vec::with_capacity(bytes.len() + 256);
    if !header_found {
        if kept.is_empty() && damaged_header.is_none() {
            return Err(Refusal::Empty);
        }
        let cwd = damaged_header
            .and_then(|l| recover_string(l, "cwd"))
            .or_else(|| opts.cwd.clone());
        let Some(cwd) = cwd else {
            return Err(Refusal::NoHeader {
                reason: format!(
                    "{}; its working directory cannot be recovered: pass one to rebuild the header",
                    bad_header_reason
                        .unwrap_or_else(|| "the session header is missing or unreadable".into())
                ),
            });
        };
        let id = opts
            .id
            .clone()
            .or_else(|| damaged_header.and_then(|l| recover_string(l, "id")))
            .or_else(|| id_from_file_name(path))
            .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        let ts = damaged_header
            .and_then(|l| recover_string(l, "timestamp"))
            .or(first_entry_ts)
            .unwrap_or_else(crate::date::now_iso);
        let mut h = String::from("{\"type\":\"session\",\"version\":3,\"id\":");
        json::write_js_string(&mut h, &id);
        h.push_str(",\"timestamp\":");
        json::write_js_string(&mut h, &ts);
        h.push_str(",\"cwd\":");
        json::write_js_string(&mut h, &cwd);
        h.push('}');
        actions.push(Action {
            line: 0,
            offset: 0,
            what: format!("write a new header: {h}"),
        });
        content.extend_from_slice(h.as_bytes());
        content.push(b'\n');
    }
    for l in kept {
        content.extend_from_slice(l);
        content.push(b'\n');
    }
    actions.sort_by_key(|a| a.line);
    Ok(Plan {
        actions,
        content,
        original_len: bytes.len() as u64,
    })
}

fn short(s: &str) -> String {
    let mut end = s.len().min(40);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    if end < s.len() {
        format!("{}…", &s[..end])
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Loaded {
        tree: crate::tree::SessionTree,
    }
    fn struct_tree(parsed: crate::parse::Parsed) -> Loaded {
        Loaded {
            tree: crate::tree::SessionTree::from_parsed(parsed),
        }
    }

    const H: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/w"}"#;
    const E1: &str = r#"{"type":"custom","customType":"x","id":"a1","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z"}"#;

    #[test]
    fn clean_file_is_noop() {
        let f = format!("{H}\n{E1}\n");
        let p = plan(None, f.as_bytes(), &PlanOptions::default()).unwrap();
        assert!(p.is_noop());
        assert_eq!(p.content, f.as_bytes());
    }

    #[test]
    fn drops_bad_lines_and_extra_header() {
        let f = format!("{H}\nnot json\n42\n{H}\n{E1}\n{{\"type\":\"mess");
        let p = plan(None, f.as_bytes(), &PlanOptions::default()).unwrap();
        assert_eq!(p.actions.len(), 4, "{:?}", p.actions);
        assert_eq!(p.content, format!("{H}\n{E1}\n").as_bytes());
    }

    #[test]
    fn rebuilds_header_from_damaged_line() {
        let f = format!("{{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2024-12-03T14:00:00.000Z\",\"cwd\":\"/w\"\n{E1}\n");
        let p = plan(None, f.as_bytes(), &PlanOptions::default()).unwrap();
        assert_eq!(p.content, format!("{H}\n{E1}\n").as_bytes());
    }

    #[test]
    fn refuses_without_cwd() {
        let f = format!("garbage\n{E1}\n");
        assert!(matches!(
            plan(None, f.as_bytes(), &PlanOptions::default()),
            Err(Refusal::NoHeader { .. })
        ));
        let p = plan(
            None,
            f.as_bytes(),
            &PlanOptions {
                cwd: Some("/w".into()),
                id: Some("s1".into()),
            },
        )
        .unwrap();
        let mut parsed = crate::parse::parse(crate::parse::backing(p.content)).unwrap();
        crate::migrate::migrate(&mut parsed);
        let l = struct_tree(parsed);
        assert_eq!(l.tree.entries().len(), 1);
        assert!(
            l.tree.diagnostics().is_empty(),
            "{:?}",
            l.tree.diagnostics()
        );
    }
}
