//! `sessiontree secrets` (findings, masked previews, exit codes, escaping) and the exports'
//! redaction by default: no credential in what `export` writes (html, md, jsonl), and the
//! redacted JSONL opens in Pi 1.6.0 with the same entries, ids and tree as the unredacted one.

use sessiontree_testkit::creds;
use sessiontree_testkit::interop;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sessiontree"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run sessiontree")
}

/// A session holding every true positive, each in a different kind of field, on a tree
/// with branches; the secrets it holds.
fn session(dir: &Path) -> (PathBuf, Vec<String>) {
    let tps = creds::true_positives();
    let mut lines = vec![creds::HEADER.to_string()];
    let mut secrets = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for (i, (_, text, secret)) in tps.iter().enumerate() {
        secrets.push(secret.clone());
        let fields = creds::fields(text);
        let (line, _) = &fields[i % fields.len()];
        let mut v: Value = serde_json::from_str(line).unwrap();
        let id = format!("e{i:07x}");
        // Every fourth entry hangs under an older one: the tree has branches.
        let parent = match ids.len() {
            0 => Value::Null,
            l if i % 4 == 3 => Value::String(ids[l / 2].clone()),
            l => Value::String(ids[l - 1].clone()),
        };
        v["id"] = Value::String(id.clone());
        v["parentId"] = parent;
        for k in ["targetId", "fromId", "firstKeptEntryId"] {
            if v.get(k).is_some() {
                v[k] = Value::String(ids.last().cloned().unwrap_or_else(|| id.clone()));
            }
        }
        lines.push(serde_json::to_string(&v).unwrap());
        ids.push(id);
    }
    let f = dir.join("leaky.jsonl");
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    (f, secrets)
}

#[test]
fn secrets_reports_every_credential_masked_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let (f, secrets) = session(dir.path());
    let out = run(&["secrets", f.to_str().unwrap(), "--json"]);
    let stdout = sessiontree_testkit::run::exit(&out, 1);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    let kinds: std::collections::BTreeSet<&str> = findings
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    for (kind, _, _) in creds::true_positives() {
        assert!(kinds.contains(kind), "{kind} missing: {kinds:?}");
    }
    for s in &secrets {
        assert!(!stdout.contains(s.as_str()), "a secret in the JSON output");
    }
    assert!(findings
        .iter()
        .all(|f| f["entryId"].as_str().unwrap().starts_with('e')));
    assert_eq!(v["files"], 1);
    let human = run(&["secrets", f.to_str().unwrap()]);
    assert_eq!(human.status.code(), Some(1));
    let text = String::from_utf8(human.stdout).unwrap();
    assert_eq!(text.lines().count(), findings.len());
    assert!(
        text.contains(&format!("{}#e0000000  private-key  ", f.display())),
        "{text}"
    );
    for s in &secrets {
        assert!(!text.contains(s.as_str()), "a secret in the text output");
    }
    // A folder, and a clean file: 0.
    let clean = dir.path().join("sub/clean.jsonl");
    std::fs::create_dir_all(clean.parent().unwrap()).unwrap();
    std::fs::write(&clean, format!("{}\n", creds::HEADER)).unwrap();
    assert_eq!(
        run(&["secrets", clean.to_str().unwrap()]).status.code(),
        Some(0)
    );
    let all = run(&["secrets", dir.path().to_str().unwrap(), "--json"]);
    let v: Value = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(v["files"], 2);
    assert_eq!(v["filesWithFindings"], 1);
    // Errors: 2.
    assert_eq!(
        run(&["secrets", "/nonexistent.jsonl"]).status.code(),
        Some(2)
    );
    let not = dir.path().join("not.jsonl");
    std::fs::write(&not, "{\"a\":1}\n").unwrap();
    let o = run(&["secrets", not.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a session file"));
}

#[test]
fn untrusted_text_reaches_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("esc.jsonl");
    let line = r#"{"type":"custom","customType":"x","data":{"\u001b]0;pwned\u0007password":"Zq8vLm2XrT9wPk4N"},"id":"id\u001b[2J\u202e","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}"#;
    std::fs::write(&f, format!("{}\n{line}\n", creds::HEADER)).unwrap();
    let o = run(&["secrets", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(!text.bytes().any(|b| b == 0x1b || b == 0x07), "{text:?}");
    assert!(text.contains("secret-assignment"), "{text}");
    // The CLI's one sanitizer: controls as `\x1b`, bidi overrides as `\u{202e}`.
    assert!(text.contains("\\x1b"), "{text}");
    assert!(
        !text.contains('\u{202e}') && text.contains("\\u{202e}"),
        "{text}"
    );
}

fn export(f: &Path, format: &str, extra: &[&str], out: Option<&Path>) -> String {
    let mut args = vec!["export", f.to_str().unwrap(), "--format", format];
    args.extend(extra);
    if let Some(o) = out {
        args.extend(["-o", o.to_str().unwrap()]);
    }
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    match out {
        Some(p) => std::fs::read_to_string(p).unwrap(),
        None => String::from_utf8(o.stdout).unwrap(),
    }
}

#[test]
fn exports_redact_by_default_and_keep_with_keep_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let (f, secrets) = session(dir.path());
    for format in ["html", "md"] {
        let text = export(&f, format, &["--all-branches"], None);
        // Markdown escapes punctuation with backslashes: compare without them.
        let plain = text.replace('\\', "");
        for s in &secrets {
            assert!(!plain.contains(s.as_str()), "{format}: {s} left");
        }
        assert!(
            text.contains("[REDACTED:") || text.contains("\\[REDACTED:"),
            "{format}"
        );
        let kept =
            export(&f, format, &["--all-branches", "--keep-secrets"], None).replace('\\', "");
        assert!(
            secrets.iter().any(|s| kept.contains(s.as_str())),
            "{format}: --keep-secrets kept nothing"
        );
    }
}

/// `text` with the ids of the labels in `export` (which every export re-creates with fresh
/// ids) named by their order instead.
fn without_label_ids(text: &str, export: &str) -> String {
    let mut text = text.to_string();
    let mut n = 0;
    for line in export.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        if e["type"] == "label" {
            n += 1;
            let id = e["id"].as_str().unwrap();
            text = text.replace(&format!("\"{id}\""), &format!("\"LABEL{n}\""));
        }
    }
    text
}

