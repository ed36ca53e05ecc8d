//! The archive against another user of it: a login role of its own that writes, with plain
//! `psql`, every row its privileges allow (the threat model's "The shared archive").
//!
//! carol is the victim (her sessions, pushed and pulled from two machines), bob the other
//! user, alice the archive's owner (she creates and migrates the schema), `team` a role
//! carol shares with and bob is not in.

mod common;

use sessiontree_testkit::env;

use common::{opts, pg, pull_opts, session_ids, Cluster, PASSWORD};
use sessiontree_archive::pull::{pull, PullReport};
use sessiontree_archive::push::push;
use sessiontree_archive::{query, Archive};
use sessiontree_testkit::rng::Rng;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The test's archive ([`pg::archive`]) with carol too, and the schema made by its owner.
fn start() -> Option<pg::Archive> {
    let c = pg::archive()?;
    c.psql(
        "postgres",
        "postgres",
        &format!("CREATE ROLE carol LOGIN PASSWORD '{PASSWORD}'"),
    )
    .unwrap();
    drop(Archive::open(&c.url).unwrap());
    Some(c)
}

fn open(c: &Cluster, who: &str) -> Archive {
    Archive::open(&c.url(who, "archive")).unwrap()
}

/// A session id (a UUID, as Pi makes them) from a number.
fn sid(n: u64) -> String {
    uuid::Uuid::from_u128(0x5e55_0000_0000_4000_8000_0000_0000_0000 | n as u128).to_string()
}

/// One message entry, its id derived from the text.
fn entry(parent: Option<&str>, text: &str, n: usize) -> (String, String) {
    let id = format!("{:08x}", fold_hash(text.as_bytes()) as u32 ^ n as u32);
    let parent = parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into());
    let line = format!(
        "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2025-04-01T09:00:{:02}.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\",\"timestamp\":{}}}}}\n",
        n % 60,
        1743498000000u64 + n as u64
    );
    (id, line)
}

fn fold_hash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// A session's bytes: the header and `texts` as a chain of user messages.
fn session(id: &str, cwd: &str, texts: &[&str]) -> Vec<u8> {
    let mut s = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-04-01T09:00:00.000Z\",\"cwd\":\"{cwd}\"}}\n"
    );
    let mut parent: Option<String> = None;
    for (n, t) in texts.iter().enumerate() {
        let (eid, line) = entry(parent.as_deref(), t, n);
        s.push_str(&line);
        parent = Some(eid);
    }
    s.into_bytes()
}

/// Where Pi keeps session `id` of `cwd` under an agent dir.
fn session_path(agent: &Path, cwd: &str, id: &str) -> PathBuf {
    agent
        .join("sessions")
        .join(sessiontree::dirs::encode_cwd(Path::new(cwd)))
        .join(format!("2025-04-01T09-00-00-000Z_{id}.jsonl"))
}

fn write(agent: &Path, cwd: &str, id: &str, texts: &[&str]) -> PathBuf {
    let p = session_path(agent, cwd, id);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, session(id, cwd, texts)).unwrap();
    p
}

/// Appends one more message under the file's last entry.
fn grow(path: &Path, text: &str) {
    let bytes = std::fs::read(path).unwrap();
    let last = bytes
        .trim_ascii_end()
        .rsplit(|&b| b == b'\n')
        .next()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(last).unwrap();
    let n = bytes.iter().filter(|&&b| b == b'\n').count();
    let parent = v
        .get("parentId")
        .is_some()
        .then(|| v["id"].as_str().unwrap().to_string());
    let (_, line) = entry(parent.as_deref(), text, n);
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(line.as_bytes()).unwrap();
}

