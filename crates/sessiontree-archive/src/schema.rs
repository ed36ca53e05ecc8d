//! The archive's schema, created and migrated by sessiontree itself.
//!
//! Everything lives in the schema `sessiontree`. `sessiontree.migrations` records each
//! applied version; [`migrate`] applies the missing ones in one transaction under an
//! advisory lock, so two clients starting at once do not both migrate.

use crate::{Error, Result};
use postgres::{Client, Transaction};

/// Version 1: machines, sessions, their per-machine copies, versions and chunks, shares, and
/// the row-level security that keeps each role to its own rows and what was shared with it.
const V1: &str = r#"
CREATE TABLE sessiontree.meta (key text PRIMARY KEY, value text NOT NULL);
INSERT INTO sessiontree.meta VALUES ('archive_id', gen_random_uuid()::text);

CREATE TABLE sessiontree.machines (
    owner name NOT NULL DEFAULT current_user,
    id uuid NOT NULL,
    name text NOT NULL,
    first_seen timestamptz NOT NULL DEFAULT now(),
    last_seen timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, id)
);

CREATE TABLE sessiontree.sessions (
    pk bigserial PRIMARY KEY,
    owner name NOT NULL DEFAULT current_user,
    session_id text NOT NULL,
    cwd text NOT NULL DEFAULT '',
    created text NOT NULL DEFAULT '',
    UNIQUE (owner, session_id)
);

CREATE TABLE sessiontree.shares (
    session_pk bigint NOT NULL REFERENCES sessiontree.sessions ON DELETE CASCADE,
    owner name NOT NULL DEFAULT current_user,
    grantee name NOT NULL,
    PRIMARY KEY (session_pk, grantee)
);

-- One row per session and machine that pushed it.
CREATE TABLE sessiontree.copies (
    pk bigserial PRIMARY KEY,
    session_pk bigint NOT NULL REFERENCES sessiontree.sessions ON DELETE CASCADE,
    owner name NOT NULL DEFAULT current_user,
    machine uuid NOT NULL,
    rel_path text NOT NULL,
    UNIQUE (session_pk, machine)
);

-- A copy's content; a new version when the file was rewritten (repair, migration) or the
-- redaction changed. length/hash: the stored bytes [0, length) and their SHA-256;
-- src_length: how many bytes of the local file they stand for (differs when redacted).
CREATE TABLE sessiontree.versions (
    pk bigserial PRIMARY KEY,
    copy_pk bigint NOT NULL REFERENCES sessiontree.copies ON DELETE CASCADE,
    session_pk bigint NOT NULL,
    owner name NOT NULL DEFAULT current_user,
    seq int NOT NULL,
    length bigint NOT NULL,
    hash bytea NOT NULL,
    src_length bigint NOT NULL,
    redaction text,
    info jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (copy_pk, seq)
);
CREATE INDEX ON sessiontree.versions (session_pk);

-- The bytes: a version is its chunks in offset order, without gaps.
CREATE TABLE sessiontree.chunks (
    version_pk bigint NOT NULL REFERENCES sessiontree.versions ON DELETE CASCADE,
    session_pk bigint NOT NULL,
    owner name NOT NULL DEFAULT current_user,
    off bigint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (version_pk, off)
);
-- Session text compresses well, but pglz costs more time than the disk it saves here.
ALTER TABLE sessiontree.chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- Every role the current user is a member of (itself included).
CREATE FUNCTION sessiontree.my_roles() RETURNS name[] LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(rolname), '{}') FROM pg_roles
    WHERE pg_has_role(current_user, oid, 'MEMBER')
$$;

ALTER TABLE sessiontree.machines ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.machines FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.shares ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.shares FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.copies ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.copies FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.versions FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.chunks FORCE ROW LEVEL SECURITY;

-- Shares: the owner manages them; a member of the grantee role sees the ones for it.
CREATE POLICY shares_read ON sessiontree.shares FOR SELECT
    USING (owner = current_user OR grantee = ANY (sessiontree.my_roles()));
CREATE POLICY shares_write ON sessiontree.shares FOR ALL
    USING (owner = current_user) WITH CHECK (owner = current_user);
-- Only the session's owner may share it (a trigger: a policy on shares that reads sessions
-- would recurse through the sessions policy, which reads shares).
CREATE FUNCTION sessiontree.check_share() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM sessiontree.sessions
                   WHERE pk = NEW.session_pk AND owner = current_user) THEN
        RAISE EXCEPTION 'only the owner of a session may share it'
            USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER shares_owner BEFORE INSERT OR UPDATE ON sessiontree.shares
    FOR EACH ROW EXECUTE FUNCTION sessiontree.check_share();

