//! Problems found while loading: a load never fails on one bad line, it reports it here.

use serde::Serialize;

/// What is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// A line that is not JSON (skipped, as the reference skips it).
    MalformedLine,
    /// The last line has no newline and is not JSON: an interrupted write.
    TornTail,
    /// The last line has no newline but is complete JSON (kept).
    MissingNewline,
    /// A line that is JSON but not an object (`42`, `[1]`, `null`): not an entry.
    NotAnObject,
    /// A second `type: "session"` line (skipped; the first header counts).
    ExtraHeader,
    /// An entry without a string `id` (kept in file order, not in the tree index).
    MissingId,
    /// An id used by an earlier entry (the later entry wins the index).
    DuplicateId,
    /// A `parentId` naming no entry (the entry becomes a root of the tree).
    OrphanParent,
    /// A `parentId` that is neither null nor a string.
    InvalidParent,
    /// Following `parentId` from this entry comes back to it.
    Cycle,
    /// Bytes that are not UTF-8 (replaced by U+FFFD, as the reference's reader does).
    InvalidUtf8,
    /// A header `version` newer than this library knows.
    UnknownVersion,
    /// A compaction whose `firstKeptEntryId` names no entry.
    MissingFirstKept,
}

/// One problem, located in the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// What kind of problem.
    pub kind: DiagnosticKind,
    /// What is wrong, for a person.
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} (byte {}): {}",
            self.line, self.offset, self.message
        )
    }
}