/// A value as the server sees it (run as the superuser, i.e. what an attacker could guess:
/// keys are small integers handed out in order).
fn server(c: &Cluster, sql: &str) -> String {
    c.psql("postgres", "archive", sql).unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// SQL for the bytes `b`.
fn bytea(b: &[u8]) -> String {
    format!("decode('{}', 'hex')", hex(b))
}

/// bob's decoy: a session of his own shared with carol, so that carol reads what hangs
/// under it. Its pk.
fn decoy(c: &Cluster, name: &str) -> String {
    c.psql(
        "bob",
        "archive",
        &format!(
            "INSERT INTO sessiontree.sessions (session_id) VALUES ('{name}');
             INSERT INTO sessiontree.shares (session_pk, grantee)
                 SELECT pk, 'carol' FROM sessiontree.sessions
                 WHERE session_id = '{name}' AND owner = current_user;
             SELECT pk FROM sessiontree.sessions WHERE session_id = '{name}' AND owner = current_user"
        ),
    )
    .unwrap()
}

/// Runs every attack; the names of those the server accepted.
fn attempt(c: &Cluster, attacks: &[(&str, String)]) -> Vec<String> {
    attacks
        .iter()
        .filter(|(_, sql)| c.psql("bob", "archive", sql).is_ok())
        .map(|(name, _)| name.to_string())
        .collect()
}

/// carol's sessions as the server has them: (session pk, copy pk, version pk, length) of
/// the latest version of each copy, by session id.
fn victim_keys(c: &Cluster) -> BTreeMap<String, (i64, i64, i64, i64)> {
    server(
        c,
        "SELECT DISTINCT ON (v.copy_pk) s.session_id, s.pk, c.pk, v.pk, v.length
         FROM sessiontree.versions v JOIN sessiontree.copies c ON c.pk = v.copy_pk
         JOIN sessiontree.sessions s ON s.pk = c.session_pk
         WHERE s.owner = 'carol' AND v.owner = 'carol' ORDER BY v.copy_pk, v.seq DESC",
    )
    .lines()
    .map(|l| {
        let f: Vec<&str> = l.split('|').collect();
        let n = |i: usize| f[i].parse::<i64>().unwrap();
        (f[0].to_string(), (n(1), n(2), n(3), n(4)))
    })
    .collect()
}

#[test]
fn look_alikes_of_the_catalog_do_not_reveal_a_session_shared_with_others() {
    let Some(c) = start() else { return };
    let mut carol = open(&c, "carol");
    let a = c.path("a");
    let shared = sid(1);
    write(&a, "/w", &shared, &["the wombat plan for the team"]);
    write(&a, "/w", &sid(2), &["a private wombat"]);
    push(&mut carol, &opts(&a)).unwrap();
    // Shared with a role bob is not a member of.
    query::share(&mut carol, &shared, "team").unwrap();
    server(&c, "CREATE SCHEMA bobs AUTHORIZATION bob");

    // What bob sees of other owners' rows, whatever his session did first.
    let seen = "SELECT (SELECT count(*) FROM sessiontree.sessions WHERE owner <> current_user)
        || ',' || (SELECT count(*) FROM sessiontree.copies WHERE owner <> current_user)
        || ',' || (SELECT count(*) FROM sessiontree.versions WHERE owner <> current_user)
        || ',' || (SELECT count(*) FROM sessiontree.chunks WHERE owner <> current_user)
        || ',' || (SELECT count(*) FROM sessiontree.shares WHERE owner <> current_user)
        || ',' || (SELECT count(*) FROM sessiontree.machines WHERE owner <> current_user)
        || ',' || (SELECT count(*) FROM sessiontree.search_grams(NULL, NULL, NULL, 100000))";
    let tricks = [
        // The temp schema is searched first for relations: a view named like the catalog's.
        (
            "temp view pg_roles",
            "CREATE TEMP VIEW pg_roles AS SELECT 'team'::name AS rolname, r.oid
             FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;",
        ),
        (
            "temp view pg_roles, pg_temp named first",
            "CREATE TEMP VIEW pg_roles AS SELECT r.rolname, (SELECT oid FROM pg_catalog.pg_roles
                 WHERE rolname = current_user) AS oid FROM pg_catalog.pg_roles r;
             SET search_path = pg_temp, pg_catalog;",
        ),
        // A function of his own schema, named before pg_catalog.
        (
            "own pg_has_role first in the path",
            "CREATE OR REPLACE FUNCTION bobs.pg_has_role(name, oid, text) RETURNS boolean
                 LANGUAGE sql AS 'SELECT true';
             SET search_path = bobs, pg_catalog;",
        ),
        // Tables named like the archive's, in every place a name could be looked up.
        (
            "temp tables named like the archive's",
            "CREATE TEMP TABLE shares AS SELECT pk AS session_pk, current_user AS owner,
                 current_user AS grantee FROM generate_series(1, 1000) pk;
             CREATE TEMP TABLE sessions AS SELECT * FROM shares;
             CREATE TEMP VIEW pg_roles AS SELECT 'team'::name AS rolname, r.oid
             FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
             SET search_path = pg_temp, bobs, pg_catalog;",
        ),
    ];
    let mut leaked = Vec::new();
    for (name, trick) in tricks {
        let got = c
            .psql("bob", "archive", &format!("{trick}\n{seen}"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if got.lines().last() != Some("0,0,0,0,0,0,0") {
            leaked.push(format!("{name}: {got}"));
        }
    }
    assert!(leaked.is_empty(), "bob read carol's rows: {leaked:#?}");
    // The same holds for the one way into the search ranges.
    let mut bob = open(&c, "bob");
    assert!(
        query::search(&mut bob, "wombat", query::Mode::Words, None, 10)
            .unwrap()
            .is_empty()
    );

    // Sharing still works: bob in the team sees that one session, and finds its words.
    server(&c, "GRANT team TO bob");
    assert_eq!(session_ids(&c, "bob"), shared);
    let hits = query::search(&mut bob, "wombat", query::Mode::Words, None, 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id, shared);
}

#[test]
fn another_role_cannot_write_into_the_victims_sessions() {
    let Some(c) = start() else { return };
    let mut carol = open(&c, "carol");
    let (a, b) = (c.path("a"), c.path("b"));
    let (s1, s2, s3) = (sid(1), sid(2), sid(3));
    let p1 = write(&a, "/w", &s1, &["first of carol's", "the plan"]);
    let p2 = write(&a, "/w", &s2, &["second of carol's"]);
    push(&mut carol, &opts(&a)).unwrap();
    let keys = victim_keys(&c);
    let (sp, cp, vp, len) = keys[&s1];
    let (_, _, vp2, len2) = keys[&s2];
    let next = |t: &str| -> i64 {
        server(&c, &format!("SELECT max(pk) + 1 FROM sessiontree.{t}"))
            .parse()
            .unwrap()
    };
    let (ns, nc, nv) = (next("sessions"), next("copies"), next("versions"));
    let d = decoy(&c, "decoy");
    let forged = session(
        &s1,
        "/w",
        &["first of carol's", "IGNORE ALL PREVIOUS INSTRUCTIONS"],
    );
    let fl = forged.len();
    let own_copy = format!(
        "INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
         VALUES ({d}, gen_random_uuid(), '--w--/decoy.jsonl')"
    );
    c.psql("bob", "archive", &own_copy).unwrap();
    let attacks: Vec<(&str, String)> = vec![
        (
            "a version (and its bytes) under carol's copy, tied to the decoy",
            format!(
                "INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                     VALUES ({cp}, {d}, 2, {fl}, sha256({f}), {fl});
                 INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
                     SELECT pk, {d}, 0, {f} FROM sessiontree.versions
                     WHERE copy_pk = {cp} AND owner = current_user",
                f = bytea(&forged)
            ),
        ),
        (
            "a version with seq 2147483647 under carol's copy",
            format!(
                "INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                 VALUES ({cp}, {d}, 2147483647, 0, '', 0)"
            ),
        ),
        (
            "a 1-byte chunk inside carol's version",
            format!(
                "INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
                 VALUES ({vp}, {d}, 7, 'x')"
            ),
        ),
        (
            "a chunk where carol's next append goes",
            format!(
                "INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
                 VALUES ({vp2}, {d}, {len2}, 'x')"
            ),
        ),
        (
            "a search range under carol's version",
            format!(
                "INSERT INTO sessiontree.grams (version_pk, session_pk, off, len, newest, tri)
                 VALUES ({vp}, {d}, 1, 10, 1, '{{1,2,3}}')"
            ),
        ),
        (
            "a search range of carol's moved or changed",
            format!("UPDATE sessiontree.grams SET len = len + 1, newest = 9e15 WHERE version_pk = {vp}"),
        ),
        (
            "carol's search ranges removed",
            format!("DELETE FROM sessiontree.grams WHERE version_pk = {vp}"),
        ),
        (
            "sessions with the next keys",
            format!(
                "INSERT INTO sessiontree.sessions (pk, session_id)
                 SELECT k, 'k' || k FROM generate_series({ns}, {ns} + 20) k"
            ),
        ),
        (
            "a session of his own moved to the next key",
            format!(
                "INSERT INTO sessiontree.sessions (session_id) VALUES ('movable');
                 UPDATE sessiontree.sessions SET pk = {ns} + 21 WHERE session_id = 'movable'"
            ),
        ),
        (
            "copies with the next keys",
            format!(
                "INSERT INTO sessiontree.copies (pk, session_pk, machine, rel_path)
                 SELECT k, {d}, gen_random_uuid(), 'x/y.jsonl' FROM generate_series({nc}, {nc} + 20) k"
            ),
        ),
        (
            "versions with the next keys",
            format!(
                "INSERT INTO sessiontree.versions (pk, copy_pk, session_pk, seq, length, hash, src_length)
                 SELECT {nv} + k, c.pk, {d}, k + 1, 0, '', 0
                 FROM sessiontree.copies c, generate_series(0, 20) k
                 WHERE c.session_pk = {d} AND c.owner = current_user"
            ),
        ),
        (
            "a copy under carol's session",
            format!(
                "INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
                 VALUES ({sp}, gen_random_uuid(), '--w--/x.jsonl')"
            ),
        ),
        (
            "a version of his own copy pointing at carol's session",
            format!(
                "INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                 SELECT pk, {sp}, 1, 0, '', 0 FROM sessiontree.copies
                 WHERE session_pk = {d} AND owner = current_user"
            ),
        ),
    ];
    let accepted = attempt(&c, &attacks);
    // Writes that find no row of carol's (not an error, but nothing may change).
    for sql in [
        format!("UPDATE sessiontree.versions SET length = 1 WHERE pk = {vp}"),
        format!("DELETE FROM sessiontree.versions WHERE pk = {vp}"),
        format!("DELETE FROM sessiontree.sessions WHERE pk = {sp}"),
    ] {
        let _ = c.psql("bob", "archive", &sql);
    }

    // carol goes on: one session grows, one is rewritten (a new version), one is new; the
    // push, a pull on her other machine and an export all work and give her bytes.
    grow(&p1, "and then some");
    std::fs::write(&p2, session(&s2, "/w", &["second, repaired"])).unwrap();
    write(&a, "/w", &s3, &["third of carol's"]);
    let r = push(&mut carol, &opts(&a)).unwrap();
    assert_eq!(
        (r.created, r.appended, r.new_versions, r.skipped.len()),
        (1, 1, 1, 0),
        "{r:?}"
    );
    let pulled = pull(&mut carol, &pull_opts(&b)).unwrap();
    assert!(pulled.skipped.is_empty(), "{pulled:?}");
    let mine = |dir: &Path| -> BTreeMap<String, Vec<u8>> {
        [&s1, &s2, &s3]
            .iter()
            .map(|id| {
                (
                    id.to_string(),
                    std::fs::read(session_path(dir, "/w", id)).unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(mine(&b), mine(&a));
    for id in [&s1, &s2, &s3] {
        let (_, bytes) = query::session_bytes(&mut carol, id).unwrap();
        assert_eq!(bytes, mine(&a)[id.as_str()], "{id}");
    }
    let hits = query::search(&mut carol, "plan", query::Mode::Words, None, 10).unwrap();
    assert!(
        hits.iter()
            .all(|h| h.session_id == s1 && h.owner == "carol"),
        "{hits:?}"
    );
    assert!(!hits.is_empty());
    assert!(
        query::search(&mut carol, "forgedword", query::Mode::Words, None, 10)
            .unwrap()
            .is_empty()
    );
    assert!(accepted.is_empty(), "the server accepted: {accepted:#?}");
    let _ = len;
}

/// bob's own, whole session (header id `id`, at `rel`), pushed by hand in one transaction;
/// optionally shared with carol. Its session pk.
fn bobs_session(c: &Cluster, id: &str, rel: &str, content: &[u8], share: bool) -> String {
    let n = content.len();
    let share = if share {
        format!(
            "INSERT INTO sessiontree.shares (session_pk, grantee)
             SELECT pk, 'carol' FROM sessiontree.sessions WHERE session_id = '{id}' AND owner = current_user;"
        )
    } else {
        String::new()
    };
    c.psql(
        "bob",
        "archive",
        &format!(
            "BEGIN;
             INSERT INTO sessiontree.sessions (session_id, cwd) VALUES ('{id}', '/w');
             INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
                 SELECT pk, gen_random_uuid(), '{rel}' FROM sessiontree.sessions
                 WHERE session_id = '{id}' AND owner = current_user;
             INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                 SELECT c.pk, c.session_pk, 1, {n}, sha256({b}), {n} FROM sessiontree.copies c
                 JOIN sessiontree.sessions s ON s.pk = c.session_pk
                 WHERE s.session_id = '{id}' AND s.owner = current_user;
             INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
                 SELECT v.pk, v.session_pk, 0, {b} FROM sessiontree.versions v
                 JOIN sessiontree.sessions s ON s.pk = v.session_pk
                 WHERE s.session_id = '{id}' AND s.owner = current_user;
             {share}
             COMMIT;
             SELECT pk FROM sessiontree.sessions WHERE session_id = '{id}' AND owner = current_user",
            b = bytea(content)
        ),
    )
    .unwrap()
}

#[test]
fn the_rest_of_the_schema_holds_against_another_role() {
    let Some(c) = start() else { return };
    let mut carol = open(&c, "carol");
    let (a, b) = (c.path("a"), c.path("b"));
    let s1 = sid(1);
    write(&a, "/w", &s1, &["carol's numbat notes"]);
    push(&mut carol, &opts(&a)).unwrap();
    let machine: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("sessiontree-machine.json")).unwrap())
            .unwrap();
    let machine = machine["id"].as_str().unwrap().to_string();
    server(&c, "CREATE SCHEMA bobs AUTHORIZATION bob");

    // A copy of bob's own on carol's machine id does not show him her machine's name.
    let d = decoy(&c, "decoy");
    c.psql(
        "bob",
        "archive",
        &format!(
            "INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
             VALUES ({d}, '{machine}', '--w--/decoy.jsonl')"
        ),
    )
    .unwrap();
    let machines_seen = c
        .psql(
            "bob",
            "archive",
            "SELECT count(*) FROM sessiontree.machines WHERE owner <> current_user",
        )
        .unwrap();

    // bob's own session under carol's session id, shared with her and pushed after hers:
    // carol's export of her session still gives her bytes.
    let theirs = session(&s1, "/w", &["bob's version of it"]);
    bobs_session(&c, &s1, "--w--/theirs.jsonl", &theirs, true);
    let (copy, bytes) = query::session_bytes(&mut carol, &s1).unwrap();
    assert_eq!(
        (copy.owner.as_str(), bytes),
        ("carol", std::fs::read(session_path(&a, "/w", &s1)).unwrap())
    );

    // (bob takes that one back: what a pull does with another owner's session of the same
    // id is the client's business, not the schema's.)
    c.psql(
        "bob",
        "archive",
        &format!(
            "DELETE FROM sessiontree.sessions WHERE session_id = '{s1}' AND owner = current_user"
        ),
    )
    .unwrap();

    // A search range of bob's that starts inside a line, claims more bytes than there are
    // and times no entry has, in a session shared with carol: it comes first in her search
    // with a time filter, which still works (and reads no more than bob's bytes).
    let other = sid(7);
    let content = session(&other, "/w", &["a numbat of bob's"]);
    bobs_session(&c, &other, "--w--/other.jsonl", &content, true);
    c.psql(
        "bob",
        "archive",
        &format!(
            "INSERT INTO sessiontree.grams (version_pk, session_pk, off, len, newest, oldest, tri)
             SELECT v.pk, v.session_pk, 3, 9000000000000000000, 1e300, -1e300, '{{}}'
             FROM sessiontree.versions v JOIN sessiontree.sessions s ON s.pk = v.session_pk
             WHERE s.session_id = '{other}' AND s.owner = current_user"
        ),
    )
    .unwrap();
    let filter = query::Filter {
        since_ms: Some(0.0),
        ..Default::default()
    };
    let hits = query::search_filtered(&mut carol, "numbat", query::Mode::Words, &filter, 10)
        .unwrap_or_else(|e| panic!("carol's search failed: {e}"));
    assert!(hits
        .iter()
        .any(|h| h.session_id == s1 && h.owner == "carol"));

    let vp: String = c
        .psql(
            "bob",
            "archive",
            &format!(
                "SELECT v.pk FROM sessiontree.versions v JOIN sessiontree.sessions s ON s.pk = v.session_pk
                 WHERE s.session_id = '{other}' AND s.owner = current_user"
            ),
        )
        .unwrap();
    let attacks: Vec<(&str, String)> = vec![
        (
            "a shared version claiming 9e18 bytes",
            format!(
                "INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                 SELECT c.pk, c.session_pk, 2, 9000000000000000000, '', 0 FROM sessiontree.copies c
                 JOIN sessiontree.sessions s ON s.pk = c.session_pk
                 WHERE s.session_id = '{other}' AND s.owner = current_user"
            ),
        ),
        (
            "his shared version made longer than its bytes",
            format!("UPDATE sessiontree.versions SET length = length + 100 WHERE pk = {vp}"),
        ),
        (
            "the bytes of his shared version changed after the fact",
            format!("UPDATE sessiontree.chunks SET data = 'x' WHERE version_pk = {vp}"),
        ),
        (
            "the bytes of his shared version removed",
            format!("DELETE FROM sessiontree.chunks WHERE version_pk = {vp}"),
        ),
        (
            "a version that says it is newer than it is",
            format!(
                "INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length, updated_at)
                 SELECT c.pk, c.session_pk, 2, 0, '', 0, '2999-01-01' FROM sessiontree.copies c
                 JOIN sessiontree.sessions s ON s.pk = c.session_pk
                 WHERE s.session_id = '{other}' AND s.owner = current_user"
            ),
        ),
        (
            "the archive's id",
            "UPDATE sessiontree.meta SET value = '../settings'".to_string(),
        ),
        (
            "a migration record",
            "INSERT INTO sessiontree.migrations (version, description) VALUES (99, 'x')".to_string(),
        ),
        (
            "a share of carol's session",
            format!(
                "INSERT INTO sessiontree.shares (session_pk, grantee)
                 SELECT pk, 'bob' FROM sessiontree.sessions WHERE owner = 'carol'
                 UNION ALL SELECT {}, 'bob'",
                server(&c, "SELECT pk FROM sessiontree.sessions WHERE owner = 'carol'")
            ),
        ),
        (
            "a table of his own whose rows pin carol's",
            "CREATE TABLE bobs.pin (s bigint REFERENCES sessiontree.sessions)".to_string(),
        ),
        (
            "objects in the archive's schema",
            "CREATE TABLE sessiontree.bobs (x int)".to_string(),
        ),
    ];
    let accepted = attempt(&c, &attacks);

    // carol's pull on her other machine works: her session, and bob's shared ones.
    let r: PullReport = pull(&mut carol, &pull_opts(&b)).unwrap();
    assert_eq!(
        std::fs::read(session_path(&b, "/w", &s1)).unwrap(),
        std::fs::read(session_path(&a, "/w", &s1)).unwrap()
    );
    assert!(r.skipped.iter().all(|s| s.session != s1), "{:?}", r.skipped);
    assert_eq!(machines_seen, "0", "bob read carol's machine's row");
    assert!(accepted.is_empty(), "the server accepted: {accepted:#?}");
}

#[test]
fn an_archive_of_schema_3_with_forged_rows_migrates_clean() {
    let Some(c) = pg::archive() else { return };
    drop(old_archive_for_carol(&c, 3));
    // carol's session as sessiontree of schema 3 stored it.
    let s1 = sid(1);
    let mine = session(&s1, "/w", &["carol's own words"]);
    store_as_old_push(&c, "2025-04-01T09-00-00-000Z", &s1, &mine);
    c.psql(
        "carol",
        "archive",
        "INSERT INTO sessiontree.texts (version_pk, session_pk, off, entry_id, role, ts, body)
             SELECT pk, session_pk, 0, 'e1', 'user', '1', 'carol''s own words'
             FROM sessiontree.versions",
    )
    .unwrap();
    let keys = victim_keys(&c);
    let (_, cp, vp, _) = keys[&s1];
    // What bob could write into it then: all of it accepted by schema 3.
    let d = decoy(&c, "decoy");
    let forged = session(&s1, "/w", &["carol's own words", "bob's injected words"]);
    let fl = forged.len();
    let ns: i64 = server(&c, "SELECT max(pk) + 1 FROM sessiontree.sessions")
        .parse()
        .unwrap();
    for sql in [
        format!(
            "INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                 VALUES ({cp}, {d}, 2, {fl}, sha256({f}), {fl});
             INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
                 SELECT pk, {d}, 0, {f} FROM sessiontree.versions WHERE copy_pk = {cp} AND owner = current_user",
            f = bytea(&forged)
        ),
        format!(
            "INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data) VALUES ({vp}, {d}, 7, 'x')"
        ),
        format!(
            "INSERT INTO sessiontree.texts (version_pk, session_pk, off, body) VALUES ({vp}, {d}, 0, 'injected')"
        ),
        format!(
            "INSERT INTO sessiontree.sessions (pk, session_id) SELECT k, 'k' || k FROM generate_series({ns}, {ns} + 5) k"
        ),
    ] {
        c.psql("bob", "archive", &sql).unwrap();
    }

    // The owner connects with this sessiontree: the migration removes what could only have
    // been forged, and keeps the rest.
    drop(open(&c, "alice"));
    assert_eq!(
        server(&c, "SELECT max(version) FROM sessiontree.migrations"),
        schema_latest()
    );
    assert_eq!(
        server(
            &c,
            "SELECT (SELECT count(*) FROM sessiontree.versions WHERE owner = 'bob')
             || ',' || (SELECT count(*) FROM sessiontree.chunks WHERE owner = 'bob')
             || ',' || (SELECT count(*) FROM sessiontree.grams WHERE owner = 'bob')
             || ',' || (SELECT count(*) FROM sessiontree.sessions WHERE owner = 'bob')
             || ',' || (SELECT count(*) FROM sessiontree.chunks WHERE owner = 'carol')
             || ',' || (SELECT count(*) FROM sessiontree.grams WHERE owner = 'carol')"
        ),
        "0,0,0,7,1,1"
    );
    // carol's session pulls as she stored it, her search finds it, and her pushes go on
    // (the keys the server hands out now start above bob's).
    let mut carol = open(&c, "carol");
    let b = c.path("b");
    let r = pull(&mut carol, &pull_opts(&b)).unwrap();
    assert_eq!(r.created.len(), 1, "{r:?}");
    assert_eq!(std::fs::read(&r.created[0]).unwrap(), mine);
    // (A regex too: every range is a candidate.)
    let hits = query::search(&mut carol, "own words", query::Mode::Regex, None, 10).unwrap();
    assert_eq!(hits.len(), 1);
    for i in 0..3 {
        write(&b, "/w", &sid(10 + i), &["new after the migration"]);
        let r = push(&mut carol, &opts(&b)).unwrap();
        // (The first push also sends this machine's copy of the pulled session.)
        assert_eq!(r.created, if i == 0 { 2 } else { 1 }, "{r:?}");
    }
    assert_eq!(
        c.psql(
            "bob",
            "archive",
            "INSERT INTO sessiontree.sessions (session_id) VALUES ('after') RETURNING pk > 0"
        )
        .unwrap(),
        "t"
    );
}

fn schema_latest() -> String {
    sessiontree_archive::schema::latest().to_string()
}

/// Every file below `dir`, by path (symlinks as themselves, not followed).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => todo.push(p),
                _ => {
                    out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
                }
            }
        }
    }
    out
}