-- Sessions and everything under them: read by the owner and by members of a role the
-- session is shared with; written by the owner only.
CREATE POLICY sessions_read ON sessiontree.sessions FOR SELECT
    USING (owner = current_user
        OR pk IN (SELECT session_pk FROM sessiontree.shares));
CREATE POLICY sessions_write ON sessiontree.sessions FOR ALL
    USING (owner = current_user) WITH CHECK (owner = current_user);
CREATE POLICY copies_read ON sessiontree.copies FOR SELECT
    USING (owner = current_user
        OR session_pk IN (SELECT session_pk FROM sessiontree.shares));
CREATE POLICY copies_write ON sessiontree.copies FOR ALL
    USING (owner = current_user)
    WITH CHECK (owner = current_user
        AND session_pk IN (SELECT pk FROM sessiontree.sessions WHERE owner = current_user));
CREATE POLICY versions_read ON sessiontree.versions FOR SELECT
    USING (owner = current_user
        OR session_pk IN (SELECT session_pk FROM sessiontree.shares));
CREATE POLICY versions_write ON sessiontree.versions FOR ALL
    USING (owner = current_user)
    WITH CHECK (owner = current_user
        AND session_pk IN (SELECT pk FROM sessiontree.sessions WHERE owner = current_user));
CREATE POLICY chunks_read ON sessiontree.chunks FOR SELECT
    USING (owner = current_user
        OR session_pk IN (SELECT session_pk FROM sessiontree.shares));
CREATE POLICY chunks_write ON sessiontree.chunks FOR ALL
    USING (owner = current_user)
    WITH CHECK (owner = current_user
        AND session_pk IN (SELECT pk FROM sessiontree.sessions WHERE owner = current_user));
-- A machine's name is seen by its owner and by whoever sees one of its copies.
CREATE POLICY machines_read ON sessiontree.machines FOR SELECT
    USING (owner = current_user
        OR id IN (SELECT machine FROM sessiontree.copies));
CREATE POLICY machines_write ON sessiontree.machines FOR ALL
    USING (owner = current_user) WITH CHECK (owner = current_user);

GRANT USAGE ON SCHEMA sessiontree TO PUBLIC;
GRANT SELECT ON sessiontree.meta, sessiontree.migrations TO PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON sessiontree.machines, sessiontree.sessions,
    sessiontree.shares, sessiontree.copies, sessiontree.versions, sessiontree.chunks TO PUBLIC;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA sessiontree TO PUBLIC;
GRANT EXECUTE ON FUNCTION sessiontree.my_roles(), sessiontree.check_share() TO PUBLIC;
"#;

/// Version 2: the entry texts for search (full text and trigrams), per version.
const V2: &str = r#"
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE sessiontree.texts (
    version_pk bigint NOT NULL REFERENCES sessiontree.versions ON DELETE CASCADE,
    session_pk bigint NOT NULL,
    owner name NOT NULL DEFAULT current_user,
    off bigint NOT NULL,
    entry_id text,
    role text,
    ts text,
    body text NOT NULL
);
CREATE INDEX texts_version ON sessiontree.texts (version_pk);
CREATE INDEX texts_fts ON sessiontree.texts USING gin (to_tsvector('simple', body));
CREATE INDEX texts_trgm ON sessiontree.texts USING gin (body gin_trgm_ops);
ALTER TABLE sessiontree.texts ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.texts FORCE ROW LEVEL SECURITY;
CREATE POLICY texts_read ON sessiontree.texts FOR SELECT
    USING (owner = current_user
        OR session_pk IN (SELECT session_pk FROM sessiontree.shares));
CREATE POLICY texts_write ON sessiontree.texts FOR ALL
    USING (owner = current_user)
    WITH CHECK (owner = current_user
        AND session_pk IN (SELECT pk FROM sessiontree.sessions WHERE owner = current_user));
GRANT SELECT, INSERT, UPDATE, DELETE ON sessiontree.texts TO PUBLIC;
"#;

