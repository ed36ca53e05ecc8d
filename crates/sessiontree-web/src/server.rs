//! The HTTP side: axum's router on hyper's HTTP/1 connections, on tokio. Each page is
//! built on a blocking thread (loading a session and searching read files, asking the
//! archive); the guard runs before every handler and adds the security headers to every
//! answer, refusals included.
//!
//! Bounded: a connection must send a request's headers within [`Config::header_timeout`]
//! (from when the server starts waiting for them: idle keep-alive connections too), a
//! request is answered within [`Config::request_timeout`] or gets 503, and a page whose
//! client went away (or timed out) tells its blocking work to stop ([`Stop`]).

use crate::catalog::{Catalog, Open};
use crate::guard::{self, Guard, Verdict};
use crate::pages::{self, ListParams, SearchParams, SessionParams, Sources};
use crate::remote::Remote;
use crate::{assets, Config, Redactor};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct App {
    cat: Catalog,
    guard: Guard,
    redact: Redactor,
    remote: Option<Remote>,
    request_timeout: Duration,
}

type Shared = State<Arc<App>>;

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

fn text(status: StatusCode, body: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{body}\n"),
    )
        .into_response()
}

async fn guarded(State(app): Shared, req: Request, next: Next) -> Response {
    let verdict = app.guard.check(req.method(), req.uri(), req.headers());
    let mut res = match verdict {
        Verdict::Pass => next.run(req).await,
        Verdict::Refuse(status, why) => {
            let mut r = text(status, why);
            if status == StatusCode::METHOD_NOT_ALLOWED {
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            }
            r
        }
        Verdict::SetCookie(to) => {
            let mut r = StatusCode::SEE_OTHER.into_response();
            if let Ok(v) = HeaderValue::from_str(&to) {
                r.headers_mut().insert(header::LOCATION, v);
            }
            if let Some(c) = app.guard.set_cookie() {
                r.headers_mut().insert(header::SET_COOKIE, c);
            }
            r
        }
    };
    guard::secure(res.headers_mut());
    res
}

/// Set when the request a blocking job works for is gone (its client closed the
/// connection, or the request timed out): the job's loops ask [`Stop::asked`].
#[derive(Clone, Default)]
pub(crate) struct Stop(Arc<AtomicBool>);

impl Stop {
    pub(crate) fn asked(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Sets the flag when dropped: the request's future holds it, so when hyper drops that
/// future (the connection closed) or the timeout does, the job is told.
struct StopOnDrop(Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        (self.0).0.store(true, Ordering::Relaxed);
    }
}

/// Runs `f` on a blocking thread with the request's [`Stop`]; a panic there becomes a
/// 500, not a dead connection.
async fn blocking<F>(f: F) -> Response
where
    F: FnOnce(&Stop) -> Response + Send + 'static,
{
    let stop = Stop::default();
    let _on_drop = StopOnDrop(stop.clone());
    match tokio::task::spawn_blocking(move || f(&stop)).await {
        Ok(r) => r,
        Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
    }
}

fn failed(app: &App, e: &str) -> Response {
    html(
        StatusCode::INTERNAL_SERVER_ERROR,
        pages::notice("error", e, &app.redact),
    )
}

fn not_found(app: &App, what: &str) -> Response {
    html(
        StatusCode::NOT_FOUND,
        pages::notice("not found", what, &app.redact),
    )
}

fn unavailable(app: &App, e: &str) -> Response {
    html(
        StatusCode::BAD_GATEWAY,
        pages::notice("archive unavailable", e, &app.redact),
    )
}

fn sources<'a>(app: &'a App, stop: &'a (dyn Fn() -> bool + Sync)) -> Sources<'a> {
    Sources {
        cat: &app.cat,
        remote: app.remote.as_ref(),
        stop,
    }
}

async fn list(State(app): Shared, Query(p): Query<ListParams>) -> Response {
    blocking(move |stop| {
        let asked = || stop.asked();
        match pages::list(&sources(&app, &asked), &p, &app.redact) {
            Ok(b) => html(StatusCode::OK, b),
            Err(e) => failed(&app, &e),
        }
    })
    .await
}

async fn search(State(app): Shared, Query(p): Query<SearchParams>) -> Response {
    blocking(move |stop| {
        let asked = || stop.asked();
        match pages::search(&sources(&app, &asked), &p, &app.redact) {
            Ok(b) => html(StatusCode::OK, b),
            Err(e) => failed(&app, &e),
        }
    })
    .await
}

/// Why a session could not be found.
enum Missing {
    /// In neither place.
    Nowhere,
    /// Reading the served folder failed.
    Local(String),
    /// The archive could not be read.
    Archive(String),
}

/// A session of the served folder, else of the archive, with the version its page polls.
fn find(app: &App, id: &str) -> Result<(Arc<Open>, String), Missing> {
    match app.cat.open(id) {
        Ok(Some(o)) => {
            let v = format!("{}-{}-{}", o.stamp.size, o.stamp.mtime_ns, o.stamp.ino);
            return Ok((o, v));
        }
        Ok(None) => {}
        Err(e) => return Err(Missing::Local(e)),
    }
    match &app.remote {
        None => Err(Missing::Nowhere),
        Some(r) => r
            .open(id)
            .map_err(Missing::Archive)?
            .ok_or(Missing::Nowhere),
    }
}

fn session_page(app: &App, id: &str, entry: Option<&str>, p: &SessionParams) -> Response {
    let (o, version) = match find(app, id) {
        Ok(x) => x,
        Err(Missing::Nowhere) if app.remote.is_some() => {
            return not_found(app, "no such session in the served folder or the archive")
        }
        Err(Missing::Nowhere) => return not_found(app, "no such session in the served folder"),
        Err(Missing::Local(e)) => return failed(app, &e),
        Err(Missing::Archive(e)) => return unavailable(app, &e),
    };
    match pages::session(&o, entry, p, &version, &app.redact) {
        Some(b) => html(StatusCode::OK, b),
        None => not_found(app, "no such entry in this session"),
    }
}
async fn session(
    State(app): Shared,
    Path(id): Path<String>,
    Query(p): Query<SessionParams>,
) -> Response {
    blocking(move |_| session_page(&app, &id, None, &p)).await
}

async fn session_at(
    State(app): Shared,
    Path((id, entry)): Path<(String, String)>,
    Query(p): Query<SessionParams>,
) -> Response {
    blocking(move |_| session_page(&app, &id, Some(&entry), &p)).await
}

async fn version(State(app): Shared, Path(id): Path<String>) -> Response {
    blocking(move |_| {
        let v = match app.cat.version(&id) {
            Some(v) => Some(v),
            None => match &app.remote {
                Some(r) => match r.version(&id) {
                    Ok(v) => v,
                    Err(_) => {
                        return text(StatusCode::BAD_GATEWAY, "the archive could not be read")
                    }
                },
                None => None,
            },
        };
        match v {
            Some(v) => (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                v,
            )
                .into_response(),
            None => text(StatusCode::NOT_FOUND, "no such session"),
        }
    })
    .await
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        assets::APP_JS,
    )
        .into_response()
}

