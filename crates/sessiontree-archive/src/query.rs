//! Reading the archive as a whole: sharing, listing, searching, one session's bytes.
//! Everything goes through row-level security: a role sees its own sessions and those
//! shared with a role it is a member of.

use crate::pull::{copies, fetch, Copy};
use crate::{trigram, Archive, Error, Result};

/// Shares a session (all its copies) with a role; the role's members may then read it.
pub fn share(archive: &mut Archive, session_id: &str, grantee: &str) -> Result<()> {
    let exists = archive
        .client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1)",
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
    list_rows(archive, false)
}

/// [`list`] without each session's `allMessagesText` in `info` (the whole text of every
/// session is most of what a listing would send; a listing for display needs none of it).
pub fn list_brief(archive: &mut Archive) -> Result<Vec<Listed>> {
    list_rows(archive, true)
}

fn list_rows(archive: &mut Archive, brief: bool) -> Result<Vec<Listed>> {
    let rows = archive.client.query(
        "SELECT s.session_id, s.owner::text, coalesce(m.name, c.machine::text),
                v.redaction IS NOT NULL,
                coalesce(CASE WHEN $1 THEN (v.info - 'allMessagesText')::text
                              ELSE v.info::text END, 'null')
         FROM (SELECT DISTINCT ON (copy_pk) * FROM sessiontree.versions
               ORDER BY copy_pk, seq DESC) v
         JOIN sessiontree.copies c
              ON c.pk = v.copy_pk AND c.session_pk = v.session_pk AND c.owner = v.owner
         JOIN sessiontree.sessions s ON s.pk = c.session_pk AND s.owner = c.owner
         LEFT JOIN sessiontree.machines m ON m.id = c.machine AND m.owner = c.owner",
        &[&brief],
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

/// Words (all of them, any case) or a phrase as substrings of entry texts, or a regex; the
/// latest version of each copy only; one hit per entry, newest first.
///
/// Candidates are ranges of versions from `sessiontree.search_grams` (the trigram index,
/// only ranges the login may read, newest first, see the schema's version 7); their bytes
/// come from the chunks, and every entry in them is checked here, with the rows a local
/// search reads. The ranges are read newest first until the newest `limit` hits are
/// certain: no range left can hold an entry newer than the last of them.
pub fn search(
    archive: &mut Archive,
    query: &str,
    mode: Mode,
    role: Option<&str>,
    limit: usize,
) -> Result<Vec<Hit>> {
    let filter = Filter {
        role: role.map(str::to_string),
        ..Filter::default()
    };
    search_filtered(archive, query, mode, &filter, limit)
}

/// Which hits count, beyond the query: as the local search's `--role`, `--cwd`, `--since`,
/// `--until`.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// The entry's role.
    pub role: Option<String>,
    /// The session's recorded cwd, exactly (another machine's paths cannot be resolved here).
    pub cwd: Option<String>,
    /// The entry's time in ms is at least this...
    pub since_ms: Option<f64>,
    /// ... and below this (entries without a time do not match either bound).
    pub until_ms: Option<f64>,
}

/// A candidate range, and where it is.
struct Candidate {
    version_pk: i64,
    off: i64,
    len: i64,
    newest: Option<f64>,
    session_id: String,
    owner: String,
    machine: String,
}

/// How hits rank: newest first, those without a time last.
fn newer(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    let key = |t: Option<f64>| t.unwrap_or(f64::NEG_INFINITY);
    key(b).total_cmp(&key(a))
}

/// [`search`] with a [`Filter`].
pub fn search_filtered(
    archive: &mut Archive,
    query: &str,
    mode: Mode,
    filter: &Filter,
    limit: usize,
) -> Result<Vec<Hit>> {
    if query.trim().is_empty() {
        return Err(Error::msg("search: empty query"));
    }
    let words: Vec<String> = match mode {
        Mode::Words => query.split_whitespace().map(trigram::fold).collect(),
        Mode::Phrase => vec![trigram::fold(query)],
        Mode::Regex => vec![],
    };
    let re = match mode {
        Mode::Regex => {
            Some(regex::Regex::new(query).map_err(|e| Error::msg(format!("search: {e}")))?)
        }
        _ => None,
    };
    // The bucket of every trigram of every word (of a regex: of what every match holds)
    // must be in a hit's range.
    let keys: Vec<String> = match mode {
        Mode::Regex => required_literals(query)
            .iter()
            .map(|l| trigram::fold(l))
            .collect(),
        _ => words.clone(),
    };
    let mut tri: Vec<i16> = keys
        .iter()
        .flat_map(|w| trigram::buckets_of_folded(w))
        .collect();
    tri.sort_unstable();
    tri.dedup();
    let tri = (!tri.is_empty()).then_some(tri);
    let limit = limit.max(1);
    let matches = |r: &sessiontree::list::EntryText| -> bool {
        if filter.role.as_deref().is_some_and(|want| want != r.role) {
            return false;
        }
        if filter.since_ms.is_some() || filter.until_ms.is_some() {
            let Some(t) = r.ts_ms else { return false };
            if filter.since_ms.is_some_and(|s| t < s) || filter.until_ms.is_some_and(|u| t >= u) {
                return false;
            }
        }
        if !words.is_empty() {
            let folded = trigram::fold(&r.text);
            if !words.iter().all(|w| folded.contains(w.as_str())) {
                return false;
            }
        }
        re.as_ref().is_none_or(|re| re.is_match(&r.text))
    };
    let mut hits: Vec<Hit> = Vec::new();
    // (session, entry) -> its hit: one hit per entry, with every machine that holds it.
    let mut seen: std::collections::HashMap<(String, String), usize> =
        std::collections::HashMap::new();
    let mut read: std::collections::HashSet<(i64, i64)> = std::collections::HashSet::new();
    let mut want: i32 = 64;
    loop {
        let (candidates, more) = candidates(archive, tri.as_deref(), filter, want)?;
        let todo: Vec<&Candidate> = candidates
            .iter()
            .filter(|c| !read.contains(&(c.version_pk, c.off)))
            .collect();
        let mut next = 0;
        let mut group = 4;
        let mut known = false;
        while next < todo.len() {
            if certain(&hits, limit, todo[next].newest) {
                known = true;
                break;
            }
            let these = &todo[next..(next + group).min(todo.len())];
            next += these.len();
            group = (group * 2).min(64);
            for (c, bytes) in these.iter().zip(range_bytes(archive, these)?) {
                read.insert((c.version_pk, c.off));
                let mut acc = sessiontree::list::Acc::past_header();
                let mut rows = Vec::new();
                for line in bytes.split(|&b| b == b'\n') {
                    rows.clear();
                    crate::grams::rows_of_line(&mut acc, line, &mut rows);
                    for r in rows.drain(..).filter(|r| matches(r)) {
                        let key = (c.session_id.clone(), r.entry_id.clone());
                        if let Some(&k) = seen.get(&key) {
                            let h = &mut hits[k];
                            if !h.machines.contains(&c.machine) {
                                h.machines.push(c.machine.clone());
                            }
                            continue;
                        }
                        seen.insert(key, hits.len());
                        hits.push(Hit {
                            session_id: c.session_id.clone(),
                            owner: c.owner.clone(),
                            machines: vec![c.machine.clone()],
                            entry_id: r.entry_id,
                            role: r.role,
                            ts_ms: r.ts_ms,
                            text: r.text,
                        });
                    }
                }
            }
        }
        // The newest hits are certain, or every candidate is read and the server had no
        // more; else more are asked for.
        if known || !more || want >= i32::MAX / 8 {
            hits.sort_by(|a, b| newer(a.ts_ms, b.ts_ms));
            hits.truncate(limit);
            return Ok(hits);
        }
        want = want.saturating_mul(4);
    }
}

/// Substrings every match of the regex `pattern` holds: the literals of its top-level
/// sequence, also inside groups and repetitions of at least once (none under an
/// alternation, a class or a case-insensitive flag: unsure there). What a match holds, its
/// line's text holds, any case folded, so their trigrams narrow the ranges to read.
fn required_literals(pattern: &str) -> Vec<String> {
    use regex_syntax::hir::{Hir, HirKind};
    fn walk(h: &Hir, out: &mut Vec<String>) {
        match h.kind() {
            HirKind::Literal(l) => {
                if let Ok(s) = std::str::from_utf8(&l.0) {
                    out.push(s.to_string());
                }
            }
            HirKind::Concat(parts) => parts.iter().for_each(|p| walk(p, out)),
            HirKind::Capture(c) => walk(&c.sub, out),
            HirKind::Repetition(r) if r.min >= 1 => walk(&r.sub, out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Ok(h) = regex_syntax::parse(pattern) {
        walk(&h, &mut out);
    }
    out
}

/// Whether the newest `limit` hits are known, when the next range to read holds nothing
/// newer than `next`: at least `limit` hits, the `limit`-th newest of which is newer than
/// `next`.
fn certain(hits: &[Hit], limit: usize, next: Option<f64>) -> bool {
    if hits.len() < limit {
        return false;
    }
    let mut ts: Vec<Option<f64>> = hits.iter().map(|h| h.ts_ms).collect();
    let (_, kth, _) = ts.select_nth_unstable_by(limit - 1, |a, b| newer(*a, *b));
    newer(*kth, next) == std::cmp::Ordering::Less
}

/// The newest `want` candidate ranges (of the latest version of each copy, after the
/// filters the server can apply), and whether the server had more.
fn candidates(
    archive: &mut Archive,
    tri: Option<&[i16]>,
    filter: &Filter,
    want: i32,
) -> Result<(Vec<Candidate>, bool)> {
    let rows = archive.client.query(
        // The candidates' count comes with the rows (and alone when none is left).
        "WITH f AS (SELECT * FROM sessiontree.search_grams($1, $2, $3, $4)),
         h AS (SELECT t.version_pk, t.off, t.len, t.newest, s.session_id,
                      s.owner::text AS owner, coalesce(m.name, c.machine::text) AS machine
               FROM f t
               JOIN sessiontree.versions v
                    ON v.pk = t.version_pk AND v.session_pk = t.session_pk
               JOIN sessiontree.copies c
                    ON c.pk = v.copy_pk AND c.session_pk = v.session_pk AND c.owner = v.owner
               JOIN sessiontree.sessions s ON s.pk = t.session_pk AND s.owner = c.owner
               LEFT JOIN sessiontree.machines m ON m.id = c.machine AND m.owner = c.owner
               WHERE v.seq = (SELECT max(seq) FROM sessiontree.versions v2
                              WHERE v2.copy_pk = c.pk)
                 AND ($5::text IS NULL OR s.cwd = $5))
         SELECT h.version_pk, h.off, h.len, h.newest, h.session_id, h.owner, h.machine,
                (SELECT count(*) FROM f)
         FROM (SELECT 1) one LEFT JOIN h ON true
         ORDER BY h.newest DESC NULLS LAST, h.version_pk, h.off",
        &[&tri, &filter.since_ms, &filter.until_ms, &want, &filter.cwd],
    )?;
    let count = rows.first().map(|r| r.get::<_, i64>(7)).unwrap_or(0);
    let mut out = Vec::new();
    for r in rows {
        let Some(version_pk) = r.get::<_, Option<i64>>(0) else {
            continue;
        };
        out.push(Candidate {
            version_pk,
            off: r.get(1),
            len: r.get(2),
            newest: r.get(3),
            session_id: r.get(4),
            owner: r.get(5),
            machine: r.get(6),
        });
    }
    Ok((out, count >= want as i64))
}

/// The bytes of each range, from the chunks that overlap it (read under the chunks'
/// row-level security; a range reaches no further than its version's bytes, whatever its
/// row says).
fn range_bytes(archive: &mut Archive, ranges: &[&Candidate]) -> Result<Vec<Vec<u8>>> {
    let v: Vec<i64> = ranges.iter().map(|c| c.version_pk).collect();
    let start: Vec<i64> = ranges.iter().map(|c| c.off).collect();
    let end: Vec<i64> = ranges.iter().map(|c| c.off.saturating_add(c.len)).collect();
    let rows = archive.client.query(
        "SELECT r.i, c.off, c.data
         FROM unnest($1::int8[], $2::int8[], $3::int8[]) WITH ORDINALITY AS r(v, s, e, i)
         JOIN sessiontree.chunks c
              ON c.version_pk = r.v AND c.off < r.e AND c.off + octet_length(c.data) > r.s
         ORDER BY r.i, c.off",
        &[&v, &start, &end],
    )?;
    let mut out: Vec<Vec<u8>> = vec![Vec::new(); ranges.len()];
    for r in rows {
        let i: i64 = r.get(0);
        let (off, data): (i64, &[u8]) = (r.get(1), r.get(2));
        let Some(k) = usize::try_from(i - 1).ok().filter(|&k| k < ranges.len()) else {
            continue;
        };
        let (s, e) = (start[k], end[k]);
        let from = (s - off).clamp(0, data.len() as i64) as usize;
        let to = (e - off).clamp(0, data.len() as i64) as usize;
        if from < to {
            out[k].extend_from_slice(&data[from..to]);
        }
    }
    Ok(out)
}

/// The bytes of a session's most recently pushed copy (for export), and that copy.
///
/// The caller's own copies come first: another role may push a session of its own under
/// the same id and share it, and that is not the caller's session. Without an own copy,
/// the copies of one other owner; copies of several other owners are refused (which one
/// was meant is not known), naming the owners.
pub fn session_bytes(archive: &mut Archive, session_id: &str) -> Result<(Copy, Vec<u8>)> {
    let c = session_copy(archive, session_id)?;
    let b = fetch(archive, &c)?;
    Ok((c, b))
}

/// The copy [`session_bytes`] reads, without its bytes: a reader that keeps what it read
/// can tell from the copy's version, length and hash whether it has these bytes already.
pub fn session_copy(archive: &mut Archive, session_id: &str) -> Result<Copy> {
    let all: Vec<Copy> = copies(archive, &[session_id.to_string()])?
        .into_iter()
        .filter(|c| c.length > 0)
        .collect();
    let own = all.iter().find(|c| c.owner == archive.role);
    let c = match own {
        Some(c) => c.clone(),
        None => {
            let mut owners: Vec<&str> = all.iter().map(|c| c.owner.as_str()).collect();
            owners.sort_unstable();
            owners.dedup();
            if owners.len() > 1 {
                return Err(Error::msg(format!(
                    "session {session_id} is in the archive from {} owners ({}), none of them \
                     role {}: not exported",
                    owners.len(),
                    owners.join(", "),
                    archive.role
                )));
            }
            match all.first() {
                Some(c) => c.clone(),
                None => {
                    return Err(Error::msg(format!(
                        "session {session_id} is not in the archive (or not visible to role {})",
                        archive.role
                    )))
                }
            }
        }
    };
    Ok(c)
}

/// The recorded working directory of every visible session with one of these ids, as
/// (session id, owner, cwd): what a search hit does not carry.
pub fn session_cwds(
    archive: &mut Archive,
    ids: &[String],
) -> Result<Vec<(String, String, String)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = archive.client.query(
        "SELECT session_id, owner::text, coalesce(cwd, '') FROM sessiontree.sessions
         WHERE session_id = ANY ($1)",
        &[&ids],
    )?;
    Ok(rows
        .into_iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::required_literals;

    #[test]
    fn a_regex_gives_only_the_literals_every_match_holds() {
        assert_eq!(
            required_literals("abc(def)+x*[gh]ijk"),
            vec!["abc", "def", "ijk"]
        );
        assert_eq!(
            required_literals("N.mbat here 1[01]-"),
            vec!["N", "mbat here 1", "-"]
        );
        assert_eq!(required_literals("fn (main|test)\\("), vec!["fn ", "("]);
        for unsure in ["(?i)abc", "abc|def", "(abc)?", "x{0,3}", "[a-z]+", "(", ""] {
            assert!(required_literals(unsure).is_empty(), "{unsure}");
        }
        assert_eq!(required_literals("日本語.*über"), vec!["日本語", "über"]);
    }
}
