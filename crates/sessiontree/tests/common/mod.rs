//! What the store's tests share that needs the store itself (the testkit depends on no
//! crate of the workspace).

use std::path::Path;

/// The session at `p`, after asserting that it loads without a diagnostic.
pub fn load_clean(p: &Path) -> sessiontree::Loaded {
    sessiontree_testkit::load_clean!(p)
}
