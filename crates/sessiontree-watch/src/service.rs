//! `sessiontree service install|uninstall|status`: `sessiontree watch` run at login, as a
//! systemd user unit on Linux (`~/.config/systemd/user/sessiontree-watch.service`, started
//! with `systemctl --user`) or a launchd agent on macOS
//! (`~/Library/LaunchAgents/dev.sessiontree.watch.plist`, `launchctl`). The files are
//! generated here; the folders the watch uses (`PI_CODING_AGENT_DIR`, `CLAUDE_CONFIG_DIR`,
//! `CODEX_HOME`) are written into them when set, so the service watches what the command
//! run by hand would.
//!
//! `--archive URL` puts the archive into the file as `SESSIONTREE_ARCHIVE` (with
//! `PGPASSFILE` when set). A URL holding a password is refused: the password goes into
//! `~/.pgpass` (or `PGPASSFILE`), which the watch reads, never into a service file. The file
//! is written mode 0600 all the same (a URL names a host and a user).

use crate::{show, Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Which service manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Systemd,
    Launchd,
}

impl Kind {
    /// This machine's.
    pub fn here() -> Kind {
        if cfg!(target_os = "macos") {
            Kind::Launchd
        } else {
            Kind::Systemd
        }
    }
}

pub const UNIT: &str = "sessiontree-watch.service";
pub const LABEL: &str = "dev.sessiontree.watch";

/// The variables that say where the folders are, as set now (non-empty ones), and the
/// archive's when one is given (see [`check_archive`]).
pub fn environment(archive: Option<&str>) -> Vec<(String, String)> {
    let set = |k: &str| {
        std::env::var(k)
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| (k.to_string(), v))
    };
    let mut out: Vec<(String, String)> = ["PI_CODING_AGENT_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME"]
        .iter()
        .filter_map(|k| set(k))
        .collect();
    if let Some(url) = archive {
        out.push(("SESSIONTREE_ARCHIVE".into(), url.to_string()));
        out.extend(set("PGPASSFILE"));
    }
    out
}

/// An archive for the service: refused when the URL holds a password (it would be stored
/// in the service file and show in the service manager's listing of it).
pub fn check_archive(url: &str) -> Result<()> {
    if sessiontree_archive::conn::has_password(url) {
        return Err(Error(
            "the archive URL holds a password, which the service file would keep: give the URL \
             without it and put the password in ~/.pgpass (a line host:port:database:user:password, \
             the file mode 0600; or the file PGPASSFILE names), which the watch reads"
                .into(),
        ));
    }
    Ok(())
}

/// A word of a systemd unit line, quoted (systemd's rules: `"` and `\` escaped, `%` doubled
/// for the specifier expansion, control characters as `\xNN`).
fn systemd_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The systemd user unit running `exe watch`.
pub fn systemd_unit(exe: &Path, env: &[(String, String)]) -> String {
    let mut s = String::from(
        "[Unit]\n\
         Description=sessiontree watch: a Pi copy of every coding-agent session as it is written\n\
         \n\
         [Service]\n\
         Type=simple\n",
    );
    s.push_str(&format!(
        "ExecStart={} watch\n",
        systemd_quote(&exe.to_string_lossy())
    ));
    for (k, v) in env {
        s.push_str(&format!(
            "Environment={}\n",
            systemd_quote(&format!("{k}={v}"))
        ));
    }
    s.push_str(
        "Restart=on-failure\n\
         RestartSec=5\n\
         Nice=10\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
    );
    s
}

fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // Not allowed in XML 1.0 at all: left out.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// The launchd agent plist running `exe watch` at login, its log in `log`.
pub fn launchd_plist(exe: &Path, env: &[(String, String)], log: &Path) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n",
    );
    s.push_str(&format!("  <key>Label</key>\n  <string>{LABEL}</string>\n"));
    s.push_str("  <key>ProgramArguments</key>\n  <array>\n");
    s.push_str(&format!(
        "    <string>{}</string>\n    <string>watch</string>\n  </array>\n",
        xml(&exe.to_string_lossy())
    ));
    if !env.is_empty() {
        s.push_str("  <key>EnvironmentVariables</key>\n  <dict>\n");
        for (k, v) in env {
            s.push_str(&format!(
                "    <key>{}</key>\n    <string>{}</string>\n",
                xml(k),
                xml(v)
            ));
        }
        s.push_str("  </dict>\n");
    }
    s.push_str("  <key>RunAtLoad</key>\n  <true/>\n  <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n  </dict>\n");
    s.push_str("  <key>ProcessType</key>\n  <string>Background</string>\n");
    s.push_str(&format!(
        "  <key>StandardErrorPath</key>\n  <string>{}</string>\n",
        xml(&log.to_string_lossy())
    ));
    s.push_str("</dict>\n</plist>\n");
    s
}

