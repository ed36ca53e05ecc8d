//! Headless Chromium for the tests of the HTML export and of `serve`: the scripts in
//! `export-tests/` (`playwright-core`, installed by `cd export-tests && npm ci`) driving the
//! system's Chromium (`/usr/bin/chromium`, or `CHROMIUM`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Chromium and the `export-tests/` folder, both there.
pub struct Browser {
    pub chromium: PathBuf,
    /// `export-tests/`, where the scripts run.
    pub tests: PathBuf,
}

/// The browser, or None after saying what is missing (the test then passes without its
/// browser checks); under `SESSIONTREE_REQUIRE_BROWSER=1` (CI) a panic instead. The
/// message names the running test (its thread's name, as libtest names it).
pub fn find() -> Option<Browser> {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a browser test");
    let chromium =
        PathBuf::from(std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()));
    let tests = crate::root().join("export-tests");
    let node_ok = Command::new("node").arg("--version").output().is_ok();
    let missing = if !chromium.exists() {
        Some(format!("{} (apt-get install chromium)", chromium.display()))
    } else if !node_ok {
        Some("node".to_string())
    } else if !tests.join("node_modules/playwright-core").exists() {
        Some("export-tests/node_modules (cd export-tests && npm ci)".to_string())
    } else {
        None
    };
    match missing {
        Some(m) if std::env::var("SESSIONTREE_REQUIRE_BROWSER").as_deref() == Ok("1") => {
            panic!("{test} needs {m}")
        }
        Some(m) => {
            crate::interop::say_skipped(&format!("{test} needs {m}"));
            None
        }
        None => Some(Browser { chromium, tests }),
    }
}

impl Browser {
    /// Runs `node ARGS --chromium <chromium>` in `export-tests/`: what the script printed
    /// on stdout, after asserting that it succeeded (else a panic naming `checks`, with both
    /// outputs).
    pub fn run(&self, checks: &str, args: &[&str]) -> String {
        let out = Command::new("node")
            .current_dir(&self.tests)
            .args(args)
            .arg("--chromium")
            .arg(&self.chromium)
            .output()
            .expect("run node");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{checks} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// The HTML page `html` in `browser.mjs` with `opts`, saving a screenshot at
    /// `screenshot` if given (see [`Browser::run`]).
    pub fn page(
        &self,
        checks: &str,
        html: &Path,
        opts: &[&str],
        screenshot: Option<&Path>,
    ) -> String {
        let mut args = vec!["browser.mjs", "--html", html.to_str().unwrap()];
        args.extend_from_slice(opts);
        if let Some(png) = screenshot {
            args.extend(["--screenshot", png.to_str().unwrap()]);
        }
        self.run(checks, &args)
    }
}
