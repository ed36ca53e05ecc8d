//! The usage of a version (what `sessiontree stats` sums), computed by the client from the
//! bytes it pushes and kept per version as a few sums (`sessiontree.usage_sums`, schema
//! version 6; before, one `sessiontree.usage` row per record, version 5), so that `stats
//! --archive` reads a few numbers per session instead of every session's bytes.

use crate::{Archive, Error, Result};
use postgres::types::{ToSql, Type};
use sessiontree::usage::{day_of, on_branch_at, records_in, Usage};
use std::collections::{HashMap, HashSet};

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

/// Writes the usage rows of one version in a transaction, for the migration to schema 5
/// (which writes every owner's rows; `None`: the current user's).
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

/// The sums of a version's records that share provider, model, day and how they count: one
/// `sessiontree.usage_sums` row (schema version 6). With the id, time and numbers of each of
/// its records that has an id, so that a reader can leave out a record copied into another
/// session it counts first (a fork).
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub provider: String,
    pub model: String,
    pub day: String,
    /// Counted over every branch: the first record of its id and time in the version (and
    /// every record without an id).
    pub in_all: bool,
    /// Counted on the current branch.
    pub in_branch: bool,
    pub sums: Usage,
    /// Per record with an id, in file order: [`identity`] of its id and time, the id, the
    /// time, and its six numbers (input, output, cache read, cache write, total, cost).
    pub ids: Vec<i64>,
    pub eid: Vec<String>,
    pub ets: Vec<String>,
    pub nums: Vec<f64>,
}

impl Group {
    /// The group's key in `sessiontree.usage_sums`.
    pub fn key(&self) -> (&str, &str, &str, bool, bool) {
        (
            &self.provider,
            &self.model,
            &self.day,
            self.in_all,
            self.in_branch,
        )
    }
}

/// A 64-bit digest of a record's id and time: the server finds the records that several
/// versions hold by it (an int8 is cheap to group), and then compares ids and times.
pub fn identity(id: &str, ts: &str) -> i64 {
    let mut b = Vec::with_capacity(id.len() + ts.len() + 1);
    b.extend_from_slice(id.as_bytes());
    b.push(0);
    b.extend_from_slice(ts.as_bytes());
    let d = crate::sha256(&b);
    let mut x = [0u8; 8];
    x.copy_from_slice(&d[..8]);
    i64::from_be_bytes(x)
}

/// The groups of a version's usage rows, in the order of their first record. A record
/// whose id and time an earlier record of the version has counts on the current branch
/// only (if it is on it), as `stats` counts it; a record counted in neither way is left out.
pub fn groups(rows: &[Row]) -> Vec<Group> {
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut out: Vec<Group> = Vec::new();
    let mut at: HashMap<(&str, &str, &str, bool, bool), usize> = HashMap::new();
    for r in rows {
        let in_all = match &r.entry_id {
            Some(id) => seen.insert((id.as_str(), r.entry_ts.as_str())),
            None => true,
        };
        let in_branch = r.on_branch;
        if !in_all && !in_branch {
            continue;
        }
        let key = (
            r.provider.as_str(),
            r.model.as_str(),
            r.day.as_str(),
            in_all,
            in_branch,
        );
        let i = *at.entry(key).or_insert_with(|| {
            out.push(Group {
                provider: r.provider.clone(),
                model: r.model.clone(),
                day: r.day.clone(),
                in_all,
                in_branch,
                sums: Usage::default(),
                ids: Vec::new(),
                eid: Vec::new(),
                ets: Vec::new(),
                nums: Vec::new(),
            });
            out.len() - 1
        });
        let g = &mut out[i];
        g.sums.add(&r.usage);
        if let Some(id) = &r.entry_id {
            g.ids.push(identity(id, &r.entry_ts));
            g.eid.push(id.clone());
            g.ets.push(r.entry_ts.clone());
            let u = &r.usage;
            g.nums.extend_from_slice(&[
                u.input,
                u.output,
                u.cache_read,
                u.cache_write,
                u.total_tokens,
                u.cost,
            ]);
        }
    }
    out
}

