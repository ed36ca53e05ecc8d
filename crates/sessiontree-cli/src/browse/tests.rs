//! Reducer tests (key -> state) and snapshots of the rendered screen.

use super::render;
use super::state::*;
use crate::rows::{self, Layout};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use sessiontree::list::SessionInfo;
use std::path::{Path, PathBuf};

/// Hand-written session files with fixed ids and times, so snapshots are stable.
pub struct Builder {
    lines: Vec<String>,
    t: u64,
}

const T0: u64 = 1_764_450_000_000; // 2025-11-29T21:00:00Z

impl Builder {
    pub fn new(id: &str) -> Builder {
        Builder {
            lines: vec![format!(
                r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{}","cwd":"/home/u/orbit"}}"#,
                sessiontree::date::iso_from_ms(T0 as i64)
            )],
            t: T0,
        }
    }
    fn head(&mut self, ty: &str, id: &str, parent: Option<&str>) -> String {
        self.t += 1000;
        let p = parent.map_or("null".into(), |p| format!("\"{p}\""));
        format!(
            r#""type":"{ty}","id":"{id}","parentId":{p},"timestamp":"{}""#,
            sessiontree::date::iso_from_ms(self.t as i64)
        )
    }
    pub fn user(&mut self, id: &str, parent: Option<&str>, text: &str) -> &mut Self {
        let h = self.head("message", id, parent);
        let mut js = String::new();
        sessiontree::json::write_js_string(&mut js, text);
        self.lines.push(format!(
            r#"{{{h},"message":{{"role":"user","content":{js},"timestamp":{}}}}}"#,
            self.t
        ));
        self
    }
    pub fn assistant(&mut self, id: &str, parent: Option<&str>, text: &str) -> &mut Self {
        let h = self.head("message", id, parent);
        let mut js = String::new();
        sessiontree::json::write_js_string(&mut js, text);
        self.lines.push(format!(
            r#"{{{h},"message":{{"role":"assistant","content":[{{"type":"text","text":{js}}}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":{}}}}}"#,
            self.t
        ));
        self
    }
    pub fn compaction(&mut self, id: &str, parent: &str, kept: &str, summary: &str) -> &mut Self {
        let h = self.head("compaction", id, Some(parent));
        let mut js = String::new();
        sessiontree::json::write_js_string(&mut js, summary);
        self.lines.push(format!(
            r#"{{{h},"summary":{js},"firstKeptEntryId":"{kept}","tokensBefore":48000}}"#
        ));
        self
    }
    pub fn label(&mut self, id: &str, parent: &str, target: &str, label: &str) -> &mut Self {
        let h = self.head("label", id, Some(parent));
        self.lines.push(format!(
            r#"{{{h},"targetId":"{target}","label":"{label}"}}"#
        ));
        self
    }
    pub fn text(&self) -> String {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s
    }
    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, self.text()).unwrap();
        p
    }
}

/// A chain, then `forks` nested forks (each new branch forks again), the way long agent
/// sessions grow: the deepest branch is `forks` levels down.
pub fn deep(forks: usize, chain: usize) -> Builder {
    let mut b = Builder::new("deep-0001");
    b.user("r0", None, "Start: port the integrator to RK4");
    let mut last = "r0".to_string();
    for i in 0..chain {
        let id = format!("c{i}");
        b.assistant(&id, Some(&last), &format!("step {i} of the long chain"));
        last = id;
    }
    for f in 0..forks {
        let a = format!("f{f}a");
        let bb = format!("f{f}b");
        b.user(&a, Some(&last), &format!("abandoned attempt {f}"));
        b.user(
            &bb,
            Some(&last),
            &format!("branch {f}: try again with a smaller step"),
        );
        last = bb;
    }
    b.assistant(
        "end",
        Some(&last),
        "The deepest answer: energy is conserved to 1e-9 now.",
    );
    b
}

fn compaction_session() -> Builder {
    let mut b = Builder::new("comp-0001");
    b.user("u1", None, "Read the whole crate and summarise the modules")
        .assistant("a1", Some("u1"), "lib.rs, parse.rs, tree.rs (long answer)")
        .user("u2", Some("a1"), "Now fix the parser bug")
        .assistant("a2", Some("u2"), "Fixed: the tail was dropped")
        .compaction(
            "k1",
            "a2",
            "u2",
            "The user asked for a summary of the crate, then a parser fix.",
        )
        .user("u3", Some("k1"), "Add a test for the tail")
        .assistant("a3", Some("u3"), "Added `tail_is_kept`.");
    b
}

