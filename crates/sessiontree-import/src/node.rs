//! The Pi entries a converter builds, before ids are fixed: a tree of nodes in file
//! order, each with a key (its identity in the source) from which its id is derived.

use crate::jv::{obj, Obj, S, V};
use crate::{fnv, Line};
use foldhash::{HashSet, HashSetExt};
use std::borrow::Cow;

pub(crate) enum Body<'a> {
    /// A `message` entry; the message object (role, content, ..., timestamp).
    Message(Obj<'a>),
    CustomMessage {
        custom_type: String,
        content: V<'a>,
        display: bool,
        details: Option<V<'a>>,
    },
    Custom {
        custom_type: String,
        data: V<'a>,
    },
    /// `first_kept`: the node kept from (before the compaction on its path), or `None`
    /// for "keep nothing before me".
    Compaction {
        summary: String,
        tokens_before: f64,
        details: Option<V<'a>>,
        first_kept: Option<usize>,
        /// Pi 1.6's fold of the system messages in the context it replaces.
        system_message: Option<V<'a>>,
    },
    ModelChange {
        provider: String,
        model_id: String,
    },
    ThinkingLevel(String),
    SessionInfo(String),
}

pub(crate) struct Node<'a> {
    pub parent: Option<usize>,
    pub key: Cow<'a, str>,
    pub ms: i64,
    pub body: Body<'a>,
}

#[derive(Default)]
pub(crate) struct Nodes<'a> {
    pub nodes: Vec<Node<'a>>,
}

impl<'a> Nodes<'a> {
    pub fn push(
        &mut self,
        parent: Option<usize>,
        key: impl Into<Cow<'a, str>>,
        ms: i64,
        body: Body<'a>,
    ) -> usize {
        self.nodes.push(Node {
            parent,
            key: key.into(),
            ms,
            body,
        });
        self.nodes.len() - 1
    }

    /// Fixes ids (derived from `namespace` and each key, in file order, redrawn on a
    /// collision) and writes every entry as Pi writes it.
    pub fn finish(self, namespace: &str) -> (Vec<Line>, String) {
        let mut used: HashSet<u32> = HashSet::with_capacity(self.nodes.len());
        // Every id's 8 lowercase hex digits, one after the other.
        let mut all_ids = String::with_capacity(8 * self.nodes.len());
        for n in &self.nodes {
            let mut salt = 0u32;
            loop {
                let mut digits = [0u8; 20];
                let h = fnv(&[
                    namespace.as_bytes(),
                    n.key.as_bytes(),
                    crate::decimal_bytes(salt.into(), &mut digits),
                ]);
                let id = (h >> 32) as u32;
                if used.insert(id) {
                    all_ids.extend(hex8(id).iter().map(|&c| c as char));
                    break;
                }
                salt += 1;
            }
        }
        let id_str = |i: usize| &all_ids[8 * i..8 * i + 8];
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut body = crate::body_buffer();
        for (i, n) in self.nodes.into_iter().enumerate() {
            let id = id_str(i);
            let parent = n.parent.map(id_str);
            let start = body.len();
            // The entry's members in Pi's order; the header members (type, id, parentId,
            // timestamp) come first except for custom entries, where Pi writes them last.
            let mut e = Entry::new(&mut body);
            let header = |e: &mut Entry<'_>| {
                e.plain("id", id);
                match parent {
                    Some(p) => e.plain("parentId", p),
                    None => e.raw("parentId", "null"),
                }
                e.key("timestamp");
                e.out.push('"');
                sessiontree::date::write_iso_from_ms(n.ms, e.out);
                e.out.push('"');
            };
            match n.body {
                Body::Custom { custom_type, data } => {
                    e.plain("type", "custom");
                    e.text("customType", &custom_type);
                    e.value("data", &data);
                    header(&mut e);
                }
                Body::CustomMessage {
                    custom_type,
                    content,
                    display,
                    details,
                } => {
                    e.plain("type", "custom_message");
                    e.text("customType", &custom_type);
                    e.value("content", &content);
                    e.raw("display", if display { "true" } else { "false" });
                    if let Some(d) = &details {
                        e.value("details", d);
                    }
                    header(&mut e);
                }
                Body::Message(m) => {
                    e.plain("type", "message");
                    header(&mut e);
                    e.key("message");
                    V::Obj(m).write(e.out);
                }
                Body::Compaction {
                    summary,
                    tokens_before,
                    details,
                    first_kept,
                    system_message,
                } => {
                    e.plain("type", "compaction");
                    header(&mut e);
                    e.text("summary", &summary);
                    e.plain("firstKeptEntryId", first_kept.map_or(id, id_str));
                    e.value("tokensBefore", &V::from(tokens_before));
                    if let Some(d) = &details {
                        e.value("details", d);
                    }
                    if let Some(m) = &system_message {
                        e.value("systemMessage", m);
                    }
                }
                Body::ModelChange { provider, model_id } => {
                    e.plain("type", "model_change");
                    header(&mut e);
                    e.text("provider", &provider);
                    e.text("modelId", &model_id);
                }
                Body::ThinkingLevel(l) => {
                    e.plain("type", "thinking_level_change");
                    header(&mut e);
                    e.text("thinkingLevel", &l);
                }
                Body::SessionInfo(name) => {
                    e.plain("type", "session_info");
                    header(&mut e);
                    e.text("name", &name);
                }
            }
            body.push('}');
            out.push(Line {
                id: id.to_string(),
                parent: parent.map(str::to_string),
                range: start..body.len(),
            });
            body.push('\n');
        }
        (out, body)
    }
}

