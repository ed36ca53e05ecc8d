//! What the import tests of the newer agents share: the fixtures folder, an imported
//! session, and our context of a Pi file as JSON comparable with Node's.
#![allow(dead_code)] // each test file uses its part

use serde_json::{json, Value};
use sessiontree::{build_context, LeafArg};
use sessiontree_import::Conversion;
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