/// SQL for any text (bytes of the attacker's choosing never meet the quoting).
fn lit(s: &str) -> String {
    format!("convert_from({}, 'UTF8')", bytea(s.as_bytes()))
}

/// Runs `stmts` as one psql session of `user`, going on after errors (so a temporary
/// object or a `search_path` set early is in place for what follows). The count of errors.
fn script(c: &Cluster, user: &str, stmts: &[String]) -> usize {
    use std::io::Write;
    let mut child = Command::new(c.bin.join("psql"))
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=0"])
        .args(["-h", c.dir.path().to_str().unwrap()])
        .args(["-p", &c.port.to_string(), "-U", user, "-d", "archive"])
        .env_remove("PGPASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    for st in stmts {
        writeln!(input, "{st};").unwrap();
    }
    drop(input);
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("ERROR:"))
        .count()
}

/// What bob knows (or guesses: keys are small integers handed out in order) before a round.
#[derive(Default)]
struct Known {
    /// (pk, owner) of every session, copy and version; versions with (session, copy, length).
    sessions: Vec<i64>,
    copies: Vec<i64>,
    versions: Vec<(i64, i64, i64, i64)>,
    bobs_sessions: Vec<i64>,
    bobs_versions: Vec<(i64, i64, i64)>,
    /// carol's latest versions: (pk, copy, length, seq); bob's sessions shared with her.
    carols: Vec<(i64, i64, i64, i64)>,
    shared: Vec<i64>,
    top: i64,
    ids: Vec<String>,
    machines: Vec<String>,
}

impl Known {
    fn read(c: &Cluster) -> Known {
        let rows = |sql: &str| -> Vec<Vec<String>> {
            server(c, sql)
                .lines()
                .filter(|l| !l.is_empty())
                .map(|l| l.split('|').map(str::to_string).collect())
                .collect()
        };
        let int = |s: &str| s.parse::<i64>().unwrap();
        let mut k = Known::default();
        for r in rows("SELECT pk, owner FROM sessiontree.sessions") {
            k.sessions.push(int(&r[0]));
            if r[1] == "bob" {
                k.bobs_sessions.push(int(&r[0]));
            }
        }
        k.copies = rows("SELECT pk FROM sessiontree.copies")
            .iter()
            .map(|r| int(&r[0]))
            .collect();
        for r in rows("SELECT pk, session_pk, copy_pk, length, owner FROM sessiontree.versions") {
            let v = (int(&r[0]), int(&r[1]), int(&r[2]), int(&r[3]));
            k.versions.push(v);
            if r[4] == "bob" {
                k.bobs_versions.push((v.0, v.1, v.3));
            }
        }
        k.carols = rows(
            "SELECT DISTINCT ON (copy_pk) pk, copy_pk, length, seq FROM sessiontree.versions
             WHERE owner = 'carol' ORDER BY copy_pk, seq DESC",
        )
        .iter()
        .map(|r| (int(&r[0]), int(&r[1]), int(&r[2]), int(&r[3])))
        .collect();
        k.shared = rows(
            "SELECT session_pk FROM sessiontree.shares WHERE owner = 'bob' AND grantee = 'carol'",
        )
        .iter()
        .map(|r| int(&r[0]))
        .collect();
        k.top = server(
            c,
            "SELECT greatest((SELECT max(pk) FROM sessiontree.sessions),
                             (SELECT max(pk) FROM sessiontree.versions))",
        )
        .parse()
        .unwrap_or(1);
        k.ids = rows("SELECT session_id FROM sessiontree.sessions WHERE owner = 'carol'")
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
        k.machines = rows("SELECT id FROM sessiontree.machines")
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
        k
    }
}

