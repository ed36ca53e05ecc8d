//! Reading a tool call's arguments: every mistake is one sentence naming the argument.

use serde_json::{Map, Value};

/// A tool error: one sentence for the model (and its user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `Err(ToolError(format!(...)))`.
macro_rules! fail {
    ($($t:tt)*) => { return Err($crate::args::ToolError(format!($($t)*))) };
}
pub(crate) use fail;

/// A call's arguments, checked against the names the tool takes.
pub struct Args<'a> {
    tool: &'static str,
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// Rejects names the tool does not take (a misspelt `limt` would otherwise be ignored
    /// silently).
    pub fn new(
        tool: &'static str,
        map: &'a Map<String, Value>,
        known: &[&str],
    ) -> Result<Args<'a>, ToolError> {
        if let Some(k) = map.keys().find(|k| !known.contains(&k.as_str())) {
            fail!(
                "{tool} takes no argument {:?}; it takes {}.",
                crate::answer::one_line(k, 40),
                known.join(", ")
            );
        }
        Ok(Args { tool, map })
    }

    /// A string argument; absent, null and "" are `None`.
    pub fn str(&self, name: &str) -> Result<Option<&'a str>, ToolError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => fail!("{}: {name} must be a string.", self.tool),
        }
    }

    /// A string argument that must be there.
    pub fn required(&self, name: &str) -> Result<&'a str, ToolError> {
        match self.str(name)? {
            Some(s) => Ok(s),
            None => fail!("{}: {name} is required (a non-empty string).", self.tool),
        }
    }

    /// A whole number in `1..=max`, `default` when absent.
    pub fn limit(&self, name: &str, default: usize, max: usize) -> Result<usize, ToolError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => match v.as_f64() {
                Some(n) if n.fract() == 0.0 && n >= 1.0 && n <= max as f64 => Ok(n as usize),
                _ => fail!(
                    "{}: {name} must be a whole number from 1 to {max}.",
                    self.tool
                ),
            },
        }
    }

    /// One of `allowed`, `default` when absent.
    pub fn choice(
        &self,
        name: &str,
        allowed: &[&'static str],
        default: &'static str,
    ) -> Result<&'static str, ToolError> {
        match self.str(name)? {
            None => Ok(default),
            Some(s) => match allowed.iter().find(|a| **a == s) {
                Some(a) => Ok(a),
                None => fail!(
                    "{}: {name} must be one of {}, not {:?}.",
                    self.tool,
                    allowed.join(", "),
                    crate::answer::one_line(s, 40)
                ),
            },
        }
    }

    /// A date argument as epoch milliseconds (see [`parse_date`]).
    pub fn date(&self, name: &str) -> Result<Option<f64>, ToolError> {
        match self.str(name)? {
            None => Ok(None),
            Some(s) => match parse_date(s) {
                Some(t) => Ok(Some(t)),
                None => fail!(
                    "{}: {name} is not a date: {:?} (use 2025-01-31, 2025-01-31T12:00Z, or 30m, 12h, 7d, 2w ago).",
                    self.tool,
                    crate::answer::one_line(s, 40)
                ),
            },
        }
    }
}

/// An ISO date/time, or `N` followed by `s`, `m`, `h`, `d` or `w`: that long ago.
pub fn parse_date(s: &str) -> Option<f64> {
    let t = s.trim();
    if let Some(unit) = t.chars().last().filter(|c| "smhdw".contains(*c)) {
        if let Ok(n) = t[..t.len() - 1].parse::<f64>() {
            if !n.is_finite() || n < 0.0 {
                return None;
            }
            let ms = match unit {
                's' => 1e3,
                'm' => 6e4,
                'h' => 3.6e6,
                'd' => 8.64e7,
                _ => 6.048e8,
            };
            return Some(sessiontree::date::now_ms() as f64 - n * ms);
        }
    }
    sessiontree::date::parse_iso(t)
}

/// Milliseconds as `2026-11-30 14:02` (UTC), `-` when not a valid time.
pub fn minute(ms: f64) -> String {
    if ms.is_finite() && ms.abs() <= 8.64e15 {
        let iso = sessiontree::date::iso_from_ms(ms as i64);
        format!("{} {}", &iso[..10], &iso[11..16])
    } else {
        "-".into()
    }
}

/// Milliseconds as ISO 8601 for the JSON; `null` when not a valid time.
pub fn iso(ms: Option<f64>) -> Value {
    match ms {
        Some(m) if m.is_finite() && m.abs() <= 8.64e15 => {
            Value::String(sessiontree::date::iso_from_ms(m as i64))
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked() {
        let m = serde_json::json!({"query": "x", "limit": 2.5});
        let m = m.as_object().unwrap();
        assert!(Args::new("t", m, &["query"]).is_err());
        let a = Args::new("t", m, &["query", "limit", "role"]).unwrap();
        assert_eq!(a.required("query").unwrap(), "x");
        assert!(a.required("role").is_err());
        assert!(a.limit("limit", 10, 100).is_err());
        assert_eq!(a.choice("role", &["user"], "user").unwrap(), "user");
        assert!(parse_date("7d").is_some());
        assert!(parse_date("2025-01-31").is_some());
        assert!(parse_date("yesterday").is_none());
        assert!(parse_date("-3d").is_none());
        assert_eq!(minute(f64::NAN), "-");
    }
}
