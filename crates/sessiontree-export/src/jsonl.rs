//! A branch as a standalone session file (what `createBranchedSession` would write).

use super::ExportOptions;
use crate::entry::Entry;
use crate::session::branched_entries;
use crate::tree::SessionTree;

/// The branch root..leaf (`opts.leaf`, default the session's leaf) as a new session file:
/// a new header (new id, now, the same cwd, `parentSession` = `source`), the path's
/// entries re-chained without label entries, labels re-created, the filters applied to
/// each line, every line canonical.
pub fn jsonl(tree: &SessionTree, source: &str, opts: &ExportOptions) -> crate::Result<String> {
    let leaf = super::chosen_leaf(tree, opts)?;
    let entries: Vec<Entry> = match leaf {
        Some(l) => branched_entries(tree, l)?,
        None => Vec::new(),
    };
    // The header as `header_line` writes it, with the cwd kept exactly as stored (a lone
    // surrogate stays one) and, like everything else, redacted.
    let cwd = match tree.header().field("cwd") {
        Some(c) if c.kind() == crate::json::Kind::String => {
            crate::json::canonicalize(c.bytes()).expect("a scanned string")
        }
        _ => "\"\"".to_string(),
    };
    let mut parent = String::new();
    crate::json::write_js_string(&mut parent, source);
    let mut out = String::from("{\"type\":\"session\",\"version\":3,\"id\":");
    crate::json::write_js_string(&mut out, &crate::dirs::new_session_id());
    out.push_str(",\"timestamp\":");
    crate::json::write_js_string(&mut out, &crate::date::now_iso());
    out.push_str(",\"cwd\":");
    out.push_str(&opts.redact_json_text(&cwd, &[]));
    out.push_str(",\"parentSession\":");
    out.push_str(&opts.redact_json_text(&parent, &[]));
    out.push('}');
    out.push('\n');
    for e in &entries {
        let text = opts.entry_text(e);
        match text {
            // Filtered lines are canonical already.
            std::borrow::Cow::Owned(t) => out.push_str(&t),
            std::borrow::Cow::Borrowed(t) => {
                out.push_str(&crate::json::canonicalize(t.as_bytes()).expect("a scanned line"))
            }
        }
        out.push('\n');
    }
    Ok(out)
}
