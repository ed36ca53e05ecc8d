//! sessiontree
pub mod json;