/// bob's move generator: one statement (or transaction) of every kind his privileges could
/// allow, with keys, owners, ids, names, paths, lengths, offsets and times forged.
struct Bob<'a> {
    r: Rng,
    k: &'a Known,
    /// Also the attacks that only the client can stop (see the campaign).
    client: bool,
    root: &'a Path,
    n: u64,
}

impl Bob<'_> {
    fn one<T: Clone>(&mut self, v: &[T]) -> T {
        v[self.r.pick(v.len())].clone()
    }
    fn pk(&mut self, own: &[i64]) -> String {
        match self.r.pick(6) {
            0 | 1 if !own.is_empty() => self.one(own).to_string(),
            2 => (self.k.top + 1 + self.r.below(5) as i64).to_string(),
            3 => self
                .one(&["0", "-1", "9223372036854775807", "NULL"])
                .to_string(),
            _ => (1 + self.r.below(self.k.top.max(1) as u64 + 3)).to_string(),
        }
    }
    fn owner(&mut self) -> String {
        self.one(&["'carol'", "'bob'", "'alice'", "current_user", "'team'"])
            .to_string()
    }
    fn fresh(&mut self) -> String {
        self.n += 1;
        format!("{:x}", self.r.next() ^ self.n)
    }
    /// A session id: safe ones, and (client attacks) carol's own and path-like ones.
    fn id(&mut self) -> String {
        let f = self.fresh();
        let mut v = vec![
            uuid::Uuid::from_u128(self.r.next() as u128 | 0x4000_8000_0000_0000u128 << 64)
                .to_string(),
            format!("bob-{f}"),
            format!("esc\u{1b}]0;title\u{7}{f}"),
            format!(" spaced {f} "),
            format!(".hidden{f}"),
        ];
        if self.client && !self.k.ids.is_empty() {
            v.push(self.one(&self.k.ids.clone()));
            v.push(format!("../../../up-{f}"));
            v.push(format!("{}/abs-{f}", self.root.display()));
            v.push("..".to_string());
        }
        self.one(&v)
    }
    fn rel(&mut self) -> String {
        let f = self.fresh();
        let mut v = vec![
            format!("--w--/bob-{f}.jsonl"),
            format!("--bob--/2025-04-01T09-00-00-000Z_{f}.jsonl"),
            format!("../../../rel-{f}.jsonl"),
            format!("{}/rel-abs-{f}.jsonl", self.root.display()),
            format!("--w--/../../{f}.jsonl"),
            "--w--".to_string(),
            String::new(),
        ];
        if self.client && !self.k.ids.is_empty() {
            let id = self.one(&self.k.ids.clone());
            v.push(format!("--w--/2025-04-01T09-00-00-000Z_{id}.jsonl"));
        }
        self.one(&v)
    }
    fn machine(&mut self) -> String {
        let mut v = self.k.machines.clone();
        v.push(uuid::Uuid::from_u128(self.r.next() as u128 | 1u128 << 100).to_string());
        format!("'{}'", self.one(&v))
    }
    /// Bytes for a session of bob's: a session whose header carries `id` (client attacks:
    /// sometimes one of carol's ids), or garbage.
    fn content(&mut self, id: &str) -> Vec<u8> {
        let header_id = if self.client && self.r.pick(3) == 0 && !self.k.ids.is_empty() {
            self.one(&self.k.ids.clone())
        } else {
            id.to_string()
        };
        let f = self.fresh();
        match self.r.pick(4) {
            0 => format!("garbage {f}\n").into_bytes(),
            1 => session(&header_id, "/w", &[&format!("bob's {f}")])[..20].to_vec(),
            _ => session(
                &header_id,
                self.one(&["/w", "/bob", "/"]),
                &[&format!("bob's words {f}"), "ignore previous instructions"],
            ),
        }
    }
    fn int(&mut self) -> String {
        self.one(&[
            "0",
            "1",
            "7",
            "-1",
            "2147483647",
            "9000000000000000000",
            "-9223372036854775808",
        ])
        .to_string()
    }

    /// Aimed at one of carol's latest versions, tied to a session of bob's she reads.
    fn targeted(&mut self) -> String {
        let (v, cp, len, seq) = self.one(&self.k.carols.clone());
        let d = self.one(&self.k.shared.clone());
        let forged = session(&self.fresh(), "/w", &["carolmark forged"]);
        let n = forged.len();
        let f = bytea(&forged);
        match self.r.pick(5) {
            0 => format!(
                "INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data) VALUES ({v}, {d}, {len}, {f})"
            ),
            1 => format!(
                "INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data) VALUES ({v}, {d}, 7, 'x')"
            ),
            2 => format!(
                "BEGIN;
                 INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                     VALUES ({cp}, {d}, {}, {n}, sha256({f}), {n});
                 INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
                     SELECT pk, {d}, 0, {f} FROM sessiontree.versions
                     WHERE copy_pk = {cp} AND owner = current_user ORDER BY pk DESC LIMIT 1;
                 COMMIT",
                seq + 1
            ),
            3 => format!(
                "INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                 VALUES ({cp}, {d}, 2147483647, 0, sha256(''), 0)"
            ),
            _ => format!(
                "INSERT INTO sessiontree.grams (version_pk, session_pk, off, len, newest, tri)
                 VALUES ({v}, {d}, {len}, {n}, 9e15, '{{}}')"
            ),
        }
    }

    fn statement(&mut self) -> String {
        let ses = self.k.sessions.clone();
        let cps = self.k.copies.clone();
        let vps: Vec<i64> = self.k.versions.iter().map(|v| v.0).collect();
        // Rows under someone else's row, tied to a session of his own (which carol may read).
        let bobs = self.k.bobs_sessions.clone();
        if self.r.pick(4) == 0 && !self.k.carols.is_empty() && !self.k.shared.is_empty() {
            return self.targeted();
        }
        match self.r.pick(16) {
            0 => {
                let (pk, owner, id) = (self.pk(&ses), self.owner(), self.id());
                match self.r.pick(3) {
                    0 => format!(
                        "INSERT INTO sessiontree.sessions (pk, session_id) VALUES ({pk}, {})",
                        lit(&id)
                    ),
                    1 => format!(
                        "INSERT INTO sessiontree.sessions (owner, session_id, cwd) VALUES ({owner}, {}, {})",
                        lit(&id),
                        lit(&self.rel())
                    ),
                    _ => format!(
                        "INSERT INTO sessiontree.sessions (session_id, cwd, created) VALUES ({}, '/w', 'x')",
                        lit(&id)
                    ),
                }
            }
            1 => {
                let pk = self.pk(&ses);
                let set = match self.r.pick(5) {
                    0 => format!("pk = {}", self.pk(&ses)),
                    1 => format!("owner = {}", self.owner()),
                    2 => format!("session_id = {}", lit(&self.id())),
                    3 => format!("cwd = {}", lit(&self.rel())),
                    _ => "created = 'now'".to_string(),
                };
                format!("UPDATE sessiontree.sessions SET {set} WHERE pk = {pk}")
            }
            2 => {
                let (t, col) = self.one(&[
                    ("sessions", "pk"),
                    ("copies", "pk"),
                    ("versions", "pk"),
                    ("chunks", "version_pk"),
                    ("grams", "version_pk"),
                    ("shares", "session_pk"),
                ]);
                let pk = self.pk(&vps);
                format!("DELETE FROM sessiontree.{t} WHERE {col} = {pk}")
            }
            3 => {
                let (s, m, r) = (self.pk(&ses), self.machine(), self.rel());
                let extra = match self.r.pick(3) {
                    0 => ("pk, ", format!("{}, ", self.pk(&cps))),
                    1 => ("owner, ", format!("{}, ", self.owner())),
                    _ => ("", String::new()),
                };
                format!(
                    "INSERT INTO sessiontree.copies ({}session_pk, machine, rel_path) VALUES ({}{s}, {m}, {})",
                    extra.0,
                    extra.1,
                    lit(&r)
                )
            }
            4 => {
                let pk = self.pk(&cps);
                let set = match self.r.pick(4) {
                    0 => format!("rel_path = {}", lit(&self.rel())),
                    1 => format!("session_pk = {}", self.pk(&ses)),
                    2 => format!("machine = {}", self.machine()),
                    _ => format!("pk = {}", self.pk(&cps)),
                };
                format!("UPDATE sessiontree.copies SET {set} WHERE pk = {pk}")
            }
            5 => {
                let (cp, sp) = (self.pk(&cps), self.pk(&bobs));
                let seq = match self.r.pick(3) {
                    0 => self.int(),
                    _ => self.one(&["1", "2", "3"]).to_string(),
                };
                let len = self.int();
                let extra = match self.r.pick(4) {
                    0 => ("pk, ", format!("{}, ", self.pk(&vps))),
                    1 => ("updated_at, ", "'2999-01-01', ".to_string()),
                    2 => ("owner, ", format!("{}, ", self.owner())),
                    _ => ("", String::new()),
                };
                format!(
                    "INSERT INTO sessiontree.versions ({}copy_pk, session_pk, seq, length, hash, src_length, info)
                     VALUES ({}{cp}, {sp}, {seq}, {len}, sha256('x'), {len}, '{{\"path\": \"/etc/passwd\"}}')",
                    extra.0, extra.1
                )
            }
            6 => {
                let pk = self.pk(&vps);
                let set = match self.r.pick(6) {
                    0 => format!("length = {}", self.int()),
                    1 => format!("seq = {}", self.int()),
                    2 => format!("copy_pk = {}", self.pk(&cps)),
                    3 => "hash = sha256('y')".to_string(),
                    4 => "updated_at = '2999-01-01'".to_string(),
                    _ => format!("session_pk = {}", self.pk(&ses)),
                };
                format!("UPDATE sessiontree.versions SET {set} WHERE pk = {pk}")
            }
            7 => {
                // Often exactly where a version's next append goes.
                let (v, off) = match self.r.pick(2) {
                    0 if !self.k.versions.is_empty() => {
                        let v = self.one(&self.k.versions.clone());
                        (v.0.to_string(), v.3.to_string())
                    }
                    _ => (self.pk(&vps), self.int()),
                };
                let sp = self.pk(&bobs);
                let data = self.content("x");
                format!(
                    "INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data) VALUES ({v}, {sp}, {off}, {})",
                    bytea(&data)
                )
            }
            8 => {
                let v = self.pk(&vps);
                let set = self.one(&["data = 'x'", "off = off + 1", "version_pk = version_pk + 1"]);
                format!("UPDATE sessiontree.chunks SET {set} WHERE version_pk = {v}")
            }
            9 => {
                let (v, sp) = (self.pk(&vps), self.pk(&bobs));
                let ts = self.one(&["'NaN'", "'Infinity'", "1743498000000", "NULL", "-0"]);
                format!(
                    "INSERT INTO sessiontree.grams (version_pk, session_pk, off, len, newest, oldest, tri)
                     VALUES ({v}, {sp}, {}, {}, {ts}, {ts}, '{{1,2,3}}')",
                    self.int(),
                    self.int()
                )
            }
            10 => {
                let (sp, g) = (
                    self.pk(&ses),
                    self.one(&["'carol'", "'bob'", "'team'", "'public'"]),
                );
                format!("INSERT INTO sessiontree.shares (session_pk, grantee) VALUES ({sp}, {g})")
            }
            11 => {
                let (m, name) = (self.machine(), self.fresh());
                match self.r.pick(3) {
                    0 => format!(
                        "INSERT INTO sessiontree.machines (owner, id, name) VALUES ({}, {m}, {})",
                        self.owner(),
                        lit(&format!("\u{1b}[2J{name}"))
                    ),
                    1 => format!("UPDATE sessiontree.machines SET name = 'pwned', owner = current_user WHERE id = {m}"),
                    _ => format!("INSERT INTO sessiontree.machines (id, name) VALUES ({m}, 'bob''s')"),
                }
            }
            12 => {
                // One of the lookalikes, in place for the rest of the script.
                self.one(&[
                    "CREATE TEMP VIEW pg_roles AS SELECT 'carol'::name AS rolname, r.oid
                     FROM pg_catalog.pg_roles r WHERE r.rolname = current_user",
                    "CREATE OR REPLACE FUNCTION bobs.pg_has_role(name, oid, text) RETURNS boolean
                     LANGUAGE sql AS 'SELECT true'",
                    "SET search_path = pg_temp, bobs, pg_catalog",
                    "CREATE TEMP TABLE IF NOT EXISTS versions AS SELECT 1 AS seq",
                ])
                .to_string()
            }
            13 | 14 => {
                // A whole session of his own, possibly in several chunks or with a wrong
                // length or hash, shared with carol or not.
                let id = self.id();
                let rel = self.rel();
                let content = self.content(&id);
                let n = content.len();
                let claimed = match self.r.pick(5) {
                    0 => n + 1,
                    _ => n,
                };
                let hash = if self.r.pick(6) == 0 {
                    "sha256('wrong')".to_string()
                } else {
                    format!("sha256({})", bytea(&content))
                };
                let cut = self.r.pick(n.max(1)).max(1).min(n);
                let share = self.one(&["'carol'", "'carol'", "'team'", "'bob'"]);
                let idl = lit(&id);
                format!(
                    "BEGIN;
                     INSERT INTO sessiontree.sessions (session_id, cwd) VALUES ({idl}, '/w');
                     INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
                         SELECT pk, gen_random_uuid(), {rel} FROM sessiontree.sessions
                         WHERE session_id = {idl} AND owner = current_user;
                     INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                         SELECT c.pk, c.session_pk, 1, {claimed}, {hash}, {n} FROM sessiontree.copies c
                         JOIN sessiontree.sessions s ON s.pk = c.session_pk
                         WHERE s.session_id = {idl} AND s.owner = current_user;
                     INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
                         SELECT v.pk, v.session_pk, x.off, x.data FROM sessiontree.versions v
                         JOIN sessiontree.sessions s ON s.pk = v.session_pk,
                         (VALUES (0, {a}), ({cut}, {b})) x(off, data)
                         WHERE s.session_id = {idl} AND s.owner = current_user
                           AND octet_length(x.data) > 0 ORDER BY x.off;
                     INSERT INTO sessiontree.shares (session_pk, grantee)
                         SELECT pk, {share} FROM sessiontree.sessions
                         WHERE session_id = {idl} AND owner = current_user;
                     COMMIT",
                    rel = lit(&rel),
                    a = bytea(&content[..cut]),
                    b = bytea(&content[cut..]),
                )
            }
            _ => {
                // One of his own versions grows (an append), right or wrong.
                let Some(&(v, sp, len)) = (!self.k.bobs_versions.is_empty())
                    .then(|| &self.k.bobs_versions[self.r.pick(self.k.bobs_versions.len())])
                else {
                    return "SELECT 1".to_string();
                };
                let extra = entry(None, &format!("bob appends {}", self.fresh()), 9).1;
                let at = if self.r.pick(4) == 0 { len + 3 } else { len };
                let grown = if self.r.pick(5) == 0 { 1 } else { extra.len() };
                format!(
                    "BEGIN;
                     UPDATE sessiontree.versions SET length = length + {grown},
                         hash = sha256(coalesce((SELECT string_agg(data, ''::bytea ORDER BY off)
                                                 FROM sessiontree.chunks WHERE version_pk = {v}), '') || {e})
                         WHERE pk = {v};
                     INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data) VALUES ({v}, {sp}, {at}, {e});
                     COMMIT",
                    e = bytea(extra.as_bytes())
                )
            }
        }
    }
}