fn cjk_session() -> Builder {
    let mut b = Builder::new("cjk-0001");
    b.user(
        "j1",
        None,
        "日本語のセッションを要約してください。全角文字の幅は二列です",
    )
    .assistant(
        "j2",
        Some("j1"),
        "はい：要約します 😀 テスト完了。中文也可以：会话树",
    )
    .user(
        "j3",
        Some("j2"),
        "한국어도 됩니다 — emoji 🌳🌲 and über-long ｗｉｄｅ text",
    )
    .user("j4", Some("j2"), "別の枝：もう一度")
    .label("l1", "j3", "j2", "要約");
    b
}

fn tree_of(b: &Builder) -> TreeState {
    let dir = tempfile::tempdir().unwrap();
    let p = b.write(dir.path(), "s.jsonl");
    let l = sessiontree::load(&p).unwrap();
    // The loaded session keeps no handle on the file (small files are read).
    TreeState::new(PathBuf::from("/home/u/.pi/agent/sessions/s.jsonl"), l)
}

fn demo() -> TreeState {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo-session.jsonl");
    let l = sessiontree::load(&p).unwrap();
    TreeState::new(PathBuf::from("demo-session.jsonl"), l)
}

fn info(n: usize, cwd: &str, name: Option<&str>, first: &str) -> SessionInfo {
    SessionInfo {
        path: PathBuf::from(format!("/a/sessions/s{n}.jsonl")),
        id: serde_json::Value::String(format!("id{n}")),
        cwd: cwd.into(),
        name: name.map(str::to_string),
        parent_session_path: None,
        created_ms: Some((T0 - 86_400_000 * n as u64) as f64),
        modified_ms: (T0 - 3_600_000 * n as u64) as f64,
        message_count: 3 + n as u64 * 7,
        first_message: first.into(),
        all_messages_text: String::new(),
        reference_drops: false,
        imported: None,
    }
}

fn list() -> ListState {
    ListState::new(
        vec![
            info(
                0,
                "/home/u/orbit",
                Some("Orbit drift: explicit Euler"),
                "The orbit simulator drifts",
            ),
            SessionInfo {
                imported: Some("claude-code".into()),
                ..info(
                    1,
                    "/home/u/web",
                    None,
                    "Why does the login page flash white?",
                )
            },
            info(
                2,
                "/home/u/orbit",
                None,
                "Add an RK4 integrator behind a flag",
            ),
            info(
                3,
                "/home/u/notes",
                Some("会話の要約"),
                "日本語のメモを整理して",
            ),
            SessionInfo {
                imported: Some("codex".into()),
                ..info(
                    4,
                    "/home/u/web",
                    None,
                    "Bump the dependencies and fix the build",
                )
            },
        ],
        Some(PathBuf::from("/home/u/orbit")),
        "/home/u/.pi/agent/sessions".into(),
        false,
    )
    .with_archived(
        [
            (
                PathBuf::from("/a/sessions/s0.jsonl"),
                Archived {
                    pushed_size: 48_000,
                    size_now: 48_000,
                    changed: false,
                },
            ),
            (
                PathBuf::from("/a/sessions/s4.jsonl"),
                Archived {
                    pushed_size: 20_000,
                    size_now: 31_500,
                    changed: true,
                },
            ),
        ]
        .into_iter()
        .collect(),
    )
}

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}
fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}
fn with(c: KeyCode, m: KeyModifiers) -> KeyEvent {
    KeyEvent::new(c, m)
}
fn typ(app: &mut App, s: &str) -> Vec<Effect> {
    s.chars().map(|c| app.key(key(KeyCode::Char(c)))).collect()
}

fn sel_text(app: &App) -> String {
    let t = app.tree.as_ref().unwrap();
    let e = t.loaded.tree.get_entry(t.sel_id().unwrap()).unwrap();
    crate::show::describe(e).1
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let area = ratatui::layout::Rect::new(0, 0, w, h);
    app.set_page(render::page_for(app, area));
    term.draw(|f| render::draw(f, app)).unwrap();
    format!("{}", term.backend())
}

// ---------- reducer: the session list ----------

#[test]
fn typing_filters_by_name_until_the_index_is_ready_then_asks_the_index() {
    let mut app = App::with_list(list());
    assert_eq!(app.list.shown.len(), 5);
    let effects = typ(&mut app, "orbit");
    assert!(effects.iter().all(|e| *e == Effect::None), "{effects:?}");
    // Names, first messages and folders match while the index builds.
    assert_eq!(app.list.shown, vec![0, 2]);
    assert_eq!(app.text_ready(), Effect::Search("orbit".into()));
    // Typing now asks the index; what is shown stays until it answers.
    assert_eq!(
        app.key(key(KeyCode::Char('s'))),
        Effect::Search("orbits".into())
    );
    assert!(app.list.searching());
    let mut hits = Hits::new();
    hits.insert("/a/sessions/s4.jsonl".into(), "the [[orbits]] of".into());
    app.hits("orbits".into(), hits);
    assert_eq!(app.list.shown, vec![4]);
    assert_eq!(app.list.snippet(), Some("the [[orbits]] of"));
    // An answer to an older query does not replace the current one.
    app.hits("orbit".into(), Hits::new());
    assert!(app.list.searching());
}

