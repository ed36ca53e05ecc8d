//! [`Json`]: an owned JSON value as canonical text, for values sessiontree writes.

use super::{canonicalize, write_js_string, Raw};
use crate::error::{Error, Result};

/// A JSON value to store, as canonical text (what `JSON.stringify` prints for it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Json(String);

impl Json {
    /// Parses and canonicalizes JSON text.
    pub fn parse(text: &str) -> Result<Json> {
        canonicalize(text.as_bytes())
            .map(Json)
            .map_err(|e| Error::Json(e.to_string()))
    }

    /// Any serializable value.
    pub fn from_serialize<T: serde::Serialize + ?Sized>(v: &T) -> Result<Json> {
        let s = serde_json::to_string(v).map_err(|e| Error::Json(e.to_string()))?;
        Json::parse(&s)
    }

    /// A JSON string.
    pub fn string(s: &str) -> Json {
        let mut out = String::new();
        write_js_string(&mut out, s);
        Json(out)
    }

    /// `null`.
    pub fn null() -> Json {
        Json("null".into())
    }

    /// `true` or `false`.
    pub fn bool(b: bool) -> Json {
        Json(if b { "true" } else { "false" }.into())
    }

    /// Takes JSON text as it is, without validating or canonicalizing it: for text that
    /// came out of a validated [`Raw`] and is passed on unchanged.
    #[doc(hidden)] // plumbing between the core and the store
    pub fn from_text_unchecked(text: String) -> Json {
        Json(text)
    }

    /// The canonical text.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value as a borrowed [`Raw`] (to read its members).
    pub fn raw(&self) -> Raw<'_> {
        Raw::new_unchecked(self.0.as_bytes())
    }
}

impl From<serde_json::Value> for Json {
    fn from(v: serde_json::Value) -> Json {
        Json::from_serialize(&v).expect("a serde_json value serializes")
    }
}
