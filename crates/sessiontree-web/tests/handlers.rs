//! The server's pages and checks over real HTTP (a server on 127.0.0.1, a raw client that
//! can send any Host), without a browser.

use sessiontree_testkit::http::{self, Res};
use sessiontree_web::{Config, Redactor, Root};
use std::borrow::Cow;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const SECRET: &str = "SECRET-K9Q2X7";

/// Replaces every `SECRET-` word with `[redacted]`: stands in for the real credential
/// finder, to prove every text goes through the redactor.
fn test_redactor() -> Redactor {
    Arc::new(|s: &str| {
        if !s.contains("SECRET-") {
            return Cow::Borrowed(s);
        }
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("SECRET-") {
            out.push_str(&rest[..i]);
            out.push_str("[redacted]");
            let after = &rest[i + 7..];
            let n = after
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(after.len());
            rest = &after[n..];
        }
        out.push_str(rest);
        Cow::Owned(out)
    })
}

fn line(v: serde_json::Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

fn header(id: &str, cwd: &str) -> String {
    line(
        serde_json::json!({"type":"session","version":3,"id":id,"timestamp":"2025-01-02T10:00:00.000Z","cwd":cwd}),
    )
}

fn msg(id: &str, parent: Option<&str>, role: &str, content: serde_json::Value) -> String {
    line(
        serde_json::json!({"type":"message","id":id,"parentId":parent,"timestamp":"2025-01-02T10:00:01.000Z",
        "message":{"role":role,"content":content,"timestamp":1735812001000u64}}),
    )
}

fn write_session(dir: &Path, name: &str, text: &str, mtime_s: u64) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    let f = std::fs::File::options().write(true).open(&p).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(mtime_s))
        .unwrap();
    p
}

