//! What this agent dir knows about an archive, so that an unchanged file is not read again:
//! per local file, the (device, inode, size, mtime) and hash it had when last compared with
//! the archive, and per pulled version, how much of it is already in the local file.
//!
//! Only a cache: every decision is still checked against the archive (the hash must match
//! the archive's), and deleting the file only costs one full read.
//!
//! Kept as `<id>.json`, the whole state, and `<id>.changes`, what changed since: one line
//! per save, in the whole state's shape but holding only the entries that save changed, so
//! that a push of one changed file out of 20,000 writes a line instead of 5 MB. A load
//! applies the lines in order over the whole state (a torn or bad line ends them); once
//! the lines outgrow a quarter of the whole state, a save writes the whole state again
//! (the lines removed first: a crash between the two loses them, which costs one read of
//! the files they named, never a wrong answer).

use crate::local::safe_name;
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileStamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
}

impl FileStamp {
    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
        }
    }

    /// The stamp of a file as the listing's stat has it (`sessiontree::list::FileStat`, taken
    /// by a walk or through the change journal); `None` when that stat cannot tell its time
    /// (the listing keeps a time before 1970 as 0): stat the file again.
    pub fn of_listing(st: &sessiontree::list::FileStat) -> Option<FileStamp> {
        (st.mtime_ns > 0).then_some(FileStamp {
            dev: st.dev,
            ino: st.ino,
            size: st.size,
            mtime_ns: st.mtime_ns as i128,
        })
    }
}

/// The state file as [`State::save`] writes it.
#[derive(serde::Deserialize)]
struct Typed<'a> {
    #[serde(default, borrow, deserialize_with = "entries")]
    pushed: Vec<(String, Entry<'a>)>,
    #[serde(default)]
    pulled: BTreeMap<String, i64>,
    /// Absent: no word on it (a line of changes that did not touch it, an older writer).
    #[serde(default, deserialize_with = "present")]
    changes: Option<Option<InStep>>,
}

/// One `pushed` entry as [`State::save`] writes it: the stamp's four numbers as strings
/// (borrowed from the text: they never need unescaping), the redaction key and the hash.
#[derive(serde::Deserialize)]
struct Entry<'a>(
    #[serde(borrow)] std::borrow::Cow<'a, str>,
    #[serde(borrow)] std::borrow::Cow<'a, str>,
    #[serde(borrow)] std::borrow::Cow<'a, str>,
    #[serde(borrow)] std::borrow::Cow<'a, str>,
    String,
    String,
);

/// The `pushed` object's entries in the text's order, read straight into a list (a map of
/// strings first, then the state's own map, took a 20,000-file state twice as long).
fn entries<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<(String, Entry<'de>)>, D::Error> {
    struct Entries;
    impl<'de> serde::de::Visitor<'de> for Entries {
        type Value = Vec<(String, Entry<'de>)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of pushed files")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut m: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0).min(1 << 16));
            while let Some(k) = m.next_key::<String>()? {
                out.push((k, m.next_value()?));
            }
            Ok(out)
        }
    }
    d.deserialize_map(Entries)
}

/// A field that is there, `null` or not.
fn present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<InStep>>, D::Error> {
    <Option<InStep> as serde::Deserialize>::deserialize(d).map(Some)
}

/// The archive's count of changes to this machine's copies (`sessiontree.machine_changes`)
/// at which every entry of `pushed` was last known to match the archive: while the archive
/// still says that count, nothing but this state's own pushes changed those copies, and a
/// push needs to ask only about the files that changed here.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct InStep {
    pub machine: String,
    pub n: i64,
}

#[derive(Default, Debug)]
pub struct State {
    path: PathBuf,
    /// local path -> (stamp, redaction key, hash of what was archived for it)
    pub pushed: BTreeMap<String, (FileStamp, String, String)>,
    /// version pk -> bytes of that version already in the local file
    pub pulled: BTreeMap<i64, i64>,
    /// See [`InStep`]; `None`: not known to be in step.
    in_step: Option<InStep>,
    in_step_changed: bool,
    /// The entries changed since the last save.
    changed: std::collections::BTreeSet<String>,
    changed_pulled: std::collections::BTreeSet<i64>,
    /// The whole state's length when it was read or last written, if lines of changes may
    /// follow it (`None`: there is none, or its lines end torn: the next save writes all);
    /// the lines' length.
    whole_len: Option<u64>,
    lines_len: u64,
}

