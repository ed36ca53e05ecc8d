//! `sessiontree verify` and `sessiontree repair`.

use sessiontree_testkit::files::names as files;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");
use sessiontree_testkit::agent::HEADER as H;
const E1: &str = r#"{"type":"custom","customType":"x","id":"a1","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z"}"#;

fn run(args: &[&str]) -> (i32, String, String) {
    sessiontree_testkit::run::code_out_err(&Command::new(BIN).args(args).output().unwrap())
}

#[test]
fn verify_exit_codes_and_json() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("good.jsonl");
    std::fs::write(&good, format!("{H}\n{E1}\n")).unwrap();
    let (c, out, _) = run(&["verify", good.to_str().unwrap()]);
    assert_eq!(c, 0, "{out}");
    assert!(out.contains("ok"));

    let sub = d.path().join("deep/er");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        sub.join("bad.jsonl"),
        format!("{H}\nnot json\n{H}\n{E1}\n{E1}\n{{\"type\":\"mess"),
    )
    .unwrap();
    std::fs::write(
        d.path().join("v9.jsonl"),
        r#"{"type":"session","version":9,"id":"s","cwd":"/w"}"#.to_string() + "\n",
    )
    .unwrap();
    std::fs::write(d.path().join("nohdr.jsonl"), format!("{E1}\n")).unwrap();
    std::fs::write(d.path().join("ignored.txt"), "x").unwrap();

    // nohdr.jsonl is no session at all: unreadable (2) outweighs problems (1).
    let (c, out, _) = run(&["verify", d.path().to_str().unwrap()]);
    assert_eq!(c, 2, "{out}");
    for want in [
        "malformed-line",
        "extra-header",
        "duplicate-id",
        "torn-tail",
        "unknown-version",
        "not a session",
        "4 files checked",
    ] {
        assert!(out.contains(want), "missing {want} in\n{out}");
    }
    assert!(out.contains("line 2 "), "{out}");

    let (c, out, _) = run(&["verify", d.path().to_str().unwrap(), "--json"]);
    assert_eq!(c, 2);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let fs = v["files"].as_array().unwrap();
    assert_eq!(fs.len(), 4);
    let bad = fs
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("bad.jsonl"))
        .unwrap();
    assert_eq!(bad["ok"], false);
    let kinds: Vec<&str> = bad["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "malformed-line",
            "extra-header",
            "duplicate-id",
            "torn-tail"
        ]
    );
    assert_eq!(bad["diagnostics"][0]["line"], 2);
    let nohdr = fs
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("nohdr.jsonl"))
        .unwrap();
    assert!(nohdr["error"].is_string());
    let good = fs
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("good.jsonl"))
        .unwrap();
    assert_eq!(good["ok"], true);
    assert!(good.get("error").is_none());

    let (c, _, err) = run(&["verify", d.path().join("missing.jsonl").to_str().unwrap()]);
    assert_eq!(c, 2, "{err}");
}

#[test]
fn repair_keeps_a_backup_and_replaces_atomically() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("r.jsonl");
    let original = format!("{H}\nnot json\n{H}\n{E1}\n{{\"type\":\"mess");
    std::fs::write(&f, &original).unwrap();
    let fs = f.to_str().unwrap();

    let (c, out, _) = run(&["repair", fs, "--dry-run"]);
    assert_eq!(c, 0);
    assert!(
        out.contains("would") && out.contains("torn") && out.contains("extra session header"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        original,
        "dry run wrote"
    );
    assert_eq!(files(d.path()), ["r.jsonl"]);

    use std::os::unix::fs::MetadataExt;
    let ino = std::fs::metadata(&f).unwrap().ino();
    let (c, out, err) = run(&["repair", fs]);
    assert_eq!(c, 0, "{out}{err}");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), format!("{H}\n{E1}\n"));
    assert_ne!(
        std::fs::metadata(&f).unwrap().ino(),
        ino,
        "replaced, not rewritten in place"
    );
    let names = files(d.path());
    assert_eq!(names.len(), 2, "{names:?}");
    let bak = names
        .iter()
        .find(|n| n.starts_with("r.jsonl.bak-"))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(d.path().join(bak)).unwrap(),
        original
    );
    assert_eq!(run(&["verify", fs]).0, 0);

    // nothing more to do: no second backup
    let (c, out, _) = run(&["repair", fs]);
    assert_eq!(c, 0);
    assert!(out.contains("nothing to repair"));
    assert_eq!(files(d.path()).len(), 2);
}