/// carol's sessions: where each one was written, and its bytes there.
struct Carol {
    /// id -> (machine index, bytes)
    sessions: BTreeMap<String, (usize, Vec<u8>)>,
    n: u64,
}

impl Carol {
    fn create(&mut self, dirs: &[PathBuf; 2], on: usize) {
        self.n += 1;
        let id = sid(1000 + self.n);
        let p = write(
            &dirs[on],
            "/w",
            &id,
            &[&format!("carolmark {} of machine {on}", self.n)],
        );
        self.sessions.insert(id, (on, std::fs::read(p).unwrap()));
    }
    fn grow(&mut self, dirs: &[PathBuf; 2], pick: usize) {
        let id = self
            .sessions
            .keys()
            .nth(pick % self.sessions.len())
            .unwrap()
            .clone();
        let (on, _) = self.sessions[&id];
        let p = session_path(&dirs[on], "/w", &id);
        grow(&p, &format!("carol goes on {}", self.n));
        self.n += 1;
        self.sessions.insert(id, (on, std::fs::read(p).unwrap()));
    }
}

/// The victim's operations, each of which must work and leave her sessions as she wrote them.
fn carol_round(ar: &mut Archive, dirs: &[PathBuf; 2], carol: &Carol, round: usize) {
    let mine = |id: &str| carol.sessions.contains_key(id);
    for d in dirs {
        let r = push(ar, &opts(d)).unwrap_or_else(|e| panic!("round {round}: push: {e}"));
        for (path, why) in &r.skipped {
            let id = sessiontree_archive::local::id_from_name(path).unwrap_or_default();
            assert!(!mine(&id), "round {round}: push skipped {path:?}: {why}");
        }
    }
    for d in dirs {
        let r = pull(ar, &pull_opts(d)).unwrap_or_else(|e| panic!("round {round}: pull: {e}"));
        for s in &r.skipped {
            assert!(
                !mine(&s.session),
                "round {round}: pull skipped {s}: {}",
                s.reason
            );
        }
    }
    // Both machines push again: every copy of carol's now holds what she wrote.
    for d in dirs {
        push(ar, &opts(d)).unwrap_or_else(|e| panic!("round {round}: push: {e}"));
    }
    for (id, (_, bytes)) in &carol.sessions {
        for d in dirs {
            let got = std::fs::read(session_path(d, "/w", id)).unwrap();
            assert!(got == *bytes, "round {round}: {id} in {d:?} is not carol's");
        }
        let (copy, got) = query::session_bytes(ar, id)
            .unwrap_or_else(|e| panic!("round {round}: export {id}: {e}"));
        assert_eq!(copy.owner, "carol");
        assert!(
            got == *bytes,
            "round {round}: export of {id} is not carol's"
        );
    }
    let hits = query::search(ar, "carolmark", query::Mode::Words, None, 10_000)
        .unwrap_or_else(|e| panic!("round {round}: search: {e}"));
    let mut found: Vec<&str> = hits
        .iter()
        .filter(|h| h.owner == "carol")
        .map(|h| h.session_id.as_str())
        .collect();
    found.sort_unstable();
    found.dedup();
    let all: Vec<&str> = carol.sessions.keys().map(String::as_str).collect();
    assert_eq!(found, all, "round {round}: carol's search");
    query::list(ar).unwrap_or_else(|e| panic!("round {round}: list: {e}"));
}

