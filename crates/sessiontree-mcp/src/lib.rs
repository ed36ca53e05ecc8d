//! # sessiontree-mcp
//!
//! An MCP server over stdio (on the `rmcp` SDK) that lets a coding agent search and read
//! the session history under an agent dir, branches included: `search_sessions`,
//! `list_sessions`, `read_session`, `usage_summary` (described in the crate's `tools` module).
//!
//! With an archive ([`Config::archive`]) the searches and listings also cover the shared
//! PostgreSQL archive's sessions (the login's own from every machine, and those shared
//! with it), each with its owner and machine; an archived session is read in memory.
//!
//! Read-only: no tool writes a session. The listing index and the search summaries in the
//! agent dir are caches and are used as `sessiontree ls` and `sessiontree search` use them
//! (brought up to date, summaries built in the background after a search).
//!
//! Every answer is bounded ([`Config::budget`] characters of text, about 8,000 by
//! default, with a cursor to page on where one call cannot hold it all) and goes through
//! the [`Redact`] the server is given before it is sent: every string of the text and of
//! the structured content.

mod answer;
mod args;
mod list;
mod page;
mod read;
mod remote;
mod resolve;
mod search;
mod tools;
mod usage;

pub use answer::{Answer, Chain, Patterns, Redact, REDACTED};
pub use args::ToolError;
pub use remote::Remote;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The default text budget of one answer, in characters.
pub const DEFAULT_BUDGET: usize = 8_000;

/// What the server serves and how.
pub struct Config {
    /// The agent dir: sessions are the `*.jsonl` files under `<agent dir>/sessions/*/`.
    pub agent_dir: PathBuf,
    /// Applied to every piece of text an answer holds.
    pub redactor: Arc<dyn Redact>,
    /// Characters of text one answer may hold (the structured content carries the same
    /// pieces).
    pub budget: usize,
    /// The shared archive, read besides the agent dir (`--archive`): its sessions in
    /// `search_sessions` and `list_sessions`, and `read_session` of one by id.
    pub archive: Option<Remote>,
}

/// The server: the configuration plus caches that make repeated calls cheap (the index
/// handle, the last session loaded).
pub struct Server {
    cfg: Config,
    state: Arc<State>,
}

pub(crate) struct State {
    pub index: Mutex<Option<sessiontree_index::Index>>,
    pub loaded: Mutex<Option<read::Cached>>,
    pub building: std::sync::atomic::AtomicBool,
}

impl Server {
    /// A server over `cfg`.
    pub fn new(cfg: Config) -> Server {
        Server {
            cfg,
            state: Arc::new(State {
                index: Mutex::new(None),
                loaded: Mutex::new(None),
                building: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// Runs one tool call to its answer, redacted. Never panics outward: a panic inside a
    /// tool becomes a tool error.
    pub fn call(&self, name: &str, arguments: &Map<String, Value>) -> Result<Answer, ToolError> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.call_inner(name, arguments)
        }));
        let redact = |e: ToolError| ToolError(self.cfg.redactor.redact(&e.0).into_owned());
        match r {
            Ok(Ok(a)) => Ok(a.finish(&*self.cfg.redactor)),
            Ok(Err(e)) => Err(redact(e)),
            Err(_) => Err(ToolError(format!(
                "{name} failed on an internal error (the server keeps running; the error is on its stderr)."
            ))),
        }
    }

    fn call_inner(&self, name: &str, a: &Map<String, Value>) -> Result<Answer, ToolError> {
        let ctx = Ctx {
            cfg: &self.cfg,
            state: &self.state,
        };
        match name {
            tools::SEARCH => search::run(&ctx, a),
            tools::LIST => list::run(&ctx, a),
            tools::READ => read::run(&ctx, a),
            tools::USAGE => usage::run(&ctx, a),
            other => Err(ToolError(format!(
                "there is no tool {:?}; the tools are {}, {}, {} and {}.",
                answer::one_line(other, 40),
                tools::SEARCH,
                tools::LIST,
                tools::READ,
                tools::USAGE
            ))),
        }
    }

    /// The tools this server offers.
    pub fn tools() -> Vec<rmcp::model::Tool> {
        tools::all()
    }
}

/// What a tool reads from: the configuration and the server's caches.
pub(crate) struct Ctx<'a> {
    pub cfg: &'a Config,
    pub state: &'a Arc<State>,
}

impl Ctx<'_> {
    /// `<agent dir>/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.cfg.agent_dir.join("sessions")
    }

    /// A string of an answer, redacted now (before it is cut to fit).
    pub fn redact<'s>(&self, s: &'s str) -> std::borrow::Cow<'s, str> {
        self.cfg.redactor.redact(s)
    }
}

/// The MCP side: the handler `rmcp` drives.
#[derive(Clone)]
struct Handler(Arc<Server>);

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "sessiontree",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(tools::INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::all()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        tools::all().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let server = self.0.clone();
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        // The tools read files and use every core: off the protocol's threads.
        let done = tokio::task::spawn_blocking(move || server.call(&name, &args)).await;
        let result = match done {
            Ok(Ok(a)) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(a.text)]);
                r.structured_content = Some(a.structured);
                r
            }
            Ok(Err(e)) => CallToolResult::error(vec![ContentBlock::text(e.0)]),
            Err(_) => CallToolResult::error(vec![ContentBlock::text(
                "the tool stopped on an internal error; the server keeps running.",
            )]),
        };
        Ok(result.into())
    }
}

/// Serves `cfg` over standard input and output until the client closes them.
pub fn serve_stdio(cfg: Config) -> anyhow::Result<()> {
    let server = Arc::new(Server::new(cfg));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let running = Handler(server)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| anyhow::anyhow!("the MCP handshake on stdin/stdout failed: {e}"))?;
        running
            .waiting()
            .await
            .map_err(|e| anyhow::anyhow!("the MCP session ended on an error: {e}"))?;
        Ok::<(), anyhow::Error>(())
    })?;
    // A blocking read of stdin may still be pending: do not wait for it.
    rt.shutdown_background();
    Ok(())
}
