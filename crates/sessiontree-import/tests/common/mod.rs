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

/// Two imports of the same sources into the folders `a` and `b` (`first`, `second`):
/// the same bytes but for the folder, every line canonical, loaded without a diagnostic,
/// the leaf the conversion's last line; and writing each again into `a` adds nothing.
pub fn check_canonical_and_idempotent(first: &[Imported], second: &[Imported], a: &Path, b: &Path) {
    assert_eq!(first.len(), second.len());
    for (x, y) in first.iter().zip(second) {
        let strip = |p: &Path, dir: &Path| {
            std::fs::read_to_string(p)
                .unwrap()
                .replace(dir.to_str().unwrap(), "DIR")
        };
        assert_eq!(strip(&x.path, a), strip(&y.path, b));
        let l = sessiontree::load(&x.path).unwrap();
        assert!(
            l.tree.diagnostics().is_empty(),
            "{:?}",
            l.tree.diagnostics()
        );
        assert_eq!(
            l.tree.leaf_id(),
            Some(x.conv.lines.last().unwrap().id.as_str())
        );
        for line in std::fs::read_to_string(&x.path).unwrap().lines() {
            assert_eq!(
                sessiontree::json::canonicalize(line.as_bytes()).unwrap(),
                line
            );
        }
    }
    for i in first {
        let before = std::fs::read(&i.path).unwrap();
        let parent = sessiontree::load(&i.path)
            .unwrap()
            .tree
            .header()
            .parent_session();
        let o = write(&i.conv, a, parent.as_deref(), false).unwrap();
        assert_eq!(o.status, Status::Unchanged, "{}", i.source.display());
        assert_eq!(std::fs::read(&i.path).unwrap(), before);
    }
}
