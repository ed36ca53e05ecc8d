//! A throwaway PostgreSQL cluster for the archive tests: Debian's `postgresql` binaries,
//! `initdb` in a temp dir (as the `postgres` system user when the tests run as root),
//! listening on a unix socket in that dir and on 127.0.0.1 (a free port, TLS on with a
//! self-signed certificate, passwords required there). Stopped when dropped.
//!
//! Without the binaries the tests skip visibly; with `SESSIONTREE_REQUIRE_POSTGRES=1` (CI)
//! they fail instead.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The password of every login role [`Cluster::setup_roles`] makes.
pub const PASSWORD: &str = "s3cret-pw";

/// A running cluster in a temp dir, stopped (immediately) when dropped.
pub struct Cluster {
    /// The temp dir: the data folder, the socket, the log.
    pub dir: tempfile::TempDir,
    /// Where the server binaries are.
    pub bin: PathBuf,
    /// The TCP port on 127.0.0.1.
    pub port: u16,
    /// The system user the server runs as (None: the current user).
    pub run_as: Option<String>,
}

fn pg_bin() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|f| f.1)
}

/// The binaries, or None after printing why the test is skipped.
pub fn available(test: &str) -> Option<PathBuf> {
    match pg_bin() {
        Some(b) => Some(b),
        None => {
            if std::env::var("SESSIONTREE_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("{test}: PostgreSQL is required (apt-get install -y postgresql)");
            }
            eprintln!(
                "SKIPPED {test}: no PostgreSQL server binaries (apt-get install -y postgresql)"
            );
            None
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn check(what: &str, o: Output) -> Output {
    assert!(
        o.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

impl Cluster {
    /// Starts a fresh cluster; None (skipped) without PostgreSQL.
    pub fn start(test: &str) -> Option<Cluster> {
        let bin = available(test)?;
        let dir = tempfile::Builder::new().prefix("st-pg").tempdir().unwrap();
        let run_as = is_root().then(|| "postgres".to_string());
        if let Some(u) = &run_as {
            check(
                "chown",
                Command::new("chown")
                    .args([u.as_str(), dir.path().to_str().unwrap()])
                    .output()
                    .unwrap(),
            );
        }
        let c = Cluster {
            dir,
            bin,
            port: free_port(),
            run_as,
        };
        let data = c.data();
        let pwfile = c.dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        c.chown(&pwfile);
        check(
            "initdb",
            c.cmd("initdb")
                .args(["-D", data.to_str().unwrap(), "-U", "postgres", "-E", "UTF8"])
                .args([
                    "--no-sync",
                    "--locale=C.UTF-8",
                    "--pwfile",
                    pwfile.to_str().unwrap(),
                ])
                .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
                .output()
                .unwrap(),
        );
        // TLS on 127.0.0.1 with a self-signed certificate.
        let crt = data.join("server.crt");
        let key = data.join("server.key");
        check(
            "openssl",
            Command::new("openssl")
                .args([
                    "req",
                    "-new",
                    "-x509",
                    "-days",
                    "2",
                    "-nodes",
                    "-subj",
                    "/CN=localhost",
                ])
                .args(["-newkey", "rsa:2048", "-keyout", key.to_str().unwrap()])
                .args(["-out", crt.to_str().unwrap()])
                .output()
                .unwrap(),
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        c.chown(&key);
        c.chown(&crt);
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .unwrap();
        use std::io::Write;
        writeln!(
            conf,
            "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\n\
             ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n\
             fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n\
             max_connections = 40\nshared_buffers = 64MB\nlog_min_messages = warning",
            c.port,
            c.dir.path().display()
        )
        .unwrap();
        c.start_server();
        Some(c)
    }

    /// The data folder.
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn chown(&self, p: &Path) {
        if let Some(u) = &self.run_as {
            check(
                "chown",
                Command::new("chown")
                    .args([u.as_str(), p.to_str().unwrap()])
                    .output()
                    .unwrap(),
            );
        }
    }

    fn cmd(&self, prog: &str) -> Command {
        let exe = self.bin.join(prog);
        match &self.run_as {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(exe);
                c
            }
            None => Command::new(exe),
        }
    }

    /// Starts the server (again), waiting until it accepts connections.
    pub fn start_server(&self) {
        check(
            "pg_ctl start",
            self.cmd("pg_ctl")
                .args(["-D", self.data().to_str().unwrap(), "-w", "-t", "60"])
                .args(["-l", self.dir.path().join("log").to_str().unwrap(), "start"])
                .output()
                .unwrap(),
        );
    }

    /// Stops the server in a `pg_ctl` mode (`smart`, `fast`, `immediate`).
    pub fn stop_server(&self, mode: &str) {
        let _ = self
            .cmd("pg_ctl")
            .args([
                "-D",
                self.data().to_str().unwrap(),
                "-w",
                "-m",
                mode,
                "stop",
            ])
            .output();
    }

    /// A keyword connection string over the unix socket.
    pub fn url(&self, user: &str, db: &str) -> String {
        format!(
            "host={} port={} user={user} dbname={db} sslmode=disable",
            self.dir.path().display(),
            self.port
        )
    }

    /// A URL over TCP (password needed).
    pub fn tcp_url(&self, user: &str, db: &str, extra: &str) -> String {
        format!("postgresql://{user}@127.0.0.1:{}/{db}{extra}", self.port)
    }

    /// Plain psql as `user` over the unix socket (no password), unaligned and tuples only,
    /// stopping at the first error.
    fn run_psql(&self, user: &str, db: &str, sql: &str) -> std::process::Output {
        Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", self.dir.path().to_str().unwrap()])
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                user,
                "-d",
                db,
                "-c",
                sql,
            ])
            .env_remove("PGPASSWORD")
            .output()
            .unwrap()
    }

    /// Runs SQL with plain psql as `user`; the rows, `|`-separated, one per line.
    pub fn psql(&self, user: &str, db: &str, sql: &str) -> Result<String, String> {
        let o = self.run_psql(user, db, sql);
        if o.status.success() {
            Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
        }
    }

    /// The one number that `sql`, run as `user`, answers; None when it fails or answers
    /// something else.
    pub fn number(&self, user: &str, db: &str, sql: &str) -> Option<i64> {
        self.psql(user, db, sql).ok()?.parse().ok()
    }

    /// Like [`Cluster::psql`], but what psql printed on stderr too (notices), after stdout.
    pub fn psql_with_notices(&self, user: &str, db: &str, sql: &str) -> Result<String, String> {
        let o = self.run_psql(user, db, sql);
        let all = format!(
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        if o.status.success() {
            Ok(all)
        } else {
            Err(all)
        }
    }

    /// The database `archive`, owned by the role `alice` (who creates the schema), and the
    /// roles `bob` and `team` (bob is not in it yet). Every login role has [`PASSWORD`].
    pub fn setup_roles(&self) {
        let sql = format!(
            "CREATE ROLE alice LOGIN PASSWORD '{PASSWORD}';
             CREATE ROLE bob LOGIN PASSWORD '{PASSWORD}';
             CREATE ROLE team NOLOGIN;
             CREATE DATABASE archive OWNER alice;"
        );
        for stmt in sql.split(';').filter(|s| !s.trim().is_empty()) {
            self.psql("postgres", "postgres", stmt).unwrap();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop_server("immediate");
    }
}

/// What most archive tests start from: a fresh cluster with the roles of
/// [`Cluster::setup_roles`], alice's connection string, and a temp folder for the test's
/// agent dirs. Dereferences to its [`Cluster`].
pub struct Archive {
    cluster: Cluster,
    /// alice's keyword connection string over the unix socket (`archive` database).
    pub url: String,
    tmp: tempfile::TempDir,
}

impl Archive {
    /// `<the test's temp folder>/name` (not created).
    pub fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// The test's temp folder.
    pub fn tmp(&self) -> &Path {
        self.tmp.path()
    }
}

impl std::ops::Deref for Archive {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        &self.cluster
    }
}

/// Starts an [`Archive`] for the running test (named after its thread, as libtest names
/// it); None (skipped) without PostgreSQL.
pub fn archive() -> Option<Archive> {
    let thread = std::thread::current();
    let cluster = Cluster::start(thread.name().unwrap_or("an archive test"))?;
    cluster.setup_roles();
    Some(Archive {
        url: cluster.url("alice", "archive"),
        cluster,
        tmp: tempfile::Builder::new()
            .prefix("st-arch")
            .tempdir()
            .unwrap(),
    })
}

/// SQL that a login role runs with plain psql to make a session of its own under `id` by
/// hand, as no client would: one copy with `rel` as its path, one version claiming `length`
/// bytes with `data`'s SHA-256, `data` as its one chunk at offset 0, shared with `grantee`.
pub fn forged_session_sql(id: &str, rel: &str, data: &[u8], length: i64, grantee: &str) -> String {
    let h: String = data.iter().map(|b| format!("{b:02x}")).collect();
    let mine = format!("owner = current_user AND session_id = $q${id}$q$");
    format!(
        "INSERT INTO sessiontree.sessions (session_id, cwd) VALUES ($q${id}$q$, '/w');
         INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
             SELECT pk, gen_random_uuid(), $q${rel}$q$ FROM sessiontree.sessions WHERE {mine};
         INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
             SELECT c.pk, c.session_pk, 1, {length}, sha256(decode('{h}', 'hex')), {length}
             FROM sessiontree.copies c JOIN sessiontree.sessions s ON s.pk = c.session_pk
             WHERE s.{mine};
         INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
             SELECT v.pk, v.session_pk, 0, decode('{h}', 'hex')
             FROM sessiontree.versions v JOIN sessiontree.sessions s ON s.pk = v.session_pk
             WHERE s.{mine};
         INSERT INTO sessiontree.shares (session_pk, grantee)
             SELECT pk, '{grantee}' FROM sessiontree.sessions WHERE {mine};"
    )
}
