//! `sessiontree export`: Markdown and JSONL against expected files, the JSONL branch loads
//! to the same context (here and in the reference), and the HTML page in headless Chromium.
//!
//! The browser test needs /usr/bin/chromium (`apt-get install chromium`) and
//! `export-tests/node_modules` (`cd export-tests && npm ci`). Without them it says so and
//! passes, unless `SESSIONTREE_REQUIRE_BROWSER=1`, where it fails. Set
//! `SESSIONTREE_UPDATE_EXPECTED=1` to rewrite tests/data/export-*, and
//! `SESSIONTREE_UPDATE_SCREENSHOT=1` to rewrite docs/export-screenshot.png.

use sessiontree_testkit::{browser, interop};

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    sessiontree_testkit::root()
}

fn example() -> PathBuf {
    root().join("export-tests/example.jsonl")
}

fn export(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_sessiontree"))
        .arg("export")
        .args(args)
        .output()
        .expect("run sessiontree");
    sessiontree_testkit::run::ok(o)
}

fn expect_file(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    if std::env::var("SESSIONTREE_UPDATE_EXPECTED").as_deref() == Ok("1") {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (SESSIONTREE_UPDATE_EXPECTED=1 writes it)",
            path.display()
        )
    });
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from the expected file at line {}:\n expected: {:?}\n actual:   {:?}",
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}

#[test]
fn markdown_of_the_current_branch_matches_the_expected_file() {
    let f = example();
    let md = export(&[f.to_str().unwrap(), "--format", "md"]);
    expect_file("export-example.md", &md);
    // HTML in text is escaped, fences outgrow the backticks inside.
    assert!(!md.contains("<script>"));
    let all = export(&[f.to_str().unwrap(), "--format", "md", "--all-branches"]);
    expect_file("export-example-all.md", &all);
    assert!(all.contains("&lt;/script&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;"));
    assert!(!all.contains("<script>window") && !all.contains("<img src"));
}

#[test]
fn markdown_filters_leave_out_and_redact() {
    let f = example();
    let md = export(&[
        f.to_str().unwrap(),
        "--format",
        "md",
        "--leaf",
        "b1",
        "--no-thinking",
        "--no-tool-output",
        "--no-images",
        "--redact",
        "(?i)verbose",
        "--redact",
        "build\\.sh",
    ]);
    expect_file("export-example-filtered.md", &md);
    assert!(!md.to_lowercase().contains("verbose"));
    assert!(!md.contains("build.sh"));
    assert!(!md.contains("<summary>Thinking</summary>"));
    assert!(!md.contains("echo step"));
    assert!(md.contains("[output omitted]"));
    assert!(md.contains("\\[image omitted\\]"));
}

/// The JSONL export with its fresh header id, time and label ids replaced by placeholders.
fn normalized(jsonl: &str) -> (Value, String) {
    let mut lines = jsonl.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let mut out = String::new();
    let mut n = 0;
    let mut renames: Vec<(String, String)> = Vec::new();
    for l in lines {
        let v: Value = serde_json::from_str(l).unwrap();
        let mut line = l.to_string();
        if v["type"] == "label" {
            n += 1;
            renames.push((v["id"].as_str().unwrap().to_string(), format!("LABEL{n}")));
        }
        for (from, to) in &renames {
            line = line.replace(&format!("\"{from}\""), &format!("\"{to}\""));
        }
        out.push_str(&line);
        out.push('\n');
    }
    (header, out)
}

