//! A branch as Markdown that reads well on GitHub: a heading per message, tool calls and
//! results in fenced blocks, thinking in `<details>`, HTML in text escaped.

use super::ExportOptions;
use crate::entry::{Entry, EntryType};
use crate::tree::SessionTree;
use serde_json::Value;

/// The current branch (or `opts.leaf`), or with `opts.all_branches` one section per leaf.
pub fn markdown(tree: &SessionTree, opts: &ExportOptions) -> crate::Result<String> {
    let mut out = String::new();
    let title = tree
        .name()
        .map(|n| opts.redact_str(&n).into_owned())
        .unwrap_or_else(|| format!("Session {}", tree.session_id()));
    out.push_str(&format!("# {}\n\n", escape_html(&title)));
    let h = tree.header();
    let mut meta = vec![format!("Session `{}`", tree.session_id())];
    if let Some(cwd) = h.cwd() {
        meta.push(format!("cwd {}", inline_code(&opts.redact_str(&cwd))));
    }
    if let Some(ts) = h.timestamp().and_then(|t| t.as_str()) {
        meta.push(format!("started {ts}"));
    }
    out.push_str(&meta.join(" · "));
    out.push_str("\n\n");
    if opts.all_branches {
        let leaves = super::leaves(tree);
        for (i, leaf) in leaves.iter().enumerate() {
            let id = leaf.id().unwrap_or_default();
            out.push_str(&format!("## Branch {} (leaf `{}`)\n\n", i + 1, id));
            branch(&mut out, tree, id, opts, "###");
        }
    } else if let Some(leaf) = super::chosen_leaf(tree, opts)? {
        branch(&mut out, tree, leaf, opts, "##");
    }
    Ok(out)
}

fn branch(out: &mut String, tree: &SessionTree, leaf: &str, opts: &ExportOptions, h: &str) {
    let mut total_cost = 0.0;
    let mut n = 0;
    for e in tree.get_branch(Some(leaf)) {
        if let Some(c) = entry(out, tree, e, opts, h, &mut n) {
            total_cost += c;
        }
    }
    if total_cost > 0.0 {
        out.push_str(&format!("---\n\nTotal cost: ${total_cost:.4}\n\n"));
    }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(|x| x.as_str()).unwrap_or("")
}

