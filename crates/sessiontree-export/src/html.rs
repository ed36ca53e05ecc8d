//! One self-contained HTML page: the whole session (every branch) as JSON inside a
//! `<script type="application/json">`, rendered by a small vanilla script (template.html).
//! No network: a Content-Security-Policy forbids every fetch; images are `data:` URLs.

use super::ExportOptions;
use crate::json::write_js_string;
use crate::tree::SessionTree;
use std::collections::HashMap;

const TEMPLATE: &str = include_str!("template.html");

/// The page for a session. `opts.leaf` chooses the highlighted leaf (default the session's).
pub fn html(tree: &SessionTree, opts: &ExportOptions) -> crate::Result<String> {
    let leaf = super::chosen_leaf(tree, opts)?;
    let entries = tree.entries();
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        if let Some(id) = e.id() {
            index.insert(id, i);
        }
    }
    let view = tree.get_tree();
    let size: usize = entries.iter().map(|e| e.text().len() + 2).sum::<usize>() + 4096;
    let mut data = String::with_capacity(4096 + entries.len() * 8);
    data.push_str("{\"name\":");
    match tree.name() {
        Some(n) => write_js_string(&mut data, &opts.redact_str(&n)),
        None => data.push_str("null"),
    }
    data.push_str(",\"header\":");
    // The header as stored (any value JSON.parse accepts), every string redacted.
    data.push_str(
        &opts.redact_json_text(tree.header().raw().text(), super::filters::KEEP_FOR_DISPLAY),
    );
    data.push_str(",\"leaf\":");
    let leaf_index = leaf
        .and_then(|l| index.get(l))
        .map(|&i| i as i64)
        .unwrap_or(-1);
    data.push_str(&leaf_index.to_string());
    data.push_str(",\"labels\":{");
    let mut first = true;
    for (target, label) in tree.labels() {
        let Some(&i) = index.get(target) else {
            continue;
        };
        let text = super::label_text(&label.label);
        if !first {
            data.push(',');
        }
        first = false;
        data.push_str(&format!("\"{i}\":"));
        write_js_string(&mut data, &opts.redact_str(&text));
    }
    data.push_str("},\"roots\":");
    push_list(&mut data, &view.roots);
    data.push_str(",\"kids\":[");
    for (i, k) in view.children.iter().enumerate() {
        if i > 0 {
            data.push(',');
        }
        push_list(&mut data, k);
    }
    data.push_str("],\"entries\":[\n");
    let title = tree
        .name()
        .map(|n| opts.redact_str(&n).into_owned())
        .unwrap_or_else(|| format!("Session {}", opts.redact_str(tree.session_id())));
    let (head, rest) = TEMPLATE
        .split_once("/*DATA*/")
        .expect("the template has a data slot");
    // The entries go straight into the page (escaped one by one): no second copy.
    let mut out = String::with_capacity(size + data.len() + TEMPLATE.len() + 64);
    out.push_str(&head.replace("<!--TITLE-->", &super::markdown::escape_html(&title)));
    script_escape_into(&mut out, &data);
    drop(data);
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        script_escape_into(&mut out, &opts.entry_text_shown(e));
    }
    out.push_str("\n]}");
    out.push_str(rest);
    Ok(out)
}

fn push_list(s: &mut String, l: &[u32]) {
    s.push('[');
    for (i, x) in l.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&x.to_string());
    }
    s.push(']');
}

/// JSON text made safe inside `<script>`: `<`, `>`, `&`, U+2028 and U+2029 (which can only
/// occur inside strings) become `\uXXXX` escapes, so `</script>` and `<!--` cannot appear.
pub fn script_escape_into(out: &mut String, json: &str) {
    let mut last = 0;
    for (i, c) in json.char_indices() {
        let rep = match c {
            '<' => "\\u003c",
            '>' => "\\u003e",
            '&' => "\\u0026",
            '\u{2028}' => "\\u2028",
            '\u{2029}' => "\\u2029",
            _ => continue,
        };
        out.push_str(&json[last..i]);
        out.push_str(rep);
        last = i + c.len_utf8();
    }
    out.push_str(&json[last..]);
}

#[cfg(test)]
mod tests {
    #[test]
    fn script_escape_keeps_json_and_breaks_tags() {
        let mut o = String::new();
        super::script_escape_into(&mut o, "{\"a\":\"</script>&\u{2028}é\"}");
        assert_eq!(o, "{\"a\":\"\\u003c/script\\u003e\\u0026\\u2028é\"}");
        let v: serde_json::Value = serde_json::from_str(&o).unwrap();
        assert_eq!(v["a"], "</script>&\u{2028}é");
    }
}
