//! Search: the scan (a prefilter over raw bytes, then decoding) finds exactly what a naive
//! decode of every entry finds, and the per-file summaries never change the hits: on
//! generated corpora, through appends, in-place edits that restore size and mtime,
//! replacements by a new inode, and deletions.

use sessiontree::list::{self, Acc, EntryText, FileStat};
use sessiontree_index::search::{self, Hit, Mode, Query};
use sessiontree_index::summary::{self, Summaries};
use sessiontree_testkit::Rng;
use std::io::Write;
use std::path::{Path, PathBuf};

const WORDS: &[&str] = &[
    "theme",
    "selector",
    "Theme",
    "SELECTOR",
    "foo_bar::Baz",
    "fn main()",
    "日本語",
    "検索",
    "テキスト",
    "quote\"d",
    "back\\slash",
    "tab\there",
    "line\nbreak",
    "emoji 🦀 crab",
    "café",
    "x",
    "zebra",
    "a/b/c",
    "ab",
    "abc",
    "bc",
];

fn text(r: &mut Rng) -> String {
    let n = 1 + r.pick(6);
    (0..n)
        .map(|_| WORDS[r.pick(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// `s` as a JSON string with every letter `a` written `\u0061` (a foreign writer's escapes).
fn js_odd(s: &str) -> String {
    js(s).replace('a', "\\u0061")
}

/// One random entry line (complete, with `\n`).
fn entry(r: &mut Rng, id: &str, parent: Option<&str>, ts: u64) -> String {
    let p = parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into());
    let head = format!(
        "{{\"type\":\"{{T}}\",\"id\":\"{id}\",\"parentId\":{p},\"timestamp\":\"2025-01-0{}T00:00:00.000Z\"",
        1 + ts % 9
    );
    let t = text(r);
    let body = match r.pick(9) {
        0 => format!(
            ",\"message\":{{\"role\":\"user\",\"content\":{},\"timestamp\":{ts}}}",
            js(&t)
        ),
        1 => format!(
            ",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":{}}},{{\"type\":\"toolCall\",\"id\":\"c\",\"name\":\"theme\",\"arguments\":{{\"selector\":\"zebra\"}}}},{{\"type\":\"text\",\"text\":{}}}],\"timestamp\":{ts}}}",
            js(&t),
            js(&text(r))
        ),
        2 => format!(
            ",\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"c\",\"toolName\":\"bash\",\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"isError\":false,\"timestamp\":{ts}}}",
            js(&t)
        ),
        3 => format!(
            ",\"message\":{{\"role\":\"bashExecution\",\"command\":{},\"output\":{},\"exitCode\":0,\"timestamp\":{ts}}}",
            js(&t),
            js(&text(r))
        ),
        4 => format!(
            ",\"message\":{{\"role\":\"user\",\"content\":{},\"timestamp\":{ts}}}",
            js_odd(&t)
        ),
        5 => format!(",\"summary\":{},\"fromId\":\"x\"", js(&t)),
        6 => format!(
            ",\"customType\":\"note\",\"content\":{},\"display\":true",
            js(&t)
        ),
        7 => format!(",\"label\":{}", js(&t)),
        _ => format!(
            ",\"message\":{{\"role\":\"user\",\"content\":{}}}",
            js(&t)
        ),
    };
    let ty = match body.as_bytes()[2] {
        b's' => "compaction",
        b'c' => "custom_message",
        b'l' => "label",
        _ => "message",
    };
    let ty = if ty == "compaction" && r.pick(2) == 0 {
        "branch_summary"
    } else {
        ty
    };
    format!("{}{body}}}\n", head.replace("{T}", ty))
}

fn session(r: &mut Rng, name: &str, cwd: &str, n: usize) -> String {
    let mut s = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{name}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"{cwd}\"}}\n"
    );
    let mut ids: Vec<String> = Vec::new();
    for k in 0..n {
        let id = format!("{name}-{k}");
        let parent = if ids.is_empty() {
            None
        } else if r.pick(5) == 0 {
            Some(ids[r.pick(ids.len())].clone())
        } else {
            ids.last().cloned()
        };
        let ts = 1000 + r.below(50) * 100;
        s += &entry(r, &id, parent.as_deref(), ts);
        ids.push(id);
    }
    s
}

fn corpus(agent: &Path, seed: u64) -> Vec<PathBuf> {
    let mut r = Rng(seed);
    let mut out = Vec::new();
    for k in 0..12 {
        let cwd = format!("/w/p{}", k % 3);
        let dir = agent
            .join("sessions")
            .join(sessiontree::dirs::encode_cwd(Path::new(&cwd)));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("s{k}.jsonl"));
        let n = 5 + r.pick(30);
        let mut body = session(&mut r, &format!("s{k}"), &cwd, n);
        if k == 3 {
            // A trailing line still being written is not searched yet.
            body += "{\"type\":\"message\",\"id\":\"torn\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"zebra theme";
        }
        if k == 4 {
            body = body.replacen("\"type\":\"session\"", "\"type\":\"nope\"", 1);
        }
        std::fs::write(&p, body).unwrap();
        out.push(p);
    }
    out
}

/// A naive reference: every line decoded, every rule applied directly.
fn reference(agent: &Path, q: &Query) -> Vec<(String, String, bool)> {
    let re = (q.mode == Mode::Regex).then(|| regex::Regex::new(&q.text).unwrap());
    let words: Vec<String> = match q.mode {
        Mode::Words => q
            .text
            .split_whitespace()
            .map(|w| w.to_ascii_lowercase())
            .collect(),
        _ => vec![q.text.to_ascii_lowercase()],
    };
    let mut all: Vec<(Option<f64>, String, usize, String, bool)> = Vec::new();
    for p in list::all_files(agent) {
        let Ok(f) = std::fs::File::open(&p) else {
            continue;
        };
        let mut rows: Vec<EntryText> = Vec::new();
        let pass = list::pass(f, 0, Acc::new(false), Some(&mut rows)).unwrap();
        if pass.committed.not_session || !pass.committed.header_seen {
            continue;
        }
        if let Some(c) = &q.cwd {
            if !list::cwd_matches(&pass.committed.cwd, c) {
                continue;
            }
        }
        let mut parents = std::collections::HashMap::new();
        for r in rows.iter().filter(|r| r.role.is_empty()) {
            parents.insert(r.entry_id.clone(), r.parent_id.clone());
        }
        let mut on = std::collections::HashSet::new();
        let mut cur = pass.committed.leaf.clone();
        while let Some(c) = cur {
            if !on.insert(c.clone()) {
                break;
            }
            cur = parents.get(&c).cloned().flatten();
        }
        for (n, r) in rows.iter().enumerate().filter(|(_, r)| !r.role.is_empty()) {
            if q.role.as_deref().is_some_and(|x| x != r.role)
                || q.since_ms.is_some_and(|s| !r.ts_ms.is_some_and(|t| t >= s))
            {
                continue;
            }
            let lower = r.text.to_ascii_lowercase();
            let ok = match &re {
                Some(re) => re.is_match(&r.text),
                None => words.iter().all(|w| lower.contains(w.as_str())),
            };
            if ok {
                all.push((
                    r.ts_ms,
                    p.to_string_lossy().into_owned(),
                    n,
                    r.entry_id.clone(),
                    on.contains(&r.entry_id),
                ));
            }
        }
    }
    // Newest first, no timestamp last, then path, then file order.
    all.sort_by(|a, b| {
        let t = |x: &Option<f64>| x.filter(|t| !t.is_nan());
        match (t(&a.0), t(&b.0)) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then_with(|| a.1.cmp(&b.1))
        .then_with(|| a.2.cmp(&b.2))
    });
    all.truncate(q.limit);
    all.into_iter().map(|x| (x.1, x.3, x.4)).collect()
}

fn key(h: &[Hit]) -> Vec<(String, String, bool)> {
    h.iter()
        .map(|h| (h.path.clone(), h.entry_id.clone(), h.on_branch))
        .collect()
}

fn queries() -> Vec<Query> {
    let q = Query::new;
    let mut v = vec![
        q("theme", Mode::Words, 1000),
        q("theme", Mode::Words, 3),
        q("theme selector", Mode::Words, 1000),
        q("theme selector", Mode::Words, 5),
        q("theme selector", Mode::Phrase, 1000),
        q("selector theme", Mode::Phrase, 1000),
        q("foo_bar::Baz", Mode::Words, 1000),
        q("日本語", Mode::Words, 1000),
        q("検索", Mode::Words, 7),
        q("quote\"d", Mode::Words, 1000),
        q("back\\slash", Mode::Words, 1000),
        q("tab\there", Mode::Phrase, 1000),
        q("line\nbreak", Mode::Phrase, 1000),
        q("🦀", Mode::Words, 1000),
        q("café", Mode::Words, 1000),
        q("a/b", Mode::Words, 1000),
        q("x", Mode::Words, 1000),
        q("zebra", Mode::Words, 1000),
        q("abc", Mode::Words, 1000),
        q("ab bc", Mode::Words, 1000),
        q("nowhere_at_all", Mode::Words, 1000),
        q("main() theme", Mode::Phrase, 1000),
        q(r"foo_\w+::B", Mode::Regex, 1000),
        q(r"(?i)theme\s+SELECTOR", Mode::Regex, 1000),
        q(r"^zebra", Mode::Regex, 4),
        q(r"x|検索", Mode::Regex, 1000),
        q(r"\d*", Mode::Regex, 10),
    ];
    let mut f = q("zebra", Mode::Words, 1000);
    f.role = Some("user".into());
    v.push(f);
    let mut f = q("theme", Mode::Words, 1000);
    f.since_ms = Some(3000.0);
    v.push(f);
    let mut f = q("theme", Mode::Words, 1000);
    f.cwd = Some(PathBuf::from("/w/p1"));
    v.push(f);
    v
}

fn stats(agent: &Path) -> Vec<(PathBuf, Option<FileStat>)> {
    list::all_files_stat(agent)
}

/// Every query: the scan equals the reference, with and without summaries.
fn check_all(agent: &Path, summaries: Option<&Summaries>, what: &str) {
    let files = stats(agent);
    for q in queries() {
        let want = reference(agent, &q);
        let (plain, _) = search::search(&files, &q, None, 2).unwrap();
        assert_eq!(
            key(&plain),
            want,
            "{what}: {:?} {:?} without summaries",
            q.text,
            q.mode
        );
        // Grouped by session: every session with a hit (whatever the limit), with its
        // newest hit, in the order of the unlimited search.
        let all = reference(
            agent,
            &Query {
                limit: usize::MAX,
                ..q.clone()
            },
        );
        let mut seen = std::collections::HashSet::new();
        let per_session: Vec<(String, String)> = all
            .into_iter()
            .filter(|h| seen.insert(h.0.clone()))
            .map(|h| (h.0, h.1))
            .collect();
        for s in [None, summaries] {
            let (grouped, _) = search::search_sessions(&files, &q, s, 2, &|| false).unwrap();
            let got: Vec<(String, String)> = grouped
                .iter()
                .map(|h| (h.path.clone(), h.entry_id.clone()))
                .collect();
            assert_eq!(
                got,
                per_session,
                "{what}: {:?} {:?} by session, summaries: {}",
                q.text,
                q.mode,
                s.is_some()
            );
        }
        if let Some(s) = summaries {
            let (with, _) = search::search(&files, &q, Some(s), 2).unwrap();
            assert_eq!(
                key(&with),
                want,
                "{what}: {:?} {:?} with summaries",
                q.text,
                q.mode
            );
            // Snippets and offsets too.
            for (a, b) in plain.iter().zip(&with) {
                assert_eq!((&a.snippet, &a.matches), (&b.snippet, &b.matches));
            }
        }
    }
}

fn build(agent: &Path) -> Summaries {
    let store = Summaries::path_in(agent);
    summary::build(&store, &stats(agent), 2).unwrap().unwrap();
    Summaries::load(&store).unwrap()
}

#[test]
fn scan_and_summaries_agree_with_a_naive_search_through_changes() {
    for seed in [7u64, 0x5eed, 424242] {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path();
        let files = corpus(agent, seed);
        check_all(agent, None, "fresh");
        let s = build(agent);
        assert!(s.len() >= 11);
        check_all(agent, Some(&s), "summarized");

        // Stale summaries (every change below is made after they were built) never hide
        // a hit: the changed files are scanned.
        let mut r = Rng(seed ^ 0xabc);
        // Appends.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&files[0])
            .unwrap();
        f.write_all(entry(&mut r, "new-1", Some("s0-0"), 9999).as_bytes())
            .unwrap();
        f.write_all(b"{\"type\":\"message\",\"id\":\"new-2\",\"parentId\":\"new-1\",\"message\":{\"role\":\"user\",\"content\":\"zebra theme selector appended\",\"timestamp\":99999}}\n").unwrap();
        drop(f);
        // An in-place edit that keeps size and mtime.
        let p = &files[1];
        let old = std::fs::metadata(p).unwrap();
        let body = std::fs::read_to_string(p).unwrap();
        let edited = body.replace("zebra", "ZEBRO").replace("theme", "thyme");
        assert_eq!(edited.len(), body.len());
        sessiontree_testkit::files::overwrite_unseen(p, edited.as_bytes());
        assert_eq!(std::fs::metadata(p).unwrap().len(), old.len());
        // A replacement by a new inode with the same size and mtime (sed -i).
        let p = &files[2];
        let body = std::fs::read_to_string(p).unwrap();
        sessiontree_testkit::files::replace_unseen(
            p,
            body.replace("selector", "SELECTOR").as_bytes(),
        );
        // A deletion, and a new file.
        std::fs::remove_file(&files[5]).unwrap();
        let extra = files[6].with_file_name("late.jsonl");
        std::fs::write(&extra, session(&mut r, "late", "/w/p0", 20)).unwrap();
        check_all(agent, Some(&s), "stale summaries");
        // Rebuilt: the changed records are made again, the rest kept.
        let s2 = build(agent);
        check_all(agent, Some(&s2), "rebuilt");
        assert!(s2.covers_exactly(&stats(agent)));
        assert!(!s.covers_exactly(&stats(agent)));
    }
}

#[test]
fn summaries_rule_files_out_and_stop_at_the_newest_hits() {
    let a = sessiontree_testkit::AgentDir::new();
    let (agent, dir) = (a.path(), a.folder("/w"));
    for k in 0..40u64 {
        let mut s = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"s{k}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n"
        );
        for m in 0..20u64 {
            let word = if k == 17 && m == 3 {
                "narwhal"
            } else {
                "walrus"
            };
            s += &format!(
                "{{\"type\":\"message\",\"id\":\"e{m}\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"the {word} number {m}\",\"timestamp\":{}}}}}\n",
                k * 1000 + m
            );
        }
        std::fs::write(dir.join(format!("s{k}.jsonl")), s).unwrap();
    }
    let s = build(agent);
    let files = stats(agent);
    let q = |t: &str, limit| Query::new(t, Mode::Words, limit);
    let (h, st) = search::search(&files, &q("narwhal", 10), Some(&s), 1).unwrap();
    assert_eq!(h.len(), 1);
    assert_eq!((st.scanned, st.ruled_out), (1, 39), "{st:?}");
    // Every file has "walrus": the newest 5 hits are in the newest file, the rest is
    // never read.
    let (h, st) = search::search(&files, &q("walrus", 5), Some(&s), 1).unwrap();
    assert_eq!(h.len(), 5);
    assert!(h.iter().all(|h| h.path.ends_with("s39.jsonl")));
    assert!(st.scanned <= 2, "{st:?}");
    let (h2, _) = search::search(&files, &q("walrus", 5), None, 2).unwrap();
    assert_eq!(key(&h), key(&h2));
    // Told to stop: no file is read after that (a client that went away).
    let (h, st) = search::search_until(&files, &q("walrus", 1000), None, 2, &|| true).unwrap();
    assert_eq!((h.len(), st.scanned), (0, 0), "{st:?}");
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let after_three = || asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 3;
    let (_, st) = search::search_until(&files, &q("walrus", 1000), None, 1, &after_three).unwrap();
    assert_eq!(st.scanned, 3, "{st:?}");
    let (h, st) = search::search_until(&files, &q("walrus", 1000), None, 1, &|| false).unwrap();
    assert_eq!((h.len(), st.scanned), (799, 40), "{st:?}");
}