/// The groups of many versions as the parameters of one statement (`$first`..): version,
/// session, provider, model, day, in_all, in_branch, records, the six sums, and each
/// group's slice `[lo, hi]` (1-based) of the flat arrays of its records' identities, ids,
/// times and numbers (six per record).
#[derive(Default)]
pub(crate) struct SumColumns<'a> {
    vpk: Vec<i64>,
    spk: Vec<i64>,
    provider: Vec<&'a str>,
    model: Vec<&'a str>,
    day: Vec<&'a str>,
    in_all: Vec<bool>,
    in_branch: Vec<bool>,
    records: Vec<i32>,
    sums: [Vec<f64>; 6],
    lo: Vec<i32>,
    hi: Vec<i32>,
    ids: Vec<i64>,
    eid: Vec<&'a str>,
    ets: Vec<&'a str>,
    nums: Vec<f64>,
}

impl<'a> SumColumns<'a> {
    pub(crate) fn add(&mut self, vpk: i64, spk: i64, groups: impl IntoIterator<Item = &'a Group>) {
        for g in groups {
            self.vpk.push(vpk);
            self.spk.push(spk);
            self.provider.push(&g.provider);
            self.model.push(&g.model);
            self.day.push(&g.day);
            self.in_all.push(g.in_all);
            self.in_branch.push(g.in_branch);
            self.records
                .push(g.sums.records.min(i32::MAX as u64) as i32);
            let u = &g.sums;
            for (col, x) in self.sums.iter_mut().zip([
                u.input,
                u.output,
                u.cache_read,
                u.cache_write,
                u.total_tokens,
                u.cost,
            ]) {
                col.push(x);
            }
            self.lo.push(self.ids.len() as i32 + 1);
            self.ids.extend_from_slice(&g.ids);
            self.eid.extend(g.eid.iter().map(String::as_str));
            self.ets.extend(g.ets.iter().map(String::as_str));
            self.nums.extend_from_slice(&g.nums);
            self.hi.push(self.ids.len() as i32);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.vpk.is_empty()
    }

    pub(crate) fn params(&self) -> Vec<(&(dyn ToSql + Sync), Type)> {
        let mut p: Vec<(&(dyn ToSql + Sync), Type)> = vec![
            (&self.vpk, Type::INT8_ARRAY),
            (&self.spk, Type::INT8_ARRAY),
            (&self.provider, Type::TEXT_ARRAY),
            (&self.model, Type::TEXT_ARRAY),
            (&self.day, Type::TEXT_ARRAY),
            (&self.in_all, Type::BOOL_ARRAY),
            (&self.in_branch, Type::BOOL_ARRAY),
            (&self.records, Type::INT4_ARRAY),
        ];
        for c in &self.sums {
            p.push((c, Type::FLOAT8_ARRAY));
        }
        p.push((&self.lo, Type::INT4_ARRAY));
        p.push((&self.hi, Type::INT4_ARRAY));
        p.push((&self.ids, Type::INT8_ARRAY));
        p.push((&self.eid, Type::TEXT_ARRAY));
        p.push((&self.ets, Type::TEXT_ARRAY));
        p.push((&self.nums, Type::FLOAT8_ARRAY));
        p
    }
}

/// How many parameters [`SumColumns::params`] has.
pub(crate) const SUM_PARAMS: usize = 20;

/// `INSERT INTO sessiontree.usage_sums ... SELECT ... FROM unnest(...) AS g` of
/// [`SumColumns::params`] from parameter `$first` on; `session` is the SQL of the session
/// key (`g.s`, or a joined column), `owner` of the owner (`DEFAULT` is not allowed here:
/// `current_user`), `join` what follows the `unnest` (a join, a condition).
pub(crate) fn insert_sums(first: usize, session: &str, owner: &str, join: &str) -> String {
    let p = |i: usize| format!("${}", first + i);
    format!(
        "INSERT INTO sessiontree.usage_sums AS x
             (version_pk, session_pk, owner, provider, model, day, in_all, in_branch, records,
              input, output, cache_read, cache_write, total_tokens, cost, ids, eid, ets, nums)
         SELECT g.v, {session}, {owner}, g.p, g.m, g.d, g.a, g.b, g.r, g.i, g.o, g.cr, g.cw,
                g.tt, g.c, ({ids}::int8[])[g.lo:g.hi], ({eid}::text[])[g.lo:g.hi],
                ({ets}::text[])[g.lo:g.hi], ({nums}::float8[])[6 * g.lo - 5:6 * g.hi]
         FROM unnest({v}::int8[], {s}::int8[], {pr}::text[], {m}::text[], {d}::text[],
                     {a}::bool[], {b}::bool[], {r}::int4[], {i}::float8[], {o}::float8[],
                     {cr}::float8[], {cw}::float8[], {tt}::float8[], {c}::float8[],
                     {lo}::int4[], {hi}::int4[])
              AS g(v, s, p, m, d, a, b, r, i, o, cr, cw, tt, c, lo, hi) {join}",
        v = p(0),
        s = p(1),
        pr = p(2),
        m = p(3),
        d = p(4),
        a = p(5),
        b = p(6),
        r = p(7),
        i = p(8),
        o = p(9),
        cr = p(10),
        cw = p(11),
        tt = p(12),
        c = p(13),
        lo = p(14),
        hi = p(15),
        ids = p(16),
        eid = p(17),
        ets = p(18),
        nums = p(19),
    )
}

/// The `ON CONFLICT` of [`insert_sums`] for an append: a group whose key the version has
/// already gets the new sums.
pub(crate) const SUMS_UPSERT: &str =
    "ON CONFLICT (version_pk, provider, model, day, in_all, in_branch)
         DO UPDATE SET records = EXCLUDED.records, input = EXCLUDED.input,
             output = EXCLUDED.output, cache_read = EXCLUDED.cache_read,
             cache_write = EXCLUDED.cache_write, total_tokens = EXCLUDED.total_tokens,
             cost = EXCLUDED.cost, ids = EXCLUDED.ids, eid = EXCLUDED.eid, ets = EXCLUDED.ets,
             nums = EXCLUDED.nums";

/// Writes the groups of one version in a transaction (the migration to schema 6, which
/// writes every owner's rows: `owner`).
pub(crate) fn insert_groups(
    tx: &mut postgres::Transaction,
    vpk: i64,
    spk: i64,
    owner: &str,
    groups: &[Group],
) -> Result<()> {
    let mut c = SumColumns::default();
    c.add(vpk, spk, groups);
    if c.is_empty() {
        return Ok(());
    }
    let mut params = c.params();
    params.push((&owner, Type::TEXT));
    tx.execute_typed(
        &insert_sums(1, "g.s", &format!("${}::text::name", SUM_PARAMS + 1), ""),
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
/// the sums kept at push time, grouped by `by`, over every branch or the current one only.
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
        By::Model => "g.provider || '/' || g.model",
        By::Provider => "g.provider",
        By::Day => "g.day",
        By::Session => "g.version_pk::text",
    };
    let mode = "CASE WHEN $2 THEN g.in_branch ELSE g.in_all END";
    // The sums of the versions' groups that count (every branch, or the current one), less
    // the records a version earlier in `known`'s order holds too (same id and time; each
    // version's groups hold an id and time at most once). Those are found here by their
    // identity digests (grouping 55,000 of them in the server took 80 ms, reading them 8),
    // then read and compared exactly. Few records are held twice.
    let key_of = |key: String| -> Result<String> {
        Ok(match by {
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
        })
    };
    // Per key: records, then the six numbers (the sums, less the copies left out).
    let mut acc: std::collections::BTreeMap<String, (i64, [f64; 6])> = Default::default();
    let mut digests: HashMap<i64, u32> = HashMap::new();
    if !known.is_empty() {
        let sql = format!(
            "WITH k AS (SELECT * FROM unnest($1::int8[]) WITH ORDINALITY AS k(vpk, o))
             SELECT {key}, g.records, g.input, g.output, g.cache_read, g.cache_write,
                    g.total_tokens, g.cost, g.ids
             FROM sessiontree.usage_sums g JOIN k ON k.vpk = g.version_pk
             WHERE {mode}"
        );
        for r in archive.client.query(&sql, &[&known, &branch_only])? {
            let e = acc.entry(key_of(r.get(0))?).or_default();
            e.0 =
                e.0.saturating_add(r.get::<_, Option<i32>>(1).unwrap_or(0) as i64);
            for (i, x) in e.1.iter_mut().enumerate() {
                *x += r.get::<_, Option<f64>>(2 + i).unwrap_or(0.0);
            }
            for d in r
                .get::<_, Option<Vec<Option<i64>>>>(8)
                .unwrap_or_default()
                .into_iter()
                .flatten()
            {
                *digests.entry(d).or_default() += 1;
            }
        }
    }
    let twice: Vec<i64> = digests
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(d, _)| d)
        .collect();
    if !twice.is_empty() {
        let sql = format!(
            "WITH k AS (SELECT * FROM unnest($1::int8[]) WITH ORDINALITY AS k(vpk, o))
             SELECT {key}, k.o, e.n, g.eid[e.n], g.ets[e.n], g.nums[6 * e.n - 5:6 * e.n]
             FROM sessiontree.usage_sums g JOIN k ON k.vpk = g.version_pk,
                  unnest(g.ids) WITH ORDINALITY AS e(x, n)
             WHERE {mode} AND g.ids && $3::int8[] AND e.x = ANY ($3::int8[])"
        );
        // (id, time) -> every copy: (order, position, key, numbers).
        type Copy = (i64, i64, String, Vec<f64>);
        let mut copies: HashMap<(String, String), Vec<Copy>> = HashMap::new();
        for r in archive
            .client
            .query(&sql, &[&known, &branch_only, &twice])?
        {
            let (Some(id), Some(ts)) =
                (r.get::<_, Option<String>>(3), r.get::<_, Option<String>>(4))
            else {
                continue;
            };
            let nums: Vec<f64> = r
                .get::<_, Option<Vec<Option<f64>>>>(5)
                .unwrap_or_default()
                .into_iter()
                .map(|x| x.unwrap_or(0.0))
                .collect();
            copies
                .entry((id, ts))
                .or_default()
                .push((r.get(1), r.get(2), key_of(r.get(0))?, nums));
        }
        for mut held in copies.into_values() {
            held.sort_by_key(|a| (a.0, a.1));
            for (_, _, key, nums) in held.into_iter().skip(1) {
                let e = acc.entry(key).or_default();
                e.0 -= 1;
                for (x, n) in
                    e.1.iter_mut()
                        .zip(nums.iter().chain(std::iter::repeat(&0.0)))
                {
                    *x -= n;
                }
            }
        }
    }
    // A group all of whose records a session before holds is no group (as in `stats`).
    let mut groups: std::collections::BTreeMap<String, Usage> = acc
        .into_iter()
        .filter(|(_, (n, _))| *n > 0)
        .map(|(k, (n, x))| {
            let u = Usage {
                records: n.max(0) as u64,
                input: x[0],
                output: x[1],
                cache_read: x[2],
                cache_write: x[3],
                total_tokens: x[4],
                cost: x[5],
            };
            (k, u)
        })
        .collect();
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
            "SELECT DISTINCT e.id, e.ts
             FROM sessiontree.usage_sums g, unnest(g.eid, g.ets) AS e(id, ts)
             WHERE g.version_pk = ANY ($1)
               AND CASE WHEN $2 THEN g.in_branch ELSE g.in_all END
               AND (e.id, e.ts) IN (SELECT * FROM unnest($3::text[], $4::text[]))",
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