/// Version 3: search that uses its index under row-level security, and cheaper pushes.
///
/// PostgreSQL never lets a non-leakproof operator (`@@`, `ILIKE`, `@>`) run before a
/// policy's condition, so below row-level security a search could not use its index and
/// read every text. Now:
/// * `texts` keeps its write policies for everyone, but is no longer readable by `PUBLIC`
///   and no longer forces the policies on its owner. It is read only through
///   `sessiontree.search_texts`, a `SECURITY DEFINER` function owned by the table's owner,
///   which searches with the index and returns only rows the *calling login* may see: its
///   own (`owner = session_user`) or of a session shared with a role it is a member of.
///   Inside the function `current_user` is the function's owner, so the caller is
///   `session_user`; for sessiontree (which never changes role) the two are the same.
/// * The index keys are trigram codes computed by the client (see `trigram.rs`), in
///   `texts.tri` with a GIN index: `pg_trgm` and the full-text index cost more server CPU
///   than the rest of a push together. Existing rows get their codes here.
/// * `shares` may be read by the login's roles too, which is what the function needs.
/// * Chunks are stored with lz4 when the server has it: less disk and WAL, and faster to
///   write than uncompressed.
const V3_BEFORE: &str = r#"
DO $$ BEGIN
    EXECUTE 'ALTER TABLE sessiontree.chunks ALTER COLUMN data SET STORAGE EXTENDED';
    EXECUTE 'ALTER TABLE sessiontree.chunks ALTER COLUMN data SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE sessiontree.texts ALTER COLUMN body SET COMPRESSION lz4';
EXCEPTION WHEN OTHERS THEN
    -- A server without lz4: stored uncompressed as before (pglz costs more than it saves).
    EXECUTE 'ALTER TABLE sessiontree.chunks ALTER COLUMN data SET STORAGE EXTERNAL';
END $$;

DROP INDEX IF EXISTS sessiontree.texts_fts;
DROP INDEX IF EXISTS sessiontree.texts_trgm;
ALTER TABLE sessiontree.texts ADD COLUMN tri int4[];
-- Codes do not compress; trying to was the largest single cost of a push in the server.
ALTER TABLE sessiontree.texts ALTER COLUMN tri SET STORAGE EXTERNAL;
ALTER TABLE sessiontree.texts NO FORCE ROW LEVEL SECURITY;
REVOKE SELECT ON sessiontree.texts FROM PUBLIC;
"#;

const V3_AFTER: &str = r#"
CREATE INDEX texts_tri ON sessiontree.texts USING gin (tri)
    WITH (fastupdate = on, gin_pending_list_limit = 16384);

-- Every role the session's login is a member of (itself included).
CREATE FUNCTION sessiontree.login_roles() RETURNS name[] LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(rolname), '{}') FROM pg_roles
    WHERE pg_has_role(session_user, oid, 'MEMBER')
$$;
ALTER POLICY shares_read ON sessiontree.shares
    USING (owner = current_user OR grantee = ANY (sessiontree.my_roles())
           OR grantee = ANY (sessiontree.login_roles()));