#[test]
fn a_damaged_summary_record_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    corpus(agent, 99);
    let s = build(agent);
    let n = s.len();
    drop(s);
    let store = Summaries::path_in(agent);
    let mut b = std::fs::read(&store).unwrap();
    // Flip one bit in every 4 KiB of the store: each hit record is left out, not trusted.
    let mut at = 100;
    while at < b.len() {
        b[at] ^= 0x10;
        at += 4096;
    }
    std::fs::write(&store, &b).unwrap();
    let s = Summaries::load(&store).unwrap();
    assert!(s.damaged > 0 && s.len() < n);
    check_all(agent, Some(&s), "damaged summaries");
}

/// A store cut anywhere, or with bytes changed anywhere (lengths, counts, path lengths,
/// bitmap sizes), loads without a panic and without sizing anything by what it claims; a
/// lookup of every file in it then answers or does not, and never panics either.
#[test]
fn a_cut_or_scrambled_store_never_panics_the_load_or_a_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    corpus(agent, 5);
    drop(build(agent));
    let store = Summaries::path_in(agent);
    let good = std::fs::read(&store).unwrap();
    let files = stats(agent);
    let look = |b: &[u8]| {
        std::fs::write(&store, b).unwrap();
        if let Some(s) = Summaries::load(&store) {
            for (p, st) in &files {
                if let Some(st) = st {
                    if let Some(f) = s.get_valid(p, st) {
                        let _ = f.may_contain(b"walrus");
                    }
                }
            }
        }
    };
    for end in (0..good.len()).step_by(good.len() / 300 + 1) {
        look(&good[..end]);
    }
    let mut r = Rng(0x5ca7);
    for _ in 0..400 {
        let mut b = good.clone();
        for _ in 0..1 + r.pick(4) {
            let at = r.pick(b.len());
            b[at] = match r.pick(3) {
                0 => 0xff,
                1 => 0,
                _ => r.next() as u8,
            };
        }
        look(&b);
    }
}

