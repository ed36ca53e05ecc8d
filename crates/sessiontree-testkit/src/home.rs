//! A throwaway home for the import and watch tests: every agent's folder inside one temp
//! folder (Claude Code's `claude/`, Codex's `codex/`, Gemini CLI's `gh/.gemini`,
//! OpenCode's `xdg/opencode`, GitHub Copilot CLI's `copilot/`), Pi agent dirs beside them, and the command run with its
//! environment pointing there and nowhere else (no session dir, no archive, no colour).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The recorded and hand-made transcripts of the import crate's tests.
pub fn import_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sessiontree-import/tests/fixtures")
}

pub struct Home {
    _tmp: tempfile::TempDir,
    /// The temp folder: `HOME`, and the root of every agent's folder.
    pub root: PathBuf,
    bin: PathBuf,
}

impl Home {
    /// An empty home; `bin` is the command under test (`env!("CARGO_BIN_EXE_sessiontree")`).
    pub fn new(bin: &str) -> Home {
        let tmp = tempfile::tempdir().unwrap();
        Home {
            root: tmp.path().to_path_buf(),
            _tmp: tmp,
            bin: PathBuf::from(bin),
        }
    }

    /// A home holding copies of the import fixtures' folders: each `(from, to)` copies
    /// `<fixtures>/<from>` to `<root>/<to>` (an agent's folder as the agent lays it out).
    pub fn with_fixtures(bin: &str, folders: &[(&str, &str)]) -> Home {
        let h = Home::new(bin);
        for (from, to) in folders {
            crate::files::copy_dir(&import_fixtures().join(from), &h.root.join(to));
        }
        h
    }

    /// A home holding the recorded and hand-written sessions of `agent` (`copilot`:
    /// `$COPILOT_HOME/session-state`; `gemini`: `$GEMINI_CLI_HOME/.gemini/tmp`), laid out
    /// as the agent does, and no Pi agent dir yet.
    pub fn with_agent_fixtures(bin: &str, agent: &str) -> Home {
        let folder = match agent {
            "copilot" => "session-state",
            "gemini" => "tmp",
            _ => panic!("no fixtures laid out for {agent:?}"),
        };
        let to = match agent {
            "copilot" => "copilot/session-state",
            _ => "gh/.gemini/tmp",
        };
        let recorded = format!("{agent}-recorded/{folder}");
        let hand = format!("{agent}/{folder}");
        Home::with_fixtures(bin, &[(recorded.as_str(), to), (hand.as_str(), to)])
    }

    /// The command with `args`, the Pi agent dir `<root>/<agent_dir>`.
    pub fn cmd_in(&self, agent_dir: &str, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(args)
            .env("PI_CODING_AGENT_DIR", self.root.join(agent_dir))
            .env("CLAUDE_CONFIG_DIR", self.root.join("claude"))
            .env("CODEX_HOME", self.root.join("codex"))
            .env("GEMINI_CLI_HOME", self.root.join("gh"))
            .env("XDG_DATA_HOME", self.root.join("xdg"))
            .env("COPILOT_HOME", self.root.join("copilot"))
            .env("HOME", &self.root)
            .env("NO_COLOR", "1")
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .env_remove("SESSIONTREE_ARCHIVE");
        c
    }

    pub fn run_in(&self, agent_dir: &str, args: &[&str]) -> Output {
        self.cmd_in(agent_dir, args).output().unwrap()
    }

    /// The JSON the command prints; it must succeed.
    pub fn json_in(&self, agent_dir: &str, args: &[&str]) -> Value {
        let o = self.run_in(agent_dir, args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    }

    /// [`Home::run_in`] the agent dir `agent`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_in("agent", args)
    }

    /// [`Home::json_in`] the agent dir `agent`.
    pub fn json(&self, args: &[&str]) -> Value {
        self.json_in("agent", args)
    }