#[test]
fn jsonl_branch_matches_the_expected_file_and_gives_the_same_context() {
    let f = example();
    let src = std::fs::canonicalize(&f).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (leaf, expected) in [
        (None, "export-example-branch.jsonl"),
        (Some("b1"), "export-example-b1.jsonl"),
    ] {
        let out = dir.path().join(expected);
        let mut args = vec![
            f.to_str().unwrap(),
            "--format",
            "jsonl",
            "-o",
            out.to_str().unwrap(),
        ];
        if let Some(l) = leaf {
            args.extend(["--leaf", l]);
        }
        export(&args);
        let text = std::fs::read_to_string(&out).unwrap();
        let (header, body) = normalized(&text);
        assert_eq!(header["type"], "session");
        assert_eq!(header["version"], 3);
        assert_eq!(header["cwd"], "/home/me/demo");
        assert_eq!(header["parentSession"], json!(src.to_str().unwrap()));
        let id = header["id"].as_str().unwrap();
        assert!(id.len() == 36 && id.as_bytes()[14] == b'7', "UUID v7: {id}");
        assert_ne!(id, "0194262a-0000-7000-8000-00000000d3e0");
        expect_file(expected, &body);
        // Every line canonical.
        for l in text.lines() {
            assert_eq!(sessiontree::json::canonicalize(l.as_bytes()).unwrap(), l);
        }
        // The same context as the source branch.
        let a = sessiontree::load(&f).unwrap();
        let b = sessiontree::load(&out).unwrap();
        let leaf_arg = match leaf {
            Some(l) => sessiontree::LeafArg::Id(l),
            None => sessiontree::LeafArg::Default,
        };
        let ours = sessiontree::build_context(&a.tree, leaf_arg).to_json();
        let theirs = sessiontree::build_context(&b.tree, sessiontree::LeafArg::Default).to_json();
        assert_eq!(ours, theirs);
        assert_eq!(b.tree.diagnostics().len(), 0, "{:?}", b.tree.diagnostics());
        // Labels on the path are re-created.
        let labels: Vec<(String, String)> = b
            .tree
            .labels()
            .into_iter()
            .map(|(t, l)| (t.to_string(), l.label.clone()))
            .collect();
        if leaf.is_none() {
            assert_eq!(
                labels,
                [
                    ("u1".into(), "\"start\"".into()),
                    ("a6".into(), "\"final answer\"".into())
                ]
            );
        }
        // And in the reference, when it is installed.
        if let Some(ctx) = reference_context(&out) {
            let ours: Value = serde_json::from_str(&ours).unwrap();
            assert_eq!(ctx, ours, "the reference reads another context");
        }
    }
}

/// The default context of a file as the reference reads it (`None` without interop/node_modules,
/// which fails instead under `SESSIONTREE_REQUIRE_INTEROP=1`).
fn reference_context(file: &Path) -> Option<Value> {
    if !interop::available() {
        return None;
    }
    let dump = interop::oracle_dump(&[file], &file.with_extension("oracle.json"), &[]);
    let v: Value = serde_json::from_slice(&dump).unwrap();
    let r = &v["results"][0];
    assert!(
        r["error"].is_null(),
        "the reference cannot read it: {}",
        r["error"]
    );
    interop::default_context(r).cloned()
}

#[test]
fn html_is_one_file_and_the_data_cannot_break_out() {
    let f = example();
    let html = export(&[f.to_str().unwrap(), "--format", "html"]);
    assert_eq!(
        html.matches("<script").count(),
        2,
        "one data block, one script"
    );
    assert_eq!(html.matches("</script>").count(), 2);
    assert!(!html.contains("window.__pwned=1\">"));
    assert!(html.contains("\\u003c/script\\u003e\\u003cscript\\u003ewindow.__pwned=1"));
    for bad in ["src=\"http", "href=\"http", "@import", "url(http", "<link"] {
        assert!(!html.contains(bad), "{bad}");
    }
    assert!(html.contains("Content-Security-Policy"));
    assert!(html.contains("<title>Demo: a verbose flag</title>"));
    // The embedded data is the whole session.
    let start = html.find("id=\"session-data\">").unwrap() + "id=\"session-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: Value = serde_json::from_str(&html[start..end]).unwrap();
    assert_eq!(data["entries"].as_array().unwrap().len(), 23);
    assert_eq!(data["name"], "Demo: a verbose flag");
    assert_eq!(data["labels"], json!({"3": "start", "19": "final answer"}));
}

