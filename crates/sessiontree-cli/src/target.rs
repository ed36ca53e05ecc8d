//! `FILE#ID` arguments: a search hit (`path#entryId`) pasted where a command takes a session
//! file and an entry (context, branch, tree, export, fork).
//!
//! A path that exists as given is the file, even with a `#` in its name. Otherwise the text
//! after the last `#` is the entry id (the leaf to use) when it is not empty and holds no
//! `/`, and the text before it names the file.

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// A session file and, when given as `FILE#ID`, an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub file: PathBuf,
    pub id: Option<String>,
}

/// Splits `FILE#ID` (see the module docs).
pub fn parse(arg: &Path) -> Target {
    let whole = Target {
        file: arg.to_path_buf(),
        id: None,
    };
    if arg.exists() {
        return whole;
    }
    let s = arg.to_string_lossy();
    match s.rsplit_once('#') {
        Some((file, id)) if !file.is_empty() && !id.is_empty() && !id.contains('/') => Target {
            file: PathBuf::from(file),
            id: Some(id.to_string()),
        },
        _ => whole,
    }
}

/// The file and the entry: from `FILE#ID`, or from `flag` (`--leaf`, `--from`, ...);
/// both given and different is an error.
pub fn with_flag(
    arg: &Path,
    flag: Option<String>,
    flag_name: &str,
) -> Result<(PathBuf, Option<String>)> {
    let t = parse(arg);
    match (t.id, flag) {
        (Some(a), Some(b)) if a != b => bail!(
            "{}: entry {a} given twice (as FILE#ID and {flag_name} {b})",
            t.file.display()
        ),
        (a, b) => Ok((t.file, a.or(b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_only_what_is_not_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("s.jsonl");
        let hashed = dir.path().join("a#b.jsonl");
        std::fs::write(&plain, "").unwrap();
        std::fs::write(&hashed, "").unwrap();
        let hit = PathBuf::from(format!("{}#e1f2", plain.display()));
        assert_eq!(
            parse(&hit),
            Target {
                file: plain.clone(),
                id: Some("e1f2".into())
            }
        );
        // A real file with '#' in its name is the file.
        assert_eq!(parse(&hashed).id, None);
        // ... and a hit in it splits at the last '#'.
        let t = parse(Path::new(&format!("{}#x9", hashed.display())));
        assert_eq!((t.file, t.id.as_deref()), (hashed.clone(), Some("x9")));
        // Nothing after '#', or a '/': not an entry.
        assert_eq!(parse(Path::new("/no/such#")).id, None);
        assert_eq!(parse(Path::new("/no/su#ch/file")).id, None);
        assert!(with_flag(&hit, Some("other".into()), "--leaf").is_err());
        assert_eq!(
            with_flag(&hit, Some("e1f2".into()), "--leaf").unwrap().1,
            Some("e1f2".into())
        );
        assert_eq!(
            with_flag(&plain, Some("z".into()), "--leaf").unwrap().1,
            Some("z".into())
        );
    }
}
