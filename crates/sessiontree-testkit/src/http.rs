//! A raw HTTP/1.1 client for the web server's tests: any request line, any `Host`, any
//! bytes (a browser or an HTTP library would refuse or fix what these tests send).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// An answer: the status, the headers (names in lower case) and the body as text.
pub struct Res {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: String,
}

/// Sends `request` as is on a new connection and reads the answer to the end of the
/// connection (send `Connection: close`).
pub fn raw(addr: SocketAddr, request: &str) -> Res {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    parse(&String::from_utf8(buf).unwrap())
}

/// An answer's text split into status, headers and body.
pub fn parse(text: &str) -> Res {
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let mut headers = HashMap::new();
    for l in lines {
        let (k, v) = l.split_once(':').unwrap();
        headers.insert(k.to_ascii_lowercase(), v.trim().to_string());
    }
    Res {
        status,
        headers,
        body: body.to_string(),
    }
}

/// `METHOD path` with `Host: host`, `Connection: close` and `extra` header lines (each
/// ending in `\r\n`).
pub fn request(addr: SocketAddr, method: &str, path: &str, host: &str, extra: &str) -> Res {
    raw(
        addr,
        &format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{extra}\r\n"),
    )
}

/// `GET path` naming the server's own address as `Host`, with `extra` header lines.
pub fn get(addr: SocketAddr, path: &str, extra: &str) -> Res {
    request(addr, "GET", path, &addr.to_string(), extra)
}
