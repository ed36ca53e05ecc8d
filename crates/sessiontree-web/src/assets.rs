//! The page's script and style sheet, in the binary: served under `'self'`, the only
//! script the Content-Security-Policy allows.

pub const APP_JS: &str = include_str!("assets/app.js");
pub const STYLE_CSS: &str = include_str!("assets/style.css");