#[test]
fn tab_switches_between_this_folder_and_all() {
    let mut app = App::with_list(list());
    app.key(key(KeyCode::Tab));
    assert!(app.list.only_cwd);
    assert_eq!(app.list.shown, vec![0, 2]);
    app.key(key(KeyCode::Tab));
    assert_eq!(app.list.shown.len(), 5);
}

#[test]
fn enter_opens_the_selected_session_and_esc_clears_then_quits() {
    let mut app = App::with_list(list());
    app.key(key(KeyCode::Down));
    app.key(key(KeyCode::Down));
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        Effect::Open(PathBuf::from("/a/sessions/s2.jsonl"))
    );
    typ(&mut app, "web");
    assert_eq!(app.key(key(KeyCode::Esc)), Effect::None);
    assert_eq!(app.list.query, "");
    assert_eq!(app.key(key(KeyCode::Esc)), Effect::Quit);
    assert!(app.quit);
}

#[test]
fn selection_stays_on_its_session_while_filtering_and_scrolls() {
    let mut app = App::with_list(list());
    app.set_page(2);
    app.key(key(KeyCode::End));
    assert_eq!(app.list.sel, 4);
    assert_eq!(app.list.top, 3);
    typ(&mut app, "b");
    // s4 ("Bump ...") still matches and stays selected.
    assert_eq!(
        app.list.selected().unwrap().path,
        PathBuf::from("/a/sessions/s4.jsonl")
    );
}

// ---------- reducer: the tree ----------

#[test]
fn tree_opens_at_the_leaf_and_moves() {
    let mut app = App::with_tree(demo());
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("11218cad"));
    app.key(key(KeyCode::Up));
    // The label entry is hidden by the default filter: the row above is the assistant.
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("ff355e4b"));
    app.key(key(KeyCode::Home));
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("7de37673"));
    app.key(ctrl('g'));
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("11218cad"));
}

#[test]
fn fold_segment_jump_between_segments_and_siblings() {
    let mut app = App::with_tree(demo());
    let t = || ();
    t();
    // At the leaf, Ctrl+Left goes to the start of its segment (the branch summary).
    app.key(with(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("bd875bb3"));
    // Alt+Up: the earlier sibling branch.
    app.key(with(KeyCode::Up, KeyModifiers::ALT));
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("ace4ec4b"));
    assert_eq!(app.key(with(KeyCode::Up, KeyModifiers::ALT)), Effect::None);
    assert_eq!(app.status.as_deref(), Some("no earlier sibling branch"));
    // Ctrl+Left on a segment start folds it: its bash run disappears.
    let before = app.tree.as_ref().unwrap().visible.len();
    app.key(with(KeyCode::Left, KeyModifiers::CONTROL));
    let t = app.tree.as_ref().unwrap();
    assert_eq!(t.visible.len(), before - 1);
    assert_eq!(t.sel_id(), Some("ace4ec4b"));
    // Again: up to the enclosing segment's start (the root's segment).
    app.key(with(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("7de37673"));
    // Ctrl+Right: to the next segment start below (the folded branch), then unfold it.
    app.key(with(KeyCode::Right, KeyModifiers::CONTROL));
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("ace4ec4b"));
    app.key(with(KeyCode::Right, KeyModifiers::CONTROL));
    assert_eq!(app.tree.as_ref().unwrap().visible.len(), before);
    // Alt+Down: the later sibling.
    app.key(with(KeyCode::Down, KeyModifiers::ALT));
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("bd875bb3"));
}

#[test]
fn filters_user_only_labeled_and_all() {
    let mut app = App::with_tree(demo());
    let all_default = app.tree.as_ref().unwrap().visible.len();
    app.key(ctrl('u'));
    let t = app.tree.as_ref().unwrap();
    assert_eq!(t.filter, Filter::UserOnly);
    assert_eq!(t.visible.len(), 3);
    app.key(ctrl('u'));
    assert_eq!(app.tree.as_ref().unwrap().visible.len(), all_default);
    // Ctrl+O cycles: no tools, user only, labeled, all.
    app.key(ctrl('o'));
    app.key(ctrl('o'));
    app.key(ctrl('o'));
    let t = app.tree.as_ref().unwrap();
    assert_eq!(t.filter, Filter::Labeled);
    assert_eq!(t.visible.len(), 1);
    assert_eq!(t.sel_id(), Some("ce4a60f5"));
    app.key(ctrl('o'));
    assert_eq!(app.tree.as_ref().unwrap().visible.len(), all_default + 1);
}

