//! Reading the archive as a whole: sharing, listing, searching, one session's bytes.
//! Everything goes through row-level security: a role sees its own sessions and those
//! shared with a role it is a member of.

use crate::pull::{copies, fetch, Copy};
use crate::{Archive, Error, Result};

/// Shares a session (all its copies) with a role; the role's members may then read it.
pub fn share(archive: &mut Archive, session_id: &str, grantee: &str) -> Result<()> {
    let exists = archive
        .client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)",
            &[&grantee],
        )?
        .get::<_, bool>(0);
    if !exists {
        return Err(Error::msg(format!(
            "share: no role {grantee:?} in the archive's server"
        )));
    }
    let pk = archive.client.query_opt(
        "SELECT pk FROM sessiontree.sessions WHERE session_id = $1 AND owner = current_user",
        &[&session_id],
    )?;
    let Some(pk) = pk else {
        return Err(Error::msg(format!(
            "share: session {session_id} is not in the archive as yours (role {}); push it first",
            archive.role
        )));
    };
    let pk: i64 = pk.get(0);
    archive.client.execute(
        "INSERT INTO sessiontree.shares (session_pk, grantee) VALUES ($1, $2)
         ON CONFLICT DO NOTHING",
        &[&pk, &grantee],
    )?;
    Ok(())
}

/// Takes a share back.
pub fn unshare(archive: &mut Archive, session_id: &str, grantee: &str) -> Result<bool> {
    let n = archive.client.execute(
        "DELETE FROM sessiontree.shares sh USING sessiontree.sessions s
         WHERE sh.session_pk = s.pk AND s.session_id = $1 AND s.owner = current_user
           AND sh.grantee = $2",
        &[&session_id, &grantee],
    )?;
    Ok(n > 0)
}

/// One copy in a listing: Pi's `SessionInfo` fields, plus where it comes from.
#[derive(Debug, Clone)]
pub struct Listed {
    pub info: serde_json::Value,
    pub session_id: String,
    pub owner: String,
    pub machine: String,
    pub redacted: bool,
    pub modified_ms: f64,
}

/// Every visible copy (latest version), newest first.
pub fn list(archive: &mut Archive) -> Result<Vec<Listed>> {
    let rows = archive.client.query(
        "SELECT s.session_id, s.owner::text, coalesce(m.name, c.machine::text),
                v.redaction IS NOT NULL, coalesce(v.info::text, 'null')
         FROM (SELECT DISTINCT ON (copy_pk) * FROM sessiontree.versions
               ORDER BY copy_pk, seq DESC) v
         JOIN sessiontree.copies c ON c.pk = v.copy_pk
         JOIN sessiontree.sessions s ON s.pk = c.session_pk
         LEFT JOIN sessiontree.machines m ON m.id = c.machine AND m.owner = c.owner",
        &[],
    )?;
    let mut out: Vec<Listed> = rows
        .into_iter()
        .map(|r| {
            let info: serde_json::Value =
                serde_json::from_str(r.get::<_, &str>(4)).unwrap_or(serde_json::Value::Null);
            let modified_ms = info
                .get("modified")
                .and_then(|m| m.as_str())
                .and_then(sessiontree::date::parse_iso)
                .unwrap_or(0.0);
            Listed {
                session_id: r.get(0),
                owner: r.get(1),
                machine: r.get(2),
                redacted: r.get(3),
                info,
                modified_ms,
            }
        })
        .collect();
    out.sort_by(|a, b| b.modified_ms.total_cmp(&a.modified_ms));
    Ok(out)
}

/// How the query is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every word, anywhere in the entry's text, any case.
    Words,
    /// The query as one substring, any case.
    Phrase,
    /// A regular expression.
    Regex,
}

/// A search hit: an entry of a visible session, with the machines that hold it.
#[derive(Debug, Clone)]
pub struct Hit {
    pub session_id: String,
    pub owner: String,
    pub machines: Vec<String>,
    pub entry_id: String,
    pub role: String,
    pub ts_ms: Option<f64>,
    pub text: String,
}