/// Where the service file goes for `kind`, under `home`.
pub fn file_path(kind: Kind, home: &Path) -> PathBuf {
    match kind {
        Kind::Systemd => std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"))
            .join("systemd/user")
            .join(UNIT),
        Kind::Launchd => home
            .join("Library/LaunchAgents")
            .join(format!("{LABEL}.plist")),
    }
}

/// The file's text for `kind` (`archive`: checked with [`check_archive`]).
pub fn file_text(kind: Kind, exe: &Path, home: &Path, archive: Option<&str>) -> Result<String> {
    if let Some(url) = archive {
        check_archive(url)?;
    }
    let env = environment(archive);
    Ok(match kind {
        Kind::Systemd => systemd_unit(exe, &env),
        Kind::Launchd => launchd_plist(exe, &env, &home.join("Library/Logs/sessiontree-watch.log")),
    })
}

/// Runs a service manager command; its failure is one line (the manager's own first line).
fn manager(cmd: &str, args: &[&str]) -> std::result::Result<String, String> {
    match Command::new(cmd).args(args).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let out = String::from_utf8_lossy(&o.stdout);
            let line = err
                .lines()
                .chain(out.lines())
                .find(|l| !l.trim().is_empty())
                .unwrap_or("failed")
                .trim()
                .to_string();
            Err(crate::clean(&line))
        }
        Err(e) => Err(format!("{cmd}: {e}")),
    }
}

/// Writes the service file: aside (mode 0600, readable by its user alone), then renamed
/// over the old one, which is so replaced whole, never half-written.
fn write_file(file: &Path, text: &str) -> Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error(format!("{}: {e}", show(dir))))?;
    }
    let tmp = file.with_extension("tmp-sessiontree");
    let _ = std::fs::remove_file(&tmp);
    let write = |tmp: &Path| -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    };
    write(&tmp)
        .and_then(|()| std::fs::rename(&tmp, file))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error(format!("{}: {e}", show(file)))
        })
}

/// Writes the service file and starts it. Gives what was done, a line each.
pub fn install(kind: Kind, exe: &Path, home: &Path, archive: Option<&str>) -> Result<Vec<String>> {
    let file = file_path(kind, home);
    let text = file_text(kind, exe, home, archive)?;
    write_file(&file, &text)?;
    let mut done = vec![format!("wrote {}", show(&file))];
    let file_s = file.to_string_lossy().into_owned();
    let steps: Vec<(&str, Vec<&str>)> = match kind {
        Kind::Systemd => vec![
            ("systemctl", vec!["--user", "daemon-reload"]),
            ("systemctl", vec!["--user", "enable", "--now", UNIT]),
        ],
        Kind::Launchd => vec![("launchctl", vec!["load", "-w", &file_s])],
    };
    for (cmd, args) in steps {
        match manager(cmd, &args) {
            Ok(_) => done.push(format!("ran {cmd} {}", args.join(" "))),
            Err(e) => {
                return Err(Error(format!(
                    "{} written, but `{cmd} {}` failed: {e}",
                    show(&file),
                    args.join(" ")
                )))
            }
        }
    }
    Ok(done)
}

/// Stops the service and removes its file.
pub fn uninstall(kind: Kind, home: &Path) -> Result<Vec<String>> {
    let file = file_path(kind, home);
    let mut done = Vec::new();
    if !file.exists() {
        return Ok(done);
    }
    let file_s = file.to_string_lossy().into_owned();
    let r = match kind {
        Kind::Systemd => manager("systemctl", &["--user", "disable", "--now", UNIT]),
        Kind::Launchd => manager("launchctl", &["unload", "-w", &file_s]),
    };
    match r {
        Ok(_) => done.push("stopped the service".to_string()),
        Err(e) => done.push(format!(
            "could not stop the service ({e}); removing its file"
        )),
    }
    std::fs::remove_file(&file).map_err(|e| Error(format!("{}: {e}", show(&file))))?;
    done.push(format!("removed {}", show(&file)));
    if kind == Kind::Systemd {
        let _ = manager("systemctl", &["--user", "daemon-reload"]);
    }
    Ok(done)
}

