//! The local side of the archive, below both push and pull: which files under an agent dir
//! are sessions, the session id a file stands for, and the one rule for turning a value
//! that came from the archive into a path component.
//!
//! Everything the archive returns (session ids, owners, machine names, `rel_path`, the
//! archive's own id) is written by some role of the server, possibly not the user's: it
//! becomes part of a local path only through [`safe_name`] or [`safe_folder`], and files
//! are created only below the folder the command owns.

use crate::state::FileStamp;
use crate::{io_err, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use tempfile::TempDir;

/// The folder under `sessions/` (or a `--session-dir`) that holds sessions of other owners,
/// one sub-folder per owner: never a project folder of Pi's, so never what Pi resumes.
pub const SHARED: &str = "--shared--";

/// Longest name made from an archive value (well below every file system's 255 bytes).
const MAX_NAME: usize = 128;

/// True for a string that may become one path component as it is: 1 to 128 bytes of
/// `[A-Za-z0-9._-]`, not starting with a dot (so never `.`, `..` or a hidden file).
pub fn safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_NAME
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// True for a project folder name as Pi makes them (`--<encoded cwd>--`, see
/// [`sessiontree::dirs::encode_cwd`]): starts and ends with `--`, at most 255 bytes, no
/// separator, NUL or control character, and not [`SHARED`]. A cwd may hold spaces and
/// any letter, so this is wider than [`safe_name`]; it still cannot leave `sessions/`.
pub fn safe_folder(s: &str) -> bool {
    s.len() >= 4
        && s.len() <= 255
        && s.starts_with("--")
        && s.ends_with("--")
        && s != SHARED
        && !s.chars().any(|c| c == '/' || c == '\\' || c.is_control())
}

/// The folder name for another owner's sessions: the role name when it is a
/// [`safe_name`], else `role-` and the SHA-256 of the name (69 characters: longer than
/// any PostgreSQL role name can be, so no role can be given another's folder).
pub fn owner_folder(owner: &str) -> String {
    if safe_name(owner) {
        owner.to_string()
    } else {
        format!("role-{}", crate::hex(&crate::sha256(owner.as_bytes())))
    }
}

/// The session id a Pi file name carries (`<time>_<id>.jsonl`, id a UUID).
pub fn id_from_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let stem = name.strip_suffix(".jsonl")?;
    let (_, id) = stem.rsplit_once('_')?;
    uuid::Uuid::parse_str(id).is_ok().then(|| id.to_string())
}

/// The session id of a local file: from its name, else its header.
pub fn local_id(path: &Path) -> Option<String> {
    id_from_name(path).or_else(|| sessiontree::folder::read_header(path).map(|h| h.id))
}

/// Session files found by a walk, and the symbolic links it did not follow.
#[derive(Debug, Default)]
pub struct Found {
    /// Each file, with its stamp when the walk took it (through the change journal, or a
    /// stat relative to its open folder: a fraction of a stat by the whole path).
    pub files: Vec<(PathBuf, Option<FileStamp>)>,
    pub links: Vec<PathBuf>,
}

impl Found {
    /// The files' paths alone.
    pub fn paths(self) -> Vec<PathBuf> {
        self.files.into_iter().map(|(p, _)| p).collect()
    }
}

/// The `*.jsonl` of `dir`, and of its sub-folders when `depth` is 1 (their names go to
/// `folders`, and they are walked only when `folders` is `None`). Symbolic links, to a
/// folder or a file, are not followed (a link to `/` would otherwise offer every `*.jsonl`
/// of the machine to a push); they are returned in `links`: a `*.jsonl` one, and a link to
/// a folder where folders are walked.
fn walk(dir: &Path, depth: u32, found: &mut Found, mut folders: Option<&mut Vec<OsString>>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let jsonl = e.file_name().to_string_lossy().ends_with(".jsonl");
        if ft.is_symlink() {
            let p = e.path();
            if jsonl || (depth > 0 && std::fs::metadata(&p).is_ok_and(|m| m.is_dir())) {
                found.links.push(p);
            }
        } else if ft.is_file() && jsonl {
            // Not a link: the entry's own stat (`fstatat` in the folder) is the file's.
            let stamp = e.metadata().ok().map(|m| FileStamp::of(&m));
            found.files.push((e.path(), stamp));
        } else if ft.is_dir() && depth > 0 {
            match folders.as_deref_mut() {
                Some(names) => names.push(e.file_name()),
                None => walk(&e.path(), depth - 1, found, None),
            }
        }
    }
}

