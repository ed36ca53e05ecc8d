//! What the import tests of the newer agents share: the fixtures folder, an imported
//! session, and our context of a Pi file as JSON comparable with Node's.
#![allow(dead_code)] // each test file uses its part

use serde_json::{json, Value};
use sessiontree::{build_context, LeafArg};
use sessiontree_import::{write, Conversion, Status};
use std::path::{Path, PathBuf};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A source, its conversion, and the Pi file it was written to.
pub struct Imported {
    pub source: PathBuf,
    pub conv: Conversion,
    pub path: PathBuf,
}

/// Every number as f64, for comparing our JSON with Node's.
pub fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
        o => o.clone(),
    }
}

/// Our context of the Pi file at `leaf` (its own leaf when None), as JSON.
pub fn context_at(path: &Path, leaf: Option<&str>) -> Value {
    let l = sessiontree::load(path).unwrap();
    let leaf = match leaf {
        Some(id) => LeafArg::Id(id),
        None => l.tree.leaf_id().map_or(LeafArg::Null, LeafArg::Id),
    };
    serde_json::from_str(&build_context(&l.tree, leaf).to_json()).unwrap()
}

pub fn our_context(path: &Path) -> Value {
    context_at(path, None)
}

/// The Pi file `path`, written from `conv`, loads without a diagnostic, its leaf is the
/// conversion's last line, and every line of it is canonical.
pub fn check_loads_clean(path: &Path, conv: &Conversion) {
    let l = sessiontree_testkit::load_clean!(path);
    // Pi's rule: the last line is the leaf; it must be the source's active leaf.
    assert_eq!(
        l.tree.leaf_id(),
        Some(conv.lines.last().unwrap().id.as_str())
    );
    for line in std::fs::read_to_string(path).unwrap().lines() {
        assert_eq!(
            sessiontree::json::canonicalize(line.as_bytes()).unwrap(),
            line,
            "{}: not canonical",
            path.display()
        );
    }
}

/// Two imports of the same sources by `import_all`, into two new folders `a` and `b`:
/// `(a, b, the first, the second)`.
pub fn import_twice<T>(
    import_all: impl Fn(&Path) -> Vec<T>,
) -> (tempfile::TempDir, tempfile::TempDir, Vec<T>, Vec<T>) {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let first = import_all(a.path());
    let second = import_all(b.path());
    (a, b, first, second)
}

/// Two imports of the same sources by `import_all` (see [`import_twice`]) checked by
/// [`check_canonical_and_idempotent`]. Gives how many files an import wrote.
pub fn check_importing_twice(import_all: impl Fn(&Path) -> Vec<Imported>) -> usize {
    let (a, b, first, second) = import_twice(import_all);
    check_canonical_and_idempotent(&first, &second, a.path(), b.path());
    first.len()
}

/// Two imports of the same sources into the folders `a` and `b` (`first`, `second`):
/// the same bytes but for the folder, each loads clean ([`check_loads_clean`]); and
/// writing each again into `a` adds nothing.
pub fn check_canonical_and_idempotent(first: &[Imported], second: &[Imported], a: &Path, b: &Path) {
    assert_eq!(first.len(), second.len());
    for (x, y) in first.iter().zip(second) {
        let strip = |p: &Path, dir: &Path| {
            std::fs::read_to_string(p)
                .unwrap()
                .replace(dir.to_str().unwrap(), "DIR")
        };
        assert_eq!(strip(&x.path, a), strip(&y.path, b));
        check_loads_clean(&x.path, &x.conv);
    }
    for i in first {
        check_writing_again_adds_nothing(&i.path, &i.conv, a);
    }
}

/// Writing `conv` again into `dir`, where it was written to `path` (with the parent its
/// header names), leaves the file as it was.
pub fn check_writing_again_adds_nothing(path: &Path, conv: &Conversion, dir: &Path) {
    let before = std::fs::read(path).unwrap();
    let parent = sessiontree::load(path)
        .unwrap()
        .tree
        .header()
        .parent_session();
    let o = write(conv, dir, parent.as_deref(), false).unwrap();
    assert_eq!(o.status, Status::Unchanged, "{}", path.display());
    assert_eq!(std::fs::read(path).unwrap(), before);
}