#[test]
fn repair_rebuilds_or_refuses_a_lost_header() {
    let d = tempfile::tempdir().unwrap();
    let f = d
        .path()
        .join("2024-12-03T14-00-00-000Z_0193b7a2-aaaa-7bbb-8ccc-123456789abc.jsonl");
    std::fs::write(&f, format!("{{\"type\":\"sess\n{E1}\n")).unwrap();
    let fs = f.to_str().unwrap();
    let (c, _, err) = run(&["repair", fs]);
    assert_eq!(c, 2);
    assert!(err.contains("working directory"), "{err}");
    assert_eq!(files(d.path()).len(), 1, "a refused repair writes nothing");

    let (c, out, err) = run(&["repair", fs, "--cwd", "/w"]);
    assert_eq!(c, 0, "{out}{err}");
    let text = std::fs::read_to_string(&f).unwrap();
    let h: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(h["id"], "0193b7a2-aaaa-7bbb-8ccc-123456789abc");
    assert_eq!(h["cwd"], "/w");
    assert_eq!(run(&["verify", fs]).0, 0);
}

#[test]
fn repair_respects_the_writer_lock() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("l.jsonl");
    std::fs::write(&f, format!("{H}\n{E1}\nbad\n")).unwrap();
    let s = sessiontree::Session::open(&f, sessiontree::WriteOptions::default()).unwrap();
    let (c, _, err) = run(&["repair", f.to_str().unwrap()]);
    assert_eq!(c, 2);
    assert!(err.contains("being written"), "{err}");
    drop(s);
    assert_eq!(run(&["repair", f.to_str().unwrap()]).0, 0);
}

#[test]
fn verify_reports_structure_problems_with_line_numbers() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("s.jsonl");
    let mut b = format!("{H}\n").into_bytes();
    for l in [
        r#"{"type":"custom","customType":"x","id":"c1","parentId":"c2","timestamp":"t"}"#,
        r#"{"type":"custom","customType":"x","id":"c2","parentId":"c1","timestamp":"t"}"#,
        r#"{"type":"custom","customType":"x","id":"o1","parentId":"nope","timestamp":"t"}"#,
        r#"{"type":"compaction","id":"k1","parentId":"o1","timestamp":"t","summary":"s","firstKeptEntryId":"gone","tokensBefore":1}"#,
    ] {
        b.extend_from_slice(l.as_bytes());
        b.push(b'\n');
    }
    b.extend_from_slice(b"{\"type\":\"custom\",\"customType\":\"\xff\",\"id\":\"u1\",\"parentId\":\"k1\",\"timestamp\":\"t\"}\n");
    std::fs::write(&f, b).unwrap();
    let (c, out, _) = run(&["verify", f.to_str().unwrap(), "--json"]);
    assert_eq!(c, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ds: Vec<(u64, String)> = v["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["line"].as_u64().unwrap(),
                d["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for want in [
        (4, "orphan-parent"),
        (5, "missing-first-kept"),
        (6, "invalid-utf8"),
    ] {
        assert!(
            ds.contains(&(want.0, want.1.to_string())),
            "{want:?} not in {ds:?}"
        );
    }
    assert!(
        ds.iter().any(|(l, k)| k == "cycle" && (*l == 2 || *l == 3)),
        "{ds:?}"
    );
}
