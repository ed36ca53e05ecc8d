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

/// Version 4: the archive holds against its own users (another role writing every row its
/// privileges allow, with plain `psql`).
///
/// * **Immune to objects a user can create.** Every function the archive installs pins
///   `search_path = pg_catalog, pg_temp` and names everything schema-qualified: a `TEMP
///   VIEW pg_roles` (the temp schema is searched first for relations) or a `pg_has_role` of
///   one's own schema put first in the path made `my_roles()` and `login_roles()` answer
///   any role, and so read a session shared with someone else.
/// * **Every row belongs to its writer's own session, copy and version**, through every
///   foreign key: `(session_pk, owner)` references the session, `(copy_pk, session_pk,
///   owner)` the copy, `(version_pk, session_pk, owner)` the version. Before, the write
///   policies checked `session_pk` only: a version or a chunk could hang under another
///   owner's copy or version, tied to a decoy session of the writer's.
/// * **What comes next, checked by the server**: a version's `seq` is its copy's last plus
///   one; a chunk starts where the version's chunks end, is not empty and stays within the
///   version's length; at commit a version's chunks end exactly at its length (so a length
///   is never a claim, and a version is never partly stored). Times are the server's.
/// * **Keys are the server's**: `GENERATED ALWAYS AS IDENTITY`, and no role may name a key
///   column in an `INSERT` or `UPDATE` (column privileges), so rows with the next keys
///   cannot block everyone's inserts.
/// * **Immutable where they should be**: chunks and texts are never updated or deleted but
///   with their version; a version's bytes only grow (by its owner's appends); sessions,
///   copies and versions keep their keys, owner, session, copy and `seq`.
/// * A machine's row is seen by whoever sees a copy *of that owner* on it (before: a copy
///   of one's own naming the machine's id was enough).
/// * Rows an older schema let another role forge (a row whose owner or session differs from
///   the row it hangs under) are deleted: no sessiontree client writes them, and they are
///   the attack (a higher `seq`, a chunk inside someone's version, forged texts).
const V4: &str = r#"
-- The owner of the tables runs this; for the cleaning below it must see every row.
ALTER TABLE sessiontree.machines NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.sessions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.shares NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.copies NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.versions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.chunks NO FORCE ROW LEVEL SECURITY;

