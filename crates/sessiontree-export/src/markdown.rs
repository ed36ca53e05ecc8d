//! A branch as Markdown that reads well on GitHub: a heading per message, tool calls and
//! results in fenced blocks, thinking in `<details>`.
//!
//! The output is inert under any CommonMark renderer, whatever the session holds. Only this
//! module writes Markdown syntax; text from the session is written in one of three ways:
//! * code (tool output, arguments, fenced blocks of a message): in a fence longer than any
//!   backtick run inside, at the start of a line after a blank line, so nothing inside can
//!   close it;
//! * message prose: kept as Markdown for what is harmless (emphasis, headings, lists,
//!   tables), with `&`, `<`, `>` as entities (no raw HTML, no autolinks), `[`, `]`, `\`,
//!   `~`, `{`, `}` backslash-escaped (no links, images, reference definitions, tilde fences,
//!   attribute syntax), backticks as `&#96;` except code spans, which are re-emitted with
//!   their own delimiters (content on one line, delimiters longer than any run inside);
//! * short text (names, labels, models, the cwd in code): on one line, line breaks made
//!   spaces.
//!
//! So no link, image or HTML from the session survives, and neither do `javascript:` URLs.

use super::ExportOptions;
use crate::entry::{Entry, EntryType};
use crate::json::{self, Kind, Raw};
use crate::tree::SessionTree;
use std::borrow::Cow;

/// The current branch (or `opts.leaf`), or with `opts.all_branches` one section per leaf.
pub fn markdown(tree: &SessionTree, opts: &ExportOptions) -> crate::Result<String> {
    let mut out = String::new();
    let id = opts.redact_str(tree.session_id()).into_owned();
    let title = tree
        .name()
        .map(|n| opts.redact_str(&n).into_owned())
        .unwrap_or_else(|| format!("Session {id}"));
    out.push_str(&format!("# {}\n\n", inline_text(&title)));
    let h = tree.header();
    let mut meta = vec![format!("Session {}", inline_code(&id))];
    if let Some(cwd) = h.cwd() {
        meta.push(format!("cwd {}", inline_code(&opts.redact_str(&cwd))));
    }
    if let Some(ts) = h.timestamp().and_then(|t| t.as_str()) {
        meta.push(format!("started {}", inline_text(&opts.redact_str(&ts))));
    }
    out.push_str(&meta.join(" · "));
    out.push_str("\n\n");
    if opts.all_branches {
        let leaves = super::leaves(tree);
        for (i, leaf) in leaves.iter().enumerate() {
            let id = leaf.id().unwrap_or_default();
            out.push_str(&format!(
                "## Branch {} (leaf {})\n\n",
                i + 1,
                inline_code(&opts.redact_str(id))
            ));
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
            if c.is_finite() {
                total_cost += c;
            }
        }
    }
    if total_cost > 0.0 {
        out.push_str(&format!("---\n\nTotal cost: ${total_cost:.4}\n\n"));
    }
}

/// A string value's text ("" for anything else), lone surrogates as U+FFFD.
fn s<'a>(v: Option<Raw<'a>>) -> Cow<'a, str> {
    match v {
        Some(x) if x.kind() == Kind::String => decode(x.text()),
        _ => Cow::Borrowed(""),
    }
}

/// Decodes a valid JSON string literal; a lone surrogate escape becomes U+FFFD.
fn decode(lit: &str) -> Cow<'_, str> {
    super::filters::decode_literal(lit).0
}

/// An object's members, looked up by key (the last occurrence wins, as in JavaScript).
struct Obj<'a>(Vec<(Cow<'a, str>, Raw<'a>)>);

impl<'a> Obj<'a> {
    fn of(v: Option<Raw<'a>>) -> Self {
        Obj(v.map(|v| v.members()).unwrap_or_default())
    }
    fn get(&self, key: &str) -> Option<Raw<'a>> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
    fn str(&self, key: &str) -> Cow<'a, str> {
        s(self.get(key))
    }
    fn num(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(|x| x.as_f64())
    }
}

/// A message's members: the ones the loader located read from its spans, the others from
/// one scan of the message, made only when such a key is asked for.
struct Msg<'a> {
    e: &'a Entry,
    rest: std::cell::OnceCell<Obj<'a>>,
}

