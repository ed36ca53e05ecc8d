//! `sessiontree mcp`: the MCP server of `sessiontree-mcp` on stdin/stdout.

use anyhow::Result;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct McpArgs {
    /// Also replace what this regular expression matches by [redacted] in every answer
    /// (repeatable), on top of the credential rules that always apply.
    #[arg(long, value_name = "REGEX")]
    redact: Vec<String>,
    /// Characters of text one answer may hold; longer answers come in pages.
    #[arg(long, value_name = "CHARS", default_value_t = sessiontree_mcp::DEFAULT_BUDGET as u64,
          value_parser = clap::value_parser!(u64).range(1000..=1_000_000))]
    budget: u64,
    /// Also answer from the shared archive (PostgreSQL URL; without a value,
    /// $SESSIONTREE_ARCHIVE): its sessions with their machine and owner in searches and
    /// listings, and read_session of one by id (read into memory, never written here).
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    archive: Option<String>,
}

/// Every answer's redaction: the credential rules of `sessiontree-secrets` (each found
/// credential becomes `[REDACTED:<kind>]`), then the user's patterns.
fn redactor(extra: &[String]) -> Result<Arc<dyn sessiontree_mcp::Redact>> {
    let user = sessiontree_mcp::Patterns::new(extra).map_err(anyhow::Error::msg)?;
    let credentials = |s: &str| match sessiontree_secrets::redact_text(s) {
        std::borrow::Cow::Owned(o) => Some(o),
        std::borrow::Cow::Borrowed(_) => None,
    };
    Ok(Arc::new(sessiontree_mcp::Chain(vec![
        Box::new(credentials),
        Box::new(user),
    ])))
}

pub fn run(a: McpArgs) -> Result<()> {
    let agent_dir = sessiontree::dirs::agent_dir();
    let archive = match &a.archive {
        Some(flag) => {
            let url = sessiontree_archive::conn::archive_url(Some(flag))?;
            Some(sessiontree_mcp::Remote::connect(&url, &agent_dir).map_err(anyhow::Error::msg)?)
        }
        None => None,
    };
    let cfg = sessiontree_mcp::Config {
        agent_dir,
        redactor: redactor(&a.redact)?,
        budget: a.budget as usize,
        archive,
    };
    sessiontree_mcp::serve_stdio(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_lose_credentials_and_the_users_patterns() {
        let r = redactor(&["wombat-[0-9]+".into()]).unwrap();
        let key = format!("AKIA{}", "QYLPMN5HHHFPZAM2");
        let text =
            format!("key {key} and wombat-42, REDIS_URL=redis://app:Xk9vQ2mLp7Rt@cache:6379");
        let out = r.redact(&text);
        assert!(!out.contains(&key), "{out}");
        assert!(out.contains("[REDACTED:aws-access-key]"), "{out}");
        assert!(!out.contains("wombat-42"), "{out}");
        assert!(!out.contains("Xk9vQ2mLp7Rt"), "{out}");
        assert_eq!(r.redact("nothing to hide here"), "nothing to hide here");
    }
}
