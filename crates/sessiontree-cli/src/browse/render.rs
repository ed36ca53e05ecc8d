//! Drawing the state. Only the rows in view are described (a row's text is read from the
//! session when it is drawn), so a frame costs the same on a 50,000-entry session as on a
//! small one.

use super::state::{Action, App, Archived, ListState, Modal, TreeState};
use crate::rows::{self, fit, width, NONE};
use ratatui::layout::{Constraint, Direction, Layout as Split, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;
use sessiontree::list::SessionInfo;
use sessiontree::LeafArg;

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}
fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}
fn title_style() -> Style {
    Style::default()
        .fg(Color::Black)
        .bg(Color::Cyan)
        .add_modifier(Modifier::BOLD)
}
fn selected_style() -> Style {
    Style::default().fg(Color::White).bg(Color::Blue)
}

/// The selected row: every span in the selection's colours (span styles win over a
/// line's, so each is patched).
fn highlight(line: Line<'static>) -> Line<'static> {
    let spans = line
        .spans
        .into_iter()
        .map(|mut s| {
            s.style = s.style.patch(selected_style());
            s
        })
        .collect::<Vec<_>>();
    Line::from(spans).style(selected_style())
}

pub fn kind_color(kind: &str) -> Color {
    match kind {
        "user" => Color::Cyan,
        "assistant" => Color::Green,
        "toolResult" => Color::Yellow,
        "compaction" | "branch_summary" | "compactionSummary" | "branchSummary" => Color::Magenta,
        "bashExecution" => Color::Blue,
        _ => Color::Gray,
    }
}

/// The rows the list or tree gets on a terminal of this size.
pub fn page_for(app: &App, area: Rect) -> usize {
    match &app.tree {
        Some(t) => {
            let body = area.height.saturating_sub(2) as usize;
            if t.context && area.width < 100 {
                body / 2
            } else {
                body
            }
        }
        None => {
            // title, search, footer; the list leaves room for the preview when narrow.
            let body = area.height.saturating_sub(3) as usize;
            if area.width >= 100 {
                body
            } else {
                body.saturating_sub(preview_height(area))
            }
        }
    }
    .max(1)
}

fn preview_height(area: Rect) -> usize {
    (area.height as usize / 3).clamp(3, 9)
}

pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width < 20 || area.height < 6 {
        f.render_widget(Paragraph::new("terminal too small"), area);
        return;
    }
    match &app.tree {
        Some(t) => draw_tree(f, app, t, area),
        None => draw_list(f, app, &app.list, area),
    }
    if let Some(m) = &app.modal {
        draw_modal(f, m, area);
    }
}

fn bar(f: &mut Frame, area: Rect, text: String, style: Style) {
    let line = format!(" {}", fit(&text, (area.width as usize).saturating_sub(1)));
    let pad = (area.width as usize).saturating_sub(width(&line));
    f.render_widget(
        Paragraph::new(Line::styled(format!("{line}{}", " ".repeat(pad)), style)),
        area,
    );
}

fn row_rect(area: Rect, y: u16) -> Rect {
    Rect::new(area.x, area.y + y, area.width, 1)
}

use crate::rows::minute as fmt_ms;

