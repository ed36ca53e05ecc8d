//! What every request must pass before a handler sees it, and the headers every answer
//! carries.
//!
//! * Only `GET` and `HEAD`: nothing the server does changes anything, so a forged request
//!   (another site's form, a fetch from a page the user visits) has nothing to change.
//! * `Host` must name the listen address (or, on loopback, `localhost` at its port; when
//!   listening on every address, an IP literal at its port) or a `--public-url` name: a
//!   page on an attacker's domain that rebinds its name to this address (DNS rebinding)
//!   sends its own name and is refused, so it cannot read the answers.
//! * With a token: a `Authorization: Bearer` or `X-Sessiontree-Token` header, or the
//!   cookie; a `?token=` on a first visit sets the cookie and redirects to the same URL
//!   without it (so the token leaves the address bar and the history). Compared in constant
//!   time. The server logs no request, so the token is never written anywhere.

use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use std::net::SocketAddr;

/// The Content-Security-Policy of every answer: nothing but this server's own script,
/// style sheet and requests; no inline script or style, no frames, no forms elsewhere.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// What to do with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to the handlers.
    Pass,
    /// Answer with this status and one line of text.
    Refuse(StatusCode, &'static str),
    /// The right `?token=`: set the cookie, send the browser to this URL (without it).
    SetCookie(String),
}

/// The checks, fixed when the server starts.
pub struct Guard {
    hosts: Vec<String>,
    /// Listening on every address: any IP literal at this port is the server itself.
    any_ip_port: Option<u16>,
    token: Option<String>,
    cookie: String,
}

impl Guard {
    /// The guard for a server bound to `bound`.
    pub fn new(bound: SocketAddr, token: Option<String>, public_hosts: &[String]) -> Guard {
        let port = bound.port();
        let mut hosts = vec![bound.to_string().to_ascii_lowercase()];
        if bound.ip().is_loopback() {
            hosts.push(format!("localhost:{port}"));
        }
        hosts.extend(public_hosts.iter().map(|h| h.to_ascii_lowercase()));
        Guard {
            hosts,
            any_ip_port: bound.ip().is_unspecified().then_some(port),
            token,
            // Cookies are per host, not per port: one name per port keeps two servers apart.
            cookie: format!("sessiontree_token_{port}"),
        }
    }

    /// The cookie's name.
    pub fn cookie_name(&self) -> &str {
        &self.cookie
    }

    fn host_ok(&self, host: &str) -> bool {
        let h = host.to_ascii_lowercase();
        if self.hosts.contains(&h) {
            return true;
        }
        match (self.any_ip_port, h.parse::<SocketAddr>()) {
            (Some(p), Ok(a)) => a.port() == p,
            _ => false,
        }
    }

    fn token_ok(&self, given: &str) -> bool {
        match &self.token {
            Some(t) => same(t.as_bytes(), given.as_bytes()),
            None => true,
        }
    }

