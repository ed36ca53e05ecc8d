//! Running the command under test. `CARGO_BIN_EXE_<name>` is only set for the crate that
//! builds the binary, so its tests pass the path in: `command(env!("CARGO_BIN_EXE_sessiontree"), agent)`.

use std::path::Path;
use std::process::{Command, Output};

/// `bin` with `agent` as the agent dir and nothing else of the user's environment that
/// changes what it does: no session dir override, no archive, the background index on,
/// no colour.
pub fn command(bin: &str, agent: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env("PI_CODING_AGENT_DIR", agent)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .env_remove("SESSIONTREE_ARCHIVE")
        .env_remove("SESSIONTREE_NO_BACKGROUND_INDEX")
        .env("NO_COLOR", "1");
    c
}

/// Runs `bin ARGS` with `agent` as the agent dir (see [`command`]).
pub fn run(bin: &str, agent: &Path, args: &[&str]) -> Output {
    command(bin, agent)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{bin}: {e}"))
}

/// What the command printed on stdout (invalid UTF-8 replaced).
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What the command printed on stderr (invalid UTF-8 replaced).
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Its stdout, after asserting that it succeeded (else a panic with both outputs).
pub fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\n{}\n{}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
    String::from_utf8(o.stdout).expect("stdout is UTF-8")
}

/// The exit code (-1 when killed by a signal), stdout and stderr.
pub fn code_out_err(o: &Output) -> (i32, String, String) {
    (o.status.code().unwrap_or(-1), stdout(o), stderr(o))
}

/// Runs `cmd` with `input` on its stdin (then closed), stdout and stderr captured.
pub fn with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Its stdout, after asserting that it exited with `code` (else a panic with its stderr).
pub fn exit(o: &Output, code: i32) -> String {
    assert_eq!(o.status.code(), Some(code), "{}", stderr(o));
    stdout(o)
}

/// The first line (without its newline) a spawned command writes on its piped stdout:
/// the address a server says it listens on.
pub fn first_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout piped"))
        .read_line(&mut line)
        .unwrap();
    line.trim_end_matches('\n').to_string()
}