/// The `*.jsonl` of `<agent dir>/sessions` and of its folders, as [`walk`] finds them at
/// depth 1, the folders' files as the listing finds them
/// ([`sessiontree::changes::project_files`]): with a watch running, only the files its
/// change journal names are stat'ed (as of up to a moment before, as for every listing);
/// without, the folders are read on every core.
fn walk_sessions(agent_dir: &Path, sessions: &Path, found: &mut Found) {
    let mut folders = Vec::new();
    walk(sessions, 1, found, Some(&mut folders));
    let folders: std::collections::HashSet<OsString> = folders.into_iter().collect();
    let listed = sessiontree::changes::project_files(agent_dir);
    // Only folders that are folders here (not links to one: those were named above).
    let listed = listed
        .into_iter()
        .filter(|(name, _)| folders.contains(name));
    for f in listed.flat_map(|(_, files)| files) {
        let stamp = f.stat.as_ref().and_then(FileStamp::of_listing);
        if let (true, Some(stamp)) = (f.plain, stamp) {
            found.files.push((f.path, Some(stamp)));
            continue;
        }
        // Not a plain file, or a time the listing cannot tell: looked at here, as the walk
        // would.
        match std::fs::symlink_metadata(&f.path) {
            Ok(m) if m.file_type().is_symlink() => found.links.push(f.path),
            Ok(m) if m.is_file() => {
                let stamp = FileStamp::of(&m);
                found.files.push((f.path, Some(stamp)));
            }
            _ => {}
        }
    }
}

/// Session files to consider: each FILE given (followed if a link: it was named), the
/// `*.jsonl` of each DIR given and of its sub-folders; with no paths, those of
/// `<agent dir>/sessions` (which may itself be a link). Links inside are not followed.
/// The sessions of other owners (`sessions/--shared--/<owner>/`) lie one level deeper than
/// the walk goes, so a push never sends them as the user's own. Each root's files in
/// `Path` order, the roots in the order given.
pub fn session_files(agent_dir: &Path, paths: &[PathBuf]) -> Result<Found> {
    find(agent_dir, paths, true)
}

/// [`session_files`] under `<agent dir>/sessions`, not sorted (for [`sort_walked`] with
/// that root, once the caller has left out what it need not look at).
pub(crate) fn sessions_unsorted(agent_dir: &Path) -> Result<Found> {
    find(agent_dir, &[], false)
}

fn find(agent_dir: &Path, paths: &[PathBuf], sort: bool) -> Result<Found> {
    let roots: Vec<PathBuf> = if paths.is_empty() {
        vec![agent_dir.join("sessions")]
    } else {
        paths.to_vec()
    };
    let mut found = Found::default();
    for r in roots {
        let meta = match std::fs::metadata(&r) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && paths.is_empty() => continue,
            Err(e) => return Err(io_err(&r)(e)),
        };
        if meta.is_file() {
            found.files.push((r, Some(FileStamp::of(&meta))));
            continue;
        }
        let mut one = Found::default();
        if paths.is_empty() {
            walk_sessions(agent_dir, &r, &mut one);
        } else {
            walk(&r, 1, &mut one, None);
        }
        if sort {
            sort_walked(&r, &mut one.files);
        }
        found.files.extend(one.files);
        one.links.sort();
        found.links.extend(one.links);
    }
    Ok(found)
}