#[test]
fn typing_searches_inside_the_session_and_ctrl_n_goes_to_the_next_hit() {
    let mut app = App::with_tree(demo());
    app.key(key(KeyCode::Home));
    typ(&mut app, "energy");
    assert!(sel_text(&app).to_lowercase().contains("energy"));
    let first = app.tree.as_ref().unwrap().sel;
    app.key(ctrl('n'));
    let second = app.tree.as_ref().unwrap().sel;
    assert!(second > first);
    assert!(sel_text(&app).to_lowercase().contains("energy"));
    app.key(ctrl('p'));
    assert_eq!(app.tree.as_ref().unwrap().sel, first);
    typ(&mut app, "zzzz");
    assert!(app.status.as_deref().unwrap().starts_with("no match"));
    // Esc clears the search, then leaves the tree (no list: quits).
    app.key(key(KeyCode::Esc));
    assert_eq!(app.tree.as_ref().unwrap().query, "");
    assert_eq!(app.key(key(KeyCode::Esc)), Effect::Quit);
}

/// The search inside a session looks at every character of an entry (it used to stop at
/// the first 2,000), any case, non-ASCII text included.
#[test]
fn search_inside_a_session_reads_whole_entries() {
    let mut b = Builder::new("long-0001");
    let long = format!("{} the Needle is here", "filler text ".repeat(800));
    assert!(long.len() > 9000);
    b.user("u1", None, "first question")
        .assistant("a1", Some("u1"), &long)
        .user("u2", Some("a1"), "Über die ÄNDERUNG sprechen")
        .assistant("a2", Some("u2"), "short answer");
    // A foreign writer's escapes: "Ha\u0079stack" is "Haystack" (the check on raw lines
    // must not rule it out).
    b.lines.push(
        r#"{"type":"message","id":"u3","parentId":"a2","timestamp":"2025-11-29T21:10:00.000Z","message":{"role":"user","content":"in the Ha\u0079stack","timestamp":1764450600000}}"#
            .into(),
    );
    let mut app = App::with_tree(tree_of(&b));
    app.key(key(KeyCode::Home));
    typ(&mut app, "needle is");
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("a1"));
    assert!(!app.busy());
    app.key(key(KeyCode::Esc));
    typ(&mut app, "änderung");
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("u2"));
    app.key(key(KeyCode::Esc));
    typ(&mut app, "haystack");
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("u3"));
    // A tool name and the kind are searched too ("user" is every user message's kind).
    app.key(key(KeyCode::Esc));
    app.key(key(KeyCode::Home));
    typ(&mut app, "user");
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("u1"));
}

/// A session too large for one keystroke's share of the scan: the key returns at once with
/// the scan pending ("searching…" shown), `tick` carries it on, a newer query replaces it,
/// any other key stops it, and a query without a hit ends with "no match".
#[test]
fn search_on_a_large_session_goes_on_across_frames_and_the_newest_query_wins() {
    let mut b = Builder::new("big-00001");
    let chunk = "lorem ipsum dolor sit amet ".repeat(1200); // ~32 KB per entry
    b.user("r", None, "start");
    let mut last = "r".to_string();
    for i in 0..400 {
        let id = format!("e{i}");
        let text = if i == 390 {
            format!("{chunk} the rare word zanzibar")
        } else {
            chunk.clone()
        };
        b.assistant(&id, Some(&last), &text);
        last = id;
    }
    let mut app = App::with_tree(tree_of(&b));
    app.key(key(KeyCode::Home));
    typ(&mut app, "zanz");
    // ~13 MB of text: more than a key's share (2 MiB).
    assert!(app.busy());
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("r"));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("searching…"), "{s}");
    // The newest query wins: the scan of "zanz" is replaced by one of "zanzi".
    app.key(key(KeyCode::Char('i')));
    assert_eq!(app.tree.as_ref().unwrap().query, "zanzi");
    let mut ticks = 0;
    while app.busy() {
        app.tick(1 << 18);
        ticks += 1;
        assert!(ticks < 100);
    }
    assert!(ticks >= 2, "{ticks}");
    assert_eq!(app.tree.as_ref().unwrap().sel_id(), Some("e390"));
    assert_eq!(app.status, None);
    // Another key stops a scan; a query with no hit ends with "no match".
    typ(&mut app, "q");
    assert!(app.busy());
    app.key(key(KeyCode::Up));
    assert!(!app.busy());
    app.key(ctrl('n'));
    while app.busy() {
        app.tick(TICK_SEARCH_BYTES);
    }
    assert_eq!(app.status.as_deref(), Some("no match for \"zanziq\""));
}