/// The lines of the Pi file at `path` after its header, as JSON (the entries).
pub fn entries(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The header (first line) of the Pi file at `path`, as JSON.
pub fn header(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// The requests a recording sent to the model (`resume-requests.json` in `dir`).
pub fn resume_requests(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("resume-requests.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v.as_array().unwrap().clone()
}

/// Writes the first `n` of `lines` to `path` (its folder made), each ended by a
/// newline: the source as it was before its line `n` was written.
pub fn write_first_lines(path: &Path, lines: &[&str], n: usize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = lines[..n].iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// The source `text` as it was when the prompt of the recorded request `r` was sent:
/// the whole of it for the last request (`r["last"]`), else its lines before the first
/// that `is_prompt(line, prompt)` accepts, with that line; `expected` (the request's
/// events) then ends with the prompt, which is taken off it.
pub fn source_when_sent(
    text: &str,
    r: &Value,
    expected: &mut Vec<Value>,
    is_prompt: impl Fn(&Value, &str) -> bool,
) -> (String, Option<Value>) {
    if r["last"] == true {
        return (text.to_string(), None);
    }
    let prompt = r["prompt"].as_str().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines
        .iter()
        .position(|l| is_prompt(&serde_json::from_str(l).unwrap(), prompt))
        .unwrap_or_else(|| panic!("no prompt {prompt:?}"));
    assert_eq!(
        expected.pop(),
        Some(json!(["user", prompt])),
        "the request ends with the prompt"
    );
    let before: String = lines[..cut].iter().map(|l| format!("{l}\n")).collect();
    (before, Some(serde_json::from_str(lines[cut]).unwrap()))
}

/// The text and tool call blocks of a Pi assistant message as events, its texts as
/// `[text_tag, text]`, its calls as `["call", id, name, arguments]`.
pub fn assistant_events(m: &Value, text_tag: &str, out: &mut Vec<Value>) {
    for b in m["content"].as_array().unwrap() {
        match b["type"].as_str() {
            Some("text") => out.push(json!([text_tag, b["text"]])),
            Some("toolCall") => out.push(json!(["call", b["id"], b["name"], b["arguments"]])),
            _ => {}
        }
    }
}

/// A recorded request `r` checked against the import of its source as it was then
/// (`conv`, recorded in `/home/dev/demo`), written into `out`: the `events` of our context
/// are `expected` (the request's, less its prompt); the whole source's (`r["last"]`) also
/// holds the model's answer to it, last.
pub fn check_sent(
    conv: &Conversion,
    out: &Path,
    events: impl Fn(&Value) -> Vec<Value>,
    r: &Value,
    expected: &[Value],
) {
    assert_eq!(conv.cwd.as_deref(), Some("/home/dev/demo"));
    let o = write(conv, out, None, false).unwrap();
    let mut got = events(&our_context(&o.path));
    if r["last"] == true {
        assert_eq!(got.pop().unwrap()[0], "model");
    }
    assert_eq!(
        serde_json::to_string_pretty(&got).unwrap(),
        serde_json::to_string_pretty(expected).unwrap(),
        "{} before {:?}",
        conv.source_session_id,
        r["prompt"]
    );
}

/// The sources of the fixture folders `names`, each imported into `dir` by `import_folder`.
pub fn import_folders(
    names: &[&str],
    dir: &Path,
    import_folder: impl Fn(&Path, &Path) -> Vec<Imported>,
) -> Vec<Imported> {
    names
        .iter()
        .flat_map(|n| import_folder(&fixtures().join(n), dir))
        .collect()
}

/// The imports `import_all` makes into a new folder, and Pi's answer (through `interop`)
/// for each, after checking it: Pi opens it with no error and no rewrite, every line
/// canonical, the leaf the conversion's last line (`file` gives an import's source,
/// written file and conversion). None, said on stderr as a skip, without node and
/// `interop/node_modules`.
pub fn pi_opens_all<T>(
    test: &str,
    import_all: impl Fn(&Path) -> Vec<T>,
    file: impl Fn(&T) -> (&Path, &Path, &Conversion),
) -> Option<(tempfile::TempDir, Vec<T>, Vec<Value>)> {
    if !sessiontree_testkit::interop::available() {
        sessiontree_testkit::interop::say_skipped(test);
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let all = import_all(&tmp.path().join("sessions"));
    let paths: Vec<&Path> = all.iter().map(|i| file(i).1).collect();
    let dump =
        sessiontree_testkit::interop::oracle_dump(&paths, &tmp.path().join("oracle.json"), &[]);
    let v: Value = serde_json::from_slice(&dump).unwrap();
    let results = v["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), all.len());
    for (i, r) in all.iter().zip(&results) {
        let (source, _, conv) = file(i);
        let file = source.display();
        assert!(
            r["error"].is_null(),
            "{file}: Pi cannot open it: {}",
            r["error"]
        );
        assert_eq!(r["fileChange"], "none", "{file}: Pi rewrote it");
        assert_eq!(r["nonCanonicalLines"], json!([]), "{file}");
        assert_eq!(r["leafId"], json!(conv.lines.last().unwrap().id), "{file}");
    }
    Some((tmp, all, results))
}

/// Pi opens every import `import_all` makes (see [`pi_opens_all`]) and its context at
/// every leaf it reports equals ours: the imports, and how many contexts it compared for
/// each.
pub fn pi_builds_the_same_contexts(
    test: &str,
    import_all: impl Fn(&Path) -> Vec<Imported>,
) -> Option<(Vec<Imported>, Vec<usize>)> {
    let (_tmp, all, results) = pi_opens_all(test, import_all, |i| {
        (i.source.as_path(), i.path.as_path(), &i.conv)
    })?;
    let counts = all
        .iter()
        .zip(&results)
        .map(|(i, r)| contexts_equal_pis(r, &i.path, &i.source.display()))
        .collect();
    Some((all, counts))
}

/// Every context the oracle built of `path` (`r`, its result: the default leaf and each
/// entry id it was asked for) equals sessiontree's at the same leaf; how many there were.
/// `what` names the file in a failure.
pub fn contexts_equal_pis(r: &Value, path: &Path, what: &dyn std::fmt::Display) -> usize {
    let mut compared = 0;
    for c in r["contexts"].as_array().unwrap() {
        let leaf = match c["kind"].as_str() {
            Some("default") => None,
            Some("id") => c["leaf"].as_str(),
            _ => continue,
        };
        assert_eq!(
            norm(&c["context"]),
            norm(&context_at(path, leaf)),
            "{what}: context at {leaf:?}"
        );
        compared += 1;
    }
    compared
}

/// The source `text` cut at several lines (and a torn half of the next, as an agent in
/// the middle of a write leaves it), written to `part`, converted and imported; then the
/// whole one: the import is only appended to, and `same_as_fresh(grown, fresh, cut)`
/// compares it with a fresh import. Gives how many of the imports were appended to.
pub fn grown_sources_are_appended_to(
    text: &str,
    part_in: impl Fn(&Path) -> PathBuf,
    convert: impl Fn(&Path) -> Conversion,
    same_as_fresh: impl Fn(&Path, &Path, usize),
) -> usize {
    let n = text.lines().count();
    let mut appended = 0;
    for cut in [3, n / 3, n / 2, 2 * n / 3, n - 2] {
        let tmp = tempfile::tempdir().unwrap();
        let part = part_in(tmp.path());
        std::fs::create_dir_all(part.parent().unwrap()).unwrap();
        let head: String = text.lines().take(cut).map(|l| format!("{l}\n")).collect();
        let torn = &text.lines().nth(cut).unwrap()[..20];
        std::fs::write(&part, format!("{head}{torn}")).unwrap();
        let out = tmp.path().join("out");
        let c1 = convert(&part);
        assert!(
            c1.problems.is_empty(),
            "a torn last line is not a problem yet"
        );
        if c1.lines.is_empty() {
            continue;
        }
        let o1 = write(&c1, &out, None, false).unwrap();
        std::fs::write(&part, text).unwrap();
        let c2 = convert(&part);
        let o2 = write(&c2, &out, None, false).unwrap();
        assert_eq!(o2.path, o1.path);
        let grown = std::fs::read_to_string(&o2.path).unwrap();
        assert!(grown.starts_with(&String::from_utf8(c1.to_bytes(None)).unwrap()));
        if o2.status == Status::Appended {
            appended += 1;
        }
        let fresh = write(&c2, &tmp.path().join("fresh"), None, false).unwrap();
        same_as_fresh(&o2.path, &fresh.path, cut);
    }
    appended
}