/// Lines of changes are read up to this length (a longer file is not this program's).
const MAX_LINES: u64 = 64 << 20;

/// Where the state for an archive is kept: `<agent dir>/sessiontree-archive/<id>.json`.
/// The id comes from the archive (any role that may write its `meta` table chose it), so
/// it must be a [`safe_name`]: `../settings` would make a push replace
/// `<agent dir>/settings.json`.
pub fn state_file(agent_dir: &Path, archive_id: &str) -> Result<PathBuf> {
    if !safe_name(archive_id) {
        return Err(Error::msg(format!(
            "archive: its id {archive_id:?} is not a plain name; refusing to keep state for it under {}",
            agent_dir.display()
        )));
    }
    Ok(agent_dir
        .join("sessiontree-archive")
        .join(format!("{archive_id}.json")))
}

impl State {
    /// The state for an archive, refused when its id is not a plain name.
    pub fn open(agent_dir: &Path, archive_id: &str) -> Result<State> {
        state_file(agent_dir, archive_id)?;
        Ok(State::load(agent_dir, archive_id))
    }

    /// The state for an archive (empty when there is none, or it cannot be read; one for
    /// an id that is not a plain name stays empty and cannot be saved).
    pub fn load(agent_dir: &Path, archive_id: &str) -> State {
        let Ok(path) = state_file(agent_dir, archive_id) else {
            return State::default();
        };
        let mut s = State {
            path: path.clone(),
            ..State::default()
        };
        if let Ok(text) = std::fs::read_to_string(&path) {
            if s.merge(&text) {
                s.whole_len = Some(text.len() as u64);
            }
        }
        let Ok(f) = std::fs::File::open(changes_file(&path)) else {
            return s;
        };
        let mut lines = Vec::new();
        if std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_LINES), &mut lines).is_err() {
            return s;
        }
        s.lines_len = lines.len() as u64;
        let mut rest = &lines[..];
        // Complete lines only, each one state in the shape `save` writes.
        while let Some(i) = memchr::memchr(b'\n', rest) {
            let Ok(line) = std::str::from_utf8(&rest[..i]) else {
                break;
            };
            if !s.merge_typed(line) {
                break;
            }
            rest = &rest[i + 1..];
        }
        if !rest.is_empty() {
            // A torn or bad line: nothing is added after it; the next save writes all.
            s.whole_len = None;
        }
        s
    }

    /// Reads the entries of a state's text into this one (over those it has): the shape
    /// `save` writes, else value by value; false when it is not a JSON object.
    fn merge(&mut self, text: &str) -> bool {
        if self.merge_typed(text) {
            return true;
        }
        let s = self;
        let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
            return false;
        };
        if let Some(p) = v.get("pushed").and_then(|p| p.as_object()) {
            for (k, e) in p {
                let n = |i: usize| e.get(i).and_then(|x| x.as_str()).unwrap_or("").to_string();
                let num = |i: usize| {
                    e.get(i)
                        .and_then(|x| x.as_str())
                        .and_then(|x| x.parse().ok())
                };
                if let (Some(dev), Some(ino), Some(size), Some(mt)) =
                    (num(0), num(1), num(2), num(3))
                {
                    let stamp = FileStamp {
                        dev: dev as u64,
                        ino: ino as u64,
                        size: size as u64,
                        mtime_ns: mt,
                    };
                    s.pushed.insert(k.clone(), (stamp, n(4), n(5)));
                }
            }
        }
        if let Some(p) = v.get("pulled").and_then(|p| p.as_object()) {
            for (k, e) in p {
                if let (Ok(k), Some(n)) = (k.parse(), e.as_i64()) {
                    s.pulled.insert(k, n);
                }
            }
        }
        v.is_object()
    }

    /// [`State::merge`] of the shape `save` writes, read straight into its types (a tree
    /// of values first took a browser's first frame over 20,000 pushed files 0.1 s); false
    /// when the text is not of that shape.
    fn merge_typed(&mut self, text: &str) -> bool {
        let s = self;
        let Ok(t) = serde_json::from_str::<Typed>(text) else {
            return false;
        };
        let parsed = t
            .pushed
            .into_iter()
            .filter_map(|(k, Entry(dev, ino, size, mt, r, h))| {
                let stamp = FileStamp {
                    dev: dev.parse().ok()?,
                    ino: ino.parse().ok()?,
                    size: size.parse().ok()?,
                    mtime_ns: mt.parse().ok()?,
                };
                Some((k, (stamp, r, h)))
            });
        if s.pushed.is_empty() {
            // Built at once from the entries (in order, as written: the last of a key holds).
            s.pushed = parsed.collect();
        } else {
            s.pushed.extend(parsed);
        }
        for (k, n) in t.pulled {
            if let Ok(k) = k.parse() {
                s.pulled.insert(k, n);
            }
        }
        if let Some(c) = t.changes {
            s.in_step = c;
        }
        true
    }

    pub fn set_pushed(&mut self, path: &Path, stamp: FileStamp, redaction: &str, hash: &str) {
        let v = (stamp, redaction.to_string(), hash.to_string());
        let k = path.to_string_lossy().into_owned();
        if self.pushed.get(&k) != Some(&v) {
            self.changed.insert(k.clone());
            self.pushed.insert(k, v);
        }
    }

    pub fn pushed(&self, path: &Path) -> Option<&(FileStamp, String, String)> {
        self.pushed.get(path.to_string_lossy().as_ref())
    }

    /// The count of changes at which this state matches the archive for `machine`, if known.
    pub fn in_step(&self, machine: &str) -> Option<i64> {
        self.in_step
            .as_ref()
            .filter(|s| s.machine == machine)
            .map(|s| s.n)
    }

    /// Records the count at which this state matches the archive (`None`: not known).
    pub fn set_in_step(&mut self, machine: &str, n: Option<i64>) {
        let v = n.map(|n| InStep {
            machine: machine.to_string(),
            n,
        });
        if v != self.in_step {
            self.in_step = v;
            self.in_step_changed = true;
        }
    }

    pub fn set_pulled(&mut self, version: i64, len: i64) {
        if self.pulled.insert(version, len) != Some(len) {
            self.changed_pulled.insert(version);
        }
    }

    /// The state as `save` writes it: `{"pushed":{PATH:[DEV,INO,SIZE,MTIME,REDACTION,HASH],
    /// ...},"pulled":{VERSION:LENGTH,...}}`, the numbers of a stamp as strings, in the maps'
    /// order. Written straight out (a tree of values for 20,000 pushed files took longer
    /// than the push after one append had).
    fn to_text(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.pushed.len() * 192);
        write_state(
            &mut out,
            self.pushed.iter(),
            self.pulled.iter(),
            &self.in_step,
        );
        out
    }

    /// The entries changed since the last save, in the same shape, on one line.
    fn changes_line(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.changed.len() * 192);
        let pushed = self
            .changed
            .iter()
            .filter_map(|k| Some((k, self.pushed.get(k)?)));
        let pulled = (self.changed_pulled.iter()).filter_map(|k| Some((k, self.pulled.get(k)?)));
        write_state(&mut out, pushed, pulled, &self.in_step);
        out.push(b'\n');
        out
    }

    /// Writes what changed, if anything did: a line of changes when the whole state is on
    /// disk and the lines stay under a quarter of it, else the whole state (atomically).
    pub fn save(&mut self) -> Result<()> {
        if self.changed.is_empty() && self.changed_pulled.is_empty() && !self.in_step_changed {
            return Ok(());
        }
        if self.path.as_os_str().is_empty() {
            return Err(Error::msg(
                "archive: no state file for an archive id that is not a plain name",
            ));
        }
        let changes = changes_file(&self.path);
        if let Some(whole) = self.whole_len {
            let line = self.changes_line();
            if (self.lines_len + line.len() as u64) * 4 <= whole && self.append(&changes, &line) {
                self.lines_len += line.len() as u64;
                self.changed.clear();
                self.changed_pulled.clear();
                self.in_step_changed = false;
                return Ok(());
            }
        }
        let text = self.to_text();
        if let Some(d) = self.path.parent() {
            std::fs::create_dir_all(d).map_err(crate::io_err(d))?;
        }
        // The lines go first: left behind, they would be read over the newer whole state.
        match std::fs::remove_file(&changes) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(crate::io_err(&changes)(e)),
        }
        // Replaced by a rename, but not fsynced: this is a cache (a torn or lost state only
        // costs one full read of the files), and two fsyncs were a tenth of a short push.
        let tmp = self
            .path
            .with_extension(format!("json.tmp-{}", std::process::id()));
        std::fs::write(&tmp, &text).map_err(crate::io_err(&tmp))?;
        if let Err(e) = std::fs::rename(&tmp, &self.path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(crate::io_err(&self.path)(e));
        }
        self.whole_len = Some(text.len() as u64);
        self.lines_len = 0;
        self.changed.clear();
        self.changed_pulled.clear();
        self.in_step_changed = false;
        Ok(())
    }

    /// Appends a line of changes in one write (never through a link: the file is opened
    /// with `O_NOFOLLOW`); false when it cannot, and the caller writes the whole state.
    fn append(&self, changes: &Path, line: &[u8]) -> bool {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(changes)
        else {
            return false;
        };
        // Only onto complete lines: a torn line before this one would hide it.
        let whole_lines = f.metadata().is_ok_and(|m| m.len() == self.lines_len);
        whole_lines && f.write_all(line).is_ok()
    }
}