impl<'a> Msg<'a> {
    const LOCATED: [&'static str; 8] = [
        "role",
        "content",
        "provider",
        "model",
        "toolName",
        "toolCallId",
        "stopReason",
        "errorMessage",
    ];
    fn get(&self, key: &str) -> Option<Raw<'a>> {
        if self.e.message().is_none_or(|m| m.kind() != Kind::Object) {
            return None;
        }
        if Self::LOCATED.contains(&key) {
            return self.e.message_field(key);
        }
        self.rest.get_or_init(|| Obj::of(self.e.message())).get(key)
    }
    fn str(&self, key: &str) -> Cow<'a, str> {
        s(self.get(key))
    }
    fn num(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(|x| x.as_f64())
    }
    fn is_true(&self, key: &str) -> bool {
        self.get(key).is_some_and(|x| x.kind() == Kind::True)
    }
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
    // The entry with the filters applied, read through the same scanner the loader uses:
    // every line the loader accepted renders.
    let parsed;
    let e = match opts.entry_text_shown(e) {
        Cow::Borrowed(_) => e,
        Cow::Owned(t) => {
            parsed = Entry::parse(t).expect("the filters keep JSON valid");
            &parsed
        }
    };
    let label = e
        .id()
        .and_then(|id| tree.get_label(id))
        .map(|l| {
            let t = super::label_text(&l.label);
            format!(" 🏷 {}", inline_text(&opts.redact_str(&t)))
        })
        .unwrap_or_default();
    let mut heading = |out: &mut String, title: &str| {
        *n += 1;
        out.push_str(&format!("{h} {}. {}{}\n\n", n, title, label));
    };
    let mut cost = None;
    match e.entry_type {
        EntryType::Message => {
            let m = Msg {
                e,
                rest: std::cell::OnceCell::new(),
            };
            let content = m.get("content");
            match m.str("role").as_ref() {
                "user" => {
                    heading(out, "User");
                    blocks(out, content);
                }
                "assistant" => {
                    let model = m.str("model");
                    heading(
                        out,
                        &if model.is_empty() {
                            "Assistant".to_string()
                        } else {
                            format!("Assistant ({})", inline_text(&model))
                        },
                    );
                    blocks(out, content);
                    if let Some(err) = m.get("errorMessage").and_then(|x| x.as_str()) {
                        out.push_str(&format!("> **Error:** {}\n\n", inline_text(&err)));
                    }
                    if let Some(u) = m.get("usage") {
                        let u = Obj::of(Some(u));
                        let c = Obj::of(u.get("cost")).num("total");
                        let num = |k: &str| json::format_number(u.num(k).unwrap_or(0.0));
                        out.push_str(&format!(
                            "<sub>tokens: {} in, {} out, {} cache read, {} cache write{}</sub>\n\n",
                            num("input"),
                            num("output"),
                            num("cacheRead"),
                            num("cacheWrite"),
                            c.filter(|c| c.is_finite())
                                .map(|c| format!(" · ${c:.4}"))
                                .unwrap_or_default()
                        ));
                        cost = c;
                    }
                }
                "toolResult" => {
                    heading(
                        out,
                        &format!(
                            "Tool result: {}{}",
                            inline_code(&m.str("toolName")),
                            if m.is_true("isError") { " (error)" } else { "" }
                        ),
                    );
                    fenced(out, "text", &content_text(content));
                    images(out, content);
                }
                "bashExecution" => {
                    heading(out, "Bash");
                    let mut t = format!("$ {}\n{}", m.str("command"), m.str("output"));
                    if m.is_true("cancelled") {
                        t.push_str("\n(command cancelled)");
                    } else if let Some(c) = m.num("exitCode") {
                        if c != 0.0 {
                            t.push_str(&format!("\n(exit code {})", json::format_number(c)));
                        }
                    }
                    fenced(out, "console", &t);
                }
                "system" => {
                    heading(out, "System prompt");
                    details(out, "System prompt", &content_text(content));
                }
                "custom" | "hookMessage" => {
                    heading(
                        out,
                        &format!("Custom: {}", inline_code(&m.str("customType"))),
                    );
                    blocks(out, content);
                }
                other => {
                    heading(out, &format!("Message ({})", inline_text(other)));
                    let v = e.message().map(|m| m.text()).unwrap_or("null");
                    fenced(out, "json", &pretty(v));
                }
            }
        }
        EntryType::CustomMessage => {
            heading(
                out,
                &format!("Custom: {}", inline_code(&s(e.field("customType")))),
            );
            blocks(out, e.field("content"));
        }
        EntryType::Compaction => {
            heading(out, "Compaction");
            out.push_str(&format!(
                "*Earlier history summarized ({} tokens before).*\n\n",
                json::format_number(
                    e.field("tokensBefore")
                        .and_then(|x| x.as_f64())
                        .unwrap_or(0.0)
                )
            ));
            quote(out, &s(e.field("summary")));
        }
        EntryType::BranchSummary => {
            heading(out, "Branch summary");
            quote(out, &s(e.field("summary")));
        }
        EntryType::ModelChange => {
            out.push_str(&format!(
                "*Model: {}/{}*\n\n",
                inline_text(&s(e.field("provider"))),
                inline_text(&s(e.field("modelId")))
            ));
        }
        EntryType::ThinkingLevelChange => {
            out.push_str(&format!(
                "*Thinking level: {}*\n\n",
                inline_text(&s(e.field("thinkingLevel")))
            ));
        }
        _ => {}
    }
    cost
}