#[test]
fn actions_are_confirmed_and_carry_the_selected_entry() {
    let mut app = App::with_tree(demo());
    app.key(key(KeyCode::Up)); // ff355e4b
    app.key(ctrl('a'));
    assert!(matches!(app.modal, Some(Modal::Menu)));
    app.key(key(KeyCode::Char('l')));
    assert!(matches!(app.modal, Some(Modal::Input { .. })));
    assert_eq!(typ(&mut app, "fix"), vec![Effect::None; 3]);
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        Effect::Run(Job::Label {
            file: PathBuf::from("demo-session.jsonl"),
            id: "ff355e4b".into(),
            label: Some("fix".into())
        })
    );
    // Fork asks y/n; n cancels, y runs.
    app.key(ctrl('a'));
    app.key(key(KeyCode::Char('f')));
    assert_eq!(app.key(key(KeyCode::Char('n'))), Effect::None);
    assert_eq!(app.status.as_deref(), Some("cancelled"));
    app.key(ctrl('a'));
    app.key(key(KeyCode::Char('f')));
    assert_eq!(app.key(key(KeyCode::Char('x'))), Effect::None);
    assert!(app.modal.is_some(), "other keys keep the question open");
    assert_eq!(
        app.key(key(KeyCode::Char('y'))),
        Effect::Run(Job::Fork {
            file: PathBuf::from("demo-session.jsonl"),
            id: "ff355e4b".into()
        })
    );
}

#[test]
fn enter_shows_the_context_of_the_selected_entry() {
    let mut app = App::with_tree(demo());
    app.key(key(KeyCode::Enter));
    assert!(app.tree.as_ref().unwrap().context);
    app.key(key(KeyCode::Esc));
    assert!(!app.tree.as_ref().unwrap().context);
}

// ---------- actions through the writer lock ----------

#[test]
fn a_held_lock_is_reported_with_its_holder_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let p = compaction_session().write(dir.path(), "s.jsonl");
    let before = std::fs::read(&p).unwrap();
    let lock = sessiontree::store::WriterLock::acquire(&p, None).unwrap();
    let job = Job::Label {
        file: p.clone(),
        id: "u2".into(),
        label: Some("x".into()),
    };
    let t0 = std::time::Instant::now();
    let e = super::perform(&job, None).unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.contains(&format!("process {}", std::process::id())),
        "{msg}"
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(std::fs::read(&p).unwrap(), before);
    drop(lock);
    let (m, changed) = super::perform(&job, None).unwrap();
    assert!(changed, "{m}");
    let l = sessiontree::load(&p).unwrap();
    assert_eq!(
        l.tree
            .get_label("u2")
            .map(|l| sessiontree::json::Raw::trusted(&l.label).js_string()),
        Some("x".into())
    );
}

#[test]
fn rename_fork_close_and_export_do_what_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let p = compaction_session().write(dir.path(), "s.jsonl");
    super::perform(
        &Job::Rename {
            file: p.clone(),
            name: "Parser fix".into(),
        },
        None,
    )
    .unwrap();
    assert_eq!(
        sessiontree::load(&p).unwrap().tree.name().as_deref(),
        Some("Parser fix")
    );
    let (m, _) = super::perform(
        &Job::Fork {
            file: p.clone(),
            id: "a2".into(),
        },
        None,
    )
    .unwrap();
    let forked = PathBuf::from(m.rsplit(" into ").next().unwrap());
    let f = sessiontree::load(&forked).unwrap();
    assert_eq!(f.tree.leaf_id(), Some("a2"));
    let out = dir.path().join("out.md");
    let job = Job::Export {
        file: p.clone(),
        leaf: "a3".into(),
        markdown: true,
        out: out.clone(),
    };
    super::perform(&job, None).unwrap();
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("tail_is_kept"));
    // Never over an existing file.
    assert!(format!("{:#}", super::perform(&job, None).unwrap_err()).contains("already exists"));
    let (m, changed) = super::perform(&Job::CloseInterrupted { file: p.clone() }, None).unwrap();
    assert!(!changed, "{m}");
}

// ---------- layout ----------

#[test]
fn single_child_chains_stay_flat_and_forks_indent() {
    let t = tree_of(&deep(3, 5));
    let l = &t.layout;
    let depth = |id: &str| {
        let e = t.loaded.tree.get_entry(id).unwrap();
        let i = rows::index_of(&t.loaded.tree, e).unwrap();
        l.depth(&l.rows[l.row_of[i as usize] as usize])
    };
    assert_eq!(depth("r0"), 0);
    assert_eq!(depth("c4"), 0);
    assert_eq!(depth("f0a"), 1);
    assert_eq!(depth("f2b"), 3);
    assert_eq!(depth("end"), 3);
}

#[test]
fn indentation_is_bounded_and_the_deepest_text_shows_in_80_columns() {
    let t = tree_of(&deep(200, 10));
    let l = Layout::new(&t.loaded.tree);
    let budget = rows::indent_budget(80);
    let mut deepest = 0;
    for r in &l.rows {
        let p = l.prefix(r, budget);
        assert!(rows::width(&p) <= budget, "{p:?}");
        deepest = deepest.max(l.depth(r));
    }
    assert_eq!(deepest, 200);
    let mut app = App::with_tree(t);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("The deepest answer: energy"), "{s}");
    assert!(s.contains("195›"), "{s}");
}

