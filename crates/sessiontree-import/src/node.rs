//! The Pi entries a converter builds, before ids are fixed: a tree of nodes in file
//! order, each with a key (its identity in the source) from which its id is derived.

use crate::{fnv, Line};
use serde_json::{json, Map, Value};
use std::collections::HashSet;

pub(crate) enum Body {
    /// A `message` entry; the message object (role, content, ..., timestamp).
    Message(Map<String, Value>),
    CustomMessage {
        custom_type: String,
        content: Value,
        display: bool,
        details: Option<Value>,
    },
    Custom {
        custom_type: String,
        data: Value,
    },
    /// `first_kept`: the node kept from (before the compaction on its path), or `None`
    /// for "keep nothing before me".
    Compaction {
        summary: String,
        tokens_before: f64,
        details: Option<Value>,
        first_kept: Option<usize>,
        /// Pi 1.6's fold of the system messages in the context it replaces.
        system_message: Option<Value>,
    },
    ModelChange {
        provider: String,
        model_id: String,
    },
    ThinkingLevel(String),
    SessionInfo(String),
}

pub(crate) struct Node {
    pub parent: Option<usize>,
    pub key: String,
    pub ms: i64,
    pub body: Body,
}

#[derive(Default)]
pub(crate) struct Nodes {
    pub nodes: Vec<Node>,
}

impl Nodes {
    pub fn push(&mut self, parent: Option<usize>, key: String, ms: i64, body: Body) -> usize {
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
    pub fn finish(self, namespace: &str) -> Vec<Line> {
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
        for (i, n) in self.nodes.into_iter().enumerate() {
            let id = &ids[i];
            let parent = n.parent.map(|p| ids[p].clone());
            let ts = Value::String(sessiontree::date::iso_from_ms(n.ms));
            let pid = parent.clone().map_or(Value::Null, Value::String);
            let mut o = Map::new();
            match n.body {
                Body::Custom { custom_type, data } => {
                    o.insert("type".into(), json!("custom"));
                    o.insert("customType".into(), Value::String(custom_type));
                    o.insert("data".into(), data);
                    o.insert("id".into(), json!(id));
                    o.insert("parentId".into(), pid);
                    o.insert("timestamp".into(), ts);
                }
                Body::CustomMessage {
                    custom_type,
                    content,
                    display,
                    details,
                } => {
                    o.insert("type".into(), json!("custom_message"));
                    o.insert("customType".into(), Value::String(custom_type));
                    o.insert("content".into(), content);
                    o.insert("display".into(), Value::Bool(display));
                    if let Some(d) = details {
                        o.insert("details".into(), d);
                    }
                    o.insert("id".into(), json!(id));
                    o.insert("parentId".into(), pid);
                    o.insert("timestamp".into(), ts);
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
                    o.insert("type".into(), json!(ty));
                    o.insert("id".into(), json!(id));
                    o.insert("parentId".into(), pid);
                    o.insert("timestamp".into(), ts);
                    match body {
                        Body::Message(m) => {
                            o.insert("message".into(), Value::Object(m));
                        }
                        Body::Compaction {
                            summary,
                            tokens_before,
                            details,
                            first_kept,
                            system_message,
                        } => {
                            o.insert("summary".into(), Value::String(summary));
                            let first = first_kept.map_or_else(|| id.clone(), |f| ids[f].clone());
                            o.insert("firstKeptEntryId".into(), Value::String(first));
                            o.insert("tokensBefore".into(), json!(tokens_before));
                            if let Some(d) = details {
                                o.insert("details".into(), d);
                            }
                            if let Some(m) = system_message {
                                o.insert("systemMessage".into(), m);
                            }
                        }
                        Body::ModelChange { provider, model_id } => {
                            o.insert("provider".into(), Value::String(provider));
                            o.insert("modelId".into(), Value::String(model_id));
                        }
                        Body::ThinkingLevel(l) => {
                            o.insert("thinkingLevel".into(), Value::String(l));
                        }
                        Body::SessionInfo(name) => {
                            o.insert("name".into(), Value::String(name));
                        }
                        _ => unreachable!(),
                    }
                }
            }
            out.push(Line {
                id: id.clone(),
                parent,
                json: canonical(&Value::Object(o)),
            });
        }
        out
    }
}

/// A value as `JSON.stringify` writes it.
pub(crate) fn canonical(v: &Value) -> String {
    let s = serde_json::to_string(v).expect("a JSON value serializes");
    sessiontree::json::canonicalize(s.as_bytes()).unwrap_or(s)
}

/// Pi's usage object with zero cost (the sources record tokens, not prices).
pub(crate) fn usage(
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
    total: Option<f64>,
) -> Value {
    let total = total.unwrap_or(input + output + cache_read + cache_write);
    json!({
        "input": input,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": total,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    })
}

/// Pi's image block from a base64 payload.
pub(crate) fn image(data: &str, mime: &str) -> Value {
    json!({"type": "image", "data": data, "mimeType": mime})
}

pub(crate) fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}
