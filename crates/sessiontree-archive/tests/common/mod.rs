//! The throwaway PostgreSQL cluster of the archive tests lives in the testkit
//! (`sessiontree_testkit::pg`); test files here keep writing `mod common;`.

#![allow(unused_imports)]

pub use sessiontree_testkit::pg::*;