/// Writes one entry; returns an assistant message's cost.
fn entry(
    out: &mut String,
    tree: &SessionTree,
    e: &Entry,
    opts: &ExportOptions,
    h: &str,
    n: &mut usize,
) -> Option<f64> {
    let v = opts.entry_value(e)?;
    let label = e
        .id()
        .and_then(|id| tree.get_label(id))
        .map(|l| {
            let t = serde_json::from_str::<Value>(&l.label)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| l.label.clone());
            format!(" 🏷 {}", escape_html(&opts.redact_str(&t)))
        })
        .unwrap_or_default();
    let mut heading = |out: &mut String, title: &str| {
        *n += 1;
        out.push_str(&format!("{h} {}. {}{}\n\n", n, title, label));
    };
    let mut cost = None;
    match e.entry_type {
        EntryType::Message => {
            let m = &v["message"];
            match s(m, "role") {
                "user" => {
                    heading(out, "User");
                    content(out, &m["content"]);
                }
                "assistant" => {
                    let model = s(m, "model");
                    heading(
                        out,
                        &if model.is_empty() {
                            "Assistant".to_string()
                        } else {
                            format!("Assistant ({})", escape_html(model))
                        },
                    );
                    content(out, &m["content"]);
                    if let Some(err) = m.get("errorMessage").and_then(|x| x.as_str()) {
                        out.push_str(&format!("> **Error:** {}\n\n", escape_html(err)));
                    }
                    if let Some(u) = m.get("usage") {
                        let c = u
                            .get("cost")
                            .and_then(|c| c.get("total"))
                            .and_then(|t| t.as_f64());
                        let num = |k: &str| u.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0);
                        out.push_str(&format!(
                            "<sub>tokens: {} in, {} out, {} cache read, {} cache write{}</sub>\n\n",
                            num("input"),
                            num("output"),
                            num("cacheRead"),
                            num("cacheWrite"),
                            c.map(|c| format!(" · ${c:.4}")).unwrap_or_default()
                        ));
                        cost = c;
                    }
                }
                "toolResult" => {
                    let err = m.get("isError").and_then(|x| x.as_bool()) == Some(true);
                    heading(
                        out,
                        &format!(
                            "Tool result: {}{}",
                            inline_code(s(m, "toolName")),
                            if err { " (error)" } else { "" }
                        ),
                    );
                    let text = content_text(&m["content"]);
                    fenced(out, "text", &text);
                    images(out, &m["content"]);
                }
                "bashExecution" => {
                    heading(out, "Bash");
                    let mut t = format!("$ {}\n{}", s(m, "command"), s(m, "output"));
                    if m.get("cancelled").and_then(|x| x.as_bool()) == Some(true) {
                        t.push_str("\n(command cancelled)");
                    } else if let Some(c) = m.get("exitCode").and_then(|x| x.as_f64()) {
                        if c != 0.0 {
                            t.push_str(&format!("\n(exit code {c})"));
                        }
                    }
                    fenced(out, "console", &t);
                }
                "system" => {
                    heading(out, "System prompt");
                    let text = content_text(&m["content"]);
                    details(out, "System prompt", &text);
                }
                "custom" | "hookMessage" => {
                    heading(out, &format!("Custom: {}", inline_code(s(m, "customType"))));
                    content(out, &m["content"]);
                }
                other => {
                    heading(out, &format!("Message ({})", escape_html(other)));
                    fenced(
                        out,
                        "json",
                        &serde_json::to_string_pretty(m).unwrap_or_default(),
                    );
                }
            }
        }
        EntryType::CustomMessage => {
            heading(
                out,
                &format!("Custom: {}", inline_code(s(&v, "customType"))),
            );
            content(out, &v["content"]);
        }
        EntryType::Compaction => {
            heading(out, "Compaction");
            out.push_str(&format!(
                "*Earlier history summarized ({} tokens before).*\n\n",
                v.get("tokensBefore")
                    .and_then(|x| x.as_f64())
                    .unwrap_or(0.0)
            ));
            quote(out, s(&v, "summary"));
        }
        EntryType::BranchSummary => {
            heading(out, "Branch summary");
            quote(out, s(&v, "summary"));
        }
        EntryType::ModelChange => {
            out.push_str(&format!(
                "*Model: {}/{}*\n\n",
                escape_html(s(&v, "provider")),
                escape_html(s(&v, "modelId"))
            ));
        }
        EntryType::ThinkingLevelChange => {
            out.push_str(&format!(
                "*Thinking level: {}*\n\n",
                escape_html(s(&v, "thinkingLevel"))
            ));
        }
        _ => {}
    }
    cost
}