    /// Decides about one request.
    pub fn check(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Verdict {
        if method != Method::GET && method != Method::HEAD {
            return Verdict::Refuse(
                StatusCode::METHOD_NOT_ALLOWED,
                "this server only reads: GET and HEAD",
            );
        }
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        match host {
            Some(h) if self.host_ok(h) => {}
            _ => {
                return Verdict::Refuse(
                    StatusCode::MISDIRECTED_REQUEST,
                    "unknown Host: this server answers only to its listen address and --public-url",
                )
            }
        }
        if self.token.is_none() {
            return Verdict::Pass;
        }
        // The query's token first: a link with a token always decides.
        if let Some(q) = uri.query() {
            let mut token = None;
            let mut rest: Vec<&str> = Vec::new();
            for pair in q.split('&') {
                match pair.strip_prefix("token=") {
                    Some(t) => token = Some(t),
                    None if pair.is_empty() => {}
                    None => rest.push(pair),
                }
            }
            if let Some(t) = token {
                if !self.token_ok(t) {
                    return Verdict::Refuse(StatusCode::UNAUTHORIZED, "wrong token");
                }
                let mut to = uri.path().to_string();
                if !rest.is_empty() {
                    to.push('?');
                    to.push_str(&rest.join("&"));
                }
                return Verdict::SetCookie(to);
            }
        }
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let custom = headers
            .get("x-sessiontree-token")
            .and_then(|v| v.to_str().ok());
        if let Some(t) = bearer.or(custom) {
            return if self.token_ok(t.trim()) {
                Verdict::Pass
            } else {
                Verdict::Refuse(StatusCode::UNAUTHORIZED, "wrong token")
            };
        }
        for v in headers.get_all(header::COOKIE) {
            let Ok(v) = v.to_str() else { continue };
            for c in v.split(';') {
                if let Some((k, val)) = c.trim().split_once('=') {
                    if k == self.cookie && self.token_ok(val) {
                        return Verdict::Pass;
                    }
                }
            }
        }
        Verdict::Refuse(
            StatusCode::UNAUTHORIZED,
            "this server needs its token: open the link it printed when it started (…/?token=…)",
        )
    }

    /// The `Set-Cookie` value that carries the token.
    pub fn set_cookie(&self) -> Option<HeaderValue> {
        let t = self.token.as_ref()?;
        HeaderValue::from_str(&format!(
            "{}={t}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie
        ))
        .ok()
    }
}

/// Equal bytes, in time that depends only on the lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The headers of every answer.
pub fn secure(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    // Session pages are private and change: never kept by a cache.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(host: Option<&str>, extra: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(host) = host {
            h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        }
        for (k, v) in extra {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn uri(s: &str) -> Uri {
        s.parse().unwrap()
    }

    #[test]
    fn hosts() {
        let g = Guard::new(
            "127.0.0.1:8377".parse().unwrap(),
            None,
            &["view.example.com".into()],
        );
        let get = Method::GET;
        for ok in [
            "127.0.0.1:8377",
            "localhost:8377",
            "LOCALHOST:8377",
            "view.example.com",
        ] {
            assert_eq!(
                g.check(&get, &uri("/"), &req(Some(ok), &[])),
                Verdict::Pass,
                "{ok}"
            );
        }
        for bad in [
            None,
            Some("evil.test:8377"),
            Some("127.0.0.1"),
            Some("127.0.0.1:80"),
            Some("localhost"),
            Some("view.example.com.evil.test"),
            Some("10.0.0.1:8377"),
        ] {
            assert!(
                matches!(
                    g.check(&get, &uri("/"), &req(bad, &[])),
                    Verdict::Refuse(StatusCode::MISDIRECTED_REQUEST, _)
                ),
                "{bad:?}"
            );
        }
        // Every address: any IP literal at the port, never a name.
        let g = Guard::new("0.0.0.0:9000".parse().unwrap(), None, &[]);
        assert_eq!(
            g.check(&get, &uri("/"), &req(Some("10.1.2.3:9000"), &[])),
            Verdict::Pass
        );
        assert_eq!(
            g.check(&get, &uri("/"), &req(Some("[fe80::1]:9000"), &[])),
            Verdict::Pass
        );
        assert!(matches!(
            g.check(&get, &uri("/"), &req(Some("evil.test:9000"), &[])),
            Verdict::Refuse(..)
        ));
        assert!(matches!(
            g.check(&get, &uri("/"), &req(Some("10.1.2.3:9001"), &[])),
            Verdict::Refuse(..)
        ));
    }

    #[test]
    fn methods() {
        let g = Guard::new("127.0.0.1:8377".parse().unwrap(), None, &[]);
        let h = req(Some("127.0.0.1:8377"), &[]);
        assert_eq!(g.check(&Method::HEAD, &uri("/"), &h), Verdict::Pass);
        for m in [
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
            Method::OPTIONS,
        ] {
            assert!(matches!(
                g.check(&m, &uri("/"), &h),
                Verdict::Refuse(StatusCode::METHOD_NOT_ALLOWED, _)
            ));
        }
    }

    #[test]
    fn tokens() {
        let t = "0123456789abcdef0123";
        let g = Guard::new("127.0.0.1:8377".parse().unwrap(), Some(t.into()), &[]);
        let host = ("host", "127.0.0.1:8377");
        let get = Method::GET;
        let unauthorized = |v: Verdict| matches!(v, Verdict::Refuse(StatusCode::UNAUTHORIZED, _));
        assert!(unauthorized(g.check(&get, &uri("/"), &req(None, &[host]))));
        let bearer = format!("Bearer {t}");
        assert_eq!(
            g.check(
                &get,
                &uri("/"),
                &req(None, &[host, ("authorization", &bearer)])
            ),
            Verdict::Pass
        );
        assert_eq!(
            g.check(
                &get,
                &uri("/"),
                &req(None, &[host, ("x-sessiontree-token", t)])
            ),
            Verdict::Pass
        );
        let cookie = format!("other=1; sessiontree_token_8377={t}");
        assert_eq!(
            g.check(&get, &uri("/s/x"), &req(None, &[host, ("cookie", &cookie)])),
            Verdict::Pass
        );
        // Another port's cookie does not count.
        let cookie = format!("sessiontree_token_8378={t}");
        assert!(unauthorized(g.check(
            &get,
            &uri("/"),
            &req(None, &[host, ("cookie", &cookie)])
        )));
        assert!(unauthorized(g.check(
            &get,
            &uri("/"),
            &req(
                None,
                &[host, ("authorization", "Bearer 0123456789abcdef0124")]
            )
        )));
        assert_eq!(
            g.check(
                &get,
                &uri(&format!("/search?q=a&token={t}&x=1")),
                &req(None, &[host])
            ),
            Verdict::SetCookie("/search?q=a&x=1".into())
        );
        assert_eq!(
            g.check(&get, &uri(&format!("/?token={t}")), &req(None, &[host])),
            Verdict::SetCookie("/".into())
        );
        assert!(unauthorized(g.check(
            &get,
            &uri("/?token=nope"),
            &req(None, &[host])
        )));
        // The host check comes first, token or not.
        assert!(matches!(
            g.check(
                &get,
                &uri("/"),
                &req(Some("evil.test:8377"), &[("authorization", &bearer)])
            ),
            Verdict::Refuse(StatusCode::MISDIRECTED_REQUEST, _)
        ));
    }
}
