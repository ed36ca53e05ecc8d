//! This machine's stable id and name, kept under the agent dir
//! (`sessiontree-machine.json`), so that every agent dir is one machine to the archive,
//! and its row in the archive's `machines`.

use crate::{io_err, Archive, Error, Result};
use postgres::types::Type;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct Machine {
    pub id: String,
    pub name: String,
}

pub fn machine_file(agent_dir: &Path) -> PathBuf {
    agent_dir.join("sessiontree-machine.json")
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unnamed".to_string())
}

fn read(path: &Path) -> Result<Option<Machine>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(path)(e)),
    };
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::msg(format!("{}: not a machine file: {e}", path.display())))?;
    let id = v.get("id").and_then(|x| x.as_str());
    let name = v.get("name").and_then(|x| x.as_str());
    match (id, name) {
        (Some(id), Some(name)) if uuid::Uuid::parse_str(id).is_ok() => Ok(Some(Machine {
            id: id.to_string(),
            name: name.to_string(),
        })),
        _ => Err(Error::msg(format!(
            "{}: a machine file needs a UUID \"id\" and a \"name\"",
            path.display()
        ))),
    }
}

fn content(m: &Machine) -> String {
    format!("{}\n", serde_json::json!({"id": m.id, "name": m.name}))
}

/// The machine of an agent dir, created on first use (id: a random UUID, name: the host
/// name). `rename` changes the stored name.
pub fn load_or_create(agent_dir: &Path, rename: Option<&str>) -> Result<Machine> {
    let path = machine_file(agent_dir);
    let m = match read(&path)? {
        Some(m) => m,
        None => {
            std::fs::create_dir_all(agent_dir).map_err(io_err(agent_dir))?;
            let m = Machine {
                id: uuid::Uuid::new_v4().to_string(),
                name: rename.map(str::to_string).unwrap_or_else(host_name),
            };
            match sessiontree::store::create_exclusive(&path, &[content(&m).as_bytes()]) {
                Ok(()) => m,
                // Another process made it first: theirs counts.
                Err(sessiontree::Error::Exists { .. }) => read(&path)?
                    .ok_or_else(|| Error::msg(format!("{}: vanished", path.display())))?,
                Err(e) => return Err(e.into()),
            }
        }
    };
    match rename {
        Some(n) if n != m.name => {
            let m = Machine {
                id: m.id,
                name: n.to_string(),
            };
            sessiontree::store::atomic_replace(&path, &[content(&m).as_bytes()])?;
            Ok(m)
        }
        _ => Ok(m),
    }
}

/// Records (or renames) this machine in the archive.
pub fn register(archive: &mut Archive, me: &Machine) -> Result<()> {
    archive
        .client
        .execute_typed(REGISTER, &[(&me.id, Type::TEXT), (&me.name, Type::TEXT)])?;
    Ok(())
}

/// Written only when new, renamed or last seen an hour ago: a write costs a WAL flush, a
/// good part of a push that has one entry to send. $1: id, $2: name.
pub(crate) const REGISTER: &str = "INSERT INTO sessiontree.machines (id, name)
     SELECT $1::text::uuid, $2
     WHERE NOT EXISTS (SELECT 1 FROM sessiontree.machines
                       WHERE owner = current_user AND id = $1::text::uuid AND name = $2
                         AND last_seen > now() - interval '1 hour')
     ON CONFLICT (owner, id) DO UPDATE SET name = EXCLUDED.name, last_seen = now()";
