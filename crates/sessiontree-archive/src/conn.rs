//! Connecting to the archive: a libpq URL or keyword string, with what libpq would add
//! (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD, the password file, `sslmode`).
//!
//! The `postgres` crate parses the URL and keyword forms but reads no environment variable
//! and no password file, and knows only `sslmode=disable|prefer|require`; the rest is done
//! here, as libpq does it:
//!
//! * With a root certificate file (`sslrootcert`, else `~/.postgresql/root.crt` when it
//!   exists) only that file's certificates are trusted, never the system's, and the
//!   server's chain is checked in every mode that uses TLS (`prefer` and `require` then
//!   behave as `verify-ca`, as in libpq).
//! * `verify-ca` checks the chain, not the host name; `verify-full` checks both.
//! * `verify-ca` and `verify-full` without a root file are refused; `sslrootcert=system`
//!   trusts the system's roots, with `verify-full` only (libpq 16).

use crate::{Error, Result};
use postgres::config::{Host, SslMode};
use postgres::{Client, Config};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How TLS is used, as libpq's `sslmode` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tls {
    Disable,
    /// TLS if the server offers it, certificate not checked (libpq's default).
    Prefer,
    /// TLS required, certificate not checked.
    Require,
    /// TLS required, certificate checked against the trusted roots, host name not.
    VerifyCa,
    /// TLS required, certificate and host name checked.
    VerifyFull,
}

/// A parsed connection target.
pub struct Target {
    pub config: Config,
    pub tls: Tls,
    /// `sslrootcert` as given (or `PGSSLROOTCERT`); see [`trust`] for what is trusted.
    pub root_cert: Option<PathBuf>,
}

/// Which certificates a TLS connection trusts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Roots {
    /// None checked (`prefer` and `require` without a root file).
    Unchecked,
    /// Only the certificates of this file.
    File(PathBuf),
    /// The system's store (`sslrootcert=system`).
    System,
}

/// What a TLS connection of `tls` with `root_cert` trusts, as libpq decides it; `home` is
/// where `.postgresql/root.crt` is looked for.
pub fn trust(tls: Tls, root_cert: Option<&Path>, home: &Path) -> Result<Roots> {
    let verify = matches!(tls, Tls::VerifyCa | Tls::VerifyFull);
    match root_cert {
        Some(p) if p == Path::new("system") => {
            if tls != Tls::VerifyFull {
                return Err(Error::msg(
                    "archive URL: sslrootcert=system needs sslmode=verify-full (as libpq)",
                ));
            }
            Ok(Roots::System)
        }
        Some(p) => {
            if p.exists() || verify {
                Ok(Roots::File(p.to_path_buf()))
            } else {
                // libpq: a named file that does not exist is an error only where the
                // certificate must be checked.
                Ok(Roots::Unchecked)
            }
        }
        None => {
            let default = home.join(".postgresql").join("root.crt");
            if default.exists() {
                Ok(Roots::File(default))
            } else if verify {
                Err(Error::msg(format!(
                    "archive URL: sslmode={} needs a root certificate: sslrootcert=FILE, or {} \
                     (sslrootcert=system with verify-full for the system's roots)",
                    if tls == Tls::VerifyCa {
                        "verify-ca"
                    } else {
                        "verify-full"
                    },
                    default.display()
                )))
            } else {
                Ok(Roots::Unchecked)
            }
        }
    }
}

/// True when the connection string itself holds a password (which then shows in the
/// process list of a command given it as an argument).
pub fn has_password(url: &str) -> bool {
    let (rest, _, _) = split_tls(url);
    rest.parse::<Config>()
        .is_ok_and(|c| c.get_password().is_some())
}

