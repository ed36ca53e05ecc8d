//! # sessiontree-archive
//!
//! A shared archive of session files on PostgreSQL: many machines push the sessions under
//! their agent dir, pull the others' back, share them with a team role and search them.
//!
//! What it promises (see `docs/archive.md`):
//! * **Byte-exact.** The archive keeps each file's bytes up to its last complete line
//!   (header, every line, lines that do not parse; a line still being written waits for the
//!   next push), per session and per machine, as versions made of chunks.
//! * **Idempotent and resumable.** Every change is one transaction; a grown file sends only
//!   its new bytes after the archive's prefix hash matched the local prefix; a rewritten file
//!   becomes a new version. Pull only appends to local files, creates new ones atomically and
//!   recognises its own interrupted appends.
//! * **Many machines.** The same session grown on two machines is kept twice; pulling one
//!   into the other appends the missing entries as a branch and then a label entry whose
//!   parent is the old leaf, so the leaf (and the context) stays where it was.
//! * **Row-level security.** Rows belong to the role that pushed them; shares grant reading
//!   to another role; policies enforce it for every client, including `psql`.
//! * **The client holds on its own.** Whatever the server returns, another owner's session
//!   is never merged into the user's or put among them, no value from the archive names a
//!   path outside the folder a command owns ([`local`]), and no claim sizes memory.

pub mod conn;
pub mod digest;
pub mod grams;
pub mod local;
pub mod machine;
pub mod merge;
pub mod pull;
pub mod push;
pub mod query;
pub mod redact;
pub mod schema;
pub mod secrets;
pub mod state;
pub mod trigram;
pub mod usage;
pub mod watch;

use std::fmt;

/// An archive error: one line saying what failed, naming the file or the server.
#[derive(Debug)]
pub struct Error(String);

impl Error {
    pub fn msg(s: impl Into<String>) -> Error {
        Error(s.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Error {
        match e.as_db_error() {
            Some(db) => {
                let mut s = format!("archive: {}", db.message());
                if let Some(d) = db.detail() {
                    s.push_str(&format!(" ({d})"));
                }
                Error(s)
            }
            None => {
                let mut s = format!("archive: {e}");
                let mut src = std::error::Error::source(&e);
                while let Some(c) = src {
                    s.push_str(&format!(": {c}"));
                    src = c.source();
                }
                Error(s)
            }
        }
    }
}

impl From<sessiontree::Error> for Error {
    fn from(e: sessiontree::Error) -> Error {
        Error(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// `path: what happened`, for I/O errors.
pub(crate) fn io_err(path: &std::path::Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error(format!("{}: {e}", path.display()))
}

/// An open archive: the connection, after the schema was brought up to date.
pub struct Archive {
    pub client: postgres::Client,
    /// The archive's own id (a random UUID made with the schema), which keys local state.
    pub id: String,
    /// The role this connection acts as.
    pub role: String,
    /// What it was opened with (for a second connection; may hold a password: never shown).
    pub(crate) url: String,
}

impl Archive {
    /// Connects (see [`conn::connect`]) and creates or migrates the schema when needed.
    pub fn open(url: &str) -> Result<Archive> {
        let mut client = conn::connect(url)?;
        // Usually the schema is current: one round trip says so and gives the archive's id
        // (a short command is mostly round trips). Otherwise (no schema yet, older or newer)
        // the migration decides.
        let quick = client.query_typed_opt(
            "SELECT (SELECT max(version) FROM sessiontree.migrations),
                    (SELECT value FROM sessiontree.meta WHERE key = 'archive_id'),
                    current_user::text",
            &[],
        );
        if let Ok(Some(row)) = quick {
            if row.get::<_, Option<i32>>(0) == Some(schema::latest()) {
                if let Some(id) = row.get::<_, Option<String>>(1) {
                    return Ok(Archive {
                        id,
                        role: row.get(2),
                        client,
                        url: url.to_string(),
                    });
                }
            }
        }
        schema::migrate(&mut client)?;
        let row = client.query_typed_one(
            "SELECT (SELECT value FROM sessiontree.meta WHERE key = 'archive_id'), current_user::text",
            &[],
        )?;
        Ok(Archive {
            id: row.get(0),
            role: row.get(1),
            client,
            url: url.to_string(),
        })
    }
}

/// SHA-256 of bytes.
pub(crate) fn sha256(b: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(b).to_vec()
}

pub(crate) fn hex(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(DIGITS[(x >> 4) as usize] as char);
        s.push(DIGITS[(x & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(super::hex(&[0, 0xab, 0x0f, 0xf0]), "00ab0ff0");
        assert_eq!(super::hex(&[]), "");
    }
}