fn ids(path: &[&sessiontree::Entry]) -> Vec<String> {
    path.iter().map(|e| e.id().unwrap().to_string()).collect()
}

/// `sessiontree export SRC --format html -o OUT`.
fn export_html(src: &Path, out: &Path) {
    export(&[
        src.to_str().unwrap(),
        "--format",
        "html",
        "-o",
        out.to_str().unwrap(),
    ]);
}

#[test]
fn html_in_headless_chromium() {
    let Some(b) = browser::find() else { return };
    let f = example();
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("example.html");
    export_html(&f, &html);
    let l = sessiontree::load(&f).unwrap();
    let t = &l.tree;
    let leaf = t.leaf_id().unwrap().to_string();
    let clicks: Vec<Value> = ["b1", "r1", "a3", "cm1", "n1"]
        .iter()
        .map(|id| json!({"id": id, "path": ids(&t.get_branch(Some(id)))}))
        .collect();
    let leaf_path = ids(&t.get_branch(None));
    let search_ids: Vec<&String> = leaf_path.iter().filter(|i| *i == "cm1").collect();
    let expect = json!({
        "name": t.name().unwrap(),
        "leaf": leaf,
        "leafPath": leaf_path,
        "labels": {"u1": "start", "a6": "final answer"},
        "clicks": clicks,
        "search": {"term": "posix", "ids": search_ids},
        "hostileId": "u2",
    });
    let expect_path = dir.path().join("expect.json");
    std::fs::write(&expect_path, expect.to_string()).unwrap();
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("..");
    let shot = target.join("export-screenshot.png");
    let opts = ["--expect", expect_path.to_str().unwrap()];
    let stdout = b.page("browser checks", &html, &opts, Some(&shot));
    let r: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(r["failures"], json!([]));
    assert_eq!(r["requests"], json!([]));
    eprintln!(
        "browser: loaded in {} ms, {} clicks checked",
        r["loadMs"], r["clicks"]
    );
    assert!(shot.exists());
    if std::env::var("SESSIONTREE_UPDATE_SCREENSHOT").as_deref() == Ok("1") {
        // The README's picture: the bundled example session.
        let demo = dir.path().join("demo.html");
        let src = root().join("examples/demo-session.jsonl");
        export_html(&src, &demo);
        let docs = root().join("docs/export-screenshot.png");
        let opts = ["--only-screenshot", "--viewport", "1024x640"];
        b.page("the README's screenshot", &demo, &opts, Some(&docs));
    }
}