fn draw_list(f: &mut Frame, app: &App, l: &ListState, area: Rect) {
    let scope = if l.only_cwd {
        "this folder"
    } else {
        "all folders"
    };
    bar(
        f,
        row_rect(area, 0),
        format!(
            " sessiontree browse · {} · {} of {} sessions · {scope}",
            l.source,
            l.shown.len(),
            l.sessions.len()
        ),
        title_style(),
    );
    let state = if l.query.is_empty() {
        String::new()
    } else if !l.text_ready {
        "  (names and first messages until the full-text search is ready)".into()
    } else if l.searching() {
        "  searching…".into()
    } else if l.partial && l.hits_for == l.query {
        format!("  {} matching so far, searching…", l.shown.len())
    } else {
        format!("  {} matching", l.shown.len())
    };
    let search = Line::from(vec![
        Span::styled(" Search: ", bold()),
        Span::raw(l.query.clone()),
        Span::styled("▏", Style::default().fg(Color::Cyan)),
        Span::styled(state, dim()),
    ]);
    f.render_widget(Paragraph::new(search), row_rect(area, 1));
    let body = Rect::new(area.x, area.y + 2, area.width, area.height - 3);
    let (list_area, preview_area) = if area.width >= 100 {
        let c = Split::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(58), Constraint::Percentage(42)])
            .split(body);
        (c[0], c[1])
    } else {
        let ph = preview_height(area) as u16;
        let c = Split::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Min(1), Constraint::Length(ph)])
            .split(body);
        (c[0], c[1])
    };
    if l.sessions.is_empty() {
        let w0 = list_area.width as usize;
        let msg = vec![
            Line::raw(""),
            Line::styled("  No sessions here.", bold()),
            Line::styled(
                format!("  {}", fit(&format!("Looked in {}", l.source), w0 - 2)),
                dim(),
            ),
            Line::styled("  Pi keeps sessions in <agent dir>/sessions/ (set", dim()),
            Line::styled(
                "  PI_CODING_AGENT_DIR), or: sessiontree browse FILE|DIR",
                dim(),
            ),
        ];
        f.render_widget(Paragraph::new(msg), list_area);
    } else {
        let w = list_area.width as usize;
        let home = sessiontree::dirs::home_dir().to_string_lossy().into_owned();
        for (y, &i) in l
            .shown
            .iter()
            .enumerate()
            .skip(l.top)
            .take(list_area.height as usize)
            .map(|(n, i)| (n - l.top, i))
        {
            let s = &l.sessions[i];
            let title = s.name.clone().unwrap_or_else(|| s.first_message.clone());
            let fork = if s.is_fork() { "⑂" } else { " " };
            let head = format!(" {} {:>4}{fork}", fmt_ms(s.modified_ms), s.message_count);
            let (imp, arc) = badges(s, l.archived.get(&s.path));
            let cwd = match s.cwd.strip_prefix(&home) {
                Some(rest) if !home.is_empty() && home != "/" => format!("~{rest}"),
                _ => s.cwd.clone(),
            };
            let cwd = crate::safe::line(&cwd).into_owned();
            let room = w.saturating_sub(width(&head) + 3);
            let cwd_w = if l.only_cwd {
                0
            } else {
                (room / 3).min(width(&cwd))
            };
            let mut title_w = room.saturating_sub(cwd_w + usize::from(cwd_w > 0) * 2);
            // An imported copy that outlived its transcript says so first, as `ls` does.
            let gone = l.source_gone.contains(&s.path).then(|| {
                let m = fit(GONE, title_w);
                title_w = title_w.saturating_sub(width(&m) + 1);
                [
                    Span::styled(m, Style::default().fg(Color::Red)),
                    Span::raw(" "),
                ]
            });
            let t = fit(&title, title_w);
            let pad = title_w.saturating_sub(width(&t));
            let mut spans = vec![Span::styled(head, dim()), imp, arc, Span::raw(" ")];
            spans.extend(gone.into_iter().flatten());
            spans.extend([
                Span::styled(
                    t,
                    if s.name.is_some() {
                        bold()
                    } else {
                        Style::default()
                    },
                ),
                Span::raw(" ".repeat(pad)),
            ]);
            if cwd_w > 0 {
                // The end of the path says most.
                let c: String = if width(&cwd) > cwd_w {
                    let skip = cwd.chars().count() + 1 - cwd_w;
                    format!("…{}", cwd.chars().skip(skip).collect::<String>())
                } else {
                    cwd
                };
                spans.push(Span::raw("  "));
                spans.push(Span::styled(c, Style::default().fg(Color::Blue)));
            }
            let mut line = Line::from(spans);
            if l.top + y == l.sel {
                line = highlight(line);
            }
            f.render_widget(Paragraph::new(line), row_rect(list_area, y as u16));
        }
        if l.shown.is_empty() {
            f.render_widget(
                Paragraph::new(Line::styled("  nothing matches", dim())),
                list_area,
            );
        }
    }
    draw_preview(f, l, preview_area);
    let footer = app.status.clone().unwrap_or_else(|| {
        " ↑↓ move · type to search · Tab this folder/all · Enter tree · Ctrl+R resume · ? keys · Esc quit".into()
    });
    bar(f, row_rect(area, area.height - 1), footer, dim());
}