/// The archive URL: the flag, else `SESSIONTREE_ARCHIVE`.
pub fn archive_url(flag: Option<&str>) -> Result<String> {
    if let Some(f) = flag.filter(|f| !f.is_empty()) {
        return Ok(f.to_string());
    }
    match std::env::var("SESSIONTREE_ARCHIVE") {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(Error::msg(
            "no archive given: pass --archive URL or set SESSIONTREE_ARCHIVE \
             (a libpq URL such as postgresql://me@db.example/sessions?sslmode=require)",
        )),
    }
}

/// Takes `sslmode` and `sslrootcert` out of a connection string (the `postgres` crate
/// rejects `verify-ca`/`verify-full`), returning the rest and the two values.
fn split_tls(s: &str) -> (String, Option<String>, Option<String>) {
    let mut mode = None;
    let mut root = None;
    let t = s.trim();
    if t.starts_with("postgres://") || t.starts_with("postgresql://") {
        let Some((base, query)) = t.split_once('?') else {
            return (t.to_string(), None, None);
        };
        let mut kept = Vec::new();
        for kv in query.split('&') {
            match kv.split_once('=') {
                Some(("sslmode", v)) => mode = Some(percent_decode(v)),
                Some(("sslrootcert", v)) => root = Some(percent_decode(v)),
                _ => kept.push(kv),
            }
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (rest, mode, root);
    }
    // key = value pairs; values may be single-quoted with \' and \\ escapes.
    let mut rest = Vec::new();
    for (k, v) in keyword_pairs(t) {
        match k.as_str() {
            "sslmode" => mode = Some(v),
            "sslrootcert" => root = Some(v),
            _ => rest.push(format!(
                "{k}='{}'",
                v.replace('\\', "\\\\").replace('\'', "\\'")
            )),
        }
    }
    (rest.join(" "), mode, root)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 3 <= b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn keyword_pairs(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < c.len() {
        while i < c.len() && c[i].is_whitespace() {
            i += 1;
        }
        let ks = i;
        while i < c.len() && c[i] != '=' && !c[i].is_whitespace() {
            i += 1;
        }
        let key: String = c[ks..i].iter().collect();
        while i < c.len() && c[i].is_whitespace() {
            i += 1;
        }
        if i < c.len() && c[i] == '=' {
            i += 1;
        }
        while i < c.len() && c[i].is_whitespace() {
            i += 1;
        }
        let mut val = String::new();
        if i < c.len() && c[i] == '\'' {
            i += 1;
            while i < c.len() && c[i] != '\'' {
                if c[i] == '\\' && i + 1 < c.len() {
                    i += 1;
                }
                val.push(c[i]);
                i += 1;
            }
            i += 1;
        } else {
            while i < c.len() && !c[i].is_whitespace() {
                if c[i] == '\\' && i + 1 < c.len() {
                    i += 1;
                }
                val.push(c[i]);
                i += 1;
            }
        }
        if !key.is_empty() {
            out.push((key, val));
        }
    }
    out
}

fn os_user() -> Option<String> {
    // SAFETY: getpwuid returns a pointer into static storage or null; we copy the name out
    // at once and this program does not call it from two threads at a time.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() || (*pw).pw_name.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr((*pw).pw_name)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Parses a connection string and fills in what libpq would take from the environment.
pub fn parse_target(url: &str) -> Result<Target> {
    let (rest, mode, root) = split_tls(url);
    let mut config: Config = rest
        .parse()
        .map_err(|e| Error::msg(format!("archive URL: {e}")))?;
    let mode = mode.or_else(|| env("PGSSLMODE"));
    let root = root.or_else(|| env("PGSSLROOTCERT"));
    // libpq 16: sslrootcert=system without an sslmode means verify-full.
    let mode = mode.or_else(|| (root.as_deref() == Some("system")).then(|| "verify-full".into()));
    let tls = match mode.as_deref() {
        None | Some("prefer") | Some("allow") => Tls::Prefer,
        Some("disable") => Tls::Disable,
        Some("require") => Tls::Require,
        Some("verify-ca") => Tls::VerifyCa,
        Some("verify-full") => Tls::VerifyFull,
        Some(other) => {
            return Err(Error::msg(format!(
                "archive URL: unknown sslmode {other:?} (disable, prefer, require, verify-ca, verify-full)"
            )))
        }
    };
    config.ssl_mode(match tls {
        Tls::Disable => SslMode::Disable,
        Tls::Prefer => SslMode::Prefer,
        _ => SslMode::Require,
    });
    let root_cert = root.map(PathBuf::from);
    if config.get_hosts().is_empty() {
        match env("PGHOST") {
            Some(h) => {
                for h in h.split(',') {
                    if h.starts_with('/') {
                        config.host_path(h);
                    } else {
                        config.host(h);
                    }
                }
            }
            None => {
                config.host_path("/var/run/postgresql");
            }
        }
    }
    if config.get_ports().is_empty() {
        if let Some(p) = env("PGPORT").and_then(|p| p.parse().ok()) {
            config.port(p);
        }
    }
    if config.get_user().is_none() {
        let u = env("PGUSER")
            .or_else(os_user)
            .ok_or_else(|| Error::msg("archive URL names no user, and PGUSER is not set"))?;
        config.user(&u);
    }
    if config.get_dbname().is_none() {
        if let Some(d) = env("PGDATABASE") {
            config.dbname(&d);
        }
    }
    if config.get_password().is_none() {
        if let Some(p) = env("PGPASSWORD") {
            config.password(p);
        } else if let Some(p) = passfile_lookup(&config) {
            config.password(p);
        }
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    if config.get_application_name().is_none() {
        config.application_name("sessiontree");
    }
    Ok(Target {
        config,
        tls,
        root_cert,
    })
}

/// The password file: `PGPASSFILE`, else `~/.pgpass`. Lines `host:port:db:user:password`,
/// `*` matches anything, `\:` and `\\` are escapes; a socket connection matches
/// `localhost`. As libpq, a file readable by group or others is ignored.
fn passfile_lookup(config: &Config) -> Option<String> {
    let path = match env("PGPASSFILE") {
        Some(p) => PathBuf::from(p),
        None => sessiontree::dirs::home_dir().join(".pgpass"),
    };
    let text = read_private(&path)?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(_)) | None => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or_default().to_string();
    let db = config.get_dbname().unwrap_or(&user).to_string();
    let want = [host.as_str(), port.as_str(), db.as_str(), user.as_str()];
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() < 5 {
            continue;
        }
        if fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w)
        {
            return Some(fields[4..].join(":"));
        }
    }
    None
}

fn read_private(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if meta.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "sessiontree: warning: password file {} has group or world access; ignored (chmod 0600 it)",
            path.display()
        );
        return None;
    }
    std::fs::read_to_string(path).ok()
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.last_mut().unwrap().push(n);
                }
            }
            ':' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// Connects to the archive.