/// Text, thinking, tool calls and images of a content value.
fn content(out: &mut String, c: &Value) {
    match c {
        Value::String(t) => text(out, t),
        Value::Array(blocks) => {
            for b in blocks {
                match s(b, "type") {
                    "text" => text(out, s(b, "text")),
                    "thinking" => details(out, "Thinking", s(b, "thinking")),
                    "toolCall" => {
                        out.push_str(&format!("**Tool call:** {}\n\n", inline_code(s(b, "name"))));
                        let args = b
                            .get("arguments")
                            .map(|a| serde_json::to_string_pretty(a).unwrap_or_default())
                            .unwrap_or_default();
                        fenced(out, "json", &args);
                    }
                    "image" => images(out, &Value::Array(vec![b.clone()])),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

fn images(out: &mut String, c: &Value) {
    if let Value::Array(blocks) = c {
        for b in blocks {
            if s(b, "type") == "image" {
                out.push_str(&format!(
                    "*[image {}, {} bytes base64]*\n\n",
                    escape_html(s(b, "mimeType")),
                    s(b, "data").len()
                ));
            }
        }
    }
}

fn content_text(c: &Value) -> String {
    match c {
        Value::String(t) => t.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| s(b, "type") == "text")
            .map(|b| s(b, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Markdown text as written, with HTML escaped (fenced code left alone).
fn text(out: &mut String, t: &str) {
    if t.is_empty() {
        return;
    }
    let mut in_fence: Option<String> = None;
    for line in t.split('\n') {
        let trimmed = line.trim_start();
        let fence: String = trimmed
            .chars()
            .take_while(|&c| c == '`' || c == '~')
            .collect();
        match &in_fence {
            Some(f) => {
                out.push_str(line);
                if fence.len() >= f.len() && fence.starts_with(&f[..1]) && trimmed.trim() == fence {
                    in_fence = None;
                }
            }
            None => {
                if fence.len() >= 3
                    && (fence.chars().all(|c| c == '`') || fence.chars().all(|c| c == '~'))
                {
                    in_fence = Some(fence);
                    out.push_str(line);
                } else {
                    out.push_str(&escape_outside_code(line));
                }
            }
        }
        out.push('\n');
    }
    if let Some(f) = in_fence {
        out.push_str(&f);
        out.push('\n');
    }
    out.push('\n');
}

fn quote(out: &mut String, t: &str) {
    for line in t.split('\n') {
        out.push_str("> ");
        out.push_str(&escape_html(line));
        out.push('\n');
    }
    out.push('\n');
}

fn details(out: &mut String, summary: &str, t: &str) {
    out.push_str(&format!("<details><summary>{summary}</summary>\n\n"));
    fenced(out, "text", t);
    out.push_str("</details>\n\n");
}

/// A fenced block whose fence is longer than any backtick run inside.
pub fn fenced(out: &mut String, lang: &str, t: &str) {
    let fence = "`".repeat(longest_run(t, '`').max(2) + 1);
    out.push_str(&fence);
    out.push_str(lang);
    out.push('\n');
    out.push_str(t);
    if !t.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    out.push_str("\n\n");
}

fn longest_run(t: &str, c: char) -> usize {
    let (mut best, mut cur) = (0, 0);
    for x in t.chars() {
        if x == c {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

fn inline_code(t: &str) -> String {
    let n = longest_run(t, '`') + 1;
    let f = "`".repeat(n);
    let pad = if t.starts_with('`') || t.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{f}{pad}{t}{pad}{f}")
}

/// [`escape_html`] except inside code spans, where Markdown shows text literally anyway.
fn escape_outside_code(line: &str) -> String {
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let (mut i, mut plain) = (0, 0);
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let run = b[i..].iter().take_while(|&&c| c == b'`').count();
        // The closing run: exactly `run` backticks.
        let mut j = i + run;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let r = b[j..].iter().take_while(|&&c| c == b'`').count();
                if r == run {
                    close = Some(j + r);
                    break;
                }
                j += r;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.push_str(&escape_html(&line[plain..i]));
                out.push_str(&line[i..end]);
                plain = end;
                i = end;
            }
            None => i += run,
        }
    }
    out.push_str(&escape_html(&line[plain..]));
    out
}

/// `&`, `<` and `>` as entities.
pub fn escape_html(t: &str) -> String {
    let mut o = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_backticks_inside() {
        let mut o = String::new();
        fenced(&mut o, "text", "a ```` b");
        assert!(o.starts_with("`````text\n"));
        assert_eq!(inline_code("a`b"), "``a`b``");
        assert_eq!(escape_html("<b>&"), "&lt;b&gt;&amp;");
        assert_eq!(
            escape_outside_code("<a> `<b>` ``x`<c>`` `<d>"),
            "&lt;a&gt; `<b>` ``x`<c>`` `&lt;d&gt;"
        );
    }
}
