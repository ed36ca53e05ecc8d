//! The HTTP side: axum on tokio. Each page is built on a blocking thread (loading a
//! session and searching read files); the guard runs before every handler and adds the
//! security headers to every answer, refusals included.

use crate::catalog::Catalog;
use crate::guard::{self, Guard, Verdict};
use crate::pages::{self, ListParams, SearchParams, SessionParams};
use crate::{assets, Config, Redactor};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;

struct App {
    cat: Catalog,
    guard: Guard,
    redact: Redactor,
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

/// Runs `f` on a blocking thread; a panic there becomes a 500, not a dead connection.
async fn blocking<F>(f: F) -> Response
where
    F: FnOnce() -> Response + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
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

async fn list(State(app): Shared, Query(p): Query<ListParams>) -> Response {
    blocking(move || match pages::list(&app.cat, &p, &app.redact) {
        Ok(b) => html(StatusCode::OK, b),
        Err(e) => failed(&app, &e),
    })
    .await
}

async fn search(State(app): Shared, Query(p): Query<SearchParams>) -> Response {
    blocking(move || match pages::search(&app.cat, &p, &app.redact) {
        Ok(b) => html(StatusCode::OK, b),
        Err(e) => failed(&app, &e),
    })
    .await
}

fn session_page(app: &App, id: &str, entry: Option<&str>, p: &SessionParams) -> Response {
    let o = match app.cat.open(id) {
        Ok(Some(o)) => o,
        Ok(None) => return not_found(app, "no such session in the served folder"),
        Err(e) => return failed(app, &e),
    };
    let version = format!("{}-{}-{}", o.stamp.size, o.stamp.mtime_ns, o.stamp.ino);
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
    blocking(move || session_page(&app, &id, None, &p)).await
}

async fn session_at(
    State(app): Shared,
    Path((id, entry)): Path<(String, String)>,
    Query(p): Query<SessionParams>,
) -> Response {
    blocking(move || session_page(&app, &id, Some(&entry), &p)).await
}

async fn version(State(app): Shared, Path(id): Path<String>) -> Response {
    blocking(move || match app.cat.version(&id) {
        Some(v) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            v,
        )
            .into_response(),
        None => text(StatusCode::NOT_FOUND, "no such session"),
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

/// The application for a server bound to `bound`.
fn router(cfg: &Config, bound: SocketAddr) -> Router {
    let app = Arc::new(App {
        cat: Catalog::new(cfg),
        guard: Guard::new(bound, cfg.token.clone(), &cfg.public_hosts),
        redact: cfg.redact.clone(),
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
        .layer(middleware::from_fn_with_state(app.clone(), guarded))
        .with_state(app)
}

/// Serves on `listener` until the process ends.
pub async fn run(cfg: Config, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let bound = listener.local_addr()?;
    axum::serve(listener, router(&cfg, bound)).await
}

/// Binds `cfg.listen`, calls `ready` with the bound address (the port when 0 was asked
/// for), and serves until the process ends.
pub fn serve(cfg: Config, ready: impl FnOnce(SocketAddr)) -> Result<(), String> {
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
        run(cfg, listener)
            .await
            .map_err(|e| format!("serving on {bound}: {e}"))
    })
}
