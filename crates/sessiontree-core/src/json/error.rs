//! Why a text is not JSON: the one error every part of the scanner gives.

/// Why a text is not JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanError {
    /// Byte offset of the problem inside the scanned text.
    pub offset: usize,
    /// What is wrong there, for a person.
    pub reason: &'static str,
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

/// An error at `offset`.
pub(crate) fn err(offset: usize, reason: &'static str) -> ScanError {
    ScanError { offset, reason }
}