#[test]
fn export_refuses_to_overwrite_its_source_and_unknown_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.jsonl");
    std::fs::copy(example(), &f).unwrap();
    let before = std::fs::read(&f).unwrap();
    for args in [
        vec!["--format", "jsonl", "-o", f.to_str().unwrap()],
        vec!["--format", "md", "--leaf", "nope"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sessiontree"))
            .arg("export")
            .arg(&f)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    assert_eq!(std::fs::read(&f).unwrap(), before);
}

/// Every session the reference's generator writes (all entry types, hostile text, older
/// releases) exports: the page's data stays inside its script and parses, Markdown renders,
/// and the JSONL branch gives the source branch's context, here and in the reference.
#[test]
fn generated_sessions_export_and_branches_read_the_same_in_the_reference() {
    let Some(dir) = interop::temp_dir() else {
        return;
    };
    use sessiontree_export::{self as export, ExportOptions};
    let gen = dir.path().join("gen");
    interop::generate(&gen, 6, 30, &[]);
    let files = sessiontree_testkit::files::jsonl_under(&gen);
    let outdir = dir.path().join("out");
    std::fs::create_dir(&outdir).unwrap();
    let mut exported = Vec::new();
    let mut pages = Vec::new();
    let opts = ExportOptions::default();
    for (n, f) in files.iter().enumerate() {
        let Ok(l) = sessiontree::load(f) else {
            continue;
        };
        let t = &l.tree;
        let html = export::html(t, &opts).unwrap();
        assert_eq!(html.matches("</script>").count(), 2, "{}", f.display());
        let start = html.find("id=\"session-data\">").unwrap() + "id=\"session-data\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        // Valid as JSON.parse sees it (serde_json is stricter: depth, lone surrogates, 1e400).
        sessiontree::json::Raw::parse(&html.as_bytes()[start..end])
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let page = outdir.join(format!("{n}.html"));
        std::fs::write(&page, &html).unwrap();
        pages.push(page.to_string_lossy().into_owned());
        export::markdown(t, &opts).unwrap();
        let Some(leaf) = t.leaf_id() else { continue };
        let out = outdir.join(format!("{n}.jsonl"));
        std::fs::write(&out, export::jsonl(t, &f.to_string_lossy(), &opts).unwrap()).unwrap();
        let ours = sessiontree::build_context(t, sessiontree::LeafArg::Id(leaf)).to_json();
        let b = sessiontree::load(&out).unwrap();
        let again = sessiontree::build_context(&b.tree, sessiontree::LeafArg::Default).to_json();
        // Equal as JSON values (the export's lines are canonical: `\ud83d\ude00` became 😀).
        let canon = |s: &str| sessiontree::json::canonicalize(s.as_bytes()).unwrap();
        assert_eq!(canon(&ours), canon(&again), "{}", f.display());
        exported.push((out, canon(&ours), f.clone()));
    }
    assert!(
        exported.len() >= 10,
        "only {} sessions exported",
        exported.len()
    );
    // Every page opens in the browser without a page error (hostile text, lone surrogates,
    // 1e400, deep nesting, null messages, cycles).
    if let Some(b) = browser::find() {
        let list = dir.path().join("pages.txt");
        // Every other page keeps this under half a minute.
        let some: Vec<&String> = pages.iter().step_by(2).collect();
        std::fs::write(
            &list,
            some.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        )
        .unwrap();
        let out = b.run(
            "pages in the browser",
            &["browser.mjs", "--smoke", list.to_str().unwrap()],
        );
        eprintln!("browser: {}", out.trim());
    }
    // One reference process for all of them.
    let paths: Vec<&PathBuf> = exported.iter().map(|(p, _, _)| p).collect();
    let bytes = interop::oracle_dump(&paths, &dir.path().join("oracle.json"), &[]);
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    de.disable_recursion_limit();
    let v: Value = serde::Deserialize::deserialize(&mut de).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), exported.len());
    let mut mismatches = Vec::new();
    for ((out, ours, src), r) in exported.iter().zip(results) {
        assert!(
            r["error"].is_null(),
            "the reference cannot read {}: {}",
            out.display(),
            r["error"]
        );
        let theirs = interop::default_context(r).unwrap().clone();
        if theirs.is_null() {
            // The reference throws building this context (a message entry without a
            // message): it does so for the source file too.
            continue;
        }
        let mut de = serde_json::Deserializer::from_str(ours);
        de.disable_recursion_limit();
        let Ok(ours) = <Value as serde::Deserialize>::deserialize(&mut de) else {
            continue;
        };
        if ours != theirs {
            mismatches.push(format!(
                "{} (from {}): {}",
                out.display(),
                src.display(),
                first_diff(&ours, &theirs, "")
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "the reference reads other contexts: {mismatches:?}"
    );
}

fn first_diff(a: &Value, b: &Value, at: &str) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if w == v => {}
                    Some(w) => return first_diff(v, w, &format!("{at}.{k}")),
                    None => return format!("{at}.{k} only in ours"),
                }
            }
            format!(
                "{at}: keys {:?} vs {:?}",
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>()
            )
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                if v != w {
                    return first_diff(v, w, &format!("{at}[{i}]"));
                }
            }
            String::new()
        }
        _ => {
            let (sa, sb) = (a.to_string(), b.to_string());
            format!(
                "{at}: {} vs {}",
                &sa[..sa.len().min(300)],
                &sb[..sb.len().min(300)]
            )
        }
    }
}

