//! Benchmarks of `sessiontree browse`, rendered to a test backend (no terminal):
//!
//! * `first_frame/sessions`: the listing of every session through a warm index, then the
//!   first frame (what the user waits for after typing `sessiontree browse`);
//! * `open_tree`: loading a session, laying out its tree and drawing the first frame;
//! * `key/...`: one keystroke (reducer + frame) in the list and in a large tree.
//!
//! Corpora (see `bench/browse.sh`): `BROWSE_AGENT_DIR` (an agent dir, e.g. 2,000 sessions
//! from `gen_sessions`) and `BROWSE_SESSION` (a large session from `gen_session`). A part
//! whose corpus is not given is skipped with a message.

use criterion::{criterion_group, criterion_main, Criterion};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use sessiontree_cli::browse;
use sessiontree_cli::browse::state::{App, ListState, TreeState};
use std::path::PathBuf;
use std::time::Duration;

fn frame(term: &mut Terminal<TestBackend>, app: &mut App) {
    let s = term.size().unwrap();
    let area = ratatui::layout::Rect::new(0, 0, s.width, s.height);
    app.set_page(browse::render::page_for(app, area));
    term.draw(|f| browse::render::draw(f, app)).unwrap();
}

fn key(c: KeyCode, m: KeyModifiers) -> KeyEvent {
    KeyEvent::new(c, m)
}

/// The keys the benchmarks press.
const UP: (KeyCode, KeyModifiers) = (KeyCode::Up, KeyModifiers::NONE);
const DOWN: (KeyCode, KeyModifiers) = (KeyCode::Down, KeyModifiers::NONE);
const PAGE_UP: (KeyCode, KeyModifiers) = (KeyCode::PageUp, KeyModifiers::NONE);
const PAGE_DOWN: (KeyCode, KeyModifiers) = (KeyCode::PageDown, KeyModifiers::NONE);
const FOLD: (KeyCode, KeyModifiers) = (KeyCode::Left, KeyModifiers::CONTROL);
const UNFOLD: (KeyCode, KeyModifiers) = (KeyCode::Right, KeyModifiers::CONTROL);
const NEXT_HIT: (KeyCode, KeyModifiers) = (KeyCode::Char('n'), KeyModifiers::CONTROL);
const LETTER_K: (KeyCode, KeyModifiers) = (KeyCode::Char('k'), KeyModifiers::NONE);
const BACKSPACE: (KeyCode, KeyModifiers) = (KeyCode::Backspace, KeyModifiers::NONE);

/// Each key in turn, each followed by a frame.
fn press(app: &mut App, term: &mut Terminal<TestBackend>, keys: &[(KeyCode, KeyModifiers)]) {
    for &(c, m) in keys {
        app.key(key(c, m));
        frame(term, app);
    }
}

