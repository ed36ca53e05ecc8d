pub mod interop;