    /// `sessiontree watch ARGS` in the background, agent dir `agent`; its stderr (one line
    /// an event) goes to `<root>/watch.log`, see [`Home::watch_log`].
    pub fn spawn_watch(&self, args: &[&str]) -> Child {
        let log = std::fs::File::create(self.root.join("watch.log")).unwrap();
        self.cmd_in("agent", &[&["watch"], args].concat())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    /// What the watch [`Home::spawn_watch`] started has logged so far.
    pub fn watch_log(&self) -> String {
        std::fs::read_to_string(self.root.join("watch.log")).unwrap_or_default()
    }

    /// Starts `sessiontree watch ARGS` as [`Home::spawn_watch`] does (`args` one string,
    /// split at spaces) and waits until its log says it caught up (20 s at most).
    pub fn watch_caught_up(&self, args: &str) -> Child {
        let args: Vec<&str> = args.split(' ').collect();
        let w = self.spawn_watch(&args);
        let t = Instant::now();
        while !self.watch_log().contains("caught up:") && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(50));
        }
        w
    }

    /// After an import of one agent's sessions: `ls --all --json` lists `n`, every one
    /// `importedFrom` `agent`, and the plain `ls --all` has `n` lines marked `mark`. Gives
    /// the listed sessions and the plain listing.
    pub fn listed_imports(&self, agent: &str, mark: &str, n: usize) -> (Vec<Value>, String) {
        let ls = self.json(&["ls", "--all", "--json"]);
        let sessions = ls["sessions"].as_array().unwrap().clone();
        assert_eq!(sessions.len(), n);
        assert!(sessions.iter().all(|s| s["importedFrom"] == agent));
        let plain = crate::run::stdout(&self.run(&["ls", "--all"]));
        assert_eq!(
            plain.lines().filter(|l| l.contains(mark)).count(),
            n,
            "{plain}"
        );
        (sessions, plain)
    }

    /// `search word` finds a tool result; `stats --all` names `model`.
    pub fn check_search_and_stats(&self, word: &str, model: &str) {
        let found = self.run(&["search", word]);
        assert!(found.status.success());
        let text = crate::run::stdout(&found);
        assert!(text.contains("toolResult"), "{text}");
        let stats = crate::run::stdout(&self.run(&["stats", "--all"]));
        assert!(stats.contains(model), "{stats}");
    }

    /// `export --format md` of the one of `sessions` (as `ls --json` lists them) whose
    /// first message is `first` succeeds and its Markdown holds each of `wanted`.
    pub fn check_export_md(&self, sessions: &[Value], first: &str, wanted: &[&str]) {
        let s = sessions
            .iter()
            .find(|s| s["firstMessage"] == first)
            .unwrap_or_else(|| panic!("no session begins {first:?}"));
        let md = self.run(&["export", "--format", "md", s["path"].as_str().unwrap()]);
        assert!(md.status.success());
        let md = crate::run::stdout(&md);
        for w in wanted {
            assert!(md.contains(w), "{md}");
        }
    }

    /// `import AGENT --dry-run --json` succeeds and writes nothing (no agent dir).
    pub fn check_dry_run_writes_nothing(&self, agent: &str) {
        let o = self.run(&["import", agent, "--dry-run", "--json"]);
        assert!(o.status.success());
        assert!(!self.root.join("agent").exists());
    }

    /// The Pi session files under `<root>/<agent_dir>/sessions`, sorted (none before the
    /// first import).
    pub fn sessions(&self, agent_dir: &str) -> Vec<PathBuf> {
        let dir = self.root.join(agent_dir).join("sessions");
        if dir.exists() {
            crate::files::jsonl_under(&dir)
        } else {
            Vec::new()
        }
    }
}

/// `BIN import AGENT` (`bin` the command) in an empty home whose agent folder, `$VAR`,
/// does not exist: it exits 1, and its stderr says each of `wanted`.
pub fn check_import_nothing_found(bin: &str, agent: &str, var: &str, wanted: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(bin)
        .args(["import", agent])
        .env("PI_CODING_AGENT_DIR", tmp.path().join("agent"))
        .env(var, tmp.path().join("none"))
        .env("HOME", tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    for w in wanted {
        assert!(err.contains(w), "{err}");
    }
}

/// The session files under the agent dir `dir`, by name, with `dir` itself written
/// `AGENT` (two agent dirs' copies compare equal): what a watch and a one-shot import
/// are compared by.
pub fn copies(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(folders) = std::fs::read_dir(dir.join("sessions")) else {
        return out;
    };
    for f in folders {
        for e in std::fs::read_dir(f.unwrap().path()).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    text.replace(dir.to_str().unwrap(), "AGENT"),
                ));
            }
        }
    }
    out.sort();
    out
}

/// Ends a process the test started (kill -9: nothing is left to clean up).
pub fn kill(c: &mut Child) {
    let _ = c.kill();
    let _ = c.wait();
}