const HOUR_MS: u64 = 3_600_000;

/// Sets a file's mtime to `ms` after the epoch.
fn set_mtime(p: &Path, ms: u64) {
    std::fs::File::options()
        .append(true)
        .open(p)
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        .unwrap();
}

/// A session file of `n` user messages saying `word`, the m-th at `t0 + m` ms, with the
/// mtime of its last entry (as Pi leaves a file).
fn timed_session(p: &Path, id: &str, word: &str, t0: u64, n: u64) {
    let mut s = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n"
    );
    for m in 0..n {
        s += &format!(
            "{{\"type\":\"message\",\"id\":\"{id}-{m}\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"the {word} number {m}\",\"timestamp\":{}}}}}\n",
            t0 + m
        );
    }
    std::fs::write(p, s).unwrap();
    set_mtime(p, t0 + n - 1);
}

#[test]
fn without_summaries_files_are_read_newest_mtime_first_and_older_ones_left_unread() {
    let a = sessiontree_testkit::AgentDir::new();
    let (agent, dir) = (a.path(), a.folder("/w"));
    // Sessions two hours apart (more than the mtime margin), listed oldest first.
    for k in 0..30u64 {
        timed_session(
            &dir.join(format!("s{k:02}.jsonl")),
            &format!("s{k}"),
            "walrus",
            k * 2 * HOUR_MS,
            20,
        );
    }
    let files = stats(agent);
    let q = Query::new("walrus", Mode::Words, 5);
    let unbounded = |q: &Query| {
        search::search_with(&files, q, None, search::Unsummarized::Unbounded, 2, &|| {
            false
        })
        .unwrap()
    };
    let (h, st) = search::search(&files, &q, None, 1).unwrap();
    assert_eq!(key(&h), key(&unbounded(&q).0));
    assert!(h.iter().all(|h| h.path.ends_with("s29.jsonl")), "{h:?}");
    assert_eq!((st.scanned, st.skipped_older), (1, 29), "{st:?}");
    // Unbounded, every file is read.
    assert_eq!(unbounded(&q).1.scanned, 30);
    // A file whose newest entry is up to the margin newer than its mtime is still read in
    // time: its hit comes first.
    let late = dir.join("s10.jsonl");
    let newest = 29 * 2 * HOUR_MS + 1000;
    timed_session(&late, "late", "walrus", newest, 1);
    set_mtime(&late, newest - HOUR_MS / 2);
    let files = stats(agent);
    let (h, _) = search::search(&files, &q, None, 1).unwrap();
    assert_eq!(h[0].entry_id, "late-0");
    // The assumption: a file whose mtime was set back further than the margin (touch -d,
    // a copy that kept an older file's time) is left unread once newer hits are certain.
    // --no-index (Unbounded) and summaries (which know each file's newest entry) find it.
    set_mtime(&late, newest - 2 * HOUR_MS);
    let files = stats(agent);
    let (h, _) = search::search(&files, &q, None, 1).unwrap();
    assert!(h.iter().all(|h| h.path.ends_with("s29.jsonl")), "{h:?}");
    let (h, _) = search::search_with(
        &files,
        &q,
        None,
        search::Unsummarized::Unbounded,
        1,
        &|| false,
    )
    .unwrap();
    assert_eq!(h[0].entry_id, "late-0");
    let s = build(agent);
    let (h, _) = search::search(&files, &q, Some(&s), 1).unwrap();
    assert_eq!(h[0].entry_id, "late-0");
}

