//! The Pi entries a converter builds, before ids are fixed: a tree of nodes in file
//! order, each with a key (its identity in the source) from which its id is derived.

use crate::jv::{obj, Obj, S, V};
use crate::{fnv, Line};
use foldhash::{HashSet, HashSetExt};

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
    pub key: String,
    pub ms: i64,
    pub body: Body<'a>,
}

#[derive(Default)]
pub(crate) struct Nodes<'a> {
    pub nodes: Vec<Node<'a>>,
}

impl<'a> Nodes<'a> {
    pub fn push(&mut self, parent: Option<usize>, key: String, ms: i64, body: Body<'a>) -> usize {
        self.nodes.push(Node {
            parent,
            key,
            ms,
            body,
        });
        self.nodes.len() - 1
    }

    /// Fixes ids (derived from `namespace` and each key, in file order, redrawn on a
    /// collision) and writes every entry as Pi writes it.
    pub fn finish(self, namespace: &str) -> (Vec<Line>, String) {
        let mut used: HashSet<String> = HashSet::with_capacity(self.nodes.len());
        let mut ids: Vec<String> = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let mut salt = 0u32;
            loop {
                let s = salt.to_string();
                let h = fnv(&[namespace.as_bytes(), n.key.as_bytes(), s.as_bytes()]);
                let id = format!("{:08x}", (h >> 32) as u32);
                if used.insert(id.clone()) {
                    ids.push(id);
                    break;
                }
                salt += 1;
            }
        }
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut body = crate::body_buffer();
        for (i, n) in self.nodes.into_iter().enumerate() {
            let id = &ids[i];
            let parent = n.parent.map(|p| ids[p].clone());
            let ts = V::from(sessiontree::date::iso_from_ms(n.ms));
            let pid = parent.clone().map_or(V::Null, V::from);
            let mut o = Obj::with_capacity(8);
            match n.body {
                Body::Custom { custom_type, data } => {
                    o.push_new("type", V::from("custom"));
                    o.push_new("customType", V::from(custom_type));
                    o.push_new("data", data);
                    o.push_new("id", V::from(id.as_str()));
                    o.push_new("parentId", pid);
                    o.push_new("timestamp", ts);
                }
                Body::CustomMessage {
                    custom_type,
                    content,
                    display,
                    details,
                } => {
                    o.push_new("type", V::from("custom_message"));
                    o.push_new("customType", V::from(custom_type));
                    o.push_new("content", content);
                    o.push_new("display", V::Bool(display));
                    if let Some(d) = details {
                        o.push_new("details", d);
                    }
                    o.push_new("id", V::from(id.as_str()));
                    o.push_new("parentId", pid);
                    o.push_new("timestamp", ts);
                }
                body => {
                    let ty = match &body {
                        Body::Message(_) => "message",
                        Body::Compaction { .. } => "compaction",
                        Body::ModelChange { .. } => "model_change",
                        Body::ThinkingLevel(_) => "thinking_level_change",
                        Body::SessionInfo(_) => "session_info",
                        _ => unreachable!(),
                    };
                    o.push_new("type", V::from(ty));
                    o.push_new("id", V::from(id.as_str()));
                    o.push_new("parentId", pid);
                    o.push_new("timestamp", ts);
                    match body {
                        Body::Message(m) => {
                            o.push_new("message", V::Obj(m));
                        }
                        Body::Compaction {
                            summary,
                            tokens_before,
                            details,
                            first_kept,
                            system_message,
                        } => {
                            o.push_new("summary", V::from(summary));
                            let first = first_kept.map_or_else(|| id.clone(), |f| ids[f].clone());
                            o.push_new("firstKeptEntryId", V::from(first));
                            o.push_new("tokensBefore", V::from(tokens_before));
                            if let Some(d) = details {
                                o.push_new("details", d);
                            }
                            if let Some(m) = system_message {
                                o.push_new("systemMessage", m);
                            }
                        }
                        Body::ModelChange { provider, model_id } => {
                            o.push_new("provider", V::from(provider));
                            o.push_new("modelId", V::from(model_id));
                        }
                        Body::ThinkingLevel(l) => {
                            o.push_new("thinkingLevel", V::from(l));
                        }
                        Body::SessionInfo(name) => {
                            o.push_new("name", V::from(name));
                        }
                        _ => unreachable!(),
                    }
                }
            }
            let start = body.len();
            V::Obj(o).write(&mut body);
            out.push(Line {
                id: id.clone(),
                parent,
                range: start..body.len(),
            });
            body.push('\n');
        }
        (out, body)
    }
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