#[test]
fn fit_counts_wide_characters() {
    assert_eq!(rows::fit("日本語テキスト", 7), "日本語…");
    assert_eq!(rows::width(&rows::fit("日本語テキスト", 7)), 7);
    assert_eq!(rows::fit("a  b\n\tc", 10), "a b c");
    assert_eq!(rows::fit("abcdef", 3), "ab…");
    assert_eq!(rows::cut("\tlet x = 1;", 12), "    let x =…");
    assert_eq!(rows::cut("  日本語", 6), "  日…");
}

/// `fit` escapes as it goes: the same text as escaping the whole string first and then
/// fitting it, escapes counted in the width and cut like any other text.
#[test]
fn fit_escapes_what_it_shows() {
    assert_eq!(rows::fit("a\x1b[2Jb", 20), "a\\x1b[2Jb");
    assert_eq!(rows::fit("a\x1b[2Jb", 4), "a\\x…");
    assert_eq!(rows::fit("\u{202e}evil", 9), "\\u{202e}…");
    assert_eq!(rows::fit("x\r\ny", 10), "x y");
    let reference = |s: &str, cols: usize| {
        let escaped = crate::safe::escape_except(s, char::is_whitespace);
        rows::fit(&escaped, cols)
    };
    let pieces = [
        "a", " ", "\n", "\x1b", "\u{9b}", "\u{202e}", "日", "é", "\t", "\x7f",
    ];
    let mut rng = sessiontree_testkit::Rng(5);
    let mut escaped = 0;
    for _ in 0..5000 {
        let mut s = String::new();
        for _ in 0..rng.pick(40) {
            s.push_str(pieces[rng.pick(pieces.len())]);
        }
        escaped += s.contains('\x1b') as u32;
        let cols = rng.pick(30);
        assert_eq!(rows::fit(&s, cols), reference(&s, cols), "{s:?} in {cols}");
    }
    assert!(escaped > 1000, "the mixes hold escapes");
}

// ---------- snapshots ----------

#[test]
fn snapshot_list() {
    let mut app = App::with_list(list());
    insta::assert_snapshot!("list_80x24", screen(&mut app, 80, 24));
    insta::assert_snapshot!("list_120x40", screen(&mut app, 120, 40));
    typ(&mut app, "orbit");
    insta::assert_snapshot!("list_typed_80x24", screen(&mut app, 80, 24));
}

#[test]
fn snapshot_empty_agent_dir() {
    let mut app = App::with_list(ListState::new(
        Vec::new(),
        None,
        "/home/u/.pi/agent/sessions".into(),
        true,
    ));
    insta::assert_snapshot!("empty_80x24", screen(&mut app, 80, 24));
}

#[test]
fn snapshot_branched_session() {
    let mut app = App::with_tree(demo());
    insta::assert_snapshot!("branched_80x24", screen(&mut app, 80, 24));
    insta::assert_snapshot!("branched_120x40", screen(&mut app, 120, 40));
    app.key(with(KeyCode::Up, KeyModifiers::NONE));
    app.key(key(KeyCode::Enter));
    insta::assert_snapshot!("branched_context_80x24", screen(&mut app, 80, 24));
    insta::assert_snapshot!("branched_context_120x40", screen(&mut app, 120, 40));
}

#[test]
fn snapshot_compaction() {
    let mut app = App::with_tree(tree_of(&compaction_session()));
    app.key(key(KeyCode::Enter));
    insta::assert_snapshot!("compaction_context_80x24", screen(&mut app, 80, 24));
    insta::assert_snapshot!("compaction_context_120x40", screen(&mut app, 120, 40));
}

#[test]
fn snapshot_long_chain_with_deep_forks() {
    let mut app = App::with_tree(tree_of(&deep(40, 30)));
    insta::assert_snapshot!("deep_80x24", screen(&mut app, 80, 24));
    insta::assert_snapshot!("deep_120x40", screen(&mut app, 120, 40));
}

#[test]
fn snapshot_cjk_and_wide_characters() {
    let mut app = App::with_tree(tree_of(&cjk_session()));
    insta::assert_snapshot!("cjk_80x24", screen(&mut app, 80, 24));
    app.key(key(KeyCode::Enter));
    insta::assert_snapshot!("cjk_context_120x40", screen(&mut app, 120, 40));
}

#[test]
fn snapshot_action_menu_and_help() {
    let mut app = App::with_tree(demo());
    app.key(ctrl('a'));
    insta::assert_snapshot!("menu_80x24", screen(&mut app, 80, 24));
    app.key(key(KeyCode::Esc));
    app.key(key(KeyCode::Char('?')));
    insta::assert_snapshot!("help_120x40", screen(&mut app, 120, 40));
}