/// The mark before the title of an imported copy whose source is gone.
const GONE: &str = "(source gone)";

/// The two badge cells of a list row: where an imported session came from (`C` Claude
/// Code, `X` Codex, `G` Gemini CLI, `O` OpenCode, `H` GitHub Copilot CLI) and whether it is in an archive (`↑` pushed and unchanged since, `+`
/// pushed and changed since).
fn badges(s: &SessionInfo, a: Option<&Archived>) -> (Span<'static>, Span<'static>) {
    let imp = match s.imported.as_deref() {
        Some("claude-code") => Span::styled("C", Style::default().fg(Color::Magenta)),
        Some("codex") => Span::styled("X", Style::default().fg(Color::Magenta)),
        Some("gemini-cli") => Span::styled("G", Style::default().fg(Color::Magenta)),
        Some("opencode") => Span::styled("O", Style::default().fg(Color::Magenta)),
        Some("copilot-cli") => Span::styled("H", Style::default().fg(Color::Magenta)),
        Some(_) => Span::styled("I", Style::default().fg(Color::Magenta)),
        None => Span::raw(" "),
    };
    let arc = match a {
        Some(a) if a.changed => Span::styled("+", Style::default().fg(Color::Yellow)),
        Some(_) => Span::styled("↑", Style::default().fg(Color::Green)),
        None => Span::raw(" "),
    };
    (imp, arc)
}

/// The agent's name for the preview.
fn agent_name(a: &str) -> &str {
    match a {
        "claude-code" => "Claude Code",
        "codex" => "Codex",
        "gemini-cli" => "Gemini CLI",
        "opencode" => "OpenCode",
        "copilot-cli" => "GitHub Copilot CLI",
        other => other,
    }
}

fn bytes(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    }
}

