pub mod env;
pub mod interop;
