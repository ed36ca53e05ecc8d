//! Checking the paths a user gives before anything reads them, so that a mistake is one
//! clear error naming the path (exit 2), never a silent empty answer.

use anyhow::{bail, Result};
use std::path::Path;

/// `path` must be an existing file (a link to one is fine).
pub fn session_file(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Err(e) => bail!("{}: {}", path.display(), os_text(&e)),
        Ok(m) if m.is_dir() => bail!(
            "{}: is a folder, not a session file (give one of its *.jsonl files)",
            path.display()
        ),
        Ok(m) if !m.is_file() => bail!(
            "{}: not a regular file (a pipe, socket or device is never read)",
            path.display()
        ),
        Ok(_) => Ok(()),
    }
}

/// `path` must be an existing folder. The agent dir itself (which holds `sessions/`, not
/// session files) gets a hint.
pub fn folder(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Err(e) => bail!("{}: {}", path.display(), os_text(&e)),
        Ok(m) if !m.is_dir() => bail!("{}: not a folder", path.display()),
        Ok(_) => {
            if path.join("sessions").is_dir() && !has_jsonl(path) {
                bail!(
                    "{}: is an agent dir, not a session folder (use --all for every session under it, \
                     or name a folder below {})",
                    path.display(),
                    path.join("sessions").display()
                );
            }
            Ok(())
        }
    }
}

fn has_jsonl(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
    })
}

/// An OS error as a person reads it: "no such file or directory", without "(os error 2)".
pub fn os_text(e: &std::io::Error) -> String {
    strip_os_code(&e.to_string())
}

/// "No such file or directory (os error 2)" -> "no such file or directory"; also at the
/// end of "x.jsonl: No such file or directory (os error 2)".
pub fn strip_os_code(s: &str) -> String {
    let Some(i) = s.rfind(" (os error ").filter(|_| s.ends_with(')')) else {
        return s.to_string();
    };
    let s = &s[..i];
    let (head, msg) = match s.rfind(": ") {
        Some(j) => (&s[..j + 2], &s[j + 2..]),
        None => ("", s),
    };
    let mut c = msg.chars();
    let msg: String = match c.next() {
        Some(f) if f.is_uppercase() && c.clone().next().is_some_and(|n| n.is_lowercase()) => {
            f.to_lowercase().chain(c).collect()
        }
        _ => msg.to_string(),
    };
    format!("{head}{msg}")
}

/// One line for an error and its causes: each cause once, a path said once ("cannot read
/// X" followed by "X: reason" reads "cannot read X: reason"), OS codes left out. What an
/// error quotes (a file's name, its content, a name from the archive) is made safe for
/// the terminal ([`crate::safe::line`]).
pub fn one_line(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let mut t = strip_os_code(&cause.to_string());
        // The library's errors end with their OS cause: drop a repeated one.
        if t.is_empty() || out.contains(&t) {
            continue;
        }
        if let Some((head, rest)) = t.split_once(": ") {
            if !head.is_empty() && out.ends_with(head) {
                t = rest.to_string();
            }
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&t);
    }
    crate::safe::line(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_codes_and_doubled_paths_go() {
        assert_eq!(
            strip_os_code("No such file or directory (os error 2)"),
            "no such file or directory"
        );
        let io = std::io::Error::from_raw_os_error(2);
        let inner =
            anyhow::Error::new(io).context("x.jsonl: No such file or directory (os error 2)");
        let e = inner.context("cannot read x.jsonl");
        assert_eq!(
            one_line(&e),
            "cannot read x.jsonl: no such file or directory"
        );
    }
}
