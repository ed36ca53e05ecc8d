//! sessiontree