-- 1. Functions immune to objects a user can create.
CREATE OR REPLACE FUNCTION sessiontree.my_roles() RETURNS name[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(pg_catalog.array_agg(r.rolname), '{}'::name[]) FROM pg_catalog.pg_roles r
    WHERE pg_catalog.pg_has_role(current_user, r.oid, 'MEMBER')
$$;
CREATE OR REPLACE FUNCTION sessiontree.login_roles() RETURNS name[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(pg_catalog.array_agg(r.rolname), '{}'::name[]) FROM pg_catalog.pg_roles r
    WHERE pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')
$$;
CREATE OR REPLACE FUNCTION sessiontree.check_share() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM sessiontree.sessions s
                   WHERE s.pk = NEW.session_pk AND s.owner = current_user) THEN
        RAISE EXCEPTION 'only the owner of a session may share it'
            USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END $$;

-- 2. Rows that hang under another owner's rows: forged (no client writes them).
DELETE FROM sessiontree.shares x WHERE NOT EXISTS
    (SELECT 1 FROM sessiontree.sessions s WHERE s.pk = x.session_pk AND s.owner = x.owner);
DELETE FROM sessiontree.copies x WHERE NOT EXISTS
    (SELECT 1 FROM sessiontree.sessions s WHERE s.pk = x.session_pk AND s.owner = x.owner);
DELETE FROM sessiontree.versions x WHERE NOT EXISTS
    (SELECT 1 FROM sessiontree.copies c
     WHERE c.pk = x.copy_pk AND c.session_pk = x.session_pk AND c.owner = x.owner);
DELETE FROM sessiontree.chunks x WHERE NOT EXISTS
    (SELECT 1 FROM sessiontree.versions v
     WHERE v.pk = x.version_pk AND v.session_pk = x.session_pk AND v.owner = x.owner);
DELETE FROM sessiontree.texts x WHERE NOT EXISTS
    (SELECT 1 FROM sessiontree.versions v
     WHERE v.pk = x.version_pk AND v.session_pk = x.session_pk AND v.owner = x.owner);

-- 3. Ownership through every foreign key.
ALTER TABLE sessiontree.sessions ADD CONSTRAINT sessions_pk_owner UNIQUE (pk, owner);
ALTER TABLE sessiontree.shares DROP CONSTRAINT shares_session_pk_fkey,
    ADD CONSTRAINT shares_session FOREIGN KEY (session_pk, owner)
        REFERENCES sessiontree.sessions (pk, owner) ON DELETE CASCADE;
ALTER TABLE sessiontree.copies DROP CONSTRAINT copies_session_pk_fkey,
    ADD CONSTRAINT copies_session FOREIGN KEY (session_pk, owner)
        REFERENCES sessiontree.sessions (pk, owner) ON DELETE CASCADE,
    ADD CONSTRAINT copies_pk_session_owner UNIQUE (pk, session_pk, owner);
ALTER TABLE sessiontree.versions DROP CONSTRAINT versions_copy_pk_fkey,
    ADD CONSTRAINT versions_copy FOREIGN KEY (copy_pk, session_pk, owner)
        REFERENCES sessiontree.copies (pk, session_pk, owner) ON DELETE CASCADE,
    ADD CONSTRAINT versions_pk_session_owner UNIQUE (pk, session_pk, owner);
ALTER TABLE sessiontree.chunks DROP CONSTRAINT chunks_version_pk_fkey,
    ADD CONSTRAINT chunks_version FOREIGN KEY (version_pk, session_pk, owner)
        REFERENCES sessiontree.versions (pk, session_pk, owner) ON DELETE CASCADE;
ALTER TABLE sessiontree.texts DROP CONSTRAINT texts_version_pk_fkey,
    ADD CONSTRAINT texts_version FOREIGN KEY (version_pk, session_pk, owner)
        REFERENCES sessiontree.versions (pk, session_pk, owner) ON DELETE CASCADE;
-- Plain sanity of new rows (older rows are left as they are: NOT VALID).
ALTER TABLE sessiontree.versions
    ADD CONSTRAINT versions_sane CHECK (seq >= 1 AND length >= 0 AND src_length >= 0
        AND octet_length(hash) = 32) NOT VALID;
ALTER TABLE sessiontree.chunks
    ADD CONSTRAINT chunks_sane CHECK (off >= 0 AND octet_length(data) > 0) NOT VALID;
ALTER TABLE sessiontree.texts ADD CONSTRAINT texts_sane CHECK (off >= 0) NOT VALID;
ALTER TABLE sessiontree.meta ADD CONSTRAINT meta_archive_id CHECK (key <> 'archive_id'
    OR value ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$');

-- 4. Keys chosen by the server. The identity starts above every key in the table (and
-- above what the old sequence handed out), so rows inserted with explicit keys before
-- this version are never hit.
DO $$
DECLARE
    t text;
    top bigint;
    last bigint;
BEGIN
    FOREACH t IN ARRAY ARRAY['sessions', 'copies', 'versions'] LOOP
        EXECUTE format('SELECT coalesce(max(pk), 0) FROM sessiontree.%I', t) INTO top;
        EXECUTE format('SELECT last_value FROM sessiontree.%I', t || '_pk_seq') INTO last;
        IF top > 4611686018427387904 THEN
            top := 0;  -- a forged key near the end of bigint: do not start there
        END IF;
        EXECUTE format('ALTER TABLE sessiontree.%I ALTER COLUMN pk DROP DEFAULT', t);
        EXECUTE format('DROP SEQUENCE sessiontree.%I', t || '_pk_seq');
        EXECUTE format('ALTER TABLE sessiontree.%I ALTER COLUMN pk
                        ADD GENERATED ALWAYS AS IDENTITY (START WITH %s)',
                       t, greatest(top, last) + 1);
    END LOOP;
END $$;

-- 5. What comes next, and what may change.
-- A new version: of the writer's own copy, numbered after the copy's last; the server's times.
CREATE FUNCTION sessiontree.version_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    last int;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM sessiontree.copies c
                   WHERE c.pk = NEW.copy_pk AND c.session_pk = NEW.session_pk
                     AND c.owner = NEW.owner AND c.owner = current_user) THEN
        RAISE EXCEPTION 'version: copy % is not a copy of your session %', NEW.copy_pk,
            NEW.session_pk USING ERRCODE = '42501';
    END IF;
    SELECT max(v.seq) INTO last FROM sessiontree.versions v WHERE v.copy_pk = NEW.copy_pk;
    IF NEW.seq IS DISTINCT FROM coalesce(last, 0) + 1 THEN
        RAISE EXCEPTION 'version: seq % for copy %, where % comes next', NEW.seq,
            NEW.copy_pk, coalesce(last, 0) + 1 USING ERRCODE = '23514';
    END IF;
    NEW.created_at := now();
    NEW.updated_at := now();
    RETURN NEW;
END $$;
CREATE TRIGGER versions_insert BEFORE INSERT ON sessiontree.versions
    FOR EACH ROW EXECUTE FUNCTION sessiontree.version_insert();

-- A version grows (an append) and never shrinks; the server's time.
CREATE FUNCTION sessiontree.version_update() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NEW.length < OLD.length THEN
        RAISE EXCEPTION 'version %: % bytes cannot become %', OLD.pk, OLD.length, NEW.length
            USING ERRCODE = '23514';
    END IF;
    NEW.created_at := OLD.created_at;
    NEW.updated_at := now();
    RETURN NEW;
END $$;
CREATE TRIGGER versions_update BEFORE UPDATE ON sessiontree.versions
    FOR EACH ROW EXECUTE FUNCTION sessiontree.version_update();

-- At commit, a version's chunks end exactly at its length.
CREATE FUNCTION sessiontree.version_whole() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    want bigint;
    got bigint;
BEGIN
    SELECT v.length INTO want FROM sessiontree.versions v WHERE v.pk = NEW.pk;
    IF NOT FOUND THEN
        RETURN NULL;  -- deleted since
    END IF;
    SELECT c.off + octet_length(c.data) INTO got FROM sessiontree.chunks c
    WHERE c.version_pk = NEW.pk ORDER BY c.off DESC LIMIT 1;
    IF coalesce(got, 0) <> want THEN
        RAISE EXCEPTION 'version %: its chunks hold % bytes, its length says %', NEW.pk,
            coalesce(got, 0), want USING ERRCODE = '23514';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER versions_whole AFTER INSERT OR UPDATE ON sessiontree.versions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION sessiontree.version_whole();

-- A chunk: of the writer's own version, where its chunks end, within its length.
CREATE FUNCTION sessiontree.chunk_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    vlen bigint;
    fin bigint;
BEGIN
    SELECT v.length INTO vlen FROM sessiontree.versions v
    WHERE v.pk = NEW.version_pk AND v.session_pk = NEW.session_pk
      AND v.owner = NEW.owner AND v.owner = current_user;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'chunk: version % is not a version of your session %',
            NEW.version_pk, NEW.session_pk USING ERRCODE = '42501';
    END IF;
    SELECT c.off + octet_length(c.data) INTO fin FROM sessiontree.chunks c
    WHERE c.version_pk = NEW.version_pk ORDER BY c.off DESC LIMIT 1;
    fin := coalesce(fin, 0);
    IF NEW.off IS DISTINCT FROM fin OR coalesce(octet_length(NEW.data), 0) = 0
       OR NEW.off + octet_length(NEW.data) > vlen THEN
        RAISE EXCEPTION 'chunk of version %: % bytes at %, where the chunks end at % of %',
            NEW.version_pk, coalesce(octet_length(NEW.data), 0), NEW.off, fin, vlen
            USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER chunks_insert BEFORE INSERT ON sessiontree.chunks
    FOR EACH ROW EXECUTE FUNCTION sessiontree.chunk_insert();

-- A machine's name: its owner, and whoever sees one of that owner's copies on it.
ALTER POLICY machines_read ON sessiontree.machines
    USING (owner = current_user
        OR (owner, id) IN (SELECT c.owner, c.machine FROM sessiontree.copies c));

-- 6. Privileges: no key, owner-of-another, time or immutable column is writable.
REVOKE ALL ON sessiontree.machines, sessiontree.sessions, sessiontree.shares,
    sessiontree.copies, sessiontree.versions, sessiontree.chunks, sessiontree.texts
    FROM PUBLIC;
GRANT SELECT ON sessiontree.machines, sessiontree.sessions, sessiontree.shares,
    sessiontree.copies, sessiontree.versions, sessiontree.chunks TO PUBLIC;
GRANT INSERT (owner, id, name), UPDATE (name, last_seen), DELETE
    ON sessiontree.machines TO PUBLIC;
GRANT INSERT (owner, session_id, cwd, created), UPDATE (cwd, created), DELETE
    ON sessiontree.sessions TO PUBLIC;
GRANT INSERT (owner, session_pk, grantee), DELETE ON sessiontree.shares TO PUBLIC;
GRANT INSERT (owner, session_pk, machine, rel_path), UPDATE (rel_path), DELETE
    ON sessiontree.copies TO PUBLIC;
GRANT INSERT (owner, copy_pk, session_pk, seq, length, hash, src_length, redaction, info),
    UPDATE (length, hash, src_length, info, updated_at), DELETE
    ON sessiontree.versions TO PUBLIC;
GRANT INSERT (owner, version_pk, session_pk, off, data) ON sessiontree.chunks TO PUBLIC;
GRANT INSERT (owner, version_pk, session_pk, off, entry_id, role, ts, body, tri)
    ON sessiontree.texts TO PUBLIC;
REVOKE ALL ON FUNCTION sessiontree.version_insert(), sessiontree.version_update(),
    sessiontree.version_whole(), sessiontree.chunk_insert(), sessiontree.check_share()
    FROM PUBLIC;

-- The functions belong to the tables' owner (a superuser migrating would own them).
DO $$
DECLARE
    f text;
    own name := (SELECT t.tableowner FROM pg_catalog.pg_tables t
                 WHERE t.schemaname = 'sessiontree' AND t.tablename = 'sessions');
BEGIN
    FOREACH f IN ARRAY ARRAY['my_roles()', 'login_roles()', 'check_share()',
                             'version_insert()', 'version_update()', 'version_whole()',
                             'chunk_insert()'] LOOP
        EXECUTE format('ALTER FUNCTION sessiontree.%s OWNER TO %I', f, own);
    END LOOP;
END $$;

ALTER TABLE sessiontree.machines FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.shares FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.copies FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.versions FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.chunks FORCE ROW LEVEL SECURITY;
"#;

/// Version 5: the usage of a version (what `stats` sums), kept at push time.
///
/// * `sessiontree.usage`: one row per record with a usage (an assistant message's `usage`,
///   a `usage` entry) of a version, in file order (`n`), as the client computed it from the
///   bytes it pushed: the entry's id and timestamp text (which identify a record copied into
///   a fork), provider, model, UTC day, whether it is on the version's current branch, and
///   the six numbers. Read under the same rule as the version (its owner, and the roles it
///   is shared with); written by the version's owner only, tied to the version by
///   `(version_pk, session_pk, owner)`; only `on_branch` changes (an append moves the leaf),
///   rows go with their version.
/// * `versions.usage_length`: how many of the version's bytes its usage rows describe; a
///   reader counts a version's rows only when it equals `length` (a version pushed before
///   this schema has `NULL`: its bytes are read instead).
/// * The data step computes the rows of the newest version of every copy already in the
///   archive from its chunks, once.
const V5_BEFORE: &str = r#"
ALTER TABLE sessiontree.versions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.chunks NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.versions ADD COLUMN usage_length bigint;
-- The data step sets usage_length only: not an append (the version's time stays).
ALTER TABLE sessiontree.versions DISABLE TRIGGER versions_update;

CREATE TABLE sessiontree.usage (
    version_pk bigint NOT NULL,
    session_pk bigint NOT NULL,
    owner name NOT NULL DEFAULT current_user,
    n int NOT NULL,
    entry_id text,
    entry_ts text NOT NULL,
    provider text NOT NULL,
    model text NOT NULL,
    day text NOT NULL,
    on_branch boolean NOT NULL,
    input float8 NOT NULL,
    output float8 NOT NULL,
    cache_read float8 NOT NULL,
    cache_write float8 NOT NULL,
    total_tokens float8 NOT NULL,
    cost float8 NOT NULL,
    PRIMARY KEY (version_pk, n),
    CONSTRAINT usage_version FOREIGN KEY (version_pk, session_pk, owner)
        REFERENCES sessiontree.versions (pk, session_pk, owner) ON DELETE CASCADE,
    -- Finite numbers (NaN is above 'Infinity' in PostgreSQL's order).
    CONSTRAINT usage_sane CHECK (n >= 0
        AND input > '-Infinity' AND input < 'Infinity'
        AND output > '-Infinity' AND output < 'Infinity'
        AND cache_read > '-Infinity' AND cache_read < 'Infinity'
        AND cache_write > '-Infinity' AND cache_write < 'Infinity'
        AND total_tokens > '-Infinity' AND total_tokens < 'Infinity'
        AND cost > '-Infinity' AND cost < 'Infinity')
);
CREATE INDEX usage_session ON sessiontree.usage (session_pk);
ALTER TABLE sessiontree.usage ENABLE ROW LEVEL SECURITY;
CREATE POLICY usage_read ON sessiontree.usage FOR SELECT
    USING (owner = current_user
        OR session_pk IN (SELECT sh.session_pk FROM sessiontree.shares sh));
CREATE POLICY usage_write ON sessiontree.usage FOR ALL
    USING (owner = current_user)
    WITH CHECK (owner = current_user
        AND session_pk IN (SELECT s.pk FROM sessiontree.sessions s
                           WHERE s.owner = current_user));
REVOKE ALL ON sessiontree.usage FROM PUBLIC;
GRANT SELECT ON sessiontree.usage TO PUBLIC;
GRANT INSERT (owner, version_pk, session_pk, n, entry_id, entry_ts, provider, model, day,
              on_branch, input, output, cache_read, cache_write, total_tokens, cost),
    UPDATE (on_branch) ON sessiontree.usage TO PUBLIC;
GRANT INSERT (usage_length), UPDATE (usage_length) ON sessiontree.versions TO PUBLIC;
"#;

const V5_AFTER: &str = r#"
-- The wholeness checks of the data step now (ALTER TABLE refuses pending trigger events).
SET CONSTRAINTS sessiontree.versions_whole IMMEDIATE;
SET CONSTRAINTS sessiontree.versions_whole DEFERRED;
ALTER TABLE sessiontree.versions ENABLE TRIGGER versions_update;
ALTER TABLE sessiontree.versions FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.chunks FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.usage FORCE ROW LEVEL SECURITY;
"#;

/// Version 5's data step: the usage rows of the newest version of every copy, from its
/// chunks (a version whose chunks do not add up, or that fails version 4's checks, is left
/// without: `stats` reads its bytes).
fn backfill_usage(tx: &mut Transaction) -> Result<()> {
    each_newest_version(tx, |tx, v| {
        // Only a version that passes version 4's checks (older rows were left as they
        // were, `NOT VALID`, and an update would check them now).
        let n = tx.execute(
            "UPDATE sessiontree.versions SET usage_length = length
             WHERE pk = $1 AND seq >= 1 AND length >= 0 AND src_length >= 0
               AND octet_length(hash) = 32",
            &[&v.pk],
        )?;
        if n == 1 {
            let rows = crate::usage::rows(&v.bytes);
            crate::usage::insert(tx, v.pk, v.session_pk, Some(&v.owner), &rows)?;
        }
        Ok(())
    })
}

/// The newest version of a copy, whole, for a data step.
struct Whole {
    pk: i64,
    session_pk: i64,
    owner: String,
    bytes: Vec<u8>,
    /// Where its chunks start.
    starts: Vec<i64>,
}

/// Calls `f` with the newest version of every copy, one at a time, read from its chunks;
/// a version whose chunks do not add up to its length is left out (it cannot be read).
fn each_newest_version(
    tx: &mut Transaction,
    mut f: impl FnMut(&mut Transaction, Whole) -> Result<()>,
) -> Result<()> {
    let versions = tx.query(
        "SELECT DISTINCT ON (copy_pk) pk, session_pk, owner::text, length
         FROM sessiontree.versions ORDER BY copy_pk, seq DESC",
        &[],
    )?;
    for v in versions {
        let (pk, session_pk, owner, length): (i64, i64, String, i64) =
            (v.get(0), v.get(1), v.get(2), v.get(3));
        let mut bytes = Vec::new();
        let mut starts = Vec::new();
        for c in tx.query(
            "SELECT off, data FROM sessiontree.chunks WHERE version_pk = $1 ORDER BY off",
            &[&pk],
        )? {
            let (off, data): (i64, &[u8]) = (c.get(0), c.get(1));
            if off != bytes.len() as i64 {
                break;
            }
            starts.push(off);
            bytes.extend_from_slice(data);
        }
        if bytes.len() as i64 == length {
            f(
                tx,
                Whole {
                    pk,
                    session_pk,
                    owner,
                    bytes,
                    starts,
                },
            )?;
        }
    }
    Ok(())
}

/// Version 6: the usage of a version as a few sums (what `stats --archive` reads), written
/// whole at push time and only where it changed on an append.
///
/// * `sessiontree.usage_sums`: one row per version, provider, model, UTC day and how its
///   records count (`in_all`: over every branch, the first record of its id and time in the
///   version; `in_branch`: on the current branch), with the records' count and the six sums,
///   and of each record with an id its identity digest, id, time and numbers (`ids`, `eid`,
///   `ets`, `nums`, six per record), so that a reader leaves out the copies of a record that
///   a session it counts first holds (a fork). Read under the same rule as the version;
///   written by the version's owner only, tied to it by `(version_pk, session_pk, owner)`;
///   the sums and records of a group may be rewritten (an append) or the group deleted,
///   never moved to another version or owner. Counts are non-negative, numbers finite,
///   the arrays one-dimensional, without NULLs and of matching lengths.
/// * The data step groups the usage rows of every version whose rows describe its bytes
///   (`usage_length = length`), with the same code a push uses; `sessiontree.usage` is then
///   dropped: nothing reads it (`stats --archive ID` reads the session's bytes), and its
///   rows, one per record and rewritten on every append, were most of an append's cost.
///   `versions.usage_length` now says how many bytes the sums describe.
const V6_BEFORE: &str = r#"
-- The owner of the tables runs this; for the data step it must see every row.
ALTER TABLE sessiontree.usage NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.versions NO FORCE ROW LEVEL SECURITY;

CREATE TABLE sessiontree.usage_sums (
    version_pk bigint NOT NULL,
    session_pk bigint NOT NULL,
    owner name NOT NULL DEFAULT current_user,
    provider text NOT NULL,
    model text NOT NULL,
    day text NOT NULL,
    in_all boolean NOT NULL,
    in_branch boolean NOT NULL,
    records int NOT NULL,
    input float8 NOT NULL,
    output float8 NOT NULL,
    cache_read float8 NOT NULL,
    cache_write float8 NOT NULL,
    total_tokens float8 NOT NULL,
    cost float8 NOT NULL,
    ids int8[] NOT NULL,
    eid text[] NOT NULL,
    ets text[] NOT NULL,
    nums float8[] NOT NULL,
    PRIMARY KEY (version_pk, provider, model, day, in_all, in_branch),
    CONSTRAINT usage_sums_version FOREIGN KEY (version_pk, session_pk, owner)
        REFERENCES sessiontree.versions (pk, session_pk, owner) ON DELETE CASCADE,
    -- Finite numbers (NaN is above 'Infinity' in PostgreSQL's order, and equal to NaN).
    CONSTRAINT usage_sums_sane CHECK (records >= 0 AND records >= cardinality(ids)
        AND input > '-Infinity' AND input < 'Infinity'
        AND output > '-Infinity' AND output < 'Infinity'
        AND cache_read > '-Infinity' AND cache_read < 'Infinity'
        AND cache_write > '-Infinity' AND cache_write < 'Infinity'
        AND total_tokens > '-Infinity' AND total_tokens < 'Infinity'
        AND cost > '-Infinity' AND cost < 'Infinity'
        AND NOT (nums && '{NaN,Infinity,-Infinity}'::float8[])
        AND coalesce(array_ndims(ids), 1) = 1 AND coalesce(array_ndims(eid), 1) = 1
        AND coalesce(array_ndims(ets), 1) = 1 AND coalesce(array_ndims(nums), 1) = 1
        AND cardinality(eid) = cardinality(ids) AND cardinality(ets) = cardinality(ids)
        AND cardinality(nums) = 6 * cardinality(ids)
        AND array_position(ids, NULL) IS NULL AND array_position(eid, NULL) IS NULL
        AND array_position(ets, NULL) IS NULL AND array_position(nums, NULL) IS NULL)
);
CREATE INDEX usage_sums_session ON sessiontree.usage_sums (session_pk);
ALTER TABLE sessiontree.usage_sums ENABLE ROW LEVEL SECURITY;
CREATE POLICY usage_sums_read ON sessiontree.usage_sums FOR SELECT
    USING (owner = current_user
        OR session_pk IN (SELECT sh.session_pk FROM sessiontree.shares sh));
CREATE POLICY usage_sums_write ON sessiontree.usage_sums FOR ALL
    USING (owner = current_user)
    WITH CHECK (owner = current_user
        AND session_pk IN (SELECT s.pk FROM sessiontree.sessions s
                           WHERE s.owner = current_user));
REVOKE ALL ON sessiontree.usage_sums FROM PUBLIC;
GRANT SELECT, DELETE ON sessiontree.usage_sums TO PUBLIC;
GRANT INSERT (owner, version_pk, session_pk, provider, model, day, in_all, in_branch, records,
              input, output, cache_read, cache_write, total_tokens, cost, ids, eid, ets, nums),
    UPDATE (records, input, output, cache_read, cache_write, total_tokens, cost, ids, eid, ets,
            nums) ON sessiontree.usage_sums TO PUBLIC;
"#;

const V6_AFTER: &str = r#"
DROP TABLE sessiontree.usage;
ALTER TABLE sessiontree.versions FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.usage_sums FORCE ROW LEVEL SECURITY;
"#;

/// Version 6's data step: the groups of every version whose usage rows describe its bytes,
/// from those rows, version by version (a cursor: the rows of a large archive need not fit
/// in memory at once).
fn backfill_sums(tx: &mut Transaction) -> Result<()> {
    tx.batch_execute(
        "DECLARE st_sums NO SCROLL CURSOR FOR
             SELECT u.version_pk, u.session_pk, u.owner::text, u.entry_id, u.entry_ts,
                    u.provider, u.model, u.day, u.on_branch, u.input, u.output, u.cache_read,
                    u.cache_write, u.total_tokens, u.cost
             FROM sessiontree.usage u JOIN sessiontree.versions v
                  ON v.pk = u.version_pk AND v.session_pk = u.session_pk AND v.owner = u.owner
             WHERE v.usage_length = v.length
             ORDER BY u.version_pk, u.n",
    )?;
    let mut cur: Option<(i64, i64, String)> = None;
    let mut rows: Vec<crate::usage::Row> = Vec::new();
    let flush = |tx: &mut Transaction,
                 cur: &Option<(i64, i64, String)>,
                 rows: &mut Vec<crate::usage::Row>|
     -> Result<()> {
        if let Some((v, s, o)) = cur {
            let g = crate::usage::groups(rows);
            crate::usage::insert_groups(tx, *v, *s, o, &g)?;
        }
        rows.clear();
        Ok(())
    };
    loop {
        let batch = tx.query("FETCH 10000 FROM st_sums", &[])?;
        if batch.is_empty() {
            break;
        }
        for r in batch {
            let key: (i64, i64, String) = (r.get(0), r.get(1), r.get(2));
            if cur.as_ref() != Some(&key) {
                flush(tx, &cur, &mut rows)?;
                cur = Some(key);
            }
            rows.push(crate::usage::Row {
                entry_id: r.get(3),
                entry_ts: r.get(4),
                provider: r.get(5),
                model: r.get(6),
                day: r.get(7),
                on_branch: r.get(8),
                usage: sessiontree::usage::Usage {
                    records: 1,
                    input: r.get(9),
                    output: r.get(10),
                    cache_read: r.get(11),
                    cache_write: r.get(12),
                    total_tokens: r.get(13),
                    cost: r.get(14),
                },
            });
        }
    }
    flush(tx, &cur, &mut rows)?;
    tx.batch_execute("CLOSE st_sums")?;
    Ok(())
}

/// Version 7: search without a second copy of the text (the archive was 2.1 times the
/// sessions it held, most of it `texts`: every entry's text beside the chunks, its codes and
/// their index).
///
/// * `sessiontree.grams`: per *range* of a version (the whole lines that start in one of its
///   chunks) the 16-bit buckets of its entries' trigram codes (`int2[]`, at most 8 KiB) and
///   the times of its newest and oldest entry, as the client computed them (see `grams.rs`).
///   A search asks `sessiontree.search_grams` for the candidate ranges, newest first, reads
///   their bytes from the chunks (under the chunks' own row-level security) and checks every
///   entry there. A range's buckets are one set over many entries, so they take a fraction
///   of the per-entry codes' space, and the text itself is stored once, in the chunks.
/// * The same rules as `texts` had: written by the version's owner only, tied to the version
///   by `(version_pk, session_pk, owner)`, never updated, gone with the version; read only
///   through the `SECURITY DEFINER` function, which returns ranges of the calling login's
///   own sessions and of those shared with its roles. A forged row can make its writer's own
///   range a candidate, never put text in a hit: hits come from the chunks.
/// * The data step computes the ranges of the newest version of every copy from its chunks,
///   with the code a push uses; `texts` and `search_texts` are then dropped.
const V7_BEFORE: &str = r#"
-- The owner of the tables runs this; for the data step it must see every row.
ALTER TABLE sessiontree.versions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.chunks NO FORCE ROW LEVEL SECURITY;

CREATE TABLE sessiontree.grams (
    version_pk bigint NOT NULL,
    session_pk bigint NOT NULL,
    owner name NOT NULL DEFAULT current_user,
    off bigint NOT NULL,
    len bigint NOT NULL,
    newest float8,
    oldest float8,
    tri int2[] NOT NULL,
    PRIMARY KEY (version_pk, off),
    CONSTRAINT grams_version FOREIGN KEY (version_pk, session_pk, owner)
        REFERENCES sessiontree.versions (pk, session_pk, owner) ON DELETE CASCADE,
    -- Finite times (NaN is above 'Infinity' in PostgreSQL's order), one-dimensional codes.
    CONSTRAINT grams_sane CHECK (off >= 0 AND len > 0
        AND (newest IS NULL OR (newest > '-Infinity' AND newest < 'Infinity'))
        AND (oldest IS NULL OR (oldest > '-Infinity' AND oldest < 'Infinity'))
        AND coalesce(array_ndims(tri), 1) = 1 AND array_position(tri, NULL) IS NULL)
);
-- Buckets hardly compress.
ALTER TABLE sessiontree.grams ALTER COLUMN tri SET STORAGE EXTERNAL;
ALTER TABLE sessiontree.grams ENABLE ROW LEVEL SECURITY;
CREATE POLICY grams_write ON sessiontree.grams FOR ALL
    USING (owner = current_user)
    WITH CHECK (owner = current_user
        AND session_pk IN (SELECT s.pk FROM sessiontree.sessions s
                           WHERE s.owner = current_user));
REVOKE ALL ON sessiontree.grams FROM PUBLIC;
GRANT INSERT (owner, version_pk, session_pk, off, len, newest, oldest, tri)
    ON sessiontree.grams TO PUBLIC;
"#;

const V7_AFTER: &str = r#"
CREATE INDEX grams_tri ON sessiontree.grams USING gin (tri)
    WITH (fastupdate = on, gin_pending_list_limit = 16384);

-- The only way to read the ranges for roles other than its owner. tri: every bucket must
-- be in the range's buckets (NULL or empty: no condition); since / until: a range that may hold
-- an entry of that time or later / earlier (NULL: no bound); newest first, at most lim.
CREATE FUNCTION sessiontree.search_grams(tri int2[], since float8, until float8, lim int)
RETURNS TABLE (version_pk bigint, session_pk bigint, off bigint, len bigint, newest float8)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shared bigint[];
    cond text := '';
BEGIN
    SELECT coalesce(pg_catalog.array_agg(DISTINCT sh.session_pk), '{}'::bigint[]) INTO shared
    FROM sessiontree.shares sh WHERE sh.grantee = ANY (sessiontree.login_roles());
    IF tri IS NOT NULL AND pg_catalog.cardinality(tri) > 0 THEN
        cond := cond || ' AND g.tri OPERATOR(pg_catalog.@>) $1';
    END IF;
    IF since IS NOT NULL THEN
        cond := cond || ' AND g.newest >= $2';
    END IF;
    IF until IS NOT NULL THEN
        cond := cond || ' AND g.oldest < $3';
    END IF;
    RETURN QUERY EXECUTE
        'SELECT g.version_pk, g.session_pk, g.off, g.len, g.newest
         FROM sessiontree.grams g
         WHERE (g.owner = session_user OR g.session_pk = ANY ($5))' || cond ||
        ' ORDER BY g.newest DESC NULLS LAST, g.version_pk, g.off LIMIT $4'
        USING tri, since, until, greatest(lim, 0), shared;
END $$;
DROP FUNCTION sessiontree.search_texts(int4[], text, text, int);
DROP TABLE sessiontree.texts;
-- Owned by the tables' owner (a superuser running this migration would otherwise own them).
DO $$
DECLARE
    own name := (SELECT t.tableowner FROM pg_catalog.pg_tables t
                 WHERE t.schemaname = 'sessiontree' AND t.tablename = 'sessions');
BEGIN
    EXECUTE format('ALTER TABLE sessiontree.grams OWNER TO %I', own);
    EXECUTE format('ALTER FUNCTION sessiontree.search_grams(int2[], float8, float8, int) OWNER TO %I', own);
END $$;
REVOKE ALL ON FUNCTION sessiontree.search_grams(int2[], float8, float8, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessiontree.search_grams(int2[], float8, float8, int) TO PUBLIC;
ALTER TABLE sessiontree.versions FORCE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.chunks FORCE ROW LEVEL SECURITY;
"#;

/// Version 8: how many times each machine's copies changed (`sessiontree.machine_changes`),
/// so that a push learns from one row that nothing but its own pushes changed them since its
/// last one, and asks the server only for the copies of the files that changed locally
/// (instead of the newest version of every copy, a query over all of them).
///
/// * A deferred trigger on `versions` (insert, update, delete) and `copies` (delete) adds
///   one to the count of the copy's machine once per transaction, at commit: whatever
///   writes, a push of any version, `psql`, a cascade from a deleted session.
/// * A push adds one itself as the last statement of each of its transactions and reads
///   the new count back: when it is one more than the count it knew, nothing else changed
///   that machine's copies in between. `xact` is the transaction that added last, so the
///   trigger adds nothing more in the push's own transaction.
/// * Rows are the owner's alone, to read and to write (a count of changes says when a
///   machine was in use; no other role is told, not even one a session is shared with).
///
/// And the write policies of the tables under a session check that the session is the
/// writer's own by looking that one session up, not by hashing all of the writer's sessions
/// (`session_pk IN (SELECT pk ...)` did that in every statement: 13 of the 20 ms of a push's
/// one-row append over 20,000 sessions). The same rows pass.
const V8: &str = r#"
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['copies', 'versions', 'chunks', 'grams', 'usage_sums'] LOOP
        EXECUTE format(
            'ALTER POLICY %I ON sessiontree.%I WITH CHECK (owner = current_user AND EXISTS (
                 SELECT 1 FROM sessiontree.sessions s
                 WHERE s.pk = %I.session_pk AND s.owner = current_user))',
            t || '_write', t, t);
    END LOOP;
END $$;

CREATE TABLE sessiontree.machine_changes (
    owner name NOT NULL DEFAULT current_user,
    machine uuid NOT NULL,
    n bigint NOT NULL DEFAULT 1,
    xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
    PRIMARY KEY (owner, machine)
);
ALTER TABLE sessiontree.machine_changes ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessiontree.machine_changes FORCE ROW LEVEL SECURITY;
CREATE POLICY machine_changes_own ON sessiontree.machine_changes FOR ALL
    USING (owner = current_user) WITH CHECK (owner = current_user);
REVOKE ALL ON sessiontree.machine_changes FROM PUBLIC;
GRANT SELECT, INSERT (owner, machine), UPDATE (n, xact) ON sessiontree.machine_changes
    TO PUBLIC;

-- One more change of a machine's copies in this transaction, unless it was counted already;
-- the count after it.
CREATE FUNCTION sessiontree.count_change(m uuid) RETURNS bigint
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO sessiontree.machine_changes AS x (owner, machine) VALUES (current_user, m)
    ON CONFLICT (owner, machine) DO UPDATE
        SET n = x.n OPERATOR(pg_catalog.+) 1, xact = pg_catalog.pg_current_xact_id()
        WHERE x.xact OPERATOR(pg_catalog.<>) pg_catalog.pg_current_xact_id()
    RETURNING n
$$;

CREATE FUNCTION sessiontree.copy_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    m uuid;
BEGIN
    IF TG_TABLE_NAME = 'copies' THEN
        IF OLD.owner = current_user THEN
            m := OLD.machine;
        END IF;
    ELSE
        SELECT c.machine INTO m FROM sessiontree.copies c
        WHERE c.pk = (CASE WHEN TG_OP = 'DELETE' THEN OLD.copy_pk ELSE NEW.copy_pk END)
          AND c.owner = current_user;
    END IF;
    -- A copy deleted in the same transaction was counted by its own trigger.
    IF m IS NOT NULL THEN
        PERFORM sessiontree.count_change(m);
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER versions_counted AFTER INSERT OR UPDATE OR DELETE
    ON sessiontree.versions DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION sessiontree.copy_changed();
CREATE CONSTRAINT TRIGGER copies_counted AFTER DELETE
    ON sessiontree.copies DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION sessiontree.copy_changed();

DO $$
DECLARE
    own name := (SELECT t.tableowner FROM pg_catalog.pg_tables t
                 WHERE t.schemaname = 'sessiontree' AND t.tablename = 'sessions');
BEGIN
    EXECUTE format('ALTER TABLE sessiontree.machine_changes OWNER TO %I', own);
    EXECUTE format('ALTER FUNCTION sessiontree.count_change(uuid) OWNER TO %I', own);
    EXECUTE format('ALTER FUNCTION sessiontree.copy_changed() OWNER TO %I', own);
END $$;
REVOKE ALL ON FUNCTION sessiontree.copy_changed() FROM PUBLIC;
REVOKE ALL ON FUNCTION sessiontree.count_change(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessiontree.count_change(uuid) TO PUBLIC;
"#;

/// Version 7's data step: the search ranges of the newest version of every copy, from its
/// chunks, cut where its chunks are (a version whose chunks do not add up is left without:
/// it cannot be read either).
fn backfill_grams(tx: &mut Transaction) -> Result<()> {
    each_newest_version(tx, |tx, v| {
        let grams = crate::grams::of(&v.bytes, 0, &v.starts);
        for chunk in grams.chunks(500) {
            let c = crate::grams::Columns::of(chunk.iter().map(|g| (v.pk, v.session_pk, g)));
            let mut params = c.params().to_vec();
            params.push((&v.owner, postgres::types::Type::TEXT));
            tx.execute_typed(
                "INSERT INTO sessiontree.grams (version_pk, session_pk, owner, off, len, newest,
                                                oldest, tri)
                 SELECT v, s, $8::text::name, o, l, n, d, tri::int2[]
                 FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::float8[],
                             $6::float8[], $7::text[]) AS u(v, s, o, l, n, d, tri)",
                &params,
            )?;
        }
        Ok(())
    })
}

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
    (
        4,
        "another role cannot read or write what is not its own: pinned search_path, ownership through every key, server-chosen keys and seq, whole versions, immutable rows",
        &[Step::Sql(V4)],
    ),
    (
        5,
        "usage per version kept at push time (stats --archive without reading every session)",
        &[
            Step::Sql(V5_BEFORE),
            Step::Rust(backfill_usage),
            Step::Sql(V5_AFTER),
        ],
    ),
    (
        6,
        "usage per version as a few sums (stats --archive reads them; an append rewrites only what changed)",
        &[
            Step::Sql(V6_BEFORE),
            Step::Rust(backfill_sums),
            Step::Sql(V6_AFTER),
        ],
    ),
    (
        7,
        "search ranges instead of a copy of every entry's text (the archive holds its text once, in the chunks)",
        &[
            Step::Sql(V7_BEFORE),
            Step::Rust(backfill_grams),
            Step::Sql(V7_AFTER),
        ],
    ),
    (
        8,
        "how many times each machine's copies changed (a push after one append asks only for the copies that changed)",
        &[Step::Sql(V8)],
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