#[test]
fn candidate_lines_that_cannot_rank_are_not_decoded_and_the_hits_stay_the_same() {
    let a = sessiontree_testkit::AgentDir::new();
    let (agent, dir) = (a.path(), a.folder("/w"));
    let p = dir.join("s.jsonl");
    let mut s = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    );
    let line = |id: &str, entry_ts: &str, msg_ts: &str| {
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":null,\"timestamp\":{entry_ts},\"message\":{{\"role\":\"user\",\"content\":\"a walrus here\"{msg_ts}}}}}\n"
        )
    };
    // An old one, and lines no entry comes of.
    s += &line("old", "\"2025-01-01T00:00:00.000Z\"", ",\"timestamp\":7");
    s += "{\"type\":\"message\",\"id\":\"bad\",\"message\":{\"role\":\"user\",\"content\":\"walrus\"\n";
    s += "[\"walrus\"]\n";
    // Oldest first, as entries are appended: read from the end, the heap fills with the
    // newest and the rest cannot enter.
    for m in 0..100u64 {
        s += &line(
            &format!("plain-{m}"),
            "\"2025-01-01T00:00:00.000Z\"",
            &format!(",\"timestamp\":{}", 1_000_000 + m),
        );
    }
    // Lines whose time only an exact reading gets right, each newer than all above: the
    // last duplicate key wins, an escaped key is the key, a message time that is no
    // number gives way to the entry's, nested objects' keys are not the message's.
    s += &line(
        "dup",
        "\"2025-01-01T00:00:00.000Z\"",
        ",\"timestamp\":5,\"timestamp\":2000001",
    );
    s += &line(
        "escaped",
        "\"2025-01-01T00:00:00.000Z\"",
        ",\"time\\u0073tamp\":2000002",
    );
    s += &line(
        "string-ts",
        "\"2026-01-01T00:00:00.000Z\"",
        ",\"timestamp\":\"9\"",
    );
    s += &line(
        "nested",
        "3000003",
        ",\"x\":{\"timestamp\":1},\"timestamp\":3000002",
    );
    s += &line("entry-dup", "1,\"timestamp\":3000001", "");
    s += &line(
        "tie-a",
        "\"2025-01-01T00:00:00.000Z\"",
        ",\"timestamp\":1000099",
    );
    // Two entries on one line (a lone \r between them), both newest.
    s.pop();
    s += "\r";
    s += &line(
        "cr",
        "\"2025-01-01T00:00:00.000Z\"",
        ",\"timestamp\":1767225600001",
    );
    std::fs::write(&p, s).unwrap();
    let files = stats(agent);
    let (all, st) =
        search::search(&files, &Query::new("walrus", Mode::Words, 1000), None, 1).unwrap();
    assert_eq!(st.ranked_out_lines, 0, "{st:?}");
    let order: Vec<&str> = all.iter().take(8).map(|h| h.entry_id.as_str()).collect();
    assert_eq!(
        order,
        [
            "cr",
            "string-ts",
            "nested",
            "entry-dup",
            "escaped",
            "dup",
            "plain-99",
            "tie-a"
        ]
    );
    for limit in [1, 2, 3, 5, 8, 20] {
        let (h, st) =
            search::search(&files, &Query::new("walrus", Mode::Words, limit), None, 1).unwrap();
        let want: Vec<_> = all.iter().take(limit).cloned().collect();
        assert_eq!(key(&h), key(&want), "limit {limit}");
        for (a, b) in h.iter().zip(&want) {
            assert_eq!(
                (&a.snippet, &a.matches, a.ts_ms),
                (&b.snippet, &b.matches, b.ts_ms)
            );
        }
        assert!(
            st.ranked_out_lines > 0 && st.decoded_lines < 80,
            "limit {limit}: {st:?}"
        );
    }
}

