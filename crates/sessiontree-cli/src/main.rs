//! The `sessiontree` command: read, branch, append to and repair coding-agent sessions.
//! Everything but the allocator lives in the library (`src/lib.rs`).

mod alloc;

use clap::Parser;
use std::process::ExitCode;

// Many small allocations per entry: mimalloc keeps appends constant-time on large sessions
// and loading faster than the system allocator.
#[global_allocator]
static GLOBAL: alloc::MiMalloc = alloc::MiMalloc;

fn main() -> ExitCode {
    let cli = sessiontree_cli::Cli::parse();
    let code = sessiontree_cli::exit(sessiontree_cli::run(cli));
    alloc::no_purge_at_exit();
    code
}