/// The campaign: bob writes, at random, every kind of row his privileges could allow
/// (`SESSIONTREE_ADVERSARY_RUNS` rounds of 30 statements, default 8; the seed from
/// `SESSIONTREE_ADVERSARY_SEED`), while carol pushes from two machines, pulls into both,
/// exports and searches. None of her operations fails, her sessions stay exactly as she
/// wrote them on both machines and in the archive, and nothing is written outside
/// `<agent dir>/sessions` but the machine file and the local state.
///
/// The campaign includes what only the client can stop (bob's shared sessions under
/// carol's ids, with path-like ids, with a header id or a file name that is carol's);
/// `SESSIONTREE_ADVERSARY_CLIENT=0` leaves those out, to test the database's side alone.
#[test]
fn a_campaign_of_another_role_leaves_the_victims_sessions_alone() {
    let Some(c) = start() else { return };
    let runs: usize = env::env_or("SESSIONTREE_ADVERSARY_RUNS", 8);
    let seed: u64 = env::env_or("SESSIONTREE_ADVERSARY_SEED", 0x00ad_5e55_10b5);
    let client = env::env_or("SESSIONTREE_ADVERSARY_CLIENT", 1u8) == 1;
    eprintln!("campaign: {runs} rounds, seed {seed:#x}, client attacks {client}");
    server(&c, "CREATE SCHEMA bobs AUTHORIZATION bob");
    let root = c.tmp().to_path_buf();
    let dirs = [root.join("a"), root.join("b")];
    std::fs::write(root.join("canary"), "keep").unwrap();
    let mut ar = open(&c, "carol");
    let mut carol = Carol {
        sessions: BTreeMap::new(),
        n: 0,
    };
    for on in [0, 0, 1] {
        carol.create(&dirs, on);
    }
    carol_round(&mut ar, &dirs, &carol, 0);
    // bob's own sessions, pushed with sessiontree; one shared with carol.
    let mut bob = open(&c, "bob");
    let bd = root.join("bob");
    write(&bd, "/bob", &sid(900), &["bob's first"]);
    write(&bd, "/bob", &sid(901), &["bob's second"]);
    push(&mut bob, &opts(&bd)).unwrap();
    query::share(&mut bob, &sid(900), "carol").unwrap();

    let mut r = Rng(seed | 1);
    let (mut statements, mut errors) = (0, 0);
    for round in 1..=runs {
        for _half in 0..2 {
            let known = Known::read(&c);
            let mut b = Bob {
                r: Rng(r.next() | 1),
                k: &known,
                client,
                root: &root,
                n: 0,
            };
            let stmts: Vec<String> = (0..15).map(|_| b.statement()).collect();
            statements += stmts.len();
            errors += script(&c, "bob", &stmts);
            // carol writes between bob's halves: a session grows, or a new one begins.
            if r.pick(3) == 0 {
                carol.create(&dirs, r.pick(2));
            } else {
                carol.grow(&dirs, r.pick(1000));
            }
        }
        carol_round(&mut ar, &dirs, &carol, round);
        // Nothing outside the agent dirs' session folders but the machine file and the state.
        let archive_id = ar.id.clone();
        for (p, bytes) in tree(&root) {
            let rel = p.strip_prefix(&root).unwrap();
            let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy());
            let first = parts.next().unwrap_or_default().into_owned();
            let rest: Vec<String> = parts.map(|s| s.into_owned()).collect();
            let ok = match (first.as_str(), rest.as_slice()) {
                ("canary", []) => bytes == b"keep",
                ("a" | "b" | "bob", [f]) => f == "sessiontree-machine.json",
                ("a" | "b" | "bob", [d, f]) if d == "sessiontree-archive" => {
                    *f == format!("{archive_id}.json") || *f == format!("{archive_id}.changes")
                }
                ("a" | "b" | "bob", [s, ..]) => s == "sessions",
                _ => false,
            };
            assert!(
                ok,
                "round {round}: written outside the session folders: {p:?}"
            );
        }
    }
    eprintln!(
        "campaign: {statements} statements of bob's, {errors} errors reported by the server; \
         carol has {} sessions",
        carol.sessions.len()
    );
    // The archive is whole: every version's chunks end at its length, without gaps.
    assert_eq!(
        server(
            &c,
            "SELECT count(*) FROM sessiontree.versions v
             WHERE v.length <> coalesce((SELECT sum(octet_length(data)) FROM sessiontree.chunks
                                         WHERE version_pk = v.pk), 0)
                OR EXISTS (SELECT 1 FROM sessiontree.chunks x WHERE x.version_pk = v.pk
                           AND x.owner <> v.owner)"
        ),
        "0"
    );
}

/// A session of `texts` with an assistant answer carrying a usage after each one.
fn session_with_usage(id: &str, cwd: &str, texts: &[&str], cost: f64) -> Vec<u8> {
    let mut s = String::from_utf8(session(id, cwd, &[])).unwrap();
    let mut parent = "null".to_string();
    for (n, t) in texts.iter().enumerate() {
        let (eid, line) = entry(None, t, n);
        s.push_str(&line.replacen("\"parentId\":null", &format!("\"parentId\":{parent}"), 1));
        let aid = format!("{:08x}", fold_hash(eid.as_bytes()) as u32);
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{aid}\",\"parentId\":\"{eid}\",\"timestamp\":\"2025-04-01T09:01:{:02}.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[],\"provider\":\"anthropic\",\"model\":\"claude\",\"usage\":{{\"input\":{},\"output\":5,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":{},\"cost\":{{\"total\":{cost}}}}},\"stopReason\":\"stop\",\"timestamp\":1743498060000}}}}\n",
            n % 60,
            100 + n,
            105 + n
        ));
        parent = format!("\"{aid}\"");
    }
    s.into_bytes()
}

/// The usage sums (schema version 6) against bob: he cannot write a group under carol's
/// version (as carol, as himself tied to his decoy or to her session, shared with him or
/// not), change, move or delete hers, write non-finite or ill-shaped sums into his own, or
/// mark her version's sums as describing other bytes; he does not see the sums of her
/// session that is not shared with him, sees those of the one that is exactly as she
/// pushed them, and his stats hold nothing else of hers. What carol sees of her own stays
/// what she pushed.
#[test]
fn usage_sums_hold_against_another_role() {
    let Some(c) = start() else { return };
    let mut carol = open(&c, "carol");
    let a = c.path("a");
    let (s1, s2) = (sid(21), sid(22));
    // (Other texts in each: other entry ids, so no record is a copy of another.)
    for (s, texts, cost) in [
        (&s1, ["one", "two", "three"], 0.25),
        (&s2, ["four", "five", "six"], 0.5),
    ] {
        let p = session_path(&a, "/w", s);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, session_with_usage(s, "/w", &texts, cost)).unwrap();
    }
    push(&mut carol, &opts(&a)).unwrap();
    // s1 shared with team, which bob is not in; s2 with bob.
    query::share(&mut carol, &s1, "team").unwrap();
    query::share(&mut carol, &s2, "bob").unwrap();
    let keys = victim_keys(&c);
    let (sp, _, vp, len) = keys[&s1];
    let (sp2, _, vp2, _) = keys[&s2];
    let all = "SELECT string_agg(version_pk || ':' || owner || ':' || provider || ':' || records
                    || ':' || cost || ':' || in_all || ':' || in_branch || ':'
                    || cardinality(ids) || ':' || nums::text, ',' ORDER BY cost)
               FROM sessiontree.usage_sums";
    let before = server(&c, all);
    assert_eq!(
        before,
        format!(
            "{vp}:carol:anthropic:3:0.75:true:true:3:{{100,5,0,0,105,0.25,101,5,0,0,106,0.25,102,5,0,0,107,0.25}},\
             {vp2}:carol:anthropic:3:1.5:true:true:3:{{100,5,0,0,105,0.5,101,5,0,0,106,0.5,102,5,0,0,107,0.5}}"
        )
    );
    let d = decoy(&c, "decoy");
    // bob's decoy gets a copy and an empty version of his own, for the rows of his own.
    c.psql(
        "bob",
        "archive",
        &format!(
            "INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
                 VALUES ({d}, gen_random_uuid(), '--w--/decoy.jsonl');
             INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                 SELECT c.pk, c.session_pk, 1, 0, sha256(''), 0 FROM sessiontree.copies c
                 WHERE c.owner = current_user AND c.session_pk = {d}"
        ),
    )
    .unwrap();
    let bv = c
        .psql(
            "bob",
            "archive",
            "SELECT pk FROM sessiontree.versions WHERE owner = current_user",
        )
        .unwrap();
    let group = |owner: &str, version: &str, session: &str, tail: &str| {
        format!(
            "INSERT INTO sessiontree.usage_sums (owner, version_pk, session_pk, provider, model,
                 day, in_all, in_branch, records, input, output, cache_read, cache_write,
                 total_tokens, cost, ids, eid, ets, nums)
             VALUES ('{owner}', {version}, {session}, 'p', 'm', '-', true, true, {tail})"
        )
    };
    let forged = "1, 1e9, 0, 0, 0, 0, 1e6, '{1}', '{x}', '{y}', '{1e9,0,0,0,0,1e6}'";
    let attacks: Vec<(&str, String)> = vec![
        (
            "a group of carol's version as carol",
            group("carol", &vp.to_string(), &sp.to_string(), forged),
        ),
        (
            "a group of carol's version as bob, tied to the decoy",
            group("bob", &vp.to_string(), &d, forged),
        ),
        (
            "a group of carol's version as bob, her session",
            group("bob", &vp.to_string(), &sp.to_string(), forged),
        ),
        (
            "a group of carol's version shared with bob, as bob",
            group("bob", &vp2.to_string(), &sp2.to_string(), forged),
        ),
        (
            "a group of carol's version shared with bob, as carol",
            group("carol", &vp2.to_string(), &sp2.to_string(), forged),
        ),
        (
            "a group of bob's version under carol's session",
            group("bob", &bv, &sp2.to_string(), forged),
        ),
        (
            "moving a group to another version",
            format!("UPDATE sessiontree.usage_sums SET version_pk = {bv}"),
        ),
        (
            "moving a group to another owner",
            "UPDATE sessiontree.usage_sums SET owner = 'bob'".to_string(),
        ),
        (
            "naming the session of a group",
            "UPDATE sessiontree.usage_sums SET session_pk = session_pk".to_string(),
        ),
        (
            "a NaN cost in a group of bob's own",
            group("bob", &bv, &d, "1, 0, 0, 0, 0, 0, 'NaN', '{}', '{}', '{}', '{}'"),
        ),
        (
            "an infinite number of a record in a group of bob's own",
            group(
                "bob",
                &bv,
                &d,
                "1, 0, 0, 0, 0, 0, 0, '{1}', '{x}', '{y}', '{Infinity,0,0,0,0,0}'",
            ),
        ),
        (
            "a negative count in a group of bob's own",
            group("bob", &bv, &d, "-5, 0, 0, 0, 0, 0, 0, '{}', '{}', '{}', '{}'"),
        ),
        (
            "fewer numbers than records in a group of bob's own",
            group("bob", &bv, &d, "2, 0, 0, 0, 0, 0, 0, '{1,2}', '{x,z}', '{y,y}', '{0,0,0,0,0,0}'"),
        ),
        (
            "a two-dimensional array in a group of bob's own",
            group(
                "bob",
                &bv,
                &d,
                "2, 0, 0, 0, 0, 0, 0, '{{1},{2}}', '{{x},{z}}', '{{y},{y}}', '{0,0,0,0,0,0,0,0,0,0,0,0}'",
            ),
        ),
        (
            "a NULL id in a group of bob's own",
            group("bob", &bv, &d, "1, 0, 0, 0, 0, 0, 0, '{1}', '{NULL}', '{y}', '{0,0,0,0,0,0}'"),
        ),
    ];
    let accepted = attempt(&c, &attacks);
    assert!(accepted.is_empty(), "the server accepted: {accepted:#?}");
    // What passes the privileges finds no row of carol's (row-level security).
    for sql in [
        "UPDATE sessiontree.usage_sums SET cost = 1e6, records = 1000".to_string(),
        "DELETE FROM sessiontree.usage_sums".to_string(),
        format!("UPDATE sessiontree.versions SET usage_length = 1 WHERE pk IN ({vp}, {vp2})"),
    ] {
        c.psql("bob", "archive", &sql).unwrap();
    }
    assert_eq!(server(&c, all), before);
    assert_eq!(
        server(
            &c,
            &format!("SELECT usage_length FROM sessiontree.versions WHERE pk = {vp}")
        ),
        len.to_string()
    );
    // bob sees the sums of the session shared with him only, and his stats hold nothing
    // else of hers.
    assert_eq!(
        c.psql(
            "bob",
            "archive",
            "SELECT string_agg(DISTINCT version_pk::text, ',') FROM sessiontree.usage_sums"
        )
        .unwrap(),
        vp2.to_string()
    );
    let mut bob = open(&c, "bob");
    let st =
        sessiontree_archive::usage::stats(&mut bob, sessiontree_archive::usage::By::Model, false)
            .unwrap();
    assert!(
        st.known
            .iter()
            .all(|s| s.owner == "bob" || s.session_id == s2),
        "{:?}",
        st.known
    );
    assert_eq!(st.groups.len(), 1, "{:?}", st.groups);
    assert_eq!(st.groups[0].0, "anthropic/claude");
    assert_eq!(st.groups[0].1.records, 3);
    assert!((st.groups[0].1.cost - 1.5).abs() < 1e-9);
    // carol's own: her six records, whatever bob tried.
    let st =
        sessiontree_archive::usage::stats(&mut carol, sessiontree_archive::usage::By::Model, false)
            .unwrap();
    assert_eq!(st.groups.len(), 1, "{:?}", st.groups);
    assert_eq!(st.groups[0].0, "anthropic/claude");
    assert_eq!(st.groups[0].1.records, 6);
    assert!((st.groups[0].1.cost - 2.25).abs() < 1e-9);
    assert!(st.unknown.is_empty());
}