/// Over 4,096 files the summaries are looked up on several threads, in parts: the work
/// list, the counts and so the hits are those of one thread, and the count of files with a
/// valid summary says what a second look at each would (`covers_exactly`).
#[test]
fn summaries_looked_up_in_parts_find_what_one_thread_finds() {
    let a = sessiontree_testkit::AgentDir::new();
    let agent = a.path();
    let dirs: Vec<PathBuf> = (0..7).map(|d| a.folder(&format!("/w/p{d}"))).collect();
    let n = 5000u64;
    for k in 0..n {
        let word = if k % 500 == 7 { "narwhal" } else { "walrus" };
        let s = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"s{k}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w/p{d}\"}}\n{{\"type\":\"message\",\"id\":\"e{k}\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"the {word} {k}\",\"timestamp\":{}}}}}\n",
            1_700_000_000_000 + k * 1000,
            d = k % 7
        );
        std::fs::write(dirs[(k % 7) as usize].join(format!("s{k}.jsonl")), s).unwrap();
    }
    let s = build(agent);
    let files = stats(agent);
    assert_eq!(files.len(), n as usize);
    for (word, limit, hits) in [
        ("narwhal", 100, 10),
        ("walrus", 3, 3),
        ("walrus", 10_000, 4990),
    ] {
        let q = Query::new(word, Mode::Words, limit);
        let (one, st1) = search::search(&files, &q, Some(&s), 1).unwrap();
        assert_eq!(one.len(), hits, "{word}");
        for threads in [2, 3] {
            let (h, st) = search::search(&files, &q, Some(&s), threads).unwrap();
            assert_eq!(key(&h), key(&one), "{word} on {threads} threads");
            assert_eq!(
                (st.summarized, st.ruled_out),
                (st1.summarized, st1.ruled_out)
            );
            assert_eq!(st.summarized, n as usize);
            let (g, sg) =
                search::search_sessions(&files, &q, Some(&s), threads, &|| false).unwrap();
            // Grouped by session there is no limit: every session with a hit.
            let sessions = if word == "narwhal" { 10 } else { 4990 };
            assert_eq!(g.len(), sessions, "{word} grouped on {threads} threads");
            assert_eq!(sg.ruled_out, st1.ruled_out);
        }
        if word == "narwhal" {
            assert_eq!(st1.ruled_out, n as usize - 10);
        }
        assert!(s.covers_exactly_counted(&files, st1.summarized));
        assert!(s.covers_exactly(&files));
    }
    // One file changed after the build: its summary no longer counts, and the counted
    // answer says so as the full look does.
    let p = dirs[3].join("s3.jsonl");
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(b"{\"type\":\"message\",\"id\":\"late\",\"parentId\":\"e3\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"a late narwhal\",\"timestamp\":1800000000000}}\n").unwrap();
    drop(f);
    let files = stats(agent);
    let q = Query::new("narwhal", Mode::Words, 100);
    let (h, st) = search::search(&files, &q, Some(&s), 2).unwrap();
    assert_eq!(h.len(), 11);
    assert_eq!(h[0].entry_id, "late");
    assert_eq!(st.summarized, n as usize - 1);
    assert!(!s.covers_exactly_counted(&files, st.summarized));
    assert!(!s.covers_exactly(&files));
}
