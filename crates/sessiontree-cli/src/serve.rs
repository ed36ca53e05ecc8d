//! `sessiontree serve [DIR]`: the read-only web UI (`sessiontree-web`) over a session
//! folder or every session of the agent dir.

use anyhow::{bail, Result};
use sessiontree::dirs;
use sessiontree_web::{Config, Root};
use std::net::SocketAddr;
use std::path::PathBuf;

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
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
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
    let (token, generated) = sessiontree_web::token_for(&listen, a.token)
        .map_err(|e| anyhow::anyhow!("--token: {e}"))?;
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
