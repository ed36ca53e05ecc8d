//! What a command reports besides its output: the exit status it asks for ([`Outcome`])
//! and, on stderr, what the library did or skipped on its own.

use sessiontree::Session;

/// Exit status: 0 done, 1 nothing found, 2 error.
pub enum Outcome {
    Done,
    NothingFound,
    Code(u8),
}

/// Says on stderr which `*.jsonl` names folder walks skipped (FIFOs, devices, links to
/// them): they are never read, but the user should know they are there.
pub fn report_skipped() {
    for (p, what) in sessiontree::folder::take_skipped() {
        eprintln!(
            "sessiontree: {}: not a regular file ({what}); skipped",
            crate::safe::path(&p)
        );
    }
}

/// Prints on stderr what a session handle did on its own (a torn last line moved aside).
pub fn report_notices(s: &mut Session) {
    for n in s.take_notices() {
        eprintln!("sessiontree: {}", crate::safe::line(&n));
    }
}

/// `Done` when anything was found, else `NothingFound`.
pub fn found(any: bool) -> Outcome {
    if any {
        Outcome::Done
    } else {
        Outcome::NothingFound
    }
}
