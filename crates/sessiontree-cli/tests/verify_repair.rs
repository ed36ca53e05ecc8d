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
    let kinds: Vec<&str> = sessiontree_testkit::json::strs(&bad["diagnostics"], "kind");
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

/// Issue 24: a tool call left without a result in the middle of a branch that Pi went on
/// past (Pi answers it for the provider) is a note, and the file verifies clean (0); only
/// interrupted work at the leaf is a problem (1), as the README says.
#[test]
fn verify_notes_a_dangling_call_pi_resumed_past_and_flags_one_at_the_leaf() {
    let msg = |id: &str, parent: Option<&str>, m: &str| {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2024-12-03T14:00:01.000Z","message":{m}}}"#
        )
    };
    let user = |t: &str| format!(r#"{{"role":"user","content":"{t}","timestamp":1}}"#);
    let call = |ids: &[&str]| {
        let blocks: Vec<String> = ids
            .iter()
            .map(|c| format!(r#"{{"type":"toolCall","id":"{c}","name":"bash","arguments":{{}}}}"#))
            .collect();
        format!(
            r#"{{"role":"assistant","content":[{}],"stopReason":"toolUse","timestamp":2}}"#,
            blocks.join(",")
        )
    };
    let result = |c: &str| {
        format!(
            r#"{{"role":"toolResult","toolCallId":"{c}","toolName":"bash","content":[],"isError":false,"timestamp":3}}"#
        )
    };
    let reply = r#"{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop","timestamp":4}"#;
    let d = tempfile::tempdir().unwrap();
    let write = |name: &str, lines: &[String]| {
        let p = d.path().join(name);
        std::fs::write(&p, format!("{H}\n{}\n", lines.join("\n"))).unwrap();
        p
    };
    // The call, then the user went on: Pi resumed past it.
    let past = write(
        "past.jsonl",
        &[
            msg("u1", None, &user("run it")),
            msg("a1", Some("u1"), &call(&["c1"])),
            msg("u2", Some("a1"), &user("never mind, go on")),
            msg("a2", Some("u2"), reply),
        ],
    );
    // The call at the leaf; and two calls of which only one has its result.
    let leaf = write(
        "leaf.jsonl",
        &[
            msg("u1", None, &user("run it")),
            msg("a1", Some("u1"), &call(&["c1"])),
        ],
    );
    let half = write(
        "half.jsonl",
        &[
            msg("u1", None, &user("run both")),
            msg("a1", Some("u1"), &call(&["c1", "c2"])),
            msg("r1", Some("a1"), &result("c1")),
        ],
    );
    let (c, out, _) = run(&["verify", past.to_str().unwrap()]);
    assert_eq!(c, 0, "{out}");
    assert!(out.contains(": ok"), "{out}");
    assert!(out.contains("note") && out.contains("c1"), "{out}");
    let (c, out, _) = run(&["verify", past.to_str().unwrap(), "--json"]);
    assert_eq!(c, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["files"][0]["ok"], true);
    assert_eq!(v["files"][0]["interrupted"], serde_json::json!([]));
    assert_eq!(v["files"][0]["notes"][0]["toolCallId"], "c1");
    for p in [&leaf, &half] {
        let (c, out, _) = run(&["verify", p.to_str().unwrap()]);
        assert_eq!(c, 1, "{}: {out}", p.display());
        assert!(
            out.contains("interrupted") && !out.contains("note"),
            "{out}"
        );
        let (_, out, _) = run(&["verify", p.to_str().unwrap(), "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["files"][0]["ok"], false);
        assert_eq!(v["files"][0]["notes"], serde_json::json!([]));
    }
    // `interrupted` still lists every call without a result on the branch.
    assert_eq!(run(&["interrupted", past.to_str().unwrap()]).0, 1);
    // A folder holding all three: one clean (with its note), two with problems.
    let (c, out, _) = run(&["verify", d.path().to_str().unwrap()]);
    assert_eq!(c, 1);
    assert!(
        out.contains("3 files checked, 1 ok, 2 with problems"),
        "{out}"
    );
}