/// What the service manager says about the service: `None` when it cannot be asked.
pub fn manager_state(kind: Kind) -> Option<String> {
    match kind {
        Kind::Systemd => match Command::new("systemctl")
            .args(["--user", "is-active", UNIT])
            .output()
        {
            Ok(o) => {
                let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
                (!s.is_empty()).then(|| crate::clean(&s))
            }
            Err(_) => None,
        },
        Kind::Launchd => manager("launchctl", &["list", LABEL])
            .ok()
            .map(|_| "loaded".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_quotes_what_systemd_would_expand() {
        let u = systemd_unit(
            Path::new("/opt/my tools/100%/session\"tree"),
            &[("CODEX_HOME".into(), "/home/u/$x".into())],
        );
        assert!(
            u.contains("ExecStart=\"/opt/my tools/100%%/session\\\"tree\" watch\n"),
            "{u}"
        );
        assert!(
            u.contains("Environment=\"CODEX_HOME=/home/u/$$x\"\n"),
            "{u}"
        );
        assert!(u.contains("WantedBy=default.target"));
        // A newline in a path cannot start a new directive.
        let u = systemd_unit(Path::new("/x\nExecStartPre=/bin/evil"), &[]);
        assert!(!u.contains("\nExecStartPre"), "{u}");
    }

    /// The archive reaches the service as `SESSIONTREE_ARCHIVE`; one with a password in the
    /// URL is refused before anything is written; the file is its user's alone (0600), also
    /// when it replaces a world-readable one.
    #[test]
    fn the_archive_goes_into_the_unit_without_a_password_and_the_file_is_private() {
        let url = "postgresql://me@db.example/sessions?sslmode=require";
        check_archive(url).unwrap();
        let mut env = environment(Some(url));
        env.retain(|(k, _)| k == "SESSIONTREE_ARCHIVE");
        let u = systemd_unit(Path::new("/usr/bin/sessiontree"), &env);
        assert!(
            u.contains(&format!("Environment=\"SESSIONTREE_ARCHIVE={url}\"\n")),
            "{u}"
        );
        for bad in [
            "postgresql://me:s3cret@db.example/sessions",
            "host=db.example user=me password=s3cret dbname=sessions",
        ] {
            let e = check_archive(bad).unwrap_err().to_string();
            assert!(e.contains("~/.pgpass") && !e.contains("s3cret"), "{e}");
            let e = file_text(Kind::Systemd, Path::new("/x"), Path::new("/h"), Some(bad));
            assert!(e.is_err());
        }
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("user/sessiontree-watch.service");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "old").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_file(&file, &u).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), u);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }

    #[test]
    fn plist_escapes_xml_and_names_the_program() {
        let p = launchd_plist(
            Path::new("/Users/a&b/<bin>/sessiontree"),
            &[("PI_CODING_AGENT_DIR".into(), "/Users/a/\"pi\"".into())],
            Path::new("/Users/a/Library/Logs/sessiontree-watch.log"),
        );
        assert!(p.contains("<string>/Users/a&amp;b/&lt;bin&gt;/sessiontree</string>\n    <string>watch</string>"), "{p}");
        assert!(
            p.contains(
                "<key>PI_CODING_AGENT_DIR</key>\n    <string>/Users/a/&quot;pi&quot;</string>"
            ),
            "{p}"
        );
        assert!(p.contains(&format!("<string>{LABEL}</string>")));
        assert!(p.contains("<key>RunAtLoad</key>\n  <true/>"));
        // Balanced: every opened element is closed.
        for tag in ["dict", "array", "plist"] {
            assert_eq!(
                p.matches(&format!("<{tag}")).count(),
                p.matches(&format!("</{tag}>")).count(),
                "{tag}"
            );
        }
    }
}