pub fn connect(url: &str) -> Result<Client> {
    let mut t = parse_target(url)?;
    let where_ = describe(&t.config);
    // As libpq: no TLS over a unix socket, whatever sslmode says. (Setting TLS up loads the
    // system's certificate store, about a quarter of a second of a short command here.)
    let unix_only = t
        .config
        .get_hosts()
        .iter()
        .all(|h| matches!(h, Host::Unix(_)));
    let client = if t.tls == Tls::Disable || unix_only {
        t.config.ssl_mode(SslMode::Disable);
        t.config.connect(postgres::NoTls)
    } else {
        let roots = trust(
            t.tls,
            t.root_cert.as_deref(),
            &sessiontree::dirs::home_dir(),
        )?;
        let mut b = native_tls::TlsConnector::builder();
        match (&roots, t.tls) {
            (Roots::Unchecked, _) => {
                b.danger_accept_invalid_certs(true);
                b.danger_accept_invalid_hostnames(true);
            }
            // The chain only: verify-ca, and prefer/require with a root file (libpq).
            (_, Tls::Prefer | Tls::Require | Tls::VerifyCa) => {
                b.danger_accept_invalid_hostnames(true);
            }
            _ => {}
        }
        if let Roots::File(p) = &roots {
            let pem = std::fs::read(p)
                .map_err(|e| Error::msg(format!("sslrootcert {}: {e}", p.display())))?;
            let certs = native_tls::Certificate::stack_from_pem(&pem)
                .map_err(|e| Error::msg(format!("sslrootcert {}: {e}", p.display())))?;
            if certs.is_empty() {
                return Err(Error::msg(format!(
                    "sslrootcert {}: no certificate in it",
                    p.display()
                )));
            }
            // Only this file: the system's roots would let any public CA vouch for the
            // server, which is what naming a root file rules out.
            b.disable_built_in_roots(true);
            for c in certs {
                b.add_root_certificate(c);
            }
        }
        let conn = b
            .build()
            .map_err(|e| Error::msg(format!("TLS setup: {e}")))?;
        t.config
            .connect(postgres_native_tls::MakeTlsConnector::new(conn))
    };
    client.map_err(|e| {
        Error::msg(format!(
            "cannot connect to the archive at {where_}: {}",
            Error::from(e)
        ))
    })
}

