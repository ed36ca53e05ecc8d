//! What the store's tests share that needs the store itself (the testkit depends on no
//! crate of the workspace).

use std::path::Path;

/// The session at `p`, after asserting that it loads without a diagnostic.
pub fn load_clean(p: &Path) -> sessiontree::Loaded {
    let l = sessiontree::load(p).unwrap();
    assert!(
        l.tree.diagnostics().is_empty(),
        "{}: {:?}",
        p.display(),
        l.tree.diagnostics()
    );
    l
}