/// carol's login role and an archive migrated only up to schema `upto`, as that
/// sessiontree left it; the connection that migrated it (a test migrates it further by
/// hand).
fn old_archive_for_carol(c: &pg::Archive, upto: i32) -> postgres::Client {
    c.psql(
        "postgres",
        "postgres",
        &format!("CREATE ROLE carol LOGIN PASSWORD '{PASSWORD}'"),
    )
    .unwrap();
    let mut raw = sessiontree_archive::conn::connect(&c.url).unwrap();
    assert_eq!(
        sessiontree_archive::schema::migrate_to(&mut raw, upto).unwrap(),
        (1..=upto).collect::<Vec<_>>()
    );
    raw
}

/// `b` stored as carol's session `s` the way the push of schemas 3 and 4 stored it: one
/// copy (its file named for time `t`), one version, one chunk, no usage.
fn store_as_old_push(c: &Cluster, t: &str, s: &str, b: &[u8]) {
    c.psql(
        "carol",
        "archive",
        &format!(
            "INSERT INTO sessiontree.machines (id, name)
                 VALUES ('00000000-0000-4000-8000-00000000000c', 'm') ON CONFLICT DO NOTHING;
             INSERT INTO sessiontree.sessions (session_id, cwd) VALUES ('{s}', '/w');
             INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
                 SELECT pk, '00000000-0000-4000-8000-00000000000c', '--w--/{t}_{s}.jsonl'
                 FROM sessiontree.sessions WHERE session_id = '{s}';
             INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                 SELECT c.pk, c.session_pk, 1, {n}, sha256({b}), {n}
                 FROM sessiontree.copies c JOIN sessiontree.sessions s ON s.pk = c.session_pk
                 WHERE s.session_id = '{s}';
             INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
                 SELECT v.pk, v.session_pk, 0, {b}
                 FROM sessiontree.versions v JOIN sessiontree.sessions s ON s.pk = v.session_pk
                 WHERE s.session_id = '{s}'",
            n = b.len(),
            b = bytea(b)
        ),
    )
    .unwrap();
}

/// An archive of schema 4 with a session in it (as that sessiontree stored it: no usage):
/// the migrations compute its usage from its chunks once (5) and sum it (6), so stats read
/// it like a session pushed now; the version's time is left as it was.
#[test]
fn an_archive_of_schema_4_gets_the_usage_of_its_sessions_on_migration() {
    let Some(c) = pg::archive() else { return };
    drop(old_archive_for_carol(&c, 4));
    let s1 = sid(31);
    let mine = session_with_usage(&s1, "/w", &["a", "b", "c", "d"], 0.5);
    store_as_old_push(&c, "2025-04-01T09-00-00-000Z", &s1, &mine);
    let updated = server(&c, "SELECT updated_at FROM sessiontree.versions");
    drop(open(&c, "alice"));
    assert_eq!(
        server(&c, "SELECT max(version) FROM sessiontree.migrations"),
        schema_latest()
    );
    assert_eq!(
        server(&c, "SELECT updated_at FROM sessiontree.versions"),
        updated
    );
    assert_eq!(
        server(
            &c,
            "SELECT count(*) || ',' || min(owner) || ',' || sum(records) || ',' || sum(cost)
                    || ',' || sum(input) FROM sessiontree.usage_sums"
        ),
        "1,carol,4,2,406"
    );
    assert_eq!(
        server(&c, "SELECT usage_length = length FROM sessiontree.versions"),
        "t"
    );
    // The same numbers the local stats compute from the bytes.
    let mut carol = open(&c, "carol");
    let st =
        sessiontree_archive::usage::stats(&mut carol, sessiontree_archive::usage::By::Model, false)
            .unwrap();
    let recs = sessiontree::usage::records_in(&mine).unwrap();
    let mut want = sessiontree::usage::Usage::default();
    for r in &recs {
        if let Some(u) = &r.usage {
            want.add(u);
        }
    }
    assert_eq!(st.sessions, 1);
    assert!(st.unknown.is_empty());
    assert_eq!(st.groups.len(), 1);
    assert_eq!(st.groups[0].1, want);
    // And her pushes go on: an append keeps the rows in step with the bytes.
    let a = c.path("a");
    let p = session_path(&a, "/w", &s1);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let grown = session_with_usage(&s1, "/w", &["a", "b", "c", "d", "e"], 0.5);
    assert!(grown.starts_with(&mine));
    std::fs::write(&p, &grown).unwrap();
    let r = push(&mut carol, &opts(&a)).unwrap();
    assert_eq!(r.created + r.appended + r.new_versions, 1, "{r:?}");
    let st =
        sessiontree_archive::usage::stats(&mut carol, sessiontree_archive::usage::By::Model, false)
            .unwrap();
    // (From this machine a copy of its own: the newest copy is the one counted.)
    assert_eq!(st.groups.iter().map(|g| g.1.records).sum::<u64>(), 5);
}

/// `stats` of these sessions' bytes, as the local command counts them: files in name order
/// descending, every branch or the current one, a record of the same id and time once.
fn local_stats(files: &[(&str, &[u8])], branch: bool) -> Vec<sessiontree::usage::Usage> {
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|a, b| files[*b].0.cmp(files[*a].0));
    let mut seen = std::collections::HashSet::new();
    let mut out = vec![sessiontree::usage::Usage::default(); files.len()];
    for i in order {
        let recs = sessiontree::usage::records_in(files[i].1).unwrap();
        let chosen: Vec<&sessiontree::usage::Record> = if branch {
            sessiontree::usage::on_branch(&recs)
        } else {
            recs.iter().collect()
        };
        for r in chosen {
            let Some(u) = &r.usage else { continue };
            if let Some(id) = &r.id {
                if !seen.insert((id.clone(), r.timestamp.clone())) {
                    continue;
                }
            }
            out[i].add(u);
        }
    }
    out
}

/// An archive of schema 5 with usage rows (as that sessiontree pushed them) of a session
/// and of a fork of it (the parent's records copied, then a branch off its first entry):
/// the migration to 6 sums each version's rows with the code a push uses, drops the
/// per-record table, and `stats` then counts what the local command counts in the same
/// files, per session and for both branch choices.
#[test]
fn an_archive_of_schema_5_gets_usage_sums_on_migration() {
    let Some(c) = pg::archive() else { return };
    let mut raw = old_archive_for_carol(&c, 4);
    let (s1, s2) = (sid(41), sid(42));
    let mine = session_with_usage(&s1, "/w", &["a", "b", "c", "d"], 0.5);
    let text = String::from_utf8(mine.clone()).unwrap();
    let first = ids_of_line(text.lines().nth(1).unwrap());
    let mut fork = String::from_utf8(session(&s2, "/w", &[])).unwrap();
    for l in text.lines().skip(1) {
        fork.push_str(l);
        fork.push('\n');
    }
    fork.push_str(&format!(
        "{{\"type\":\"message\",\"id\":\"f0f0f0f0\",\"parentId\":\"{first}\",\"timestamp\":\"2025-04-02T09:00:00.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[],\"provider\":\"openai\",\"model\":\"gpt\",\"usage\":{{\"input\":7,\"output\":8,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":15,\"cost\":{{\"total\":0.125}}}},\"stopReason\":\"stop\",\"timestamp\":1743584400000}}}}\n"
    ));
    let fork = fork.into_bytes();
    // The fork's file name is the later one: it is counted first.
    let files = [
        ("2025-04-01T09-00-00-000Z", &s1, &mine[..]),
        ("2025-04-02T09-00-00-000Z", &s2, &fork[..]),
    ];
    for (t, s, b) in files {
        store_as_old_push(&c, t, s, b);
    }
    assert_eq!(
        sessiontree_archive::schema::migrate_to(&mut raw, 5).unwrap(),
        vec![5]
    );
    assert_eq!(server(&c, "SELECT count(*) FROM sessiontree.usage"), "9");
    drop(raw);
    drop(open(&c, "alice"));
    assert_eq!(
        server(&c, "SELECT max(version) FROM sessiontree.migrations"),
        schema_latest()
    );
    assert_eq!(
        server(&c, "SELECT to_regclass('sessiontree.usage') IS NULL"),
        "t"
    );
    // The groups are those a push of the same bytes writes.
    for (_, s, b) in files {
        let want: Vec<String> =
            sessiontree_archive::usage::groups(&sessiontree_archive::usage::rows(b))
                .iter()
                .map(|g| {
                    format!(
                        "{}|{}|{}|{}|{}|{}|{}|{}",
                        g.provider,
                        g.model,
                        g.day,
                        if g.in_all { "t" } else { "f" },
                        if g.in_branch { "t" } else { "f" },
                        g.sums.records,
                        g.sums.cost,
                        g.eid.join(",")
                    )
                })
                .collect();
        let mut want = want;
        want.sort();
        assert_eq!(
            server(
                &c,
                &format!(
                    "SELECT g.provider, g.model, g.day, g.in_all, g.in_branch, g.records, g.cost,
                            array_to_string(g.eid, ',')
                     FROM sessiontree.usage_sums g JOIN sessiontree.sessions s ON s.pk = g.session_pk
                     WHERE s.session_id = '{s}' AND g.owner = 'carol' ORDER BY 1, 2, 3, 4, 5, 6, 7, 8"
                )
            ),
            want.join("\n"),
            "{s}"
        );
    }
    let mut carol = open(&c, "carol");
    let named: Vec<(&str, &[u8])> = files.iter().map(|(t, _, b)| (*t, *b)).collect();
    for branch in [false, true] {
        let want = local_stats(&named, branch);
        let st = sessiontree_archive::usage::stats(
            &mut carol,
            sessiontree_archive::usage::By::Session,
            branch,
        )
        .unwrap();
        assert!(st.unknown.is_empty());
        // known: the fork first (its file name is the later one).
        assert_eq!(st.known[0].session_id, s2);
        let mut got = vec![sessiontree::usage::Usage::default(); 2];
        for (k, u) in &st.groups {
            let i: usize = k.parse().unwrap();
            got[if st.known[i].session_id == s1 { 0 } else { 1 }].add(u);
        }
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.records, w.records, "branch {branch}: {got:?} {want:?}");
            assert!(
                (g.cost - w.cost).abs() < 1e-9,
                "branch {branch}: {got:?} {want:?}"
            );
            assert_eq!(g.input, w.input, "branch {branch}");
        }
        // Every record of the parent is the fork's too, over every branch.
        assert_eq!(want[0].records, if branch { 4 } else { 0 });
        assert_eq!(
            st.groups.len(),
            if branch { 2 } else { 1 },
            "{:?}",
            st.groups
        );
    }
}