#[test]
fn resume_from_the_list_is_confirmed_and_esc_in_a_tree_goes_back_to_the_list() {
    let mut app = App::with_list(list());
    app.key(key(KeyCode::Down));
    app.key(ctrl('r'));
    assert!(matches!(app.modal, Some(Modal::Confirm { .. })));
    assert_eq!(
        app.key(key(KeyCode::Char('y'))),
        Effect::Run(Job::Resume {
            file: PathBuf::from("/a/sessions/s1.jsonl")
        })
    );
    app.open(demo());
    assert_eq!(app.key(key(KeyCode::Esc)), Effect::None);
    assert!(app.tree.is_none());
    assert!(!app.quit);
    assert_eq!(app.list.sel, 1, "the list keeps its selection");
}

#[test]
fn search_highlights_become_the_previews_marks() {
    assert_eq!(
        super::mark("the energy test", &[(4, 10)]),
        "the [[energy]] test"
    );
    assert_eq!(
        super::mark("日本語 ok", &[(0, 2), (4, 6)]),
        "[[日本]]語 [[ok]]"
    );
}

#[test]
fn snapshot_badges_of_imported_and_archived_sessions() {
    let mut app = App::with_list(list());
    // s4: imported from Codex, pushed and grown since.
    app.key(key(KeyCode::End));
    let s = screen(&mut app, 120, 40);
    assert!(s.contains("imported  from Codex"), "{s}");
    assert!(s.contains("pushed 19.5 KiB · grown to 30.8 KiB"), "{s}");
    insta::assert_snapshot!("list_badges_120x40", s);
    // s0: pushed, unchanged; s1: imported from Claude Code, not pushed.
    app.key(key(KeyCode::Home));
    let s = screen(&mut app, 80, 24);
    assert!(
        s.contains("archive   pushed, unchanged since (46.9 KiB)"),
        "{s}"
    );
    app.key(key(KeyCode::Down));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("imported  from Claude Code"), "{s}");
    assert!(!s.contains("archive   pushed"), "{s}");
    insta::assert_snapshot!("list_badges_80x24", s);
}

/// An imported copy whose transcript its agent deleted says so in its row (before the
/// title, as `ls` does) and in the preview; the other rows do not.
#[test]
fn a_copy_whose_source_is_gone_is_marked_in_the_list_and_the_preview() {
    let gone: std::collections::HashSet<PathBuf> = [PathBuf::from("/a/sessions/s1.jsonl")]
        .into_iter()
        .collect();
    let mut app = App::with_list(list().with_source_gone(gone));
    let s = screen(&mut app, 120, 40);
    assert_eq!(s.matches("(source gone)").count(), 1, "{s}");
    let row = s.lines().find(|l| l.contains("(source gone)")).unwrap();
    assert!(row.contains("(source gone) Why does the"), "{s}");
    // s0 selected: no mark in its preview.
    assert!(!s.contains("source    gone"), "{s}");
    app.key(key(KeyCode::Down));
    let s = screen(&mut app, 120, 40);
    assert!(
        s.contains("source    gone: its agent deleted the transcript"),
        "{s}"
    );
    // Without the marks nothing says so.
    let mut app = App::with_list(list());
    let s = screen(&mut app, 120, 40);
    assert!(
        !s.contains("source gone") && !s.contains("source    gone"),
        "{s}"
    );
}

/// The archive marks come from the state `sessiontree push` leaves in the agent dir: a
/// pushed file is marked, a file grown since is marked as changed, a file no push has
/// seen is not, and several archives' states are read.
#[test]
fn archive_marks_come_from_the_local_push_state() {
    use sessiontree_archive::state::{FileStamp, State};
    use std::io::Write as _;
    let a = sessiontree_testkit::AgentDir::new();
    let (agent, sessions) = (a.path(), a.folder("/w"));
    let b = compaction_session();
    let same = b.write(&sessions, "same.jsonl");
    let grown = b.write(&sessions, "grown.jsonl");
    let other = b.write(&sessions, "other-archive.jsonl");
    let never = b.write(&sessions, "never.jsonl");
    let stamp = |p: &Path| FileStamp::of(&std::fs::metadata(p).unwrap());
    let mut st = State::load(agent, "archive-one");
    st.set_pushed(&same, stamp(&same), "", "h1");
    st.set_pushed(&grown, stamp(&grown), "", "h2");
    st.save().unwrap();
    let mut st2 = State::load(agent, "archive-two");
    st2.set_pushed(&other, stamp(&other), "", "h3");
    st2.save().unwrap();
    let size = std::fs::metadata(&grown).unwrap().len();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&grown)
        .unwrap()
        .write_all(b"{\"type\":\"label\",\"id\":\"zz\",\"parentId\":\"a3\",\"timestamp\":\"2025-11-29T21:10:00.000Z\",\"targetId\":\"a3\",\"label\":\"x\"}\n")
        .unwrap();
    let infos: Vec<SessionInfo> = [&same, &grown, &other, &never]
        .iter()
        .map(|p| SessionInfo {
            path: p.to_path_buf(),
            ..info(0, "/w", None, "x")
        })
        .collect();
    // From the stats a listing takes of the files (the browser's one stat per file).
    let files = sessiontree::list::with_stats(infos.iter().map(|i| i.path.clone()).collect());
    let marks = super::archived(agent, &infos, &files);
    assert_eq!(marks.len(), 3, "{marks:?}");
    assert!(!marks[&same].changed);
    assert!(!marks[&other].changed);
    let g = marks[&grown];
    assert!(g.changed);
    assert_eq!(g.pushed_size, size);
    assert!(g.size_now > size);
    assert!(!marks.contains_key(&never));
    // No archive state at all: nothing marked, nothing created.
    let empty = tempfile::tempdir().unwrap();
    assert!(super::archived(empty.path(), &infos, &files).is_empty());
    assert!(!empty.path().join("sessiontree-archive").exists());
}