/// A 3,000-message session: the page renders the path in chunks as it scrolls and folds the
/// long chain in the tree.
#[test]
fn html_long_session_renders_lazily_in_chromium() {
    let Some(b) = browser::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("long.jsonl");
    let mut s = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"0194262a-0000-7000-8000-000000000010\",\"timestamp\":\"2025-01-02T10:00:00.000Z\",\"cwd\":\"/tmp\"}\n",
    );
    for i in 1..=3000u32 {
        let parent = if i == 1 {
            "null".to_string()
        } else {
            format!("\"{:08x}\"", i - 1)
        };
        let role = if i % 2 == 1 { "user" } else { "assistant" };
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{i:08x}\",\"parentId\":{parent},\"timestamp\":\"2025-01-02T10:{:02}:{:02}.000Z\",\"message\":{{\"role\":\"{role}\",\"content\":[{{\"type\":\"text\",\"text\":\"message {i}\"}}],\"timestamp\":{}}}}}\n",
            i / 60 % 60,
            i % 60,
            1735812000000u64 + i as u64 * 1000
        ));
    }
    std::fs::write(&f, s).unwrap();
    let html = dir.path().join("long.html");
    export_html(&f, &html);
    let stdout = b.page("lazy rendering checks", &html, &["--lazy"], None);
    eprintln!("long session: {}", stdout.trim());
}

/// A 50,000-entry session whose current path forks 200 times (each fork leaves a short side
/// branch): in the page every tree row keeps room for its text (the indentation is bounded;
/// it used to clip the deepest rows to two characters), single-child chains stay flat, and
/// the conversation opens at the leaf (it used to open at the root).
#[test]
fn html_deep_branched_session_stays_readable_in_chromium() {
    let Some(b) = browser::find() else { return };
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("deep.jsonl");
    let (entries, forks, side) = (50_000u32, 200u32, 2u32);
    let main = entries - forks * side;
    let every = main / (forks + 1);
    let mut s = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"0194262a-0000-7000-8000-000000000020\",\"timestamp\":\"2025-01-02T10:00:00.000Z\",\"cwd\":\"/tmp\"}\n",
    );
    let mut next = 1u32;
    let mut line = |s: &mut String, parent: Option<u32>, what: &str| -> u32 {
        let id = next;
        next += 1;
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p:08x}\""));
        let role = if id % 2 == 1 { "user" } else { "assistant" };
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{id:08x}\",\"parentId\":{parent},\"timestamp\":\"2025-01-02T10:00:00.000Z\",\"message\":{{\"role\":\"{role}\",\"content\":[{{\"type\":\"text\",\"text\":\"{what} {id}: please look at the parser and tell me what the deepest branch says\"}}],\"timestamp\":{}}}}}\n",
            1735812000000u64 + id as u64
        ));
        id
    };
    let mut prev = None;
    let mut made_forks = 0;
    for k in 1..=main {
        let id = line(&mut s, prev, "message");
        if k % every == 0 && made_forks < forks {
            // A side branch from this entry, written before the path goes on.
            let mut p = id;
            for _ in 0..side {
                p = line(&mut s, Some(p), "side");
            }
            made_forks += 1;
        }
        prev = Some(id);
    }
    assert_eq!(made_forks, forks);
    std::fs::write(&f, &s).unwrap();
    let l = sessiontree::load(&f).unwrap();
    assert_eq!(l.tree.entries().len(), entries as usize);
    let leaf_path = ids(&l.tree.get_branch(None));
    let html = dir.path().join("deep.html");
    export_html(&f, &html);
    let expect = json!({
        "leaf": l.tree.leaf_id().unwrap(),
        "leafPath": leaf_path,
        "minChars": 24,
    });
    let expect_path = dir.path().join("deep.json");
    std::fs::write(&expect_path, expect.to_string()).unwrap();
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("..")
        .join("export-deep-screenshot.png");
    let opts = ["--deep", expect_path.to_str().unwrap()];
    let stdout = b.page("deep session checks", &html, &opts, Some(&shot));
    eprintln!("deep session: {}", stdout.trim());
}