/// The lines of changes that go with a state file.
fn changes_file(state: &Path) -> PathBuf {
    state.with_extension("changes")
}

/// A state in the shape [`State::save`] writes, from its entries in order, with the count
/// it is in step with (every line of changes says it again: the last one read holds).
fn write_state<'a>(
    out: &mut Vec<u8>,
    pushed: impl Iterator<Item = (&'a String, &'a (FileStamp, String, String))>,
    pulled: impl Iterator<Item = (&'a i64, &'a i64)>,
    in_step: &Option<InStep>,
) {
    use std::io::Write;
    let text = |out: &mut Vec<u8>, s: &str| {
        serde_json::to_writer(&mut *out, s).expect("a string into memory");
    };
    out.extend_from_slice(b"{\"pushed\":{");
    for (n, (k, (st, r, h))) in pushed.enumerate() {
        if n > 0 {
            out.push(b',');
        }
        text(out, k);
        let _ = write!(
            out,
            ":[\"{}\",\"{}\",\"{}\",\"{}\",",
            st.dev, st.ino, st.size, st.mtime_ns
        );
        text(out, r);
        out.push(b',');
        text(out, h);
        out.push(b']');
    }
    out.extend_from_slice(b"},\"pulled\":{");
    for (n, (k, v)) in pulled.enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let _ = write!(out, "\"{k}\":{v}");
    }
    out.extend_from_slice(b"},\"changes\":");
    match in_step {
        Some(s) => {
            out.extend_from_slice(b"{\"machine\":");
            text(out, &s.machine);
            let _ = write!(out, ",\"n\":{}}}", s.n);
        }
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_state_loads_the_same_and_other_shapes_load_as_before() {
        let d = tempfile::tempdir().unwrap();
        let mut s = State::load(d.path(), "a1");
        let stamp = FileStamp {
            dev: 65024,
            ino: u64::MAX,
            size: 279_333,
            mtime_ns: -5,
        };
        s.set_pushed(Path::new("/w/one.jsonl"), stamp.clone(), "", "h1");
        s.set_pushed(Path::new("/w/two \"q\".jsonl"), stamp, "key", "h2");
        s.set_pulled(7, 9);
        s.set_pulled(10, 2);
        s.set_pulled(-1, 0);
        s.save().unwrap();
        // What was written is the JSON of that shape, as a tree of values writes it.
        let tree = serde_json::json!({
            "pushed": {
                "/w/one.jsonl": ["65024", u64::MAX.to_string(), "279333", "-5", "", "h1"],
                "/w/two \"q\".jsonl": ["65024", u64::MAX.to_string(), "279333", "-5", "key", "h2"],
            },
            "pulled": {"-1": 0, "7": 9, "10": 2},
            "changes": null,
        });
        assert_eq!(
            std::fs::read_to_string(state_file(d.path(), "a1").unwrap()).unwrap(),
            tree.to_string()
        );
        let t = State::load(d.path(), "a1");
        assert_eq!(t.pushed, s.pushed);
        assert_eq!(t.pulled, s.pulled);
        // Not the shape a save writes (five items, a number): read value by value.
        std::fs::write(
            state_file(d.path(), "a1").unwrap(),
            r#"{"pushed":{"/a":["1","2","3","4","r"],"/b":[1,"2","3","4","",""]},"pulled":{"7":9,"x":1}}"#,
        )
        .unwrap();
        let t = State::load(d.path(), "a1");
        let a = FileStamp {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: 4,
        };
        assert_eq!(t.pushed.len(), 1);
        assert_eq!(t.pushed["/a"], (a, "r".to_string(), String::new()));
        assert_eq!(t.pulled, BTreeMap::from([(7, 9)]));
        // A key written twice: the last holds, as for a map; an entry whose numbers do not
        // parse is left out, and the others kept.
        std::fs::write(
            state_file(d.path(), "a1").unwrap(),
            r#"{"pushed":{"/z":["1","2","3","4","","old"],"/y":["1","x","3","4","",""],"/z":["1","2","3","4","","new"]},"pulled":{}}"#,
        )
        .unwrap();
        let t = State::load(d.path(), "a1");
        assert_eq!(t.pushed.len(), 1);
        assert_eq!(t.pushed["/z"].2, "new");
        // Not JSON: empty.
        std::fs::write(state_file(d.path(), "a1").unwrap(), "{").unwrap();
        assert!(State::load(d.path(), "a1").pushed.is_empty());
    }

    /// The count a state is in step with is saved with it, in the whole state and in a line
    /// of changes alike, for one machine; `null` clears it; a line without it (an older
    /// writer's) leaves it as it was.
    #[test]
    fn the_count_in_step_is_kept_for_its_machine() {
        let d = tempfile::tempdir().unwrap();
        let whole = state_file(d.path(), "a1").unwrap();
        let lines = changes_file(&whole);
        let stamp = FileStamp {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: 4,
        };
        let mut s = State::load(d.path(), "a1");
        assert_eq!(s.in_step("m1"), None);
        for n in 0..20 {
            s.set_pushed(
                &PathBuf::from(format!("/w/{n}.jsonl")),
                stamp.clone(),
                "",
                "h",
            );
        }
        s.set_in_step("m1", Some(5));
        s.save().unwrap();
        assert!(!lines.exists());
        let mut t = State::load(d.path(), "a1");
        assert_eq!((t.in_step("m1"), t.in_step("m2")), (Some(5), None));
        // The count alone changed: a line.
        t.set_in_step("m1", Some(6));
        t.save().unwrap();
        assert!(lines.exists());
        let mut t = State::load(d.path(), "a1");
        assert_eq!(t.in_step("m1"), Some(6));
        t.set_in_step("m1", None);
        t.save().unwrap();
        assert_eq!(State::load(d.path(), "a1").in_step("m1"), None);
        // Another machine's count is not this one's.
        let mut t = State::load(d.path(), "a1");
        t.set_in_step("m2", Some(1));
        t.save().unwrap();
        let t = State::load(d.path(), "a1");
        assert_eq!((t.in_step("m1"), t.in_step("m2")), (None, Some(1)));
        // A line without the field leaves the count; one with a torn count is not read.
        let mut text = std::fs::read_to_string(&lines).unwrap();
        text.push_str("{\"pushed\":{},\"pulled\":{}}\n");
        std::fs::write(&lines, &text).unwrap();
        assert_eq!(State::load(d.path(), "a1").in_step("m2"), Some(1));
        text.push_str("{\"pushed\":{},\"pulled\":{},\"changes\":{\"machine\":\"m2\"}}\n");
        std::fs::write(&lines, &text).unwrap();
        assert_eq!(State::load(d.path(), "a1").in_step("m2"), Some(1));
    }

    /// A save after a few changes adds one line to `<id>.changes` and leaves the whole
    /// state as it was; a load reads both to the same state; a torn line, a writer that
    /// added lines since the load, or lines grown past a quarter of the whole state make
    /// the next save write all of it again (and remove the lines).
    #[test]
    fn few_changes_are_a_line_and_every_load_sees_the_same_state() {
        let d = tempfile::tempdir().unwrap();
        let whole = state_file(d.path(), "a1").unwrap();
        let lines = changes_file(&whole);
        let stamp = |n: u64| FileStamp {
            dev: 1,
            ino: n,
            size: n * 10,
            mtime_ns: n as i128,
        };
        let mut s = State::load(d.path(), "a1");
        for n in 0..40 {
            s.set_pushed(&PathBuf::from(format!("/w/{n}.jsonl")), stamp(n), "", "h");
        }
        s.save().unwrap();
        assert!(!lines.exists(), "the first save writes the whole state");
        let same = |s: &State| {
            let t = State::load(d.path(), "a1");
            assert_eq!((&t.pushed, &t.pulled), (&s.pushed, &s.pulled));
        };
        same(&s);
        let first = std::fs::read(&whole).unwrap();
        // One change, a pulled length, in a state loaded again: one line.
        let mut s = State::load(d.path(), "a1");
        s.set_pushed(Path::new("/w/3.jsonl"), stamp(300), "k", "h3");
        s.set_pulled(7, 9);
        s.save().unwrap();
        assert_eq!(std::fs::read(&whole).unwrap(), first);
        let text = std::fs::read_to_string(&lines).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(text.contains("/w/3.jsonl") && !text.contains("/w/4.jsonl"));
        same(&s);
        // Unchanged: nothing written.
        s.save().unwrap();
        assert_eq!(std::fs::read_to_string(&lines).unwrap(), text);
        // More saves from the same state, each a line, until the lines would outgrow a
        // quarter of the whole state: then all of it again, without lines.
        let mut rewrote = false;
        for n in 0..40 {
            s.set_pushed(Path::new("/w/5.jsonl"), stamp(500 + n), "", "h5");
            s.save().unwrap();
            same(&s);
            if !lines.exists() {
                rewrote = true;
                assert_ne!(std::fs::read(&whole).unwrap(), first);
                break;
            }
        }
        assert!(rewrote, "the lines never outgrew the whole state");
        // A torn line: what is before it counts, and the next save writes all.
        let mut s = State::load(d.path(), "a1");
        s.set_pushed(Path::new("/w/6.jsonl"), stamp(600), "", "h6");
        s.save().unwrap();
        let good = std::fs::read_to_string(&lines).unwrap();
        std::fs::write(&lines, format!("{good}{{\"pushed\":{{\"/w/7.jsonl\"")).unwrap();
        let mut t = State::load(d.path(), "a1");
        assert_eq!(t.pushed, s.pushed);
        t.set_pushed(Path::new("/w/8.jsonl"), stamp(800), "", "h8");
        t.save().unwrap();
        assert!(!lines.exists());
        same(&t);
        // Another writer's line since this state was read: all written again.
        let mut a = State::load(d.path(), "a1");
        let mut b = State::load(d.path(), "a1");
        a.set_pushed(Path::new("/w/9.jsonl"), stamp(900), "", "h9");
        a.save().unwrap();
        assert!(lines.exists());
        b.set_pushed(Path::new("/w/10.jsonl"), stamp(1000), "", "h10");
        b.save().unwrap();
        assert!(!lines.exists());
        same(&b);
    }
}