-- The only way to read texts for roles other than its owner. tri: every code must be in
-- the row's codes (NULL: no condition); regex: PostgreSQL's `~` (NULL: none); role: the
-- entry's role (NULL: any); newest first, at most lim rows.
CREATE FUNCTION sessiontree.search_texts(tri int4[], regex text, want_role text, lim int)
RETURNS TABLE (version_pk bigint, session_pk bigint, off bigint, entry_id text, role text,
               ts text, body text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shared bigint[];
    cond text := '';
BEGIN
    SELECT coalesce(array_agg(DISTINCT sh.session_pk), '{}') INTO shared
    FROM sessiontree.shares sh WHERE sh.grantee = ANY (sessiontree.login_roles());
    IF tri IS NOT NULL AND cardinality(tri) > 0 THEN
        cond := cond || ' AND t.tri @> $1';
    END IF;
    IF regex IS NOT NULL THEN
        cond := cond || ' AND t.body ~ $2';
    END IF;
    IF want_role IS NOT NULL THEN
        cond := cond || ' AND t.role = $3';
    END IF;
    RETURN QUERY EXECUTE
        'SELECT t.version_pk, t.session_pk, t.off, t.entry_id, t.role, t.ts, t.body
         FROM sessiontree.texts t
         WHERE (t.owner = session_user OR t.session_pk = ANY ($5))' || cond ||
        ' ORDER BY t.ts DESC NULLS LAST LIMIT $4'
        USING tri, regex, want_role, greatest(lim, 0), shared;
END $$;
-- Owned by the table's owner (a superuser running this migration would otherwise own it).
DO $$ BEGIN
    EXECUTE format('ALTER FUNCTION sessiontree.search_texts(int4[], text, text, int) OWNER TO %I',
                   (SELECT tableowner FROM pg_tables
                    WHERE schemaname = 'sessiontree' AND tablename = 'texts'));
END $$;
GRANT EXECUTE ON FUNCTION sessiontree.login_roles(),
    sessiontree.search_texts(int4[], text, text, int) TO PUBLIC;
"#;

/// Version 3's data step: the trigram codes of the texts already in the archive.
fn backfill_trigrams(tx: &mut Transaction) -> Result<()> {
    tx.batch_execute(
        "DECLARE st_backfill NO SCROLL CURSOR FOR
             SELECT ctid::text, body FROM sessiontree.texts WHERE tri IS NULL",
    )?;
    loop {
        let rows = tx.query("FETCH 5000 FROM st_backfill", &[])?;
        if rows.is_empty() {
            break;
        }
        let mut ids = Vec::with_capacity(rows.len());
        let mut tris = Vec::with_capacity(rows.len());
        for r in &rows {
            ids.push(r.get::<_, String>(0));
            tris.push(crate::trigram::to_pg_array(&crate::trigram::of(r.get(1))));
        }
        tx.execute(
            "UPDATE sessiontree.texts t SET tri = u.tri::int4[]
             FROM unnest($1::text[]::tid[], $2::text[]) AS u(id, tri) WHERE t.ctid = u.id",
            &[&ids, &tris],
        )?;
    }
    tx.batch_execute("CLOSE st_backfill")?;
    Ok(())
}

/// One step of a migration.
pub enum Step {
    Sql(&'static str),
    /// Work SQL cannot do (computed by the client), in the migration's transaction.
    Rust(fn(&mut Transaction) -> Result<()>),
}

/// The migrations, in order: (version, what it does, steps).
pub const MIGRATIONS: &[(i32, &str, &[Step])] = &[
    (
        1,
        "machines, sessions, copies, versions, chunks, shares; row-level security",
        &[Step::Sql(V1)],
    ),
    (
        2,
        "entry texts for search (full text, trigrams)",
        &[Step::Sql(V2)],
    ),
    (
        3,
        "search through an index under row-level security (client trigrams, search_texts); lz4 chunks",
        &[
            Step::Sql(V3_BEFORE),
            Step::Rust(backfill_trigrams),
            Step::Sql(V3_AFTER),
        ],
    ),
];

/// The newest schema version this build knows.
pub fn latest() -> i32 {
    MIGRATIONS.last().map(|m| m.0).unwrap_or(0)
}

/// The schema version the archive is at (0: none yet).
pub fn current_version(client: &mut Client) -> Result<i32> {
    let row = client.query_typed_one(
        "SELECT to_regclass('sessiontree.migrations') IS NOT NULL",
        &[],
    )?;
    if !row.get::<_, bool>(0) {
        return Ok(0);
    }
    let row = client.query_typed_one(
        "SELECT coalesce(max(version), 0) FROM sessiontree.migrations",
        &[],
    )?;
    Ok(row.get(0))
}

/// Brings the schema up to [`latest`]. Returns the versions applied.
pub fn migrate(client: &mut Client) -> Result<Vec<i32>> {
    migrate_to(client, latest())
}

/// Brings the schema up to `target` (tests use it to make an archive as an older
/// sessiontree left it).
pub fn migrate_to(client: &mut Client, target: i32) -> Result<Vec<i32>> {
    let v = current_version(client)?;
    if v > latest() {
        return Err(Error::msg(format!(
            "the archive's schema is version {v}, newer than this sessiontree knows ({}): upgrade sessiontree",
            latest()
        )));
    }
    if v >= target {
        return Ok(Vec::new());
    }
    let mut tx = client.transaction()?;
    // One migrating client at a time; the others wait here and then find nothing to do.
    tx.execute("SELECT pg_advisory_xact_lock(5374696, 1)", &[])?;
    let created = tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS sessiontree;
         CREATE TABLE IF NOT EXISTS sessiontree.migrations (
             version int PRIMARY KEY,
             description text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now(),
             applied_by name NOT NULL DEFAULT current_user)",
    );
    if let Err(e) = created {
        return Err(permission_hint(e, v));
    }
    let v: i32 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM sessiontree.migrations",
            &[],
        )?
        .get(0);
    let mut applied = Vec::new();
    for (version, what, steps) in MIGRATIONS {
        if *version <= v || *version > target {
            continue;
        }
        for step in *steps {
            match step {
                Step::Sql(sql) => tx.batch_execute(sql).map_err(|e| permission_hint(e, v))?,
                Step::Rust(f) => f(&mut tx)?,
            }
        }
        tx.execute(
            "INSERT INTO sessiontree.migrations (version, description) VALUES ($1, $2)",
            &[version, what],
        )?;
        applied.push(*version);
    }
    tx.commit()?;
    Ok(applied)
}

fn permission_hint(e: postgres::Error, at: i32) -> Error {
    let base = Error::from(e);
    if base.to_string().contains("permission denied") {
        Error::msg(format!(
            "{base}: the archive's schema is at version {at} and needs version {}; connect once as a role \
             that may create schemas and extensions in this database (its owner), e.g. \
             `sessiontree push --archive postgresql://OWNER@HOST/DB`",
            latest()
        ))
    } else {
        base
    }
}
