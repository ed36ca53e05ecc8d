//! Credentials and the archive. `push` keeps a user's own copies byte-exact by default;
//! `push --redact-secrets` replaces every credential `sessiontree-secrets` detects with
//! `[REDACTED:<kind>]` before the bytes leave (the version's redaction key then says so);
//! `share` refuses a session whose archived copies still hold one (see [`in_archive`]).

use crate::pull::{copies, fetch};
use crate::{Archive, Result};
use sessiontree_secrets::Finding;

/// Every credential the secrets rules detect, as a push redactor (`push --redact-secrets`):
/// a JSON line is redacted inside its string values and stays what `JSON.stringify`
/// writes (ids, signatures and images untouched); any other value (an id, a cwd, a path,
/// a name) is redacted as plain text. The placeholder is `[REDACTED:<kind>]`.
pub struct Secrets;

impl crate::redact::Redactor for Secrets {
    fn apply(&self, text: &[u8]) -> Option<Vec<u8>> {
        if !sessiontree_secrets::may_contain(text) {
            return None;
        }
        let (body, nl) = match text.strip_suffix(b"\n") {
            Some(b) => (b, &b"\n"[..]),
            None => (text, &b""[..]),
        };
        if serde_json::from_slice::<serde_json::Value>(body).is_ok() {
            // A JSON value: only its string values are looked at, never its syntax.
            let mut r = sessiontree_secrets::redact_line_bytes(body)?;
            r.extend_from_slice(nl);
            return Some(r);
        }
        let s = std::str::from_utf8(text).ok()?;
        match sessiontree_secrets::redact_text(s) {
            std::borrow::Cow::Owned(o) => Some(o.into_bytes()),
            std::borrow::Cow::Borrowed(_) => None,
        }
    }

    fn key(&self) -> String {
        "secrets:v1".to_string()
    }
}

/// Complete lines (`bytes` ends with `\n` or is empty) with their credentials redacted:
/// a JSON line stays JSON, rewritten as `JSON.stringify` writes it, only when it held one.
pub fn redact_lines(bytes: &[u8]) -> Vec<u8> {
    if !sessiontree_secrets::may_contain(bytes) {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let (body, nl) = match line.strip_suffix(b"\n") {
            Some(b) => (b, &b"\n"[..]),
            None => (line, &b""[..]),
        };
        match sessiontree_secrets::redact_line_bytes(body) {
            Some(r) => {
                out.extend_from_slice(&r);
                out.extend_from_slice(nl);
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

/// The credentials in the connected role's own archived copies of a session (the copies a
/// share would expose), each with the name of the machine the copy came from.
pub fn in_archive(archive: &mut Archive, session_id: &str) -> Result<Vec<(String, Finding)>> {
    let mut out = Vec::new();
    let mine: Vec<_> = copies(archive, &[session_id.to_string()])?
        .into_iter()
        .filter(|c| c.owner == archive.role && c.session_id == session_id)
        .collect();
    for c in mine {
        let bytes = fetch(archive, &c)?;
        for f in sessiontree_secrets::scan_session(&bytes).findings {
            out.push((c.machine_name.clone(), f));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_ends_and_only_leaky_ones_change() {
        let key = format!("AKIA{}", "QYLPMN5HHHFPZAM2");
        let a = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}"#;
        let b = format!(
            r#"{{"type":"message", "id":"b","parentId":"a","timestamp":"t","message":{{"role":"user","content":"key {key}"}}}}"#
        );
        let text = format!("{a}\n{b}\n");
        let r = String::from_utf8(redact_lines(text.as_bytes())).unwrap();
        assert_eq!(
            r,
            format!(
                "{a}\n{}\n",
                r#"{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"key [REDACTED:aws-access-key]"}}"#
            )
        );
        use crate::redact::Redactor;
        let line = format!("{b}\n");
        assert_eq!(
            Secrets.apply(line.as_bytes()).map(String::from_utf8),
            Some(Ok(r.lines().nth(1).unwrap().to_string() + "\n"))
        );
        assert_eq!(Secrets.apply(format!("{a}\n").as_bytes()), None);
        let cwd = format!("/home/u/{key}/src");
        assert_eq!(
            Secrets.apply(cwd.as_bytes()).map(String::from_utf8),
            Some(Ok("/home/u/[REDACTED:aws-access-key]/src".to_string()))
        );
    }
}