/// The list's search finds every session with a hit: a session whose only (older) hit
/// comes after 2,000 newer hits elsewhere is listed (the browser used to stop at 2,000
/// hits), and a folder given as `browse DIR` is searched in full text, not by name.
#[test]
fn list_search_finds_every_session_with_a_hit_in_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let mut busy = Builder::new("busy-0001");
    busy.t = T0 + 10_000_000;
    busy.user("b0", None, "start");
    let mut last = "b0".to_string();
    for i in 0..2100 {
        let id = format!("b{}", i + 1);
        busy.assistant(&id, Some(&last), &format!("the needle again, number {i}"));
        last = id;
    }
    let busy_p = busy.write(dir.path(), "busy.jsonl");
    let mut quiet = Builder::new("quiet-001");
    quiet.user("q1", None, "an old question").assistant(
        "q2",
        Some("q1"),
        "found the Needle in the haystack",
    );
    let quiet_p = quiet.write(dir.path(), "quiet.jsonl");
    let files = sessiontree::list::with_stats(sessiontree::list::dir_files(dir.path()));
    // What a search limited to 2,000 hits (entries) sees: only the busy session.
    use sessiontree_index::search::{Mode, Query};
    let q = Query::new("needle", Mode::Words, 2000);
    let (limited, _) = sessiontree_index::search::search(&files, &q, None, 2).unwrap();
    assert!(limited.iter().all(|h| h.path != quiet_p.to_string_lossy()));
    let hits = super::search_sessions(&files, None, "needle", &|| false).unwrap();
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert_eq!(
        hits[&*quiet_p.to_string_lossy()],
        "found the [[Needle]] in the haystack"
    );
    assert!(hits.contains_key(&*busy_p.to_string_lossy()));
    // Words anywhere in the text, not in the name: nothing named "haystack".
    let hits = super::search_sessions(&files, None, "haystack needle", &|| false).unwrap();
    assert_eq!(hits.len(), 1);
    // A search overtaken by a newer query stops.
    let stopped = super::search_sessions(&files, None, "needle", &|| true).unwrap();
    assert!(stopped.is_empty());
    // The list shows what the search found.
    let infos = [&busy_p, &quiet_p]
        .iter()
        .enumerate()
        .map(|(n, p)| SessionInfo {
            path: p.to_path_buf(),
            ..info(n, "/w", None, "start")
        })
        .collect();
    let mut app = App::with_list(ListState::new(infos, None, "dir".into(), true));
    assert_eq!(
        typ(&mut app, "haystack").last(),
        Some(&Effect::Search("haystack".into()))
    );
    app.hits("haystack".into(), hits);
    assert_eq!(app.list.shown, vec![1]);
}

/// The list's search reports what it found so far (newest files first) before it is done:
/// the list fills in, says it is still searching, and the final answer replaces it.
#[test]
fn list_search_shows_partial_results_until_the_search_is_done() {
    let mut app = App::with_list(list());
    app.text_ready();
    assert_eq!(
        typ(&mut app, "drift").last(),
        Some(&Effect::Search("drift".into()))
    );
    let mut first = Hits::new();
    first.insert("/a/sessions/s0.jsonl".into(), "orbit [[drift]]".into());
    app.partial_hits("drift".into(), first.clone());
    assert_eq!(app.list.shown, vec![0]);
    assert!(!app.list.searching());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("1 matching so far, searching…"), "{s}");
    let mut all = first;
    all.insert("/a/sessions/s3.jsonl".into(), "no [[drift]] here".into());
    app.hits("drift".into(), all);
    assert_eq!(app.list.shown, vec![0, 3]);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("2 matching") && !s.contains("so far"), "{s}");
}