fn draw_preview(f: &mut Frame, l: &ListState, area: Rect) {
    let block = Block::default()
        .borders(Borders::TOP | Borders::LEFT)
        .border_style(dim())
        .title(Span::styled(" preview ", dim()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(s) = l.selected() else {
        return;
    };
    let w = inner.width as usize;
    let field = |k: &str, v: String| -> Line<'static> {
        let v = fit(&v, w.saturating_sub(10));
        Line::from(vec![Span::styled(format!("{k:<9} "), dim()), Span::raw(v)])
    };
    let mut lines: Vec<Line> = Vec::new();
    if let Some(n) = &s.name {
        lines.push(Line::styled(fit(n, w), bold()));
    }
    lines.push(field("cwd", s.cwd.clone()));
    lines.push(field(
        "file",
        s.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    ));
    lines.push(field(
        "messages",
        format!(
            "{} · modified {} · created {}",
            s.message_count,
            fmt_ms(s.modified_ms),
            s.created_ms.map(fmt_ms).unwrap_or_else(|| "-".into())
        ),
    ));
    if let Some(p) = &s.parent_session_path {
        lines.push(field(
            "forked",
            p.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| p.to_string()),
        ));
    }
    if let Some(a) = &s.imported {
        lines.push(field(
            "imported",
            format!("from {} (sessiontree import)", agent_name(a)),
        ));
    }
    if l.source_gone.contains(&s.path) {
        lines.push(field(
            "source",
            "gone: its agent deleted the transcript; this copy is all that is left".into(),
        ));
    }
    if let Some(a) = l.archived.get(&s.path) {
        lines.push(field(
            "archive",
            if !a.changed {
                format!("pushed, unchanged since ({})", bytes(a.size_now))
            } else if a.size_now > a.pushed_size {
                format!(
                    "pushed {} · grown to {}",
                    bytes(a.pushed_size),
                    bytes(a.size_now)
                )
            } else {
                format!(
                    "pushed {} · changed since ({})",
                    bytes(a.pushed_size),
                    bytes(a.size_now)
                )
            },
        ));
    }
    if let Some(snip) = l.snippet() {
        let mut spans = vec![Span::styled("match     ", dim())];
        // The snippet marks the match with [[...]].
        let mut rest = snip.to_string();
        rest = fit(&rest, w.saturating_sub(10) + 4);
        while let Some(a) = rest.find("[[") {
            spans.push(Span::raw(rest[..a].to_string()));
            let after = &rest[a + 2..];
            let b = after.find("]]").unwrap_or(after.len());
            spans.push(Span::styled(
                after[..b].to_string(),
                Style::default()
                    .fg(Color::Yellow)
                    .add_modifier(Modifier::BOLD),
            ));
            rest = after[(b + 2).min(after.len())..].to_string();
        }
        spans.push(Span::raw(rest));
        lines.push(Line::from(spans));
    }
    lines.push(Line::styled("first message", dim()));
    // The first message, wrapped by hand (wide characters counted).
    let mut cur = String::new();
    let mut cw = 0usize;
    for word in s.first_message.split_whitespace() {
        let ww = width(word);
        if cw > 0 && cw + 1 + ww > w {
            lines.push(Line::raw(std::mem::take(&mut cur)));
            cw = 0;
            if lines.len() >= inner.height as usize {
                break;
            }
        }
        if cw > 0 {
            cur.push(' ');
            cw += 1;
        }
        let word = fit(word, w);
        cw += width(&word);
        cur.push_str(&word);
    }
    if !cur.is_empty() {
        lines.push(Line::raw(cur));
    }
    lines.truncate(inner.height as usize);
    f.render_widget(Paragraph::new(lines), inner);
}

/// The text of one tree row (without the indentation).
fn row_spans(t: &TreeState, r: u32, cols: usize) -> Vec<Span<'static>> {
    let tree = &t.loaded.tree;
    let row = &t.layout.rows[r as usize];
    let e = tree.entry_at(row.node);
    let (kind, text) = crate::show::describe(e);
    let on = t.on_path[row.node as usize];
    let id = e.id().unwrap_or("");
    let mut tail = String::new();
    if let Some(l) = tree.get_label(id) {
        tail.push_str(&format!(
            " [{}]",
            crate::safe::line(&sessiontree::json::Raw::trusted(&l.label).js_string())
        ));
    }
    if t.folded.contains(&r) {
        tail.push_str(&format!(" ▸ +{}", row.end - r - 1));
    }
    if Some(id) == tree.leaf_id() {
        tail.push_str(" ◀ leaf");
    }
    let dot = if on { "● " } else { "○ " };
    let head = format!("{kind}: ");
    let room = cols.saturating_sub(2 + width(&head) + width(&tail));
    let body = fit(&text, room);
    let text_style = if t.is_hit(r) {
        Style::default().fg(Color::Black).bg(Color::Yellow)
    } else if on {
        Style::default()
    } else {
        dim()
    };
    vec![
        Span::styled(
            dot,
            if on {
                Style::default().fg(Color::Yellow)
            } else {
                dim()
            },
        ),
        Span::styled(head, Style::default().fg(kind_color(&kind))),
        Span::styled(body, text_style),
        Span::styled(tail, Style::default().fg(Color::Yellow)),
    ]
}

