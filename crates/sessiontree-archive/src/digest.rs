//! What the archive holds of a session, as the server computes it: for `sessiontree prune`,
//! which deletes a local file only when the archive has the same bytes. The SHA-256 is the
//! server's `sha256()` over the stored chunks in order, never the hash column a client wrote
//! nor the local push state: a version whose chunks do not add up to the file (a push cut
//! short, a gap, an overlap) has another digest and protects nothing.

use crate::{Archive, Result};
use postgres::types::Type;
use std::collections::HashMap;

/// One stored version of a session: its length and the SHA-256 of its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub length: i64,
    pub sha256: Vec<u8>,
}

/// For each of `session_ids`, every unredacted version of every copy the current role owns
/// (any machine), with the server-computed digest of its stored bytes. Sessions the archive
/// does not hold are absent.
pub fn stored_digests(
    archive: &mut Archive,
    session_ids: &[String],
) -> Result<HashMap<String, Vec<Stored>>> {
    let mut out: HashMap<String, Vec<Stored>> = HashMap::new();
    if session_ids.is_empty() {
        return Ok(out);
    }
    // In slices: one statement per few hundred sessions, each version's chunks aggregated on
    // the server (the bytes never cross the wire).
    for part in session_ids.chunks(256) {
        let ids: Vec<&str> = part.iter().map(String::as_str).collect();
        let rows = archive.client.query_typed(
            "SELECT s.session_id, d.len, d.digest
             FROM sessiontree.sessions s
             JOIN sessiontree.versions v ON v.session_pk = s.pk
             CROSS JOIN LATERAL (
                 SELECT coalesce(sum(octet_length(c.data)), 0)::bigint AS len,
                        sha256(coalesce(string_agg(c.data, ''::bytea ORDER BY c.off), ''::bytea)) AS digest
                 FROM sessiontree.chunks c WHERE c.version_pk = v.pk
             ) d
             WHERE s.session_id = ANY($1::text[])
               AND s.owner = current_user AND v.owner = current_user
               AND v.redaction IS NULL",
            &[(&ids, Type::TEXT_ARRAY)],
        )?;
        for r in rows {
            out.entry(r.get::<_, String>(0)).or_default().push(Stored {
                length: r.get(1),
                sha256: r.get(2),
            });
        }
    }
    Ok(out)
}
