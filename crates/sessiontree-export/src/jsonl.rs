//! A branch as a standalone session file (what `createBranchedSession` would write).

use super::ExportOptions;
use crate::entry::Entry;
use crate::session::{branched_entries, header_line};
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
    let cwd = tree.header().cwd().unwrap_or_default();
    let mut out = header_line(
        &crate::dirs::new_session_id(),
        &crate::date::now_iso(),
        &cwd,
        Some(source),
    );
    out.push('\n');
    for e in &entries {
        let text = opts.entry_text(e);
        match crate::json::canonicalize(text.as_bytes()) {
            Ok(c) => out.push_str(&c),
            Err(_) => out.push_str(&text),
        }
        out.push('\n');
    }
    Ok(out)
}