/// One entry's JSON object, written member by member as `JSON.stringify` writes it.
struct Entry<'b> {
    out: &'b mut String,
    first: bool,
}

impl<'b> Entry<'b> {
    fn new(out: &'b mut String) -> Self {
        out.push('{');
        Entry { out, first: true }
    }

    /// A member's key (a plain ASCII name) and colon.
    fn key(&mut self, k: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out.push('"');
        self.out.push_str(k);
        self.out.push_str("\":");
    }

    /// JSON text as it is.
    fn raw(&mut self, k: &str, json: &str) {
        self.key(k);
        self.out.push_str(json);
    }

    /// A string that needs no escape (type names, ids).
    fn plain(&mut self, k: &str, s: &str) {
        self.key(k);
        self.out.push('"');
        self.out.push_str(s);
        self.out.push('"');
    }

    /// Any string, escaped as `JSON.stringify` escapes it.
    fn text(&mut self, k: &str, s: &str) {
        self.key(k);
        S::from(s).write(self.out);
    }

    fn value(&mut self, k: &str, v: &V<'_>) {
        self.key(k);
        v.write(self.out);
    }
}

/// `n` as 8 lowercase hex digits.
fn hex8(n: u32) -> [u8; 8] {
    let mut out = [0u8; 8];
    for (k, c) in out.iter_mut().enumerate() {
        *c = b"0123456789abcdef"[(n >> (28 - 4 * k)) as usize & 15];
    }
    out
}

/// Pi's usage object with zero cost (the sources record tokens, not prices).
pub(crate) fn usage(
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
    total: Option<f64>,
) -> V<'static> {
    let total = total.unwrap_or(input + output + cache_read + cache_write);
    obj! {
        "input": input,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": total,
        "cost": obj! {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0},
    }
}

/// Pi's image block from a base64 payload.
pub(crate) fn image<'a>(data: impl Into<S<'a>>, mime: impl Into<S<'a>>) -> V<'a> {
    obj! {"type": "image", "data": data.into(), "mimeType": mime.into()}
}

/// Pi's text block.
pub(crate) fn text<'a>(t: impl Into<S<'a>>) -> V<'a> {
    obj! {"type": "text", "text": t.into()}
}