/// `user@host:port/db` for messages (never the password).
pub fn describe(c: &Config) -> String {
    let host = match c.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "?".into(),
    };
    let port = c.get_ports().first().copied().unwrap_or(5432);
    let user = c.get_user().unwrap_or("?");
    format!("{user}@{host}:{port}/{}", c.get_dbname().unwrap_or(user))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_params_come_out_of_both_forms() {
        let (r, m, c) =
            split_tls("postgresql://u@h:5/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&x=1");
        assert_eq!(r, "postgresql://u@h:5/db?x=1");
        assert_eq!(m.as_deref(), Some("verify-full"));
        assert_eq!(c.as_deref(), Some("/tmp/ca.pem"));
        let (r, m, _) = split_tls("host=h  sslmode = require password='a b\\'c'");
        assert_eq!(m.as_deref(), Some("require"));
        let cfg: Config = r.parse().unwrap();
        assert_eq!(cfg.get_password(), Some(&b"a b'c"[..]));
    }

    #[test]
    fn what_is_trusted_follows_libpq() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        let f = home.join("ca.pem");
        std::fs::write(&f, "x").unwrap();
        let missing = home.join("missing.pem");
        assert_eq!(trust(Tls::Require, None, home).unwrap(), Roots::Unchecked);
        assert_eq!(
            trust(Tls::Prefer, Some(&missing), home).unwrap(),
            Roots::Unchecked
        );
        assert_eq!(
            trust(Tls::Require, Some(&f), home).unwrap(),
            Roots::File(f.clone())
        );
        assert_eq!(
            trust(Tls::VerifyCa, Some(&missing), home).unwrap(),
            Roots::File(missing.clone())
        );
        assert!(trust(Tls::VerifyFull, None, home).is_err());
        assert!(trust(Tls::VerifyCa, Some(Path::new("system")), home).is_err());
        assert_eq!(
            trust(Tls::VerifyFull, Some(Path::new("system")), home).unwrap(),
            Roots::System
        );
        std::fs::create_dir_all(home.join(".postgresql")).unwrap();
        std::fs::write(home.join(".postgresql/root.crt"), "x").unwrap();
        assert_eq!(
            trust(Tls::Require, None, home).unwrap(),
            Roots::File(home.join(".postgresql/root.crt"))
        );
        assert!(has_password("postgresql://u:pw@h/db"));
        assert!(has_password("host=h password=pw"));
        assert!(!has_password("postgresql://u@h/db?sslmode=require"));
    }

    #[test]
    fn pgpass_lines_split_on_unescaped_colons() {
        assert_eq!(
            split_pgpass(r"h:5432:*:me:pa\:ss\\x"),
            vec!["h", "5432", "*", "me", r"pa:ss\x"]
        );
    }
}