/// Sorts the files a walk of `root` found as `Path` orders them (component by component),
/// comparing bytes where every path is `root/NAME` or `root/FOLDER/NAME` as the walk makes
/// them: the same order (`Path`'s comparison, which parses both paths' components at each
/// step, was a fifth of a push after one append over 20,000 sessions).
pub(crate) fn sort_walked<T: Default>(root: &Path, files: &mut [(PathBuf, T)]) {
    use std::os::unix::ffi::OsStrExt;
    let r = root.as_os_str().as_bytes();
    let plain = |c: &[u8]| !c.is_empty() && c != b"." && c != b"..";
    let key = |(p, _): &(PathBuf, T)| -> Option<(Vec<u8>, Option<Vec<u8>>)> {
        let rest = p
            .as_os_str()
            .as_bytes()
            .strip_prefix(r)?
            .strip_prefix(b"/")?;
        match rest.iter().position(|&b| b == b'/') {
            None => plain(rest).then(|| (rest.to_vec(), None)),
            Some(i) => {
                let (a, b) = (&rest[..i], &rest[i + 1..]);
                (plain(a) && plain(b) && !b.contains(&b'/')).then(|| (a.to_vec(), Some(b.to_vec())))
            }
        }
    };
    let keys: Option<Vec<_>> = files.iter().map(key).collect();
    match keys {
        Some(keys) if !r.is_empty() && !r.ends_with(b"/") => {
            let mut order: Vec<usize> = (0..files.len()).collect();
            order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
            let mut taken: Vec<Option<(PathBuf, T)>> =
                files.iter_mut().map(|p| Some(std::mem::take(p))).collect();
            for (slot, i) in files.iter_mut().zip(order) {
                *slot = taken[i].take().expect("each once");
            }
        }
        _ => files.sort_by(|a, b| a.0.cmp(&b.0)),
    }
}

/// True when `path` is a file [`session_files`] would find under `sessions`: a regular
/// `*.jsonl` (not a link) directly in it or in one of its folders, other owners' excepted.
/// For the watcher, which hears of every file below.
pub fn in_walk(sessions: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(sessions) else {
        return false;
    };
    let parts: Vec<_> = rel.components().collect();
    let plain = parts
        .iter()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    plain
        && (parts.len() == 1 || (parts.len() == 2 && parts[0].as_os_str() != SHARED))
        && path.extension().is_some_and(|e| e == "jsonl")
        && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
        && (parts.len() == 1
            || path
                .parent()
                .is_some_and(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir())))
}

/// Every session of other owners under `base` (`base/--shared--/<owner folder>/*.jsonl`),
/// as (owner folder, file).
pub fn shared_files(base: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(base.join(SHARED)) else {
        return out;
    };
    for e in rd.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Some(owner) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let mut found = Found::default();
        walk(&e.path(), 0, &mut found, None);
        let mut files = found.paths();
        files.sort();
        out.extend(files.into_iter().map(|f| (owner.clone(), f)));
    }
    out
}

/// A private, new temporary folder (mode 0700, a random name made with `O_EXCL`), removed
/// when the value is dropped.
pub fn private_temp_dir(prefix: &str) -> Result<TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| crate::Error::msg(format!("{}: {e}", std::env::temp_dir().display())))
}