/// A branched session: u1 -> a1 -> u2 -> a2 (leaf), and an abandoned u3 under a1.
fn branched(id: &str, cwd: &str) -> String {
    let mut s = header(id, cwd);
    s += &msg("u1", None, "user", "how do I frobnicate the widget".into());
    s += &msg(
        "a1",
        Some("u1"),
        "assistant",
        serde_json::json!([{"type":"text","text":"let me look"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}]),
    );
    s += &line(
        serde_json::json!({"type":"message","id":"r1","parentId":"a1","timestamp":"2025-01-02T10:00:02.000Z",
        "message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"widget.c\nzebrafile"}],"isError":false,"timestamp":1735812002000u64}}),
    );
    s += &msg(
        "u3",
        Some("r1"),
        "user",
        "abandoned idea with quuxword".into(),
    );
    s += &msg("u2", Some("r1"), "user", "second question".into());
    s += &msg(
        "a2",
        Some("u2"),
        "assistant",
        serde_json::json!([{"type":"text","text":"done"}]),
    );
    s += &line(
        serde_json::json!({"type":"label","id":"l1","parentId":"a2","timestamp":"2025-01-02T10:00:05.000Z","targetId":"u1","label":"start"}),
    );
    s
}

struct Server {
    addr: SocketAddr,
}

/// How a test's server is set up; [`Fixture::serve`] for the usual one.
struct Setup {
    root: Root,
    agent: PathBuf,
    token: Option<String>,
    redact: Redactor,
    archive: Option<String>,
    header_timeout: Duration,
}

impl Setup {
    fn new(root: Root, agent: &Path) -> Setup {
        Setup {
            root,
            agent: agent.to_path_buf(),
            token: None,
            redact: test_redactor(),
            archive: None,
            header_timeout: sessiontree_web::HEADER_TIMEOUT,
        }
    }

    fn start(self) -> Server {
        let cfg = Config {
            root: self.root,
            agent_dir: self.agent,
            use_index: true,
            listen: "127.0.0.1:0".parse().unwrap(),
            token: self.token,
            public_hosts: vec!["view.example.com".into()],
            redact: self.redact,
            archive: self.archive,
            header_timeout: self.header_timeout,
            request_timeout: sessiontree_web::REQUEST_TIMEOUT,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = sessiontree_web::serve(cfg, |a| tx.send(Ok(a)).unwrap());
            if let Err(e) = r {
                let _ = tx.send(Err(e));
            }
        });
        Server {
            addr: rx.recv_timeout(Duration::from_secs(60)).unwrap().unwrap(),
        }
    }
}

fn get_with(srv: &Server, path: &str, extra: &str) -> Res {
    http::get(srv.addr, path, extra)
}

fn get(srv: &Server, path: &str) -> Res {
    get_with(srv, path, "")
}

/// `METHOD /` naming `host`.
fn ask(srv: &Server, method: &str, host: &str, extra: &str) -> Res {
    http::request(srv.addr, method, "/", host, extra)
}

/// The `data-id`s of `class="session"` rows, in order.
fn session_ids(body: &str) -> Vec<String> {
    body.split("<li class=\"session\" data-id=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

fn count(body: &str, needle: &str) -> usize {
    body.matches(needle).count()
}

fn secure_headers(r: &Res) {
    let csp = r.headers.get("content-security-policy").expect("CSP");
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
    assert!(!csp.contains("unsafe-inline"));
    assert_eq!(r.headers.get("x-content-type-options").unwrap(), "nosniff");
    assert_eq!(r.headers.get("referrer-policy").unwrap(), "no-referrer");
}

struct Fixture {
    _tmp: tempfile::TempDir,
    agent: PathBuf,
    folder: PathBuf,
}

/// An agent dir with one session folder of three sessions: b (last message 2025-01-05),
/// a (2025-01-02), c (2024-06-01).
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let folder = agent.join("sessions").join("--work-x--");
    std::fs::create_dir_all(&folder).unwrap();
    write_session(
        &folder,
        "a.jsonl",
        &branched("aaaaaaaa-0000-7000-8000-000000000001", "/work/x"),
        1_700_000_000,
    );
    let mut b = header("bbbbbbbb-0000-7000-8000-000000000002", "/work/y");
    b += &msg("u1", None, "user", "zebra crossing in project y".into());
    b += &line(
        serde_json::json!({"type":"custom","customType":"claude-code:meta","id":"c1","parentId":"u1","timestamp":"2025-01-02T10:00:01.000Z","data":{}}),
    );
    let b = b
        .replace("2025-01-02T10", "2025-01-05T00")
        .replace("1735812001000", "1736035201000");
    write_session(&folder, "b.jsonl", &b, 1_700_100_000);
    let mut c = header("cccccccc-0000-7000-8000-000000000003", "/work/x");
    c += &msg("u1", None, "user", "an old one".into());
    let c = c
        .replace("2025-01-02T10", "2024-06-01T00")
        .replace("1735812001000", "1717200001000");
    write_session(&folder, "c.jsonl", &c, 1_600_000_000);
    Fixture {
        _tmp: tmp,
        agent,
        folder,
    }
}

impl Fixture {
    /// A server over the whole agent dir, no token, the test redactor.
    fn serve(&self) -> Server {
        self.setup().start()
    }

    fn setup(&self) -> Setup {
        Setup::new(Root::AgentDir(self.agent.clone()), &self.agent)
    }
}

const A: &str = "aaaaaaaa-0000-7000-8000-000000000001";
const B: &str = "bbbbbbbb-0000-7000-8000-000000000002";
const C: &str = "cccccccc-0000-7000-8000-000000000003";

#[test]
fn list_is_newest_first_and_filters() {
    let f = fixture();
    let srv = f.serve();
    let r = get(&srv, "/");
    assert_eq!(r.status, 200);
    secure_headers(&r);
    assert_eq!(session_ids(&r.body), [B, A, C]);
    assert!(
        r.body.contains("agent-claude-code"),
        "B was imported from Claude Code"
    );
    let r = get(&srv, "/?project=%2Fwork%2Fx");
    assert_eq!(session_ids(&r.body), [A, C]);
    let r = get(&srv, "/?agent=claude-code");
    assert_eq!(session_ids(&r.body), [B]);
    let r = get(&srv, "/?agent=pi");
    assert_eq!(session_ids(&r.body), [A, C]);
    let r = get(&srv, "/?since=2025-01-02&until=2025-01-02");
    assert_eq!(session_ids(&r.body), [A]);
    let r = get(&srv, "/?since=yesterdayish");
    assert!(r.body.contains("not a date"));
    assert_eq!(session_ids(&r.body).len(), 3, "a bad date filters nothing");
}

#[test]
fn search_as_you_type_and_search_page() {
    let f = fixture();
    let srv = f.serve();
    // The list's search: the sessions with a hit, each linking to its entry.
    let r = get(&srv, "/?q=zebra&part=list");
    assert_eq!(r.status, 200);
    assert!(!r.body.contains("id=\"filters\""), "only the list part");
    assert_eq!(session_ids(&r.body), [B, A]);
    assert!(
        r.body.contains(&format!("href=\"/s/{A}/r1\"")),
        "{}",
        r.body
    );
    assert!(r.body.contains("<mark>zebra</mark>"));
    // Same semantics as `sessiontree search`: every word in one entry.
    let r = get(&srv, "/?q=zebra+project&part=list");
    assert_eq!(session_ids(&r.body), [B]);
    let r = get(&srv, "/?q=zebra&project=%2Fwork%2Fx&part=list");
    assert_eq!(session_ids(&r.body), [A]);
    // The search page: hits, the abandoned one marked.
    let r = get(&srv, "/search?q=quuxword");
    assert_eq!(r.status, 200);
    assert!(r.body.contains(&format!("href=\"/s/{A}/u3\"")));
    assert!(r.body.contains("abandoned branch"));
    assert_eq!(count(&r.body, "<li class=\"hit\">"), 1);
    let r = get(&srv, "/search?q=%28unclosed&mode=regex");
    assert_eq!(r.status, 200);
    assert!(r.body.contains("invalid query"));
    // A search leaves summaries of every served file behind it (built aside), which later
    // searches use; one that changed since is summarized again after the next search.
    let covered = |what: &str| {
        let t = std::time::Instant::now();
        loop {
            let files = sessiontree::list::all_files_stat(&f.agent);
            let store = sessiontree_index::summary::Summaries::path_in(&f.agent);
            let s = sessiontree_index::summary::Summaries::load(&store);
            if s.is_some_and(|s| s.covers_exactly(&files)) {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "{what}: not summarized"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    covered("after the first searches");
    let b = f.folder.join("b.jsonl");
    let mut text = std::fs::read_to_string(&b).unwrap();
    text += &msg("u9", Some("c1"), "user", "walrus".into());
    std::fs::write(&b, text).unwrap();
    let r = get(&srv, "/search?q=walrus");
    assert_eq!(count(&r.body, "<li class=\"hit\">"), 1, "{}", r.body);
    covered("after a change and a search");
}

#[test]
fn session_page_tree_branch_and_context() {
    let f = fixture();
    let srv = f.serve();
    let r = get(&srv, &format!("/s/{A}"));
    assert_eq!(r.status, 200);
    secure_headers(&r);
    // Every entry is a tree row; the branch holds the path to the leaf (l1), not u3.
    assert_eq!(count(&r.body, "class=\"row "), 7);
    assert!(r.body.contains("◀ leaf"));
    assert!(r.body.contains("[start]"));
    let branch: Vec<&str> = r
        .body
        .split("<article class=\"entry ")
        .skip(1)
        .map(|s| {
            let i = s.find("data-id=\"").unwrap() + 9;
            &s[i..i + s[i..].find('"').unwrap()]
        })
        .collect();
    assert_eq!(branch, ["u1", "a1", "r1", "u2", "a2", "l1"]);
    // Tool calls and results are folded.
    assert!(r.body.contains("<details class=\"call\"><summary>→ bash"));
    assert!(r
        .body
        .contains("<details class=\"result\"><summary>← bash result"));
    assert!(!r.body.contains("What the model saw here"));
    // At the abandoned entry: its branch and its context.
    let r = get(&srv, &format!("/s/{A}/u3"));
    assert_eq!(r.status, 200);
    assert!(r.body.contains("abandoned branch"));
    assert!(r.body.contains("What the model saw here"));
    let l = sessiontree::load(&f.folder.join("a.jsonl")).unwrap();
    let ctx = sessiontree::build_context(&l.tree, sessiontree::LeafArg::Id("u3"));
    assert_eq!(ctx.messages.len(), 4);
    assert_eq!(count(&r.body, "<article class=\"msg\""), ctx.messages.len());
    assert!(r.body.contains(&format!(
        "<p class=\"meta\" id=\"ctx-count\">{} messages",
        ctx.messages.len()
    )));
    let reading = &r.body[r.body.find("<div class=\"reading\">").unwrap()..];
    assert!(reading.contains("abandoned idea with quuxword"));
    assert!(!reading.contains("second question"), "not on u3's branch");
    // Unknown entries and sessions, and ids that are not ids.
    assert_eq!(get(&srv, &format!("/s/{A}/nope")).status, 404);
    assert_eq!(
        get(&srv, "/s/dddddddd-0000-7000-8000-000000000009").status,
        404
    );
    for bad in [
        "/s/..%2F..%2Fetc%2Fpasswd",
        "/s/a.jsonl",
        "/s/%00",
        "/s/x%20y",
    ] {
        let r = get(&srv, bad);
        assert_eq!(r.status, 404, "{bad}");
        secure_headers(&r);
    }
}

#[test]
fn links_out_of_the_folder_are_not_served() {
    let f = fixture();
    let outside = f.agent.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    let target = write_session(
        &outside,
        "o.jsonl",
        &(header("eeeeeeee-0000-7000-8000-00000000000e", "/private")
            + &msg("u1", None, "user", "private words".into())),
        1_700_200_000,
    );
    std::os::unix::fs::symlink(&target, f.folder.join("link.jsonl")).unwrap();
    let srv = Setup::new(Root::Folder(f.folder.clone()), &f.agent).start();
    let r = get(&srv, "/s/eeeeeeee-0000-7000-8000-00000000000e");
    assert_eq!(r.status, 404);
    assert!(!r.body.contains("private words"));
    assert_eq!(get(&srv, &format!("/s/{A}")).status, 200);
}

#[test]
fn hostile_text_stays_text() {
    let f = fixture();
    let evil = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">'\"&";
    let mut s = header("ffffffff-0000-7000-8000-00000000000f", evil);
    s += &msg("u1", None, "user", evil.into());
    s += &line(
        serde_json::json!({"type":"session_info","id":"n1","parentId":"u1","timestamp":"2025-01-02T10:00:01.000Z","name":evil}),
    );
    s += &line(
        serde_json::json!({"type":"label","id":"l1","parentId":"n1","timestamp":"2025-01-02T10:00:02.000Z","targetId":"u1","label":evil}),
    );
    s += &msg(
        "a1",
        Some("l1"),
        "assistant",
        serde_json::json!([{"type":"toolCall","id":"c","name":evil,"arguments":{"x":evil}},{"type":"thinking","thinking":evil}]),
    );
    write_session(&f.folder, "evil.jsonl", &s, 1_700_300_000);
    let srv = f.serve();
    for path in [
        "/".to_string(),
        "/?q=pwned".to_string(),
        "/search?q=pwned".to_string(),
        "/s/ffffffff-0000-7000-8000-00000000000f".to_string(),
        "/s/ffffffff-0000-7000-8000-00000000000f/a1".to_string(),
    ] {
        let r = get(&srv, &path);
        assert_eq!(r.status, 200, "{path}");
        // The only script is ours; the hostile markup is text.
        assert_eq!(count(&r.body, "<script"), 1, "{path}");
        assert!(r
            .body
            .contains("<script src=\"/assets/app.js\" defer></script>"));
        assert!(!r.body.contains("<img"), "{path}");
        assert!(!r.body.contains("onerror=\""), "{path}");
        assert!(
            r.body
                .contains("&lt;script&gt;window.__pwned=1&lt;/script&gt;"),
            "{path}"
        );
    }
}

#[test]
fn every_session_text_is_redacted() {
    let f = fixture();
    let sid = "99999999-0000-7000-8000-000000000099";
    let mut s = header(sid, &format!("/home/{SECRET}/proj"));
    s += &msg("u1", None, "user", format!("my key is {SECRET} ok").into());
    s += &line(
        serde_json::json!({"type":"session_info","id":"n1","parentId":"u1","timestamp":"2025-01-02T10:00:01.000Z","name":format!("name {SECRET}")}),
    );
    s += &line(
        serde_json::json!({"type":"label","id":"l1","parentId":"n1","timestamp":"2025-01-02T10:00:02.000Z","targetId":"u1","label":format!("label {SECRET}")}),
    );
    s += &msg(
        "a1",
        Some("l1"),
        "assistant",
        serde_json::json!([{"type":"thinking","thinking":format!("think {SECRET}")},{"type":"text","text":format!("say {SECRET}")},{"type":"toolCall","id":"c","name":"bash","arguments":{"command":format!("echo {SECRET}")}}]),
    );
    s += &line(
        serde_json::json!({"type":"message","id":"r1","parentId":"a1","timestamp":"2025-01-02T10:00:03.000Z",
        "message":{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":format!("out {SECRET}")}],"isError":false,"timestamp":1735812003000u64}}),
    );
    s += &line(
        serde_json::json!({"type":"message","id":"x1","parentId":"r1","timestamp":"2025-01-02T10:00:04.000Z",
        "message":{"role":"bashExecution","command":format!("cat {SECRET}"),"output":format!("{SECRET}\n"),"exitCode":0,"timestamp":1735812004000u64}}),
    );
    s += &line(
        serde_json::json!({"type":"compaction","id":"k1","parentId":"x1","timestamp":"2025-01-02T10:00:05.000Z","summary":format!("summary {SECRET}"),"firstKeptEntryId":"a1","tokensBefore":10}),
    );
    write_session(&f.folder, "secret.jsonl", &s, 1_700_400_000);
    let srv = f.serve();
    let mut seen = 0;
    for path in [
        "/".to_string(),
        "/?q=SECRET".to_string(),
        "/?q=SECRET&part=list".to_string(),
        "/search?q=SECRET".to_string(),
        "/search?q=key+is".to_string(),
        format!("/s/{sid}"),
        format!("/s/{sid}/u1"),
        format!("/s/{sid}/k1"),
        format!("/s/{sid}/r1?part=main"),
        format!("/api/version/{sid}"),
    ] {
        let r = get(&srv, &path);
        assert_eq!(r.status, 200, "{path}");
        assert!(!r.body.contains("K9Q2X7"), "{path}: {}", r.body);
        seen += count(&r.body, "[redacted]");
    }
    assert!(seen > 20, "{seen}");
    // The same pages without a redactor do show it (the test can fail).
    let plain = Setup {
        redact: sessiontree_web::no_redaction(),
        ..f.setup()
    }
    .start();
    assert!(get(&plain, &format!("/s/{sid}/k1")).body.contains(SECRET));
}

#[test]
fn host_method_and_headers() {
    let f = fixture();
    let srv = f.serve();
    let port = srv.addr.port();
    for host in [
        format!("evil.test:{port}"),
        format!("127.0.0.1.evil.test:{port}"),
        "127.0.0.1".to_string(),
    ] {
        let r = ask(&srv, "GET", &host, "");
        assert_eq!(r.status, 421, "{host}");
        secure_headers(&r);
        assert!(!r.body.contains(A));
    }
    // No Host at all (HTTP/1.0).
    let r = http::raw(srv.addr, "GET / HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 421);
    // Allowed names: localhost at the port, and a --public-url's.
    for host in [format!("localhost:{port}"), "view.example.com".to_string()] {
        let r = ask(&srv, "GET", &host, "");
        assert_eq!(r.status, 200, "{host}");
    }
    for m in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let r = ask(&srv, m, &srv.addr.to_string(), "Content-Length: 0\r\n");
        assert_eq!(r.status, 405, "{m}");
        assert_eq!(r.headers.get("allow").unwrap(), "GET, HEAD");
        secure_headers(&r);
    }
    let r = get(&srv, "/assets/app.js");
    assert_eq!(r.status, 200);
    assert!(r.headers["content-type"].starts_with("text/javascript"));
    secure_headers(&r);
    let r = get(&srv, "/nowhere");
    assert_eq!(r.status, 404);
    secure_headers(&r);
    let r = ask(&srv, "HEAD", &srv.addr.to_string(), "");
    assert_eq!(r.status, 200);
}

#[test]
fn token_by_header_cookie_or_link() {
    let f = fixture();
    let t = "test-token-0123456789abcdef";
    let srv = Setup {
        token: Some(t.to_string()),
        ..f.setup()
    }
    .start();
    let r = get(&srv, "/");
    assert_eq!(r.status, 401);
    assert!(!r.body.contains(A));
    secure_headers(&r);
    let r = get(&srv, &format!("/s/{A}/u3?token={t}&end=2"));
    assert_eq!(r.status, 303);
    assert_eq!(r.headers["location"], format!("/s/{A}/u3?end=2"));
    let cookie = &r.headers["set-cookie"];
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    let pair = cookie.split(';').next().unwrap();
    let r = get_with(&srv, "/", &format!("Cookie: {pair}\r\n"));
    assert_eq!(r.status, 200);
    assert_eq!(session_ids(&r.body), [B, A, C]);
    assert!(!r.body.contains(t), "the token is not in the page");
    let r = get_with(&srv, "/", &format!("Authorization: Bearer {t}\r\n"));
    assert_eq!(r.status, 200);
    let r = get_with(
        &srv,
        "/",
        "Authorization: Bearer test-token-0123456789abcdeX\r\n",
    );
    assert_eq!(r.status, 401);
    assert_eq!(get(&srv, "/?token=wrong").status, 401);
    assert_eq!(get(&srv, &format!("/api/version/{A}")).status, 401);
}

#[test]
fn a_long_session_is_paged() {
    let f = fixture();
    let sid = "12345678-0000-7000-8000-000000000123";
    let mut s = header(sid, "/long");
    let n = 3000;
    for i in 0..n {
        let parent = (i > 0).then(|| format!("e{}", i - 1));
        s += &msg(
            &format!("e{i}"),
            parent.as_deref(),
            if i % 2 == 0 { "user" } else { "assistant" },
            format!("message number {i}").into(),
        );
    }
    write_session(&f.folder, "long.jsonl", &s, 1_700_500_000);
    let srv = f.serve();
    let r = get(&srv, &format!("/s/{sid}"));
    assert_eq!(r.status, 200);
    let rows = count(&r.body, "class=\"row ");
    assert!(rows <= 151, "{rows} rows: a window around the leaf");
    assert_eq!(count(&r.body, "<article class=\"entry "), 100);
    let branch = |b: &str| b[b.find("<section class=\"branch\"").unwrap()..].to_string();
    assert!(branch(&r.body).contains("message number 2999<"));
    assert!(branch(&r.body).contains("message number 2900<"));
    assert!(!branch(&r.body).contains("message number 2899<"));
    let earlier = format!("/s/{sid}?end=2900#branch");
    assert!(r.body.contains(&earlier.replace('&', "&amp;")));
    let r = get(&srv, &format!("/s/{sid}?end=2900"));
    assert!(branch(&r.body).contains("message number 2899<"));
    assert!(branch(&r.body).contains("message number 2800<"));
    assert!(!branch(&r.body).contains("message number 2799<"));
    // At an entry far from the leaf: the tree window is around it.
    let r = get(&srv, &format!("/s/{sid}/e10"));
    assert!(r.body.contains("data-id=\"e10\""));
    assert!(!r.body.contains("data-id=\"e2999\""));
    assert!(r.body.contains("11 messages"));
}

#[test]
fn an_append_changes_the_version_and_the_page() {
    let f = fixture();
    let srv = f.serve();
    let v1 = get(&srv, &format!("/api/version/{C}")).body;
    assert!(!get(&srv, &format!("/s/{C}"))
        .body
        .contains("appended later"));
    let p = f.folder.join("c.jsonl");
    let mut file = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    file.write_all(msg("u2", Some("u1"), "user", "appended later".into()).as_bytes())
        .unwrap();
    drop(file);
    let v2 = get(&srv, &format!("/api/version/{C}")).body;
    assert_ne!(v1, v2);
    let r = get(&srv, &format!("/s/{C}?part=main"));
    assert!(r.body.contains("appended later"));
    assert!(r
        .body
        .starts_with("<!doctype html>\n<html><body><main id=\"main\">"));
}

/// Reads until the server closes the connection: what it sent before closing (maybe a
/// `408`), or None when it still held the connection open after 20 s; `feed` writes
/// (false: the write failed, the server closed).
fn until_closed(
    s: &mut std::net::TcpStream,
    mut feed: impl FnMut(&mut std::net::TcpStream) -> bool,
) -> Option<String> {
    use std::io::Read;
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut got = Vec::new();
    // 100 rounds of 200 ms: 20 s, far past the 1 s timeout and short of hyper's own
    // 30 s default (a limit that fails the test, not a timing it measures).
    for _ in 0..100 {
        if !feed(s) {
            // The server closed its side: writing failed.
            return Some(String::from_utf8_lossy(&got).into_owned());
        }
        let mut buf = [0u8; 4096];
        match s.read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return Some(String::from_utf8_lossy(&got).into_owned()),
        }
    }
    None
}

/// Slowloris: a client that sends its headers a byte at a time, or sends half of them and
/// then nothing, or never sends anything, is dropped after the header timeout and never
/// served; a normal request on the same server still is.
#[test]
fn slow_or_silent_clients_are_dropped() {
    let f = fixture();
    let srv = Setup {
        header_timeout: Duration::from_secs(1),
        ..f.setup()
    }
    .start();
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {}\r\nX-Padding: {}\r\nConnection: close\r\n\r\n",
        srv.addr,
        "a".repeat(400)
    );
    // A byte every round.
    let mut s = std::net::TcpStream::connect(srv.addr).unwrap();
    let mut at = 0;
    let sent = until_closed(&mut s, |s| {
        if at < request.len() {
            at += 1;
            s.write_all(&request.as_bytes()[at - 1..at]).is_ok()
        } else {
            true
        }
    })
    .expect("a client sending its headers byte by byte was never dropped");
    assert!(
        at < request.len(),
        "dropped before the headers were complete"
    );
    assert!(!sent.contains(" 200 "), "{sent}");
    assert!(!sent.contains(A), "{sent}");
    // Half the headers, then silence; and nothing at all.
    for start in [&request[..40], ""] {
        let mut s = std::net::TcpStream::connect(srv.addr).unwrap();
        s.write_all(start.as_bytes()).unwrap();
        let sent = until_closed(&mut s, |_| true)
            .unwrap_or_else(|| panic!("a client that sent {start:?} was never dropped"));
        assert!(!sent.contains(" 200 "), "{sent}");
    }
    let r = get(&srv, "/");
    assert_eq!(r.status, 200);
    assert_eq!(session_ids(&r.body), [B, A, C]);
}

/// A Pi session file under `<agent>/sessions/--work-p--/` with `texts` as a chain of user
/// messages (ids m0, m1, ...).
fn archived_session(agent: &Path, id: &str, texts: &[&str]) -> PathBuf {
    let folder = agent.join("sessions").join("--work-p--");
    std::fs::create_dir_all(&folder).unwrap();
    let mut s = header(id, "/work/p");
    for (i, t) in texts.iter().enumerate() {
        let parent = (i > 0).then(|| format!("m{}", i - 1));
        s += &msg(
            &format!("m{i}"),
            parent.as_deref(),
            if i % 2 == 0 { "user" } else { "assistant" },
            (*t).into(),
        );
    }
    let p = folder.join(format!("2025-01-02T10-00-00-000Z_{id}.jsonl"));
    std::fs::write(&p, s).unwrap();
    p
}

fn push_as(url: &str, agent: &Path, machine: &str) {
    let mut a = sessiontree_archive::Archive::open(url).unwrap();
    sessiontree_archive::push::push(
        &mut a,
        &sessiontree_archive::push::PushOptions {
            agent_dir: agent.to_path_buf(),
            paths: vec![],
            machine_name: Some(machine.into()),
            redact: Default::default(),
        },
    )
    .unwrap();
}

/// `serve --archive` as bob: his local sessions, his own archived one, alice's session
/// shared with his team (from both her machines), never her unshared one; search hits
/// marked with owner and machine; a permalink into alice's session renders its context;
/// a credential in it is redacted everywhere; the archive going away is an error page
/// while the server keeps serving, and it is used again once back.
#[test]
fn archive_sessions_are_listed_searched_and_opened() {
    use sessiontree_testkit::pg::Cluster;
    let Some(c) = Cluster::start("archive_sessions_are_listed_searched_and_opened") else {
        return;
    };
    c.setup_roles();
    c.psql("postgres", "postgres", "GRANT team TO bob").unwrap();
    let alice_url = c.url("alice", "archive");
    let bob_url = c.url("bob", "archive");
    let t = tempfile::tempdir().unwrap();
    const SHARED: &str = "5a5a5a5a-0000-7000-8000-00000000000a";
    const PRIVATE: &str = "7e7e7e7e-0000-7000-8000-00000000000b";
    const BOBS: &str = "b0b0b0b0-0000-7000-8000-00000000000c";
    // alice's laptop: the shared session (with a credential) and a private one.
    let laptop = t.path().join("laptop");
    archived_session(
        &laptop,
        SHARED,
        &[
            "plan the okapi migration",
            &format!("use the key {SECRET} for okapi"),
            "and then what",
        ],
    );
    archived_session(&laptop, PRIVATE, &["alice alone with her okapi diary"]);
    push_as(&alice_url, &laptop, "laptop");
    // Her desktop holds the shared session too, grown by one entry.
    let desktop = t.path().join("desktop");
    let p = archived_session(
        &desktop,
        SHARED,
        &[
            "plan the okapi migration",
            &format!("use the key {SECRET} for okapi"),
            "and then what",
            "desktop only okapi note",
        ],
    );
    push_as(&alice_url, &desktop, "desktop");
    let mut alice = sessiontree_archive::Archive::open(&alice_url).unwrap();
    sessiontree_archive::query::share(&mut alice, SHARED, "team").unwrap();
    // bob's own archived session (from another agent dir) and his local files.
    let bobs = t.path().join("bobs");
    archived_session(&bobs, BOBS, &["bob archived okapi thoughts"]);
    push_as(&bob_url, &bobs, "bobbox");
    let f = fixture();
    let srv = Setup {
        archive: Some(bob_url.clone()),
        ..f.setup()
    }
    .start();

    let r = get(&srv, "/");
    assert_eq!(r.status, 200, "{}", r.body);
    let ids = session_ids(&r.body);
    assert!(
        !r.body.contains(PRIVATE),
        "alice's unshared session is shown"
    );
    assert_eq!(ids.iter().filter(|i| *i == SHARED).count(), 2, "{ids:?}");
    assert_eq!(ids.iter().filter(|i| *i == BOBS).count(), 1, "{ids:?}");
    for local in [A, B, C] {
        assert!(ids.iter().any(|i| i == local), "{ids:?}");
    }
    for (owner, machine) in [("alice", "laptop"), ("alice", "desktop"), ("bob", "bobbox")] {
        assert!(
            r.body.contains(&format!(
                "data-owner=\"{owner}\" data-machine=\"{machine}\""
            )),
            "{owner}@{machine}"
        );
    }
    assert!(r.body.contains("<select name=\"machine\""));
    assert!(r.body.contains("<select name=\"owner\""));
    // The filters.
    assert_eq!(session_ids(&get(&srv, "/?machine=desktop").body), [SHARED]);
    let mut mine = session_ids(&get(&srv, "/?owner=bob").body);
    mine.sort();
    let mut want = vec![
        A.to_string(),
        B.to_string(),
        C.to_string(),
        BOBS.to_string(),
    ];
    want.sort();
    assert_eq!(
        mine, want,
        "bob's own: the served folder's and his archived one"
    );
    assert_eq!(session_ids(&get(&srv, "/?machine=here").body), [B, A, C]);
    // Search as you type reaches the archive, each copy linking to its newest hit.
    let r = get(&srv, "/?q=okapi&part=list");
    let ids = session_ids(&r.body);
    assert!(
        ids.contains(&SHARED.to_string()) && ids.contains(&BOBS.to_string()),
        "{ids:?}"
    );
    assert!(!r.body.contains(PRIVATE));
    assert!(
        r.body.contains(&format!("href=\"/s/{SHARED}/m")),
        "{}",
        r.body
    );
    // The search page: archive hits with owner and machines.
    let r = get(&srv, "/search?q=okapi");
    assert_eq!(r.status, 200);
    let archive = &r.body[r.body.find("In the archive").expect("an archive section")..];
    assert!(
        archive.contains(&format!("href=\"/s/{SHARED}/m3\"")),
        "{archive}"
    );
    assert!(archive.contains("<span class=\"owner\">alice</span>"));
    assert!(archive.contains("laptop") && archive.contains("desktop"));
    assert!(archive.contains("<mark>okapi</mark>"), "{archive}");
    assert!(
        !r.body.contains("diary"),
        "alice's unshared session is searched"
    );
    // A permalink into alice's session: its branch and what the model saw there.
    let r = get(&srv, &format!("/s/{SHARED}/m2"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("What the model saw here"));
    assert_eq!(count(&r.body, "<article class=\"msg\""), 3);
    assert!(r.body.contains("<span class=\"owner\">alice</span>"));
    // The newest copy (the desktop's) is the one opened.
    assert!(get(&srv, &format!("/s/{SHARED}"))
        .body
        .contains("desktop only okapi note"));
    assert_eq!(get(&srv, &format!("/s/{PRIVATE}")).status, 404);
    assert_eq!(get(&srv, &format!("/api/version/{SHARED}")).status, 200);
    // The credential: redacted on every page that shows the session.
    let mut redacted = 0;
    for path in [
        "/".to_string(),
        "/?q=key&part=list".to_string(),
        "/search?q=key".to_string(),
        format!("/s/{SHARED}"),
        format!("/s/{SHARED}/m1"),
    ] {
        let r = get(&srv, &path);
        assert_eq!(r.status, 200, "{path}");
        assert!(!r.body.contains("K9Q2X7"), "{path}: {}", r.body);
        redacted += count(&r.body, "[redacted]");
    }
    assert!(redacted >= 3, "{redacted}");
    // Nothing of the archive was written into the agent dir.
    let files = sessiontree_testkit::files::jsonl_under(&f.agent);
    assert_eq!(files.len(), 3, "{files:?}");

    // The archive goes away: a session only it has is an error page; the local ones and
    // the list still answer.
    c.stop_server("fast");
    let r = get(&srv, &format!("/s/{BOBS}"));
    assert_eq!(r.status, 502, "{}", r.body);
    assert!(r.body.contains("archive"));
    assert_eq!(get(&srv, &format!("/s/{A}")).status, 200);
    assert_eq!(get(&srv, "/").status, 200);
    // Back: connected again.
    c.start_server();
    let r = get(&srv, &format!("/s/{BOBS}"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("bob archived okapi thoughts"));
    let _ = p;
}
