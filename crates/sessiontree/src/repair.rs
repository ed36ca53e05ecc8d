//! Repair of a damaged session file: the plan (pure, from
//! [`sessiontree_core::repair`], re-exported here) applied through the store: backup kept,
//! new file renamed over the old one under the writer lock. Nothing is truncated or
//! rewritten in place.

pub use sessiontree_core::repair::*;

use crate::error::{Error, Result};
use crate::store;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What an applied repair did.
#[derive(Debug)]
pub struct Repaired {
    /// The plan that was applied.
    pub plan: Plan,
    /// The original file, kept (None when nothing needed doing).
    pub backup: Option<PathBuf>,
    /// Bytes another (lock-less) writer appended while the repair ran, carried over into
    /// the repaired file after the planned content.
    pub carried: u64,
}

/// Error for a file that cannot be repaired.
fn refused(path: &Path, r: Refusal) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("cannot repair: {r}")),
    }
}

/// Plans the repair of a file without writing anything.
pub fn plan_file(path: &Path, opts: &PlanOptions) -> Result<Plan> {
    let (file, _) = store::open_regular(path)?;
    let bytes = store::read_settled(&file, path)?;
    plan(Some(path), &bytes, opts).map_err(|r| refused(path, r))
}

/// Repairs `path` under its writer lock: plans from the bytes read under the lock, keeps
/// the original as `<file>.bak-<timestamp>` (created exclusively, never overwritten),
/// then writes the repaired content with [`store::replace_carrying`], so lines a lock-less
/// writer (Pi) appends meanwhile are kept. A symlinked path is resolved first: the real
/// file is repaired (the link stays), its lock, backup and temp file sit beside it.
pub fn apply(path: &Path, opts: &PlanOptions, lock_wait: Option<Duration>) -> Result<Repaired> {
    let real = store::resolve_target(path);
    let _lock = store::WriterLock::acquire(&real, lock_wait)?;
    let (file, _) = store::open_regular(&real)?;
    let bytes = store::read_settled(&file, &real)?;
    let plan = plan(Some(path), &bytes, opts).map_err(|r| refused(path, r))?;
    if plan.is_noop() {
        return Ok(Repaired {
            plan,
            backup: None,
            carried: 0,
        });
    }
    let stamp: String = crate::date::now_iso()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let mut n = 0;
    let backup = loop {
        let mut s = real.as_os_str().to_owned();
        if n == 0 {
            s.push(format!(".bak-{stamp}"));
        } else {
            s.push(format!(".bak-{stamp}-{n}"));
        }
        let b = PathBuf::from(s);
        match store::create_exclusive(&b, &[&bytes]) {
            Ok(()) => break b,
            Err(Error::Exists { .. }) => n += 1,
            Err(e) => return Err(e),
        }
    };
    let carried = store::replace_carrying(&real, &file, bytes.len() as u64, &[&plan.content])?;
    Ok(Repaired {
        plan,
        backup: Some(backup),
        carried: carried.len() as u64,
    })
}
