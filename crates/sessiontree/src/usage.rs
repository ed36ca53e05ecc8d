//! Token and cost records of a session (assistant `usage` and `usage` entries), one
//! streaming pass, for `sessiontree stats`.

use crate::json::{Kind, Raw};
use crate::list::Line;
use std::io::Read;
use std::path::Path;

/// Token counts and cost of one record or a sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// How many records were summed.
    pub records: u64,
    /// Input tokens not read from the cache.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read: f64,
    /// Input tokens written to the prompt cache.
    pub cache_write: f64,
    /// `totalTokens` (the sum of the four counts where a record has none).
    pub total_tokens: f64,
    /// `cost.total`, in US dollars.
    pub cost: f64,
}

impl Usage {
    /// Adds another record or sum to this one.
    pub fn add(&mut self, o: &Usage) {
        self.records += o.records;
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
        self.total_tokens += o.total_tokens;
        self.cost += o.cost;
    }

    /// From a `usage` object: `{input, output, cacheRead, cacheWrite, totalTokens?, cost{total}}`.
    pub(crate) fn from_raw(u: Raw<'_>) -> Usage {
        let n = |k: &str| {
            u.get(k)
                .and_then(|v| v.as_f64())
                .filter(|v| v.is_finite())
                .unwrap_or(0.0)
        };
        let (input, output, cache_read, cache_write) =
            (n("input"), n("output"), n("cacheRead"), n("cacheWrite"));
        let total = u
            .get("totalTokens")
            .and_then(|v| v.as_f64())
            .filter(|v| v.is_finite())
            .unwrap_or(input + output + cache_read + cache_write);
        let cost = u
            .get("cost")
            .and_then(|c| c.get("total"))
            .and_then(|v| v.as_f64())
            .filter(|v| v.is_finite())
            .unwrap_or(0.0);
        Usage {
            records: 1,
            input,
            output,
            cache_read,
            cache_write,
            total_tokens: total,
            cost,
        }
    }
}

/// One entry of a session, as far as stats need it.
#[derive(Clone, Debug)]
pub struct Record {
    /// The entry's id.
    pub id: Option<String>,
    /// Its `parentId`.
    pub parent: Option<String>,
    /// Entry timestamp text (with the id, identifies entries copied into forks).
    pub timestamp: String,
    /// `timestamp` in ms.
    pub ts_ms: Option<f64>,
    /// The provider of the assistant message or `usage` entry (empty otherwise).
    pub provider: String,
    /// The model id.
    pub model: String,
    /// Its usage; `None` for entries without one.
    pub usage: Option<Usage>,
}

/// Every entry of a file (after the header), with usage where it has one; `None` when the
/// file is not a session. The last record is the leaf.
pub fn records(path: &Path) -> Option<Vec<Record>> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    // Sessions are read whole here, one at a time per thread.
    f.read_to_end(&mut bytes).ok()?;
    records_in(&bytes)
}

/// [`records`] of a session's bytes (the archive computes them at push time).
pub fn records_in(bytes: &[u8]) -> Option<Vec<Record>> {
    let mut out = Vec::new();
    let mut header = false;
    for raw in bytes.split(|&c| c == b'\n') {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let text = String::from_utf8_lossy(raw);
        let b = text.as_bytes();
        if crate::json::scan::is_blank(b) {
            continue;
        }
        let Ok(s) = crate::json::scan::scan(b) else {
            continue;
        };
        let line = Line { b, s };
        let top = line.top();
        if !top.truthy() {
            continue;
        }
        if !header {
            if top.kind() != Kind::Object || line.get_str("type").as_deref() != Some("session") {
                return None;
            }
            header = true;
            continue;
        }
        if top.kind() != Kind::Object {
            continue;
        }
        let ty = line.get_str("type").unwrap_or_default();
        let ts = line.get("timestamp");
        let mut r = Record {
            id: line.get_str("id").map(|x| x.into_owned()),
            parent: line.get_str("parentId").map(|x| x.into_owned()),
            timestamp: ts.map(|t| t.text().to_string()).unwrap_or_default(),
            ts_ms: crate::date::js_date_ms(ts),
            provider: String::new(),
            model: String::new(),
            usage: None,
        };
        let s = |v: Option<Raw<'_>>| {
            v.and_then(|v| v.as_str())
                .map(|x| x.into_owned())
                .unwrap_or_default()
        };
        if ty == "message" {
            if line
                .inner("message", "role")
                .and_then(|r| r.as_str())
                .as_deref()
                == Some("assistant")
            {
                if let Some(u) = line
                    .inner("message", "usage")
                    .filter(|u| u.kind() == Kind::Object)
                {
                    r.usage = Some(Usage::from_raw(u));
                    r.provider = s(line.inner("message", "provider"));
                    r.model = s(line.inner("message", "model"));
                    if let Some(t) = line.inner("message", "timestamp").and_then(|t| t.as_f64()) {
                        r.ts_ms = Some(t);
                    }
                }
            }
        } else if ty == "usage" {
            if let Some(u) = line.get("usage").filter(|u| u.kind() == Kind::Object) {
                r.usage = Some(Usage::from_raw(u));
                r.provider = s(line.get("provider"));
                r.model = s(line.get("model"));
            }
        }
        out.push(r);
    }
    header.then_some(out)
}

/// The records on the current branch: from the last entry up the parent links.
pub fn on_branch(records: &[Record]) -> Vec<&Record> {
    on_branch_at(records)
        .into_iter()
        .map(|i| &records[i])
        .collect()
}

/// The positions in `records` of [`on_branch`]'s records, in its order.
pub fn on_branch_at(records: &[Record]) -> Vec<usize> {
    let mut by: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, r) in records.iter().enumerate() {
        if let Some(id) = &r.id {
            by.insert(id, i);
        }
    }
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cur = records.iter().rposition(|r| r.id.is_some());
    while let Some(i) = cur {
        let r = &records[i];
        if !seen.insert(r.id.as_deref()) {
            break;
        }
        out.push(i);
        cur = r.parent.as_deref().and_then(|p| by.get(p).copied());
    }
    out.reverse();
    out
}

/// The UTC day (`YYYY-MM-DD`) of a record's time in ms, `-` without one (or past what a
/// date holds): `stats --by day`'s key.
pub fn day_of(ts_ms: Option<f64>) -> String {
    ts_ms
        .filter(|t| t.is_finite() && t.abs() <= 8.64e15)
        .map(|t| crate::date::iso_from_ms(t as i64)[..10].to_string())
        .unwrap_or_else(|| "-".into())
}

/// A token count for people: rounded to a whole number, with thousands separators
/// (1234567 -> "1,234,567"). For values a `u64` holds; callers choose another form past
/// that.
pub fn thousands(x: f64) -> String {
    let r = x.round();
    let digits = format!("{}", r.abs() as u64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if r < 0.0 {
        out.insert(0, '-');
    }
    out
}