fn ids_of_line(line: &str) -> String {
    let v: serde_json::Value = serde_json::from_slice(line.as_bytes()).unwrap();
    v["id"].as_str().unwrap().to_string()
}

/// A push after an append writes only the usage groups the append changed: none for a
/// user message (the groups keep their row versions), the one whose sums grew for an
/// answer, and after a branch moved the leaf the records that left the branch move to
/// their own group; a large append rewrites the version's groups in its transaction. The
/// sums stay what the bytes say.
#[test]
fn an_append_rewrites_only_the_usage_groups_it_changes() {
    let Some(c) = start() else { return };
    let mut carol = open(&c, "carol");
    let a = c.path("a");
    let s1 = sid(51);
    let p = session_path(&a, "/w", &s1);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, session_with_usage(&s1, "/w", &["one", "two"], 0.25)).unwrap();
    push(&mut carol, &opts(&a)).unwrap();
    let rows = "SELECT string_agg(provider || ':' || in_all || ':' || in_branch || ':' || records
                    || ':' || xmin, ',' ORDER BY provider, in_branch) FROM sessiontree.usage_sums";
    let want = |bytes: &[u8]| {
        let mut g: Vec<String> =
            sessiontree_archive::usage::groups(&sessiontree_archive::usage::rows(bytes))
                .iter()
                .map(|g| {
                    format!(
                        "{}:{}:{}:{}",
                        g.provider, g.in_all, g.in_branch, g.sums.records
                    )
                })
                .collect();
        g.sort();
        g.join(",")
    };
    let strip = |s: &str| -> String {
        let mut v: Vec<String> = s
            .split(',')
            .map(|x| x.rsplit_once(':').unwrap().0.to_string())
            .collect();
        v.sort();
        v.join(",")
    };
    let before = server(&c, rows);
    assert_eq!(strip(&before), "anthropic:true:true:2");
    // A user message: no group changes.
    grow(&p, "a question");
    let r = push(&mut carol, &opts(&a)).unwrap();
    assert_eq!(r.appended, 1, "{r:?}");
    assert_eq!(server(&c, rows), before);
    // An answer with a usage on the branch: its group is rewritten with the new sums.
    let text = String::from_utf8(std::fs::read(&p).unwrap()).unwrap();
    let last = ids_of_line(text.lines().last().unwrap());
    let first = ids_of_line(text.lines().nth(1).unwrap());
    let answer = |id: &str, parent: &str| {
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"2025-04-02T09:00:00.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[],\"provider\":\"anthropic\",\"model\":\"claude\",\"usage\":{{\"input\":7,\"output\":8,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":15,\"cost\":{{\"total\":0.125}}}},\"stopReason\":\"stop\",\"timestamp\":1743498060000}}}}\n"
        )
    };
    std::fs::write(&p, format!("{text}{}", answer("a1a1a1a1", &last))).unwrap();
    let r = push(&mut carol, &opts(&a)).unwrap();
    assert_eq!(r.appended, 1, "{r:?}");
    let after = server(&c, rows);
    assert_eq!(strip(&after), "anthropic:true:true:3");
    assert_ne!(after, before);
    // A branch off the first entry: the answers after it leave the current branch.
    let text = String::from_utf8(std::fs::read(&p).unwrap()).unwrap();
    std::fs::write(&p, format!("{text}{}", answer("b2b2b2b2", &first))).unwrap();
    let r = push(&mut carol, &opts(&a)).unwrap();
    assert_eq!(r.appended, 1, "{r:?}");
    let bytes = std::fs::read(&p).unwrap();
    assert_eq!(strip(&server(&c, rows)), want(&bytes));
    assert_eq!(want(&bytes), "anthropic:true:false:3,anthropic:true:true:1");
    let st =
        sessiontree_archive::usage::stats(&mut carol, sessiontree_archive::usage::By::Model, true)
            .unwrap();
    assert_eq!(st.groups.len(), 1);
    assert_eq!(st.groups[0].1.records, 1);
    assert!((st.groups[0].1.cost - 0.125).abs() < 1e-9);
    // A large append (over a megabyte: more than the one-statement append takes) goes
    // through the batch's transaction: the version's groups are written whole again, the same.
    for i in 0..210 {
        grow(&p, &format!("question {i} {}", "x".repeat(6000)));
    }
    let text = String::from_utf8(std::fs::read(&p).unwrap()).unwrap();
    let last = ids_of_line(text.lines().last().unwrap());
    std::fs::write(&p, format!("{text}{}", answer("c3c3c3c3", &last))).unwrap();
    let r = push(&mut carol, &opts(&a)).unwrap();
    assert_eq!(r.appended, 1, "{r:?}");
    let bytes = std::fs::read(&p).unwrap();
    assert_eq!(strip(&server(&c, rows)), want(&bytes));
    assert_eq!(want(&bytes), "anthropic:true:false:3,anthropic:true:true:2");
}

/// The count of changes to a machine's copies (schema version 8) is its owner's alone:
/// another role cannot read it, set it, or move it through copies of its own on the
/// victim's machine id; the victim's push stays in step through all of it, and is put out
/// of step by her own change alone.
#[test]
fn another_role_can_neither_read_nor_move_a_machines_count_of_changes() {
    let Some(c) = start() else { return };
    let mut carol = open(&c, "carol");
    let a = c.path("a");
    let s1 = sid(41);
    write(&a, "/w", &s1, &["carol's quoll notes"]);
    push(&mut carol, &opts(&a)).unwrap();
    let r = push(&mut carol, &opts(&a)).unwrap();
    assert_eq!(r.asked, Some(0), "carol's push is in step");
    let machine: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("sessiontree-machine.json")).unwrap())
            .unwrap();
    let machine = machine["id"].as_str().unwrap().to_string();
    let count = || {
        server(
            &c,
            &format!(
                "SELECT n FROM sessiontree.machine_changes
                 WHERE owner = 'carol' AND machine = '{machine}'"
            ),
        )
    };
    let before = count();
    assert!(!before.is_empty(), "no count for carol's machine");

    let seen = c
        .psql(
            "bob",
            "archive",
            "SELECT count(*) FROM sessiontree.machine_changes WHERE owner <> current_user",
        )
        .unwrap();
    // bob's own session with a copy on carol's machine id, and versions written, changed
    // and removed under it: what his writes count is his own row's.
    let d = decoy(&c, "quoll-decoy");
    let bobs = [
        format!(
            "INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
             VALUES ({d}, '{machine}', '--w--/decoy.jsonl')"
        ),
        format!(
            "INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
             SELECT pk, session_pk, 1, 0, sha256(''), 0 FROM sessiontree.copies
             WHERE session_pk = {d}"
        ),
        format!("UPDATE sessiontree.versions SET info = '{{}}' WHERE session_pk = {d}"),
        format!("DELETE FROM sessiontree.versions WHERE session_pk = {d}"),
        format!("DELETE FROM sessiontree.copies WHERE session_pk = {d}"),
        format!("SELECT sessiontree.count_change('{machine}')"),
    ];
    for sql in &bobs {
        c.psql("bob", "archive", sql)
            .unwrap_or_else(|e| panic!("bob's own write failed: {sql}: {e}"));
    }
    let attacks: Vec<(&str, String)> = vec![
        (
            "a count row in carol's name",
            "INSERT INTO sessiontree.machine_changes (owner, machine)
             VALUES ('carol', gen_random_uuid())"
                .to_string(),
        ),
        (
            "the trigger function called by hand",
            "SELECT sessiontree.copy_changed()".to_string(),
        ),
    ];
    let accepted = attempt(&c, &attacks);
    // Statements that see none of carol's rows succeed on none: what counts is her count.
    for sql in [
        "UPDATE sessiontree.machine_changes SET n = 0 WHERE owner = 'carol'",
        "UPDATE sessiontree.machine_changes SET n = 0",
        "DELETE FROM sessiontree.machine_changes WHERE owner = 'carol'",
    ] {
        let _ = c.psql("bob", "archive", sql);
    }
    let bobs_count = server(
        &c,
        &format!(
            "SELECT n FROM sessiontree.machine_changes WHERE owner = 'bob' AND machine = '{machine}'"
        ),
    );

    assert_eq!(seen, "0", "bob read carol's count");
    assert!(accepted.is_empty(), "the server accepted: {accepted:#?}");
    assert_eq!(count(), before, "bob moved carol's count");
    assert!(
        !bobs_count.is_empty(),
        "bob's writes were not counted as his"
    );
    let r = push(&mut carol, &opts(&a)).unwrap();
    assert_eq!(
        (r.unchanged, r.asked),
        (1, Some(0)),
        "carol's push left step"
    );
    // carol's own change, made by hand, is seen.
    c.psql("carol", "archive", "DELETE FROM sessiontree.copies")
        .unwrap();
    let r = push(&mut carol, &opts(&a)).unwrap();
    assert_eq!((r.created, r.asked), (1, None), "{r:?}");
}
