//! The usage of a version (what `sessiontree stats` sums), computed by the client from the
//! bytes it pushes and kept in `sessiontree.usage` (schema version 5), so that `stats
//! --archive` reads a few numbers per session instead of every session's bytes.

use crate::{Archive, Error, Result};
use postgres::types::{ToSql, Type};
use sessiontree::usage::{day_of, on_branch_at, records_in, Usage};
use std::collections::HashMap;

/// One record with a usage (an assistant message's `usage`, a `usage` entry), as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The entry's id: with `entry_ts` it identifies a record copied into a fork.
    pub entry_id: Option<String>,
    pub entry_ts: String,
    pub provider: String,
    pub model: String,
    /// The UTC day of the record's time (`-` without one), as `stats --by day` shows it.
    pub day: String,
    /// On the current branch (the path from the last entry up its parents).
    pub on_branch: bool,
    pub usage: Usage,
}

/// The usage records of a session's bytes, in file order (none when they are not a session).
pub fn rows(bytes: &[u8]) -> Vec<Row> {
    let Some(recs) = records_in(bytes) else {
        return Vec::new();
    };
    let mut branch = vec![false; recs.len()];
    for i in on_branch_at(&recs) {
        branch[i] = true;
    }
    recs.into_iter()
        .zip(branch)
        .filter_map(|(r, on_branch)| {
            let usage = r.usage?;
            Some(Row {
                day: day_of(r.ts_ms),
                entry_id: r.id,
                entry_ts: r.timestamp,
                provider: r.provider,
                model: r.model,
                on_branch,
                usage,
            })
        })
        .collect()
}

/// The usage rows of many versions as the columns of one `unnest` (`$1`..`$15`): version,
/// session, n, entry id, entry time, provider, model, day, on branch, the six numbers.
#[derive(Default)]
pub(crate) struct Columns<'a> {
    vpk: Vec<i64>,
    spk: Vec<i64>,
    n: Vec<i32>,
    id: Vec<Option<&'a str>>,
    ts: Vec<&'a str>,
    provider: Vec<&'a str>,
    model: Vec<&'a str>,
    day: Vec<&'a str>,
    branch: Vec<bool>,
    num: [Vec<f64>; 6],
}