fn like_escape(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

/// Words (all of them, case-insensitive) in entry texts: full text for words, trigrams for
/// code and text without word boundaries (CJK). Latest versions only; one hit per entry.
pub fn search(
    archive: &mut Archive,
    query: &str,
    mode: Mode,
    role: Option<&str>,
    limit: usize,
) -> Result<Vec<Hit>> {
    let words: Vec<String> = match mode {
        Mode::Words => query.split_whitespace().map(|w| w.to_lowercase()).collect(),
        Mode::Phrase => vec![query.to_lowercase()],
        Mode::Regex => vec![],
    };
    if query.trim().is_empty() {
        return Err(Error::msg("search: empty query"));
    }
    let re = match mode {
        Mode::Regex => {
            Some(regex::Regex::new(query).map_err(|e| Error::msg(format!("search: {e}")))?)
        }
        _ => None,
    };
    let longest = words
        .iter()
        .max_by_key(|w| w.chars().count())
        .cloned()
        .unwrap_or_default();
    let pattern = format!("%{}%", like_escape(&longest));
    // Words: full text or a trigram match of the longest word, then every word checked.
    // Phrase: the trigram match. Regex: PostgreSQL's regex (trigram-accelerated), then ours.
    let cond = match mode {
        Mode::Words => {
            "(to_tsvector('simple', t.body) @@ plainto_tsquery('simple', $1) OR t.body ILIKE $2)"
        }
        Mode::Phrase => "(t.body ILIKE $2 AND $1 = $1)",
        Mode::Regex => "(t.body ~ $1 AND $2 = $2)",
    };
    let sql = format!(
        "SELECT s.session_id, s.owner::text, coalesce(m.name, c.machine::text), t.entry_id,
                t.role, t.ts, t.body
         FROM sessiontree.texts t
         JOIN sessiontree.versions v ON v.pk = t.version_pk
         JOIN sessiontree.copies c ON c.pk = v.copy_pk
         JOIN sessiontree.sessions s ON s.pk = t.session_pk
         LEFT JOIN sessiontree.machines m ON m.id = c.machine AND m.owner = c.owner
         WHERE {cond}
           AND ($4::text IS NULL OR t.role = $4)
           AND v.seq = (SELECT max(seq) FROM sessiontree.versions v2 WHERE v2.copy_pk = c.pk)
         ORDER BY t.ts DESC NULLS LAST
         LIMIT $3"
    );
    let rows = archive.client.query(
        &sql,
        &[&query, &pattern, &((limit.max(1) * 4) as i64), &role],
    )?;
    let mut hits: Vec<Hit> = Vec::new();
    for r in rows {
        let body: String = r.get(6);
        let lower = body.to_lowercase();
        if !words.iter().all(|w| lower.contains(w.as_str()))
            || re.as_ref().is_some_and(|r| !r.is_match(&body))
        {
            continue;
        }
        let session_id: String = r.get(0);
        let entry_id: Option<String> = r.get(3);
        let entry_id = entry_id.unwrap_or_default();
        let machine: String = r.get(2);
        if let Some(h) = hits
            .iter_mut()
            .find(|h| h.session_id == session_id && h.entry_id == entry_id)
        {
            if !h.machines.contains(&machine) {
                h.machines.push(machine);
            }
            continue;
        }
        if hits.len() >= limit {
            continue;
        }
        let ts: Option<String> = r.get(5);
        hits.push(Hit {
            session_id,
            owner: r.get(1),
            machines: vec![machine],
            entry_id,
            role: r.get::<_, Option<String>>(4).unwrap_or_default(),
            ts_ms: ts.and_then(|t| t.parse().ok()),
            text: body,
        });
    }
    Ok(hits)
}

/// The bytes of a session's most recently pushed copy (for export), and that copy.
pub fn session_bytes(archive: &mut Archive, session_id: &str) -> Result<(Copy, Vec<u8>)> {
    let all = copies(archive, &[session_id.to_string()])?;
    let Some(c) = all.into_iter().find(|c| c.length > 0) else {
        return Err(Error::msg(format!(
            "session {session_id} is not in the archive (or not visible to role {})",
            archive.role
        )));
    };
    let b = fetch(archive, &c)?;
    Ok((c, b))
}
