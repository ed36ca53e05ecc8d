//! # sessiontree-web
//!
//! `sessiontree serve`: a read-only web UI over a session folder (or every session of an
//! agent dir). Server-rendered pages with one small script, all assets in the binary:
//!
//! * `/`: every session newest first, filters by project, agent and date, and a search box
//!   that searches as you type (the index crate's search, as `sessiontree search`);
//! * `/search?q=WORDS`: hits, each linking to its entry;
//! * `/s/<session id>`: the tree (the layout of `sessiontree tree`) and the current branch;
//! * `/s/<session id>/<entry id>`: the same at that entry, with what the model saw there
//!   (`sessiontree context --leaf`).
//!
//! Pages are windows: a session of 50,000 entries renders a few hundred rows around the
//! entry, with links to page. Every request is checked by [`guard`] (method, `Host`,
//! token) and every answer carries a strict Content-Security-Policy. Every text taken from
//! a session goes through one [`Redactor`] and is HTML-escaped ([`html::Html::text`]).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod assets;
mod catalog;
pub mod guard;
pub mod html;
mod pages;
mod remote;
mod server;

pub use server::{run, serve};

/// What every piece of session text passes through before it is put in a page: names,
/// messages, tool output, labels, working directories, search snippets.
pub type Redactor = Arc<dyn for<'a> Fn(&'a str) -> Cow<'a, str> + Send + Sync>;

/// The redactor that changes nothing.
pub fn no_redaction() -> Redactor {
    Arc::new(|s: &str| Cow::Borrowed(s))
}

/// Which sessions the server shows.
#[derive(Clone, Debug)]
pub enum Root {
    /// Every session under `<agent dir>/sessions/*/` (what `sessiontree ls --all` lists).
    AgentDir(PathBuf),
    /// Every `*.jsonl` of one folder.
    Folder(PathBuf),
}

/// The server's settings.
#[derive(Clone)]
pub struct Config {
    /// The sessions served.
    pub root: Root,
    /// The agent dir: where the listing index and the search summaries live.
    pub agent_dir: PathBuf,
    /// Use the listing index (false: read every file for each listing).
    pub use_index: bool,
    /// Where to listen.
    pub listen: SocketAddr,
    /// The token every request must carry (a header, a cookie, or `?token=` once).
    pub token: Option<String>,
    /// Host names (`host` or `host:port`, lower case) requests may name besides the listen
    /// address: those of `--public-url`.
    pub public_hosts: Vec<String>,
    /// Applied to every text from a session before it is escaped into a page.
    pub redact: Redactor,
    /// A shared archive (a libpq URL) whose visible sessions are served too.
    pub archive: Option<String>,
    /// How long a connection may take to send a request's headers (idle included).
    pub header_timeout: Duration,
    /// How long a page may take before the answer is 503 and its work is stopped.
    pub request_timeout: Duration,
}

/// [`Config::header_timeout`]'s default: a client that sends headers byte by byte, or
/// nothing, is dropped after this.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// [`Config::request_timeout`]'s default.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The token to use: the one given, else (off loopback) a new random one. The flag says
/// it was generated (and must be shown to the user once).
pub fn token_for(
    listen: &SocketAddr,
    given: Option<String>,
) -> Result<(Option<String>, bool), String> {
    match given {
        Some(t) => {
            check_token(&t)?;
            Ok((Some(t), false))
        }
        None if listen.ip().is_loopback() => Ok((None, false)),
        None => Ok((Some(generate_token()), true)),
    }
}

/// A token must be long enough to guess at no cost and fit in a cookie and a header as is.
pub fn check_token(t: &str) -> Result<(), String> {
    if t.len() < 16 {
        return Err("the token must be at least 16 characters".into());
    }
    if t.len() > 256
        || !t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b))
    {
        return Err(
            "the token may only hold letters, digits and - _ . ~ (at most 256 of them)".into(),
        );
    }
    Ok(())
}

/// 244 bits from the operating system's random source, as 64 hex digits.
pub fn generate_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The `Host` values of a `--public-url` (`https://view.example.com`, `http://h:8080/x`,
/// or a bare `host[:port]`): the authority as browsers send it, with and without the
/// scheme's default port.
pub fn public_hosts(url: &str) -> Result<Vec<String>, String> {
    let bad = || format!("--public-url {url}: not a URL (e.g. https://sessions.example.com)");
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => ("http".to_string(), url),
    };
    let default_port = match scheme.as_str() {
        "http" => "80",
        "https" => "443",
        _ => return Err(bad()),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() || authority.contains('@') {
        return Err(bad());
    }
    let authority = authority.to_ascii_lowercase();
    if !authority
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
    {
        return Err(bad());
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && !p.is_empty() && !p.contains(']') => {
            if p.parse::<u16>().is_err() {
                return Err(bad());
            }
            (h.to_string(), Some(p.to_string()))
        }
        _ => (authority.clone(), None),
    };
    Ok(match port {
        Some(p) if p == default_port => vec![host.clone(), format!("{host}:{p}")],
        Some(p) => vec![format!("{host}:{p}")],
        None => vec![host.clone(), format!("{host}:{default_port}")],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_only_off_loopback_unless_given() {
        let lo: SocketAddr = "127.0.0.1:8377".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8377".parse().unwrap();
        let lan: SocketAddr = "192.168.1.5:8377".parse().unwrap();
        assert_eq!(token_for(&lo, None).unwrap(), (None, false));
        let (t, generated) = token_for(&any, None).unwrap();
        assert!(generated);
        let t = t.unwrap();
        assert_eq!(t.len(), 64);
        check_token(&t).unwrap();
        let (t2, _) = token_for(&lan, None).unwrap();
        assert_ne!(Some(t), t2, "each run draws a new token");
        let given = "abcdefghijklmnop".to_string();
        assert_eq!(
            token_for(&lo, Some(given.clone())).unwrap(),
            (Some(given), false)
        );
        assert!(token_for(&any, Some("short".into())).is_err());
        assert!(token_for(&any, Some("has space in it ok?".into())).is_err());
        assert!(token_for(&any, Some("semi;colon-and-more-chars".into())).is_err());
    }

    #[test]
    fn public_urls() {
        assert_eq!(
            public_hosts("https://View.Example.com/").unwrap(),
            vec!["view.example.com", "view.example.com:443"]
        );
        assert_eq!(
            public_hosts("http://h.example:8080/x?y").unwrap(),
            vec!["h.example:8080"]
        );
        assert_eq!(
            public_hosts("h.example:80").unwrap(),
            vec!["h.example", "h.example:80"]
        );
        assert_eq!(
            public_hosts("http://[::1]:9000").unwrap(),
            vec!["[::1]:9000"]
        );
        for bad in [
            "",
            "ftp://x",
            "http://",
            "http://user@h",
            "http://h:99999",
            "http://a b",
        ] {
            assert!(public_hosts(bad).is_err(), "{bad}");
        }
    }
}