async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        assets::STYLE_CSS,
    )
        .into_response()
}

async fn fallback(State(app): Shared) -> Response {
    not_found(&app, "no such page")
}

/// Answers 503 when the handler has not answered within the request timeout (dropping
/// it, which tells its blocking work to stop).
async fn timed(State(app): Shared, req: Request, next: Next) -> Response {
    match tokio::time::timeout(app.request_timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "this page took too long to build",
        ),
    }
}

/// The application for a server bound to `bound`.
fn router(cfg: &Config, bound: SocketAddr, remote: Option<Remote>) -> Router {
    let app = Arc::new(App {
        cat: Catalog::new(cfg),
        guard: Guard::new(bound, cfg.token.clone(), &cfg.public_hosts),
        redact: cfg.redact.clone(),
        remote,
        request_timeout: cfg.request_timeout,
    });
    Router::new()
        .route("/", get(list))
        .route("/search", get(search))
        .route("/s/{id}", get(session))
        .route("/s/{id}/{entry}", get(session_at))
        .route("/api/version/{id}", get(version))
        .route("/assets/app.js", get(script))
        .route("/assets/style.css", get(style))
        .fallback(fallback)
        .layer(middleware::from_fn_with_state(app.clone(), timed))
        .layer(middleware::from_fn_with_state(app.clone(), guarded))
        .with_state(app)
}

/// Accepts connections on `listener` and serves each with hyper's HTTP/1, the header
/// timeout on.
async fn accept(
    listener: tokio::net::TcpListener,
    app: Router,
    header_timeout: Duration,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(c) => c,
            // Out of descriptors and the like: wait a little rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let svc = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// Serves on `listener` until the process ends. With `cfg.archive`, connects to the
/// archive first (an error when it cannot be reached).
pub async fn run(cfg: Config, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let bound = listener.local_addr()?;
    let remote = match cfg.archive.clone() {
        None => None,
        Some(url) => Some(
            tokio::task::spawn_blocking(move || Remote::connect(&url))
                .await
                .map_err(std::io::Error::other)?
                .map_err(std::io::Error::other)?,
        ),
    };
    accept(listener, router(&cfg, bound, remote), cfg.header_timeout).await
}

/// Connects to the archive (with `cfg.archive`), binds `cfg.listen`, calls `ready` with
/// the bound address (the port when 0 was asked for), and serves until the process ends.
pub fn serve(cfg: Config, ready: impl FnOnce(SocketAddr)) -> Result<(), String> {
    // Before anything listens: an archive that cannot be read is the one error.
    let remote = match &cfg.archive {
        Some(url) => Some(Remote::connect(url)?),
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", cfg.listen))?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("cannot listen on {}: {e}", cfg.listen))?;
        ready(bound);
        accept(listener, router(&cfg, bound, remote), cfg.header_timeout)
            .await
            .map_err(|e| format!("serving on {bound}: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request dropped while its page is being built (what hyper does when the client
    /// closes the connection, and the timeout does) sets the job's stop flag, and a job
    /// that asks it ends.
    #[test]
    fn a_dropped_request_stops_its_job() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (ended_tx, ended_rx) = std::sync::mpsc::channel();
        let job = rt.spawn(blocking(move |stop| {
            started_tx.send(()).unwrap();
            // Bounded, so that a failing test still ends (a limit, not a timing).
            let t = std::time::Instant::now();
            while !stop.asked() && t.elapsed() < Duration::from_secs(60) {
                std::thread::yield_now();
            }
            ended_tx.send(stop.asked()).unwrap();
            text(StatusCode::OK, "done")
        }));
        started_rx.recv_timeout(Duration::from_secs(60)).unwrap();
        job.abort();
        assert!(ended_rx.recv().unwrap(), "the job was not told to stop");
        // A job whose request is still there is not told to stop.
        let done = rt.block_on(blocking(|stop| {
            text(
                StatusCode::OK,
                if stop.asked() { "stopped" } else { "running" },
            )
        }));
        assert_eq!(done.status(), StatusCode::OK);
        let body =
            rt.block_on(async { axum::body::to_bytes(done.into_body(), 1024).await.unwrap() });
        assert_eq!(&body[..], b"running\n");
    }
}