fn draw_tree(f: &mut Frame, app: &App, t: &TreeState, area: Rect) {
    let tree = &t.loaded.tree;
    let name = tree.name().unwrap_or_else(|| {
        t.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    bar(
        f,
        row_rect(area, 0),
        format!(
            " {name} · {} entries · {} shown · filter: {}",
            tree.entries().len(),
            t.visible.len(),
            t.filter.name()
        ),
        title_style(),
    );
    let body = Rect::new(area.x, area.y + 1, area.width, area.height - 2);
    let (tree_area, ctx_area) = if t.context {
        if area.width >= 100 {
            let c = Split::default()
                .direction(Direction::Horizontal)
                .constraints([Constraint::Percentage(55), Constraint::Percentage(45)])
                .split(body);
            (c[0], Some(c[1]))
        } else {
            let c = Split::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
                .split(body);
            (c[0], Some(c[1]))
        }
    } else {
        (body, None)
    };
    let cols = tree_area.width as usize;
    let budget = rows::indent_budget(cols);
    let h = tree_area.height as usize;
    let top = if t.top == usize::MAX || t.sel < t.top || t.sel >= t.top + h {
        // The state's page differs from this area (context split): keep the selection in view.
        t.sel.saturating_sub(h / 2)
    } else {
        t.top
    };
    for (y, &r) in t.visible.iter().skip(top).take(h).enumerate() {
        let row = &t.layout.rows[r as usize];
        let prefix = t.layout.prefix(row, budget);
        let mut spans = vec![Span::styled(prefix.clone(), dim())];
        spans.extend(row_spans(t, r, cols.saturating_sub(width(&prefix))));
        let mut line = Line::from(spans);
        if top + y == t.sel {
            line = highlight(line);
        }
        f.render_widget(Paragraph::new(line), row_rect(tree_area, y as u16));
    }
    if t.visible.is_empty() {
        let msg = if tree.entries().is_empty() {
            "  this session has no entries yet"
        } else {
            "  nothing shown with this filter (Ctrl+O: next filter)"
        };
        f.render_widget(Paragraph::new(Line::styled(msg, dim())), tree_area);
    }
    if let Some(ca) = ctx_area {
        draw_context(f, t, ca);
    }
    let footer = if let Some(sc) = &t.scan {
        format!(
            " search: {}▏  searching… {} of {} rows · any key stops",
            t.query,
            sc.done.min(sc.total - 1),
            sc.total - 1
        )
    } else if let Some(s) = &app.status {
        s.clone()
    } else if !t.query.is_empty() {
        format!(
            " search: {}▏  Ctrl+N next · Ctrl+P previous · Esc clear",
            t.query
        )
    } else {
        let id = t.sel_id().unwrap_or("-");
        format!(
            " {id} · Enter context · Ctrl+←/→ fold/segments · Alt+↑/↓ sibling · Ctrl+G leaf · Ctrl+U/O filter · Ctrl+A actions · ? keys"
        )
    };
    bar(f, row_rect(area, area.height - 1), footer, dim());
}

fn draw_context(f: &mut Frame, t: &TreeState, area: Rect) {
    let tree = &t.loaded.tree;
    let id = t.sel_id().unwrap_or("");
    let ctx = sessiontree::build_context(tree, LeafArg::Id(id));
    let model = ctx
        .model
        .as_ref()
        .map(|m| {
            format!(
                "{}/{}",
                m.provider.map(|p| p.js_string()).unwrap_or_default(),
                m.model_id.map(|p| p.js_string()).unwrap_or_default()
            )
        })
        .unwrap_or_else(|| "(no model)".into());
    let title = format!(
        " context at {id} · {} messages · {model} ",
        ctx.messages.len()
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Magenta))
        .title(Span::styled(fit(&title, area.width as usize - 2), bold()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let w = inner.width as usize;
    let h = inner.height as usize;
    // From the end backwards, skipping `context_scroll` messages: what the model read last.
    let end = ctx.messages.len().saturating_sub(t.context_scroll);
    let mut blocks: Vec<Vec<Line>> = Vec::new();
    let mut used = 0;
    for m in ctx.messages[..end].iter().rev() {
        let (role, body) = crate::show::message_body(m);
        let mut lines = vec![Line::styled(
            fit(&format!("── {role} ──"), w),
            Style::default()
                .fg(kind_color(&role))
                .add_modifier(Modifier::BOLD),
        )];
        let body_lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
        for l in body_lines.iter().take(6) {
            lines.push(Line::raw(rows::cut(l, w)));
        }
        if body_lines.len() > 6 {
            lines.push(Line::styled(
                format!("… {} more lines", body_lines.len() - 6),
                dim(),
            ));
        }
        used += lines.len();
        blocks.push(lines);
        if used >= h {
            break;
        }
    }
    let earlier = end - blocks.len();
    let mut all: Vec<Line> = blocks.into_iter().rev().flatten().collect();
    let cut = all.len() > h;
    if cut {
        all.drain(..all.len() - h);
    }
    if (cut || earlier > 0) && !all.is_empty() {
        all[0] = Line::styled(
            fit(
                &format!(
                    "↑ {} more message{} above · Shift+PgUp",
                    earlier + usize::from(cut),
                    if earlier + usize::from(cut) == 1 {
                        ""
                    } else {
                        "s"
                    }
                ),
                w,
            ),
            dim(),
        );
    }
    if ctx.messages.is_empty() {
        all.push(Line::styled("(empty context)", dim()));
    }
    f.render_widget(Paragraph::new(all), inner);
    let _ = NONE;
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

fn draw_modal(f: &mut Frame, m: &Modal, area: Rect) {
    let (title, lines): (&str, Vec<Line>) = match m {
        Modal::Menu => (
            " actions (each asks first) ",
            Action::MENU
                .iter()
                .map(|(k, _, what)| {
                    Line::from(vec![
                        Span::styled(format!(" {k} "), bold().fg(Color::Cyan)),
                        Span::raw(*what),
                    ])
                })
                .chain(std::iter::once(Line::styled(
                    " any other key: cancel",
                    dim(),
                )))
                .collect(),
        ),
        Modal::Confirm { question, .. } => (
            " confirm ",
            vec![
                Line::raw(question.clone()),
                Line::styled("y: yes · n/Esc: no", dim()),
            ],
        ),
        Modal::Input { prompt, text, .. } => (
            " write ",
            vec![
                Line::raw(prompt.clone()),
                Line::from(vec![
                    Span::styled("> ", bold()),
                    Span::raw(text.clone()),
                    Span::styled("▏", Style::default().fg(Color::Cyan)),
                ]),
                Line::styled("Enter: write · Esc: cancel", dim()),
            ],
        ),
        Modal::Help => (
            " keys ",
            [
                "Sessions: type to search (full text) · ↑↓ PgUp PgDn Home End",
                "  Tab this folder / all · Enter open the tree · Ctrl+R resume · Esc quit",
                "  marks: ⑂ fork · C/X/G/O/H imported (Claude Code/Codex/Gemini/OpenCode/Copilot) · ↑ pushed · + changed since",
                "Tree: ↑↓ move · ←→ PgUp PgDn page · Home End",
                "  Ctrl+← fold segment / to its start / up · Ctrl+→ unfold / next segment",
                "  Alt+↑ Alt+↓ previous / next sibling branch · Ctrl+G the leaf",
                "  Ctrl+U user only · Ctrl+O next filter (default, no tools, user, labeled, all)",
                "  type to search in the session · Ctrl+N / Ctrl+P next / previous hit",
                "  Enter show / hide the context from the entry · Shift+PgUp/PgDn scroll it",
                "  Ctrl+A actions: label, rename, fork, close interrupted, export, resume",
                "  Esc back · Ctrl+C quit",
                "",
                "any key closes this",
            ]
            .iter()
            .map(|s| Line::raw(*s))
            .collect(),
        ),
    };
    let w = lines
        .iter()
        .map(|l| l.width())
        .max()
        .unwrap_or(10)
        .max(title.len()) as u16
        + 4;
    let r = centered(area, w, lines.len() as u16 + 2);
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Cyan))
        .title(Span::styled(title, bold()));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| {
            let s: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            if width(&s) > inner.width as usize {
                Line::raw(fit(&s, inner.width as usize))
            } else {
                l
            }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}