/// Creates `dir/name` with `O_CREAT|O_EXCL|O_NOFOLLOW` (never through a planted link, never
/// over an existing file) and writes `bytes`. `name` must be a [`safe_name`].
pub fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if !safe_name(name) {
        return Err(crate::Error::msg(format!(
            "{}: refused the file name {name:?} from the archive",
            dir.display()
        )));
    }
    let p = dir.join(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&p)
        .map_err(io_err(&p))?;
    f.write_all(bytes).map_err(io_err(&p))?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte order of walked paths is `Path`'s order, names chosen where bytes and
    /// components could disagree ('-' and '.' sort before '/'); other shapes fall back.
    #[test]
    fn walked_files_sort_as_paths_do() {
        let names = [
            "a", "a-b", "a.b", "a b", "a/b", "a-b/c", "a/c", "ab/a", "a/b-c", "é/x", "z", "a/a",
        ];
        for root in ["/s", "/s/sessions", "/s/", "s", "/s/./t"] {
            let mut rng = sessiontree_testkit::rng::Rng(7);
            for _ in 0..200 {
                let n = rng.pick(names.len()) + 1;
                let mut files: Vec<(PathBuf, ())> = (0..n)
                    .map(|_| (Path::new(root).join(names[rng.pick(names.len())]), ()))
                    .collect();
                files.sort();
                files.dedup();
                let want = files.clone();
                for k in (1..files.len()).rev() {
                    files.swap(k, rng.pick(k + 1));
                }
                sort_walked(Path::new(root), &mut files);
                assert_eq!(files, want, "under {root}");
            }
        }
    }

    /// The push's walk of `sessions/` finds what a walk by hand finds, through a watch's
    /// change journal as without one: files in it and in its folders with their stamps,
    /// links (to a file, to a folder) named and not followed, a file with other hard links,
    /// one dated before 1970;
    /// nothing of other owners', of folders further down, or that is not a regular file.
    #[test]
    fn the_walk_of_sessions_is_the_same_through_the_journal() {
        use std::os::unix::ffi::OsStrExt;
        let t = tempfile::tempdir().unwrap();
        let s = t.path().join("sessions");
        let outside = t.path().join("outside");
        for d in ["--p--/deeper", "--q--", "--shared--/bob"] {
            std::fs::create_dir_all(s.join(d)).unwrap();
        }
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("x.jsonl"), "{}\n").unwrap();
        for f in [
            "top.jsonl",
            "--p--/a.jsonl",
            "--p--/b.jsonl",
            "--q--/c.jsonl",
            "--p--/notes.txt",
            "--p--/deeper/d.jsonl",
            "--shared--/bob/x.jsonl",
        ] {
            std::fs::write(s.join(f), format!("{{\"f\":\"{f}\"}}\n")).unwrap();
        }
        std::fs::hard_link(s.join("--p--/a.jsonl"), s.join("--q--/hard.jsonl")).unwrap();
        // A time the listing's stat keeps as 0 (before 1970): its stamp is still its own.
        std::fs::write(s.join("--q--/old.jsonl"), "{}\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(s.join("--q--/old.jsonl"))
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH - std::time::Duration::from_secs(86_400 * 365 * 10))
            .unwrap();
        std::os::unix::fs::symlink(outside.join("x.jsonl"), s.join("--p--/l.jsonl")).unwrap();
        std::os::unix::fs::symlink(&outside, s.join("--link--")).unwrap();
        std::os::unix::fs::symlink(&outside, s.join("--p--/dirlink")).unwrap();
        let fifo = std::ffi::CString::new(s.join("--q--/f.jsonl").as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);

        let files = |names: &[&str]| -> Vec<PathBuf> {
            let mut v: Vec<PathBuf> = names.iter().map(|n| s.join(n)).collect();
            v.sort();
            v
        };
        let mut want = files(&[
            "top.jsonl",
            "--p--/a.jsonl",
            "--p--/b.jsonl",
            "--q--/c.jsonl",
            "--q--/hard.jsonl",
            "--q--/old.jsonl",
        ]);
        let links = files(&["--link--", "--p--/l.jsonl"]);
        let check = |want: &[PathBuf], what: &str| -> Found {
            let f = session_files(t.path(), &[]).unwrap();
            let paths: Vec<PathBuf> = f.files.iter().map(|x| x.0.clone()).collect();
            assert_eq!(paths, want, "{what}");
            assert_eq!(f.links, links, "{what}");
            let mut u = sessions_unsorted(t.path()).unwrap();
            sort_walked(&s, &mut u.files);
            assert_eq!(u.files, f.files, "{what}: sorted after");
            f
        };
        let fresh = |f: &Found, what: &str| {
            for (p, st) in &f.files {
                let now = FileStamp::of(&std::fs::metadata(p).unwrap());
                assert_eq!(st.as_ref(), Some(&now), "{what}: {}", p.display());
            }
        };
        fresh(&check(&want, "walked"), "walked");
        let mut j = sessiontree::changes::Journal::start(t.path()).unwrap();
        fresh(&check(&want, "the journal's first read"), "first read");
        // Told of a change, the journal has the file's new stamp; a change it was not told
        // of is not seen yet (as for a push started before it).
        let grow = |p: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(s.join(p))
                .unwrap();
            f.write_all(b"{\"more\":1}\n").unwrap();
        };
        grow("--p--/b.jsonl");
        j.file_changed("--p--".as_ref(), "b.jsonl".as_ref())
            .unwrap();
        grow("--q--/c.jsonl");
        let f = check(&want, "through the journal");
        let stamp =
            |f: &Found, p: &str| f.files.iter().find(|x| x.0 == s.join(p)).unwrap().1.clone();
        let now = |p: &str| Some(FileStamp::of(&std::fs::metadata(s.join(p)).unwrap()));
        assert_eq!(stamp(&f, "--p--/b.jsonl"), now("--p--/b.jsonl"));
        assert_ne!(
            stamp(&f, "--q--/c.jsonl"),
            now("--q--/c.jsonl"),
            "the journal was not read"
        );
        j.file_changed("--q--".as_ref(), "c.jsonl".as_ref())
            .unwrap();
        // A new folder with a file, as the watch says it (the list of folders changed).
        std::fs::create_dir_all(s.join("--r--")).unwrap();
        std::fs::write(s.join("--r--/e.jsonl"), "{}\n").unwrap();
        j.folders_changed().unwrap();
        want.push(s.join("--r--/e.jsonl"));
        want.sort();
        fresh(&check(&want, "a new folder"), "a new folder");
    }

    #[test]
    fn names_from_the_archive_cannot_leave_their_folder() {
        for ok in [
            "a",
            "0b1c2d3e-aaaa-4bbb-8ccc-123456789abc",
            "x_y-z.jsonl",
            "alice",
        ] {
            assert!(safe_name(ok), "{ok}");
        }
        let long = "a".repeat(129);
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "/abs/x",
            "a/b",
            ".hidden",
            "a\0b",
            "a b",
            "é",
            &long,
            "a\\b",
            "\u{1b}]0;x",
        ] {
            assert!(!safe_name(bad), "{bad:?}");
        }
        assert!(safe_folder("--home-u-my project--"));
        for bad in ["..", "--a/../--", "--shared--", "x", "----\n--", "-- a"] {
            assert!(!safe_folder(bad), "{bad:?}");
        }
        assert_eq!(owner_folder("alice"), "alice");
        let f = owner_folder("john.doe@corp");
        // Longer than a PostgreSQL role name may be (63 bytes): no role can own it.
        assert!(f.starts_with("role-") && f.len() == 69 && safe_name(&f));
        assert_ne!(owner_folder("../x"), owner_folder("../y"));
    }

    #[test]
    fn the_walk_does_not_follow_links() {
        let t = tempfile::tempdir().unwrap();
        let s = t.path().join("sessions");
        let outside = t.path().join("outside");
        std::fs::create_dir_all(s.join("--p--")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("x.jsonl"), "{}\n").unwrap();
        std::fs::write(s.join("--p--/a.jsonl"), "{}\n").unwrap();
        std::os::unix::fs::symlink(&outside, s.join("--link--")).unwrap();
        std::os::unix::fs::symlink(outside.join("x.jsonl"), s.join("--p--/l.jsonl")).unwrap();
        let f = session_files(t.path(), &[]).unwrap();
        let mut links = f.links.clone();
        assert_eq!(f.paths(), vec![s.join("--p--/a.jsonl")]);
        links.sort();
        assert_eq!(links, vec![s.join("--link--"), s.join("--p--/l.jsonl")]);
        // The watcher's filter agrees, and leaves other owners' sessions out.
        std::fs::create_dir_all(s.join("--shared--/bob")).unwrap();
        std::fs::write(s.join("--shared--/bob/b.jsonl"), "{}\n").unwrap();
        assert!(in_walk(&s, &s.join("--p--/a.jsonl")));
        for p in [
            "--p--/l.jsonl",
            "--link--/x.jsonl",
            "--shared--/bob/b.jsonl",
            "--p--/none.jsonl",
        ] {
            assert!(!in_walk(&s, &s.join(p)), "{p}");
        }
    }
}
