//! How much a long test does: a count (or scale) from an environment variable, so that CI
//! runs a bounded campaign and a person can ask for more.

/// The value of the environment variable `name` parsed as a `T`, else `default` (unset or
/// not a `T`).
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
