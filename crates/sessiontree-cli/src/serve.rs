//! `sessiontree serve [DIR]`: the read-only web UI (`sessiontree-web`) over a session
//! folder or every session of the agent dir.

use anyhow::{bail, Result};
use sessiontree::dirs;
use sessiontree_web::{Config, Root};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct ServeArgs {
    /// A session folder to serve (every *.jsonl in it). Default: every session under the
    /// agent dir.
    dir: Option<PathBuf>,
    /// Address and port to listen on. Any address but loopback requires a token (--token,
    /// else one is generated and printed once).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8377")]
    listen: String,
    /// The token every request must carry (header `Authorization: Bearer TOKEN`, or the
    /// cookie set by opening `/?token=TOKEN` once); at least 16 of A-Z a-z 0-9 - _ . ~.
    /// Visible to other local users in the process list: prefer --token-file or
    /// $SESSIONTREE_TOKEN.
    #[arg(long, value_name = "TOKEN", conflicts_with = "token_file")]
    token: Option<String>,
    /// Read the token from FILE (its first line); the file must not be readable by group
    /// or others (chmod 600). Default: $SESSIONTREE_TOKEN.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Also serve the shared archive's sessions (PostgreSQL URL; without a value,
    /// $SESSIONTREE_ARCHIVE): every machine's copies of yours and those shared with you,
    /// read-only.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    archive: Option<String>,
    /// The URL people open when it is not the listen address (a reverse proxy, a name):
    /// requests naming another Host are refused. Repeatable.
    #[arg(long, value_name = "URL")]
    public_url: Vec<String>,
    /// Read every file for each listing instead of using the index.
    #[arg(long)]
    no_index: bool,
}

pub fn serve(a: ServeArgs) -> Result<()> {
    let agent = dirs::agent_dir();
    let root = match &a.dir {
        Some(d) => {
            crate::paths::folder(d)?;
            Root::Folder(dirs::resolve(&d.to_string_lossy()))
        }
        None => {
            let sessions = agent.join("sessions");
            if !sessions.is_dir() {
                bail!(
                    "{}: no such folder (no sessions yet; set PI_CODING_AGENT_DIR or name a session folder)",
                    sessions.display()
                );
            }
            Root::AgentDir(agent.clone())
        }
    };
    let listen: SocketAddr = a.listen.parse().map_err(|_| {
        anyhow::anyhow!(
            "--listen {}: not an address and port (e.g. 127.0.0.1:8377)",
            a.listen
        )
    })?;
    let (given, from) = token_given(a.token, a.token_file.as_deref())?;
    let (token, generated) =
        sessiontree_web::token_for(&listen, given).map_err(|e| anyhow::anyhow!("{from}: {e}"))?;
    let archive = match &a.archive {
        Some(u) => Some(sessiontree_archive::conn::archive_url(Some(u))?),
        None => None,
    };
    let mut public_hosts = Vec::new();
    for u in &a.public_url {
        public_hosts.extend(sessiontree_web::public_hosts(u).map_err(|e| anyhow::anyhow!(e))?);
    }
    let what = match &root {
        Root::Folder(d) => d.display().to_string(),
        Root::AgentDir(a) => a.join("sessions").display().to_string(),
    };
    let cfg = Config {
        root,
        agent_dir: agent,
        use_index: !a.no_index,
        listen,
        token: token.clone(),
        public_hosts,
        // Every text of a session passes through this before it reaches a page: each
        // credential the secrets rules detect becomes `[REDACTED:<kind>]`.
        redact: std::sync::Arc::new(sessiontree_secrets::redact_text),
        archive,
        header_timeout: sessiontree_web::HEADER_TIMEOUT,
        request_timeout: sessiontree_web::REQUEST_TIMEOUT,
    };
    let first_url = a.public_url.first().cloned();
    sessiontree_web::serve(cfg, |bound| {
        let base = first_url
            .map(|u| u.trim_end_matches('/').to_string())
            .unwrap_or_else(|| format!("http://{bound}"));
        // The one place the token is ever written: the user's own terminal, once.
        match (&token, generated) {
            (Some(t), true) => println!("sessiontree: serving {what} at {base}/?token={t}"),
            _ => println!("sessiontree: serving {what} at {base}/"),
        }
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
    })
    .map_err(|e| anyhow::anyhow!(e))
}

/// The token given, and where from (for messages): `--token`, else `--token-file`, else
/// `SESSIONTREE_TOKEN`.
fn token_given(flag: Option<String>, file: Option<&Path>) -> Result<(Option<String>, String)> {
    if let Some(t) = flag {
        return Ok((Some(t), "--token".into()));
    }
    if let Some(f) = file {
        let what = format!("--token-file {}", f.display());
        let meta = std::fs::metadata(f).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            bail!(
                "{what}: readable by other users (mode {:o}): chmod 600 {}",
                mode & 0o777,
                f.display()
            );
        }
        let text = std::fs::read_to_string(f).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        let t = text.lines().next().unwrap_or("").trim().to_string();
        return Ok((Some(t), what));
    }
    match std::env::var("SESSIONTREE_TOKEN") {
        Ok(t) if !t.is_empty() => Ok((Some(t.trim().to_string()), "SESSIONTREE_TOKEN".into())),
        _ => Ok((None, "--token".into())),
    }
}