fn bench(c: &mut Criterion) {
    if let Ok(agent) = std::env::var("BROWSE_AGENT_DIR") {
        std::env::set_var("PI_CODING_AGENT_DIR", &agent);
        // Warm the index (listings) once.
        let n = browse::sessions(None).unwrap().len();
        eprintln!("{n} sessions under {agent}");
        let mut g = c.benchmark_group("first_frame");
        g.sample_size(20).measurement_time(Duration::from_secs(8));
        g.bench_function(format!("{n}_sessions_warm_index_120x40"), |b| {
            b.iter(|| {
                let (v, marks) =
                    browse::sessions_marked(None, std::path::Path::new(&agent)).unwrap();
                let mut app = App::with_list(
                    ListState::new(v, None, agent.clone(), false).with_archived(marks),
                );
                let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
                frame(&mut term, &mut app);
                app
            })
        });
        g.finish();
        let v = browse::sessions(None).unwrap();
        let mut app = App::with_list(ListState::new(v, None, agent.clone(), false));
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
        frame(&mut term, &mut app);
        let mut g = c.benchmark_group("key");
        g.bench_function("list_down_120x40", |b| {
            b.iter(|| press(&mut app, &mut term, &[DOWN]))
        });
        // Typing filters at once (names, first messages, folders), then takes it back.
        g.bench_function("list_type_and_erase_a_letter_120x40", |b| {
            b.iter(|| press(&mut app, &mut term, &[LETTER_K, BACKSPACE]))
        });
        g.finish();
        // The list's full-text search (on the worker thread): every session with a hit,
        // through the warm search summaries, for a frequent word, a rarer one, and none.
        let mut files = sessiontree::list::all_files_stat(std::path::Path::new(&agent));
        // As the worker does: the newest files first, in steps of 32 files.
        files.sort_by_key(|f| std::cmp::Reverse(f.1.as_ref().map_or(0, |s| s.mtime_ns)));
        let summaries = sessiontree_index::summary::Summaries::load(
            &sessiontree_index::summary::Summaries::path_in(std::path::Path::new(&agent)),
        );
        let mut g = c.benchmark_group("list_search");
        g.sample_size(10);
        for word in ["kalo", "venix", "zzqxj"] {
            let n = browse::search_sessions(&files, summaries.as_ref(), word, &|| false)
                .unwrap()
                .len();
            g.bench_function(format!("{word}_{n}_sessions_all"), |b| {
                b.iter(|| {
                    browse::search_sessions(&files, summaries.as_ref(), word, &|| false).unwrap()
                })
            });
            // The first step, after which the first matches are shown.
            g.bench_function(format!("{word}_first_step_32_files"), |b| {
                b.iter(|| {
                    browse::search_sessions(&files[..32], summaries.as_ref(), word, &|| false)
                        .unwrap()
                })
            });
        }
        g.finish();
    } else {
        eprintln!("SKIPPED: first_frame and list keys (set BROWSE_AGENT_DIR)");
    }

    if let Ok(file) = std::env::var("BROWSE_SESSION") {
        let path = PathBuf::from(&file);
        let mut g = c.benchmark_group("open_tree");
        g.sample_size(10).measurement_time(Duration::from_secs(10));
        // The load alone (what `sessiontree context` pays too), to compare on a noisy machine.
        g.bench_function("load_only", |b| {
            b.iter_with_large_drop(|| sessiontree::load(&path).unwrap())
        });
        // What the browser adds to the load: the layout, the rows shown, the first frame.
        g.bench_function("layout_first_frame_only_120x40", |b| {
            b.iter_batched(
                || sessiontree::load(&path).unwrap(),
                |l| {
                    let mut app = App::with_tree(TreeState::new(path.clone(), l));
                    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
                    frame(&mut term, &mut app);
                    app
                },
                criterion::BatchSize::LargeInput,
            )
        });
        g.bench_function("load_layout_first_frame_120x40", |b| {
            b.iter_with_large_drop(|| {
                let t = browse::open(&path).unwrap();
                let mut app = App::with_tree(t);
                let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
                frame(&mut term, &mut app);
                app
            })
        });
        g.finish();
        let t: TreeState = browse::open(&path).unwrap();
        eprintln!(
            "{}: {} entries, {} rows",
            file,
            t.loaded.tree.entries().len(),
            t.layout.rows.len()
        );
        let mut app = App::with_tree(t);
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
        frame(&mut term, &mut app);
        let mut g = c.benchmark_group("key");
        g.bench_function("tree_up_down_120x40", |b| {
            b.iter(|| press(&mut app, &mut term, &[UP, DOWN]))
        });
        g.bench_function("tree_page_80x24", |b| {
            let mut small = Terminal::new(TestBackend::new(80, 24)).unwrap();
            b.iter(|| press(&mut app, &mut small, &[PAGE_UP, PAGE_DOWN]))
        });
        g.bench_function("tree_fold_unfold_segment_120x40", |b| {
            b.iter(|| press(&mut app, &mut term, &[FOLD, UNFOLD]))
        });
        // The context pane: the projection from the selected entry on every move.
        app.key(key(KeyCode::Enter, KeyModifiers::NONE));
        frame(&mut term, &mut app);
        g.bench_function("tree_move_with_context_120x40", |b| {
            b.iter(|| press(&mut app, &mut term, &[UP, DOWN]))
        });
        app.key(key(KeyCode::Enter, KeyModifiers::NONE));
        // Search inside the session (texts are made as the scan reaches them).
        app.key(key(KeyCode::Char('e'), KeyModifiers::NONE));
        g.bench_function("tree_next_search_hit_120x40", |b| {
            b.iter(|| press(&mut app, &mut term, &[NEXT_HIT]))
        });
        // A query no entry matches: each key scans its share (the rest goes on across
        // frames), so a key costs the same on any session.
        app.key(key(KeyCode::Esc, KeyModifiers::NONE));
        g.bench_function("tree_type_a_letter_no_hit_120x40", |b| {
            b.iter(|| {
                app.key(key(KeyCode::Char('q'), KeyModifiers::NONE));
                frame(&mut term, &mut app);
                app.key(key(KeyCode::Esc, KeyModifiers::NONE));
            })
        });
        g.finish();
        let mut g = c.benchmark_group("search_in_session");
        g.sample_size(10);
        // The whole scan of a query without a hit (what the user waits for "no match";
        // keys stay live meanwhile): every entry's whole text.
        g.bench_function("no_hit_whole_session_scan", |b| {
            b.iter_batched(
                || {
                    let mut app = App::with_tree(browse::open(&path).unwrap());
                    app.key(key(KeyCode::Home, KeyModifiers::NONE));
                    app
                },
                |mut app| {
                    for c in "qqxz".chars() {
                        app.key(key(KeyCode::Char(c), KeyModifiers::NONE));
                    }
                    while app.busy() {
                        app.tick(browse::state::TICK_SEARCH_BYTES);
                    }
                    app
                },
                criterion::BatchSize::LargeInput,
            )
        });
        g.bench_function("first_letter_to_the_first_hit", |b| {
            b.iter_batched(
                || App::with_tree(browse::open(&path).unwrap()),
                |mut app| {
                    app.key(key(KeyCode::Char('e'), KeyModifiers::NONE));
                    app
                },
                criterion::BatchSize::LargeInput,
            )
        });
        g.finish();
    } else {
        eprintln!("SKIPPED: open_tree and tree keys (set BROWSE_SESSION)");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
