//! What this agent dir knows about an archive, so that an unchanged file is not read again:
//! per local file, the (device, inode, size, mtime) and hash it had when last compared with
//! the archive, and per pulled version, how much of it is already in the local file.
//!
//! Only a cache: every decision is still checked against the archive (the hash must match
//! the archive's), and deleting the file only costs one full read.

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
}

/// The state file as [`State::save`] writes it.
#[derive(serde::Deserialize)]
struct Typed {
    #[serde(default)]
    pushed: BTreeMap<String, [String; 6]>,
    #[serde(default)]
    pulled: BTreeMap<String, i64>,
}

#[derive(Default, Debug)]
pub struct State {
    path: PathBuf,
    /// local path -> (stamp, redaction key, hash of what was archived for it)
    pub pushed: BTreeMap<String, (FileStamp, String, String)>,
    /// version pk -> bytes of that version already in the local file
    pub pulled: BTreeMap<i64, i64>,
    dirty: bool,
}

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
        let Ok(text) = std::fs::read_to_string(&path) else {
            return s;
        };
        // The shape `save` writes, read straight into its types (a tree of values first
        // took a browser's first frame over 20,000 pushed files 0.1 s); anything else is
        // read value by value below, as before.
        if let Ok(t) = serde_json::from_str::<Typed>(&text) {
            for (k, [dev, ino, size, mt, r, h]) in t.pushed {
                if let (Ok(dev), Ok(ino), Ok(size), Ok(mtime_ns)) =
                    (dev.parse(), ino.parse(), size.parse(), mt.parse())
                {
                    let stamp = FileStamp {
                        dev,
                        ino,
                        size,
                        mtime_ns,
                    };
                    s.pushed.insert(k, (stamp, r, h));
                }
            }
            for (k, n) in t.pulled {
                if let Ok(k) = k.parse() {
                    s.pulled.insert(k, n);
                }
            }
            return s;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            return s;
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
        s
    }

    pub fn set_pushed(&mut self, path: &Path, stamp: FileStamp, redaction: &str, hash: &str) {
        let v = (stamp, redaction.to_string(), hash.to_string());
        let k = path.to_string_lossy().into_owned();
        if self.pushed.get(&k) != Some(&v) {
            self.pushed.insert(k, v);
            self.dirty = true;
        }
    }

    pub fn pushed(&self, path: &Path) -> Option<&(FileStamp, String, String)> {
        self.pushed.get(path.to_string_lossy().as_ref())
    }

    pub fn set_pulled(&mut self, version: i64, len: i64) {
        if self.pulled.insert(version, len) != Some(len) {
            self.dirty = true;
        }
    }

    /// The state as `save` writes it: `{"pushed":{PATH:[DEV,INO,SIZE,MTIME,REDACTION,HASH],
    /// ...},"pulled":{VERSION:LENGTH,...}}`, the numbers of a stamp as strings, in the maps'
    /// order. Written straight out (a tree of values for 20,000 pushed files took longer
    /// than the push after one append had).
    fn to_text(&self) -> Vec<u8> {
        use std::io::Write;
        let mut out = Vec::with_capacity(64 + self.pushed.len() * 192);
        let text = |out: &mut Vec<u8>, s: &str| {
            serde_json::to_writer(&mut *out, s).expect("a string into memory");
        };
        out.extend_from_slice(b"{\"pushed\":{");
        for (n, (k, (st, r, h))) in self.pushed.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            text(&mut out, k);
            let _ = write!(
                out,
                ":[\"{}\",\"{}\",\"{}\",\"{}\",",
                st.dev, st.ino, st.size, st.mtime_ns
            );
            text(&mut out, r);
            out.push(b',');
            text(&mut out, h);
            out.push(b']');
        }
        out.extend_from_slice(b"},\"pulled\":{");
        for (n, (k, v)) in self.pulled.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            let _ = write!(out, "\"{k}\":{v}");
        }
        out.extend_from_slice(b"}}");
        out
    }

    /// Writes the state (atomically) if it changed.
    pub fn save(&mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        if self.path.as_os_str().is_empty() {
            return Err(Error::msg(
                "archive: no state file for an archive id that is not a plain name",
            ));
        }
        let text = self.to_text();
        if let Some(d) = self.path.parent() {
            std::fs::create_dir_all(d).map_err(crate::io_err(d))?;
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
        self.dirty = false;
        Ok(())
    }
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
        // Not JSON: empty.
        std::fs::write(state_file(d.path(), "a1").unwrap(), "{").unwrap();
        assert!(State::load(d.path(), "a1").pushed.is_empty());
    }
}