/// The reference's view of a file: `None` without node and interop/node_modules.
fn reference(file: &Path) -> Option<Value> {
    if !interop::available() {
        return None;
    }
    let out = file.with_extension("oracle.json");
    interop::node(&[
        "oracle.mjs",
        "dump",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-llm",
    ]);
    let text = without_label_ids(
        &std::fs::read_to_string(&out).unwrap(),
        &std::fs::read_to_string(file).unwrap(),
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    let r = v["results"][0].clone();
    assert!(
        r["error"].is_null(),
        "Pi 1.6.0 cannot open it: {}",
        r["error"]
    );
    Some(r)
}

#[test]
fn redacted_jsonl_opens_in_the_reference_with_the_same_entries_ids_and_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (f, secrets) = session(dir.path());
    let ours = sessiontree::load(&f).unwrap();
    // Every leaf's branch: together they hold every entry.
    let leaves: Vec<String> = {
        let view = ours.tree.get_tree();
        ours.tree
            .entries()
            .iter()
            .enumerate()
            .filter(|(i, e)| e.id().is_some() && view.children[*i].is_empty())
            .map(|(_, e)| e.id().unwrap().to_string())
            .collect()
    };
    assert!(leaves.len() > 2, "the session has branches");
    let mut redacted_any = false;
    for leaf in &leaves {
        let red = dir.path().join(format!("red-{leaf}.jsonl"));
        let keep = dir.path().join(format!("keep-{leaf}.jsonl"));
        let text = export(&f, "jsonl", &["--leaf", leaf], Some(&red));
        let kept = export(
            &f,
            "jsonl",
            &["--leaf", leaf, "--keep-secrets"],
            Some(&keep),
        );
        for s in &secrets {
            assert!(!text.contains(s.as_str()), "{s} left in the JSONL export");
        }
        redacted_any |= text.contains("[REDACTED:");
        // Every line parses, is what JSON.stringify writes, and keeps its entry's
        // envelope; only string values differ.
        for l in text.lines() {
            assert_eq!(sessiontree::json::canonicalize(l.as_bytes()).unwrap(), l);
        }
        let (text_n, kept_n) = (
            without_label_ids(&text, &text),
            without_label_ids(&kept, &kept),
        );
        let a: Vec<&str> = text_n.lines().collect();
        let b: Vec<&str> = kept_n.lines().collect();
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b).skip(1) {
            let (vx, vy): (Value, Value) = (
                serde_json::from_str(x).unwrap(),
                serde_json::from_str(y).unwrap(),
            );
            for k in [
                "type",
                "id",
                "parentId",
                "targetId",
                "fromId",
                "firstKeptEntryId",
            ] {
                assert_eq!(vx.get(k), vy.get(k), "{k}");
            }
            if vx["type"] != "label" {
                assert_eq!(vx.get("timestamp"), vy.get("timestamp"));
            }
        }
        // What 1.6.0 reads: the same entries (by id and type), leaf, tree and children.
        if let (Some(rx), Some(ry)) = (reference(&red), reference(&keep)) {
            let shape = |r: &Value| -> Vec<(Value, Value, Value)> {
                r["entries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| (e["id"].clone(), e["parentId"].clone(), e["type"].clone()))
                    .collect()
            };
            assert_eq!(shape(&rx), shape(&ry));
            assert_eq!(rx["leafId"], ry["leafId"]);
            assert_eq!(rx["children"], ry["children"]);
            assert_eq!(rx["entryCount"], ry["entryCount"]);
            let ids = |t: &Value| t.to_string().matches("\"id\"").count();
            assert_eq!(ids(&rx["tree"]), ids(&ry["tree"]));
            assert!(rx["entries"].to_string().contains("[REDACTED:"));
        }
        // And sessiontree finds nothing left in it.
        assert_eq!(
            run(&["secrets", red.to_str().unwrap()]).status.code(),
            Some(0)
        );
    }
    assert!(redacted_any);
}
