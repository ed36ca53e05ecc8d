//! The Pi entries a converter builds, before ids are fixed: a tree of nodes in file
//! order, each with a key (its identity in the source) from which its id is derived.

use crate::lift::Lifted;
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
    /// collision) and writes every entry as Pi writes it, lifted strings put back.
    pub fn finish(self, namespace: &str, lift: &Lifted<'_>) -> (Vec<Line>, String) {
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
                            o.insert("tokensBefore".into(), num(tokens_before));
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
            let start = body.len();
            lift.expand_into(&canonical(&Value::Object(o)), &mut body);
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

/// A value as `JSON.stringify` writes it.
///
/// serde_json already writes strings as JavaScript does (a Rust string holds no lone
/// surrogate) and keeps keys in insertion order; it differs only in numbers JavaScript
/// prints otherwise (exponents, integers beyond 2^53) and in objects with array-index keys,
/// which JavaScript puts first. Only values holding one of those go through the canonical
/// writer, so the common case costs one serialization.
pub(crate) fn canonical(v: &Value) -> String {
    let s = serde_json::to_string(v).expect("a JSON value serializes");
    if plain(v) {
        s
    } else {
        sessiontree::json::canonicalize(s.as_bytes()).unwrap_or(s)
    }
}

/// Does serde_json write `v` exactly as `JSON.stringify` would?
fn plain(v: &Value) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) => {
                let ok = match (n.as_i64(), n.as_u64()) {
                    (Some(i), _) => i.unsigned_abs() <= 1 << 53,
                    (_, Some(u)) => u <= 1 << 53,
                    // serde_json writes 3.0 as "3.0" and uses exponents from other
                    // thresholds than JavaScript: only fractions in between are the same.
                    _ => n
                        .as_f64()
                        .is_some_and(|f| f.fract() != 0.0 && (1e-5..1e15).contains(&f.abs())),
                };
                if !ok {
                    return false;
                }
            }
            Value::Array(a) => stack.extend(a),
            Value::Object(o) => {
                for (k, x) in o {
                    if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) {
                        return false;
                    }
                    stack.push(x);
                }
            }
            _ => {}
        }
    }
    true
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
        "input": num(input),
        "output": num(output),
        "cacheRead": num(cache_read),
        "cacheWrite": num(cache_write),
        "totalTokens": num(total),
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    })
}

/// A number as JavaScript holds it: integral values as integers (serde_json would write
/// `3.0`).
pub(crate) fn num(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() <= (1u64 << 53) as f64 {
        Value::from(f as i64)
    } else {
        json!(f)
    }
}

/// Pi's image block from a base64 payload.
pub(crate) fn image(data: &str, mime: &str) -> Value {
    json!({"type": "image", "data": data, "mimeType": mime})
}

pub(crate) fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

pub(crate) fn text_owned(t: String) -> Value {
    let mut m = serde_json::Map::with_capacity(2);
    m.insert("type".into(), Value::String("text".into()));
    m.insert("text".into(), Value::String(t));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_output_is_used_only_where_it_is_what_javascript_writes() {
        for text in [
            r#"{"a":1,"b":"x\u0001\n\"é😀","c":[0.5,-3,1e-7,1e21,1.5e300,12345678901234567890]}"#,
            r#"{"b":1,"10":2,"2":3,"a":{"01":1,"1":2}}"#,
            r#"{"n":9007199254740993,"m":-0.0,"f":0.1}"#,
            r#"{"m":-0.0}"#,
            r#"{"m":3.0,"k":[0.000001,0.00001234,123456789012345.5]}"#,
            r#"[1e16,2.5e-6]"#,
        ] {
            let v: Value = serde_json::from_str(text).unwrap();
            let want =
                sessiontree::json::canonicalize(serde_json::to_string(&v).unwrap().as_bytes())
                    .unwrap();
            assert_eq!(canonical(&v), want, "{text}");
        }
        let v: Value = serde_json::from_str(r#"{"a":[1,2.5,"\t"],"b":{"c":null}}"#).unwrap();
        assert!(plain(&v));
        assert_eq!(canonical(&v), r#"{"a":[1,2.5,"\t"],"b":{"c":null}}"#);
    }
}