impl<'a> Columns<'a> {
    pub(crate) fn add(&mut self, vpk: i64, spk: i64, rows: &'a [Row]) {
        for (n, r) in rows.iter().enumerate() {
            self.vpk.push(vpk);
            self.spk.push(spk);
            self.n.push(n as i32);
            self.id.push(r.entry_id.as_deref());
            self.ts.push(&r.entry_ts);
            self.provider.push(&r.provider);
            self.model.push(&r.model);
            self.day.push(&r.day);
            self.branch.push(r.on_branch);
            let u = &r.usage;
            for (col, x) in self.num.iter_mut().zip([
                u.input,
                u.output,
                u.cache_read,
                u.cache_write,
                u.total_tokens,
                u.cost,
            ]) {
                col.push(x);
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.vpk.is_empty()
    }

    pub(crate) fn params(&self) -> Vec<(&(dyn ToSql + Sync), Type)> {
        let mut p: Vec<(&(dyn ToSql + Sync), Type)> = vec![
            (&self.vpk, Type::INT8_ARRAY),
            (&self.spk, Type::INT8_ARRAY),
            (&self.n, Type::INT4_ARRAY),
            (&self.id, Type::TEXT_ARRAY),
            (&self.ts, Type::TEXT_ARRAY),
            (&self.provider, Type::TEXT_ARRAY),
            (&self.model, Type::TEXT_ARRAY),
            (&self.day, Type::TEXT_ARRAY),
            (&self.branch, Type::BOOL_ARRAY),
        ];
        for c in &self.num {
            p.push((c, Type::FLOAT8_ARRAY));
        }
        p
    }
}

/// The `unnest` of [`Columns::params`] from parameter `$first` on, as `u(v, s, n, id, ts,
/// provider, model, day, branch, i, o, cr, cw, tt, cost)`.
pub(crate) fn unnest(first: usize) -> String {
    let types = [
        "int8[]", "int8[]", "int4[]", "text[]", "text[]", "text[]", "text[]", "text[]", "bool[]",
        "float8[]", "float8[]", "float8[]", "float8[]", "float8[]", "float8[]",
    ];
    let args: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(i, t)| format!("${}::{t}", first + i))
        .collect();
    format!(
        "unnest({}) AS u(v, s, n, id, ts, provider, model, day, branch, i, o, cr, cw, tt, cost)",
        args.join(", ")
    )
}

/// The insert of the rows of `unnest` aliased `u` (rows already there, from the part of an
/// appended version the archive had, only get their `on_branch`: the bytes before an append
/// do not change, the leaf does).
pub(crate) const INSERT: &str = "INSERT INTO sessiontree.usage AS x
         (version_pk, session_pk, n, entry_id, entry_ts, provider, model, day, on_branch,
          input, output, cache_read, cache_write, total_tokens, cost)";
pub(crate) const ON_CONFLICT: &str = "ON CONFLICT (version_pk, n) DO UPDATE
         SET on_branch = EXCLUDED.on_branch
         WHERE x.on_branch IS DISTINCT FROM EXCLUDED.on_branch";

/// Writes the usage rows of one version in a transaction; `owner` for the migration (which
/// writes every owner's rows), else the current user's.
pub(crate) fn insert(
    tx: &mut postgres::Transaction,
    vpk: i64,
    spk: i64,
    owner: Option<&str>,
    rows: &[Row],
) -> Result<()> {
    let mut c = Columns::default();
    c.add(vpk, spk, rows);
    if c.is_empty() {
        return Ok(());
    }
    let mut params = c.params();
    params.push((&owner, Type::TEXT));
    tx.execute_typed(
        &format!(
            "INSERT INTO sessiontree.usage
                 (version_pk, session_pk, owner, n, entry_id, entry_ts, provider, model, day,
                  on_branch, input, output, cache_read, cache_write, total_tokens, cost)
             SELECT v, s, coalesce($16::text::name, current_user), n, id, ts, provider, model,
                    day, branch, i, o, cr, cw, tt, cost
             FROM {}",
            unnest(1)
        ),
        &params,
    )?;
    Ok(())
}

/// How `stats` groups records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Model,
    Provider,
    Day,
    Session,
}

/// One visible session's newest copy, for [`stats`].
#[derive(Clone, Debug)]
pub struct Session {
    pub session_id: String,
    pub owner: String,
    /// The listing's `name` and `firstMessage` and the copy's file name (for `--by session`).
    pub name: Option<String>,
    pub first_message: String,
    pub file_name: String,
}

/// What [`stats`] found.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Every visible session (newest copy per owner and session id) that has bytes.
    pub sessions: usize,
    /// Sums per group key, in key order; with `By::Session`, the key is the session's
    /// index in `known`.
    pub groups: Vec<(String, Usage)>,
    /// Every session counted (with or without kept usage), in the order of local files.
    pub known: Vec<Session>,
    /// Sessions whose usage was not kept at push time (pushed before schema version 5 and
    /// not migrated, or rows that do not describe the version's bytes): summed from their
    /// bytes, read here.
    pub unknown: Vec<crate::pull::Copy>,
    /// Of those, the ones whose bytes could not be read (session id, why): not counted.
    pub skipped: Vec<(String, String)>,
}

