//! OpenCode's recorded database (`opencode-recorded/opencode.db` of the import fixtures) as
//! the import and watch tests cut it back to an earlier state.

/// SQL: the id of the last user message of the session `?1` (where the tests cut the
/// session back to, as it was before its last turn).
pub const LAST_USER_MESSAGE: &str = "SELECT id FROM message WHERE session_id = ?1 AND data LIKE '%\"role\":\"user\"%' ORDER BY id DESC LIMIT 1";