/// JSON as `JSON.stringify(value, null, 2)` prints it (compact past 32 levels).
fn pretty(text: &str) -> String {
    let c = json::canonicalize(text.as_bytes()).unwrap_or_else(|_| text.to_string());
    super::filters::pretty(&c, 32)
}

/// Text, thinking, tool calls and images of a content value.
fn blocks(out: &mut String, c: Option<Raw<'_>>) {
    let Some(c) = c else { return };
    match c.kind() {
        Kind::String => text(out, &s(Some(c))),
        Kind::Array => {
            for b in c.elements() {
                let o = Obj::of(Some(b).filter(|b| b.kind() == Kind::Object));
                match o.str("type").as_ref() {
                    "text" => text(out, &o.str("text")),
                    "thinking" => details(out, "Thinking", &o.str("thinking")),
                    "toolCall" => {
                        out.push_str(&format!(
                            "**Tool call:** {}\n\n",
                            inline_code(&o.str("name"))
                        ));
                        let args = o
                            .get("arguments")
                            .map(|a| pretty(a.text()))
                            .unwrap_or_default();
                        fenced(out, "json", &args);
                    }
                    "image" => image(out, &o),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

fn image(out: &mut String, b: &Obj<'_>) {
    out.push_str(&format!(
        "*\\[image {}, {} bytes base64\\]*\n\n",
        inline_text(&b.str("mimeType")),
        b.str("data").len()
    ));
}

fn images(out: &mut String, c: Option<Raw<'_>>) {
    for b in c.map(|c| c.elements()).unwrap_or_default() {
        let o = Obj::of(Some(b).filter(|b| b.kind() == Kind::Object));
        if o.str("type") == "image" {
            image(out, &o);
        }
    }
}

fn content_text(c: Option<Raw<'_>>) -> String {
    let Some(c) = c else { return String::new() };
    match c.kind() {
        Kind::String => s(Some(c)).into_owned(),
        Kind::Array => c
            .elements()
            .into_iter()
            .map(|b| Obj::of(Some(b).filter(|b| b.kind() == Kind::Object)))
            .filter(|o| o.str("type") == "text")
            .map(|o| o.str("text").into_owned())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A fence opening line as CommonMark reads it: up to three spaces, three or more backticks
/// or tildes, an info string (no backtick after a backtick fence).
fn fence_open(line: &str) -> Option<(u8, usize, &str)> {
    let indent = line.bytes().take_while(|&c| c == b' ').count();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let c = *rest.as_bytes().first()?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let n = rest.bytes().take_while(|&x| x == c).count();
    let info = rest[n..].trim();
    (n >= 3 && !(c == b'`' && info.contains('`'))).then_some((c, n, info))
}

fn fence_close(line: &str, c: u8, n: usize) -> bool {
    let indent = line.bytes().take_while(|&c| c == b' ').count();
    let rest = &line[indent..];
    let run = rest.bytes().take_while(|&x| x == c).count();
    indent <= 3 && run >= n && rest[run..].trim().is_empty()
}

/// Message text: fenced code blocks become our own fences, the rest is prose.
fn text(out: &mut String, t: &str) {
    if t.is_empty() {
        return;
    }
    let t = unify_breaks(t);
    let lines: Vec<&str> = t.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        if let Some((c, n, info)) = fence_open(lines[i]) {
            let mut j = i + 1;
            while j < lines.len() && !fence_close(lines[j], c, n) {
                j += 1;
            }
            if !out.ends_with("\n\n") {
                out.push('\n');
            }
            // The language word only: letters, digits and a few marks.
            let lang: String = info
                .split_whitespace()
                .next()
                .unwrap_or("")
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "+-_.#".contains(*c))
                .collect();
            fenced(out, &lang, &lines[i + 1..j.min(lines.len())].join("\n"));
            i = j + 1;
            // The fence ends in a blank line already.
            if lines.get(i).is_some_and(|l| l.trim().is_empty()) {
                i += 1;
            }
            continue;
        }
        prose_line(out, lines[i]);
        out.push('\n');
        i += 1;
    }
    out.push('\n');
}

/// Text as a block quote, every line prose.
fn quote(out: &mut String, t: &str) {
    for line in unify_breaks(t).split('\n') {
        out.push_str("> ");
        prose_line(out, line);
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

/// `\r\n` and `\r` as `\n` (CommonMark's line endings).
fn unify_breaks(t: &str) -> Cow<'_, str> {
    if t.contains('\r') {
        Cow::Owned(t.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(t)
    }
}

fn longest_run(t: &str, c: char) -> usize {
    let c = c as u8;
    let (mut best, mut cur) = (0, 0);
    for &x in t.as_bytes() {
        if x == c {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

/// Line breaks (`\r\n`, `\r`, `\n`) as spaces: what a code span shows them as anyway, and a
/// blank line can no longer end the span's paragraph.
fn one_line(t: &str) -> Cow<'_, str> {
    if t.contains(['\r', '\n']) {
        Cow::Owned(t.replace("\r\n", " ").replace(['\r', '\n'], " "))
    } else {
        Cow::Borrowed(t)
    }
}

/// A code span: delimiters longer than any backtick run inside, padded when the text
/// starts or ends with a backtick, on one line.
fn inline_code(t: &str) -> String {
    let t = one_line(t);
    if t.is_empty() {
        return "` `".to_string();
    }
    let f = "`".repeat(longest_run(&t, '`') + 1);
    let pad = if t.starts_with('`') || t.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{f}{pad}{t}{pad}{f}")
}

/// Short text on one line (names, labels, models): every character that could start
/// Markdown syntax escaped.
fn inline_text(t: &str) -> String {
    let t = one_line(t);
    let mut o = String::with_capacity(t.len() + 8);
    for c in t.chars() {
        match c {
            '*' | '_' | '#' | '|' | '!' => {
                o.push('\\');
                o.push(c);
            }
            c => {
                let mut b = [0u8; 4];
                escape_prose(&mut o, c.encode_utf8(&mut b));
            }
        }
    }
    o
}

/// Prose text: HTML syntax as entities, link, fence and attribute syntax escaped (runs
/// without such characters are copied whole).
fn escape_prose(o: &mut String, t: &str) {
    let b = t.as_bytes();
    let mut plain = 0;
    for (i, &c) in b.iter().enumerate() {
        let rep = match c {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'`' => "&#96;",
            b'\\' => "\\\\",
            b'[' => "\\[",
            b']' => "\\]",
            b'~' => "\\~",
            b'{' => "\\{",
            b'}' => "\\}",
            _ => continue,
        };
        o.push_str(&t[plain..i]);
        o.push_str(rep);
        plain = i + 1;
    }
    o.push_str(&t[plain..]);
}

/// One line of prose: code spans (a backtick run closed by a run of the same length on the
/// line) re-emitted, everything else escaped.
fn prose_line(out: &mut String, line: &str) {
    let b = line.as_bytes();
    if !b.contains(&b'`') {
        escape_prose(out, line);
        return;
    }
    let mut plain = 0;
    let mut i = 0;
    let escape = escape_prose;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let run = b[i..].iter().take_while(|&&c| c == b'`').count();
        let mut j = i + run;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let r = b[j..].iter().take_while(|&&c| c == b'`').count();
                if r == run {
                    close = Some(j);
                    break;
                }
                j += r;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                escape(out, &line[plain..i]);
                let code = &line[i + run..end];
                // CommonMark strips one space on each side when both are there.
                let code = if code.len() >= 2
                    && code.starts_with(' ')
                    && code.ends_with(' ')
                    && !code.bytes().all(|c| c == b' ')
                {
                    &code[1..code.len() - 1]
                } else {
                    code
                };
                out.push_str(&inline_code(code));
                i = end + run;
                plain = i;
            }
            None => i += run,
        }
    }
    escape(out, &line[plain..]);
}

/// `&`, `<` and `>` as entities (for HTML text, the page title).
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
    fn strings_decode_as_javascript_reads_them() {
        for lit in [
            r#""plain""#,
            r#""a\nb\t\"q\" \\ \/ \u00e9 \ud83d\ude00 \ud83d x \ude00 \ud83d""#,
            r#""\ud83d\u0041\b\f\r""#,
        ] {
            let raw = Raw::parse(lit.as_bytes()).unwrap();
            assert_eq!(decode(lit), raw.as_str().unwrap(), "{lit}");
        }
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        let mut o = String::new();
        fenced(&mut o, "text", "a ```` b");
        assert!(o.starts_with("`````text\n"));
        assert_eq!(inline_code("a`b"), "``a`b``");
        assert_eq!(inline_code("a\n\nb"), "`a  b`");
        assert_eq!(escape_html("<b>&"), "&lt;b&gt;&amp;");
        let mut o = String::new();
        prose_line(&mut o, "<a> `<b>` ``x`<c>`` `<d> \\`<e>` [l](javascript:x)");
        assert_eq!(
            o,
            // As CommonMark pairs them: no escapes inside code spans.
            "&lt;a&gt; `<b>` ``x`<c>`` `<d> \\`&lt;e&gt;&#96; \\[l\\](javascript:x)"
        );
    }
}