/// The usage sums of every visible session's most recently pushed copy (the copy `stats
/// --archive` used to download: per owner and session id, the newest non-empty one), from
/// the rows kept at push time, grouped by `by`, over every branch or the current one only.
/// A record copied into a fork (same entry id and timestamp) counts once, for the first
/// session in the order of local files (file name descending: Pi names files by creation
/// time, so the newest copy, usually the fork).
pub fn stats(archive: &mut Archive, by: By, branch_only: bool) -> Result<Stats> {
    let rows = archive.client.query(
        "WITH c AS (
             SELECT DISTINCT ON (s.owner, s.session_id) s.session_id, s.owner::text AS owner,
                    s.pk AS spk, v.pk AS vpk, v.length, v.usage_length, v.hash,
                    c.machine::text AS machine, coalesce(m.name, c.machine::text) AS mname,
                    c.rel_path, v.redaction IS NOT NULL AS redacted,
                    -- (The listing holds the session's whole text: read only when needed.)
                    CASE WHEN $1 THEN v.info->>'name' END AS name,
                    CASE WHEN $1 THEN coalesce(v.info->>'firstMessage', '') ELSE '' END AS first
             FROM (SELECT DISTINCT ON (copy_pk) pk, copy_pk, session_pk, owner, length,
                          usage_length, hash, redaction, updated_at, info
                   FROM sessiontree.versions ORDER BY copy_pk, seq DESC) v
             JOIN sessiontree.copies c
                  ON c.pk = v.copy_pk AND c.session_pk = v.session_pk AND c.owner = v.owner
             JOIN sessiontree.sessions s ON s.pk = c.session_pk AND s.owner = c.owner
             LEFT JOIN sessiontree.machines m ON m.id = c.machine AND m.owner = c.owner
             WHERE v.length > 0
             ORDER BY s.owner, s.session_id, v.updated_at DESC, v.pk DESC)
         SELECT session_id, owner, spk, vpk, length, hash, machine, mname, rel_path, redacted,
                name, first, usage_length IS NOT DISTINCT FROM length
         FROM c ORDER BY session_id, owner",
        &[&(by == By::Session)],
    )?;
    let mut out = Stats {
        sessions: rows.len(),
        ..Stats::default()
    };
    let mut known: Vec<i64> = Vec::new();
    let mut index: HashMap<i64, usize> = HashMap::new();
    let mut unknown_at: Vec<usize> = Vec::new();
    // Local files' order (`stats` over a folder): file name descending, i.e. newest first
    // for Pi's names (creation time, then id).
    let mut rows: Vec<(String, postgres::Row)> = rows
        .into_iter()
        .map(|r| {
            let name = r
                .get::<_, String>(8)
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_string();
            (name, r)
        })
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0));
    for (file_name, r) in rows {
        let at = out.known.len();
        if r.get::<_, bool>(12) {
            index.insert(r.get(3), at);
            known.push(r.get(3));
            out.known.push(Session {
                session_id: r.get(0),
                owner: r.get(1),
                name: r.get(10),
                first_message: r.get(11),
                file_name,
            });
        } else {
            unknown_at.push(at);
            out.known.push(Session {
                session_id: r.get(0),
                owner: r.get(1),
                name: r.get(10),
                first_message: r.get(11),
                file_name,
            });
            out.unknown.push(crate::pull::Copy {
                session_id: r.get(0),
                owner: r.get(1),
                session_pk: r.get(2),
                version_pk: r.get(3),
                length: r.get(4),
                hash: r.get(5),
                machine: r.get(6),
                machine_name: r.get(7),
                rel_path: r.get(8),
                redacted: r.get(9),
            });
        }
    }
    let key = match by {
        By::Model => "u.provider || '/' || u.model",
        By::Provider => "u.provider",
        By::Day => "u.day",
        By::Session => "u.version_pk::text",
    };
    // The versions in `known`'s order: the first session holding a record keeps it. (The
    // copies are found by hashing, not by sorting every record by its id: few records are
    // held twice.)
    let sql = format!(
        "WITH k AS (SELECT * FROM unnest($1::int8[]) WITH ORDINALITY AS k(vpk, o)),
         u AS MATERIALIZED (
             SELECT {key} AS key, u.entry_id, u.entry_ts, k.o, u.n, u.input, u.output,
                    u.cache_read, u.cache_write, u.total_tokens, u.cost
             FROM sessiontree.usage u JOIN k ON k.vpk = u.version_pk
             WHERE ($2 = false OR u.on_branch)),
         d AS (SELECT entry_id, entry_ts FROM u WHERE entry_id IS NOT NULL
               GROUP BY entry_id, entry_ts HAVING count(*) > 1),
         x AS (SELECT o, n FROM (
                   SELECT u.o, u.n, row_number() OVER (PARTITION BY u.entry_id, u.entry_ts
                                                       ORDER BY u.o, u.n) AS r
                   FROM u JOIN d ON d.entry_id = u.entry_id AND d.entry_ts = u.entry_ts) y
               WHERE r > 1)
         SELECT key, count(*), sum(input), sum(output), sum(cache_read), sum(cache_write),
                sum(total_tokens), sum(cost)
         FROM u WHERE NOT EXISTS (SELECT 1 FROM x WHERE x.o = u.o AND x.n = u.n)
         GROUP BY key"
    );
    let summed = if known.is_empty() {
        Vec::new()
    } else {
        archive.client.query(&sql, &[&known, &branch_only])?
    };
    let mut groups: std::collections::BTreeMap<String, Usage> = Default::default();
    for r in summed {
        let key: String = r.get(0);
        let key = match by {
            By::Session => {
                let pk: i64 = key
                    .parse()
                    .map_err(|_| Error::msg("archive: a usage group without its version"))?;
                index
                    .get(&pk)
                    .ok_or_else(|| Error::msg("archive: a usage group of another version"))?
                    .to_string()
            }
            _ => key,
        };
        groups.entry(key).or_default().add(&Usage {
            records: r.get::<_, i64>(1) as u64,
            input: r.get(2),
            output: r.get(3),
            cache_read: r.get(4),
            cache_write: r.get(5),
            total_tokens: r.get(6),
            cost: r.get(7),
        });
    }
    // The sessions without kept usage, from their bytes; a record that a session above
    // holds too (same id and timestamp) is already counted.
    let mut read: Vec<(usize, Vec<Row>)> = Vec::new();
    for (c, at) in out.unknown.iter().zip(&unknown_at) {
        match crate::pull::fetch(archive, c) {
            Ok(b) => read.push((*at, self::rows(&b))),
            Err(e) => out.skipped.push((c.session_id.clone(), e.to_string())),
        }
    }
    let (mut ids, mut tss): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for (_, rs) in &read {
        for r in rs.iter().filter(|r| r.on_branch || !branch_only) {
            if let Some(id) = &r.entry_id {
                ids.push(id);
                tss.push(&r.entry_ts);
            }
        }
    }
    let mut seen: std::collections::HashSet<(String, String)> = Default::default();
    if !ids.is_empty() && !known.is_empty() {
        for r in archive.client.query(
            "SELECT DISTINCT u.entry_id, u.entry_ts FROM sessiontree.usage u
             WHERE u.version_pk = ANY ($1) AND ($2 = false OR u.on_branch)
               AND (u.entry_id, u.entry_ts) IN (SELECT * FROM unnest($3::text[], $4::text[]))",
            &[&known, &branch_only, &ids, &tss],
        )? {
            seen.insert((r.get(0), r.get(1)));
        }
    }
    for (i, rs) in &read {
        for r in rs.iter().filter(|r| r.on_branch || !branch_only) {
            if let Some(id) = &r.entry_id {
                if !seen.insert((id.clone(), r.entry_ts.clone())) {
                    continue;
                }
            }
            let key = match by {
                By::Model => format!("{}/{}", r.provider, r.model),
                By::Provider => r.provider.clone(),
                By::Day => r.day.clone(),
                By::Session => i.to_string(),
            };
            groups.entry(key).or_default().add(&r.usage);
        }
    }
    out.groups = groups.into_iter().collect();
    Ok(out)
}
