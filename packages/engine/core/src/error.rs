//! Errors, each with a stable [`ErrorCode`] that the Node binding maps one-to-one to a JS `code`.
//!
//! The codes are part of Wharf's one error catalogue (`packages/wire/src/errors.ts`, rendered in
//! `docs/ERRORS.md`); a test there checks that the catalogue's engine codes equal [`ErrorCode::ALL`].

use std::fmt;

/// Stable, machine-readable error kinds. The string form (`WHARF_…`) is part of the public API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// A caller passed a bad argument (a bad table name, key, option or document batch).
    InvalidArgument,
    /// A batch that cannot be read as documents at all: a JSON array that does not parse (one bad
    /// document is a document error of its write instead).
    MalformedJson,
    /// The named table does not exist.
    TableNotFound,
    /// A table with that name already exists.
    TableExists,
    /// The named index does not exist on the table.
    IndexNotFound,
    /// `create_index` on a name the table already has.
    IndexExists,
    /// The index is still being built (or a wait for it timed out).
    IndexNotReady,
    /// An earlier write or fdatasync failed; the handle refuses all writes until reopened.
    Poisoned,
    /// The database was closed.
    Closed,
    /// Another process holds the database directory.
    Locked,
    /// The journal holds a damaged record followed by records that were already durable.
    CorruptJournal,
    /// No manifest slot or checkpoint file validates.
    CorruptCheckpoint,
    /// The operating system refused an I/O call.
    Io,
}

impl ErrorCode {
    /// Every code, in declaration order (the binding exports it as `errorCodes()`).
    pub const ALL: [ErrorCode; 13] = [
        ErrorCode::InvalidArgument,
        ErrorCode::MalformedJson,
        ErrorCode::TableNotFound,
        ErrorCode::TableExists,
        ErrorCode::IndexNotFound,
        ErrorCode::IndexExists,
        ErrorCode::IndexNotReady,
        ErrorCode::Poisoned,
        ErrorCode::Closed,
        ErrorCode::Locked,
        ErrorCode::CorruptJournal,
        ErrorCode::CorruptCheckpoint,
        ErrorCode::Io,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "WHARF_ERR_INVALID_ARGUMENT",
            ErrorCode::MalformedJson => "WHARF_ERR_MALFORMED_JSON",
            ErrorCode::TableNotFound => "WHARF_ERR_TABLE_NOT_FOUND",
            ErrorCode::TableExists => "WHARF_ERR_TABLE_EXISTS",
            ErrorCode::IndexNotFound => "WHARF_ERR_INDEX_NOT_FOUND",
            ErrorCode::IndexExists => "WHARF_ERR_INDEX_EXISTS",
            ErrorCode::IndexNotReady => "WHARF_ERR_INDEX_NOT_READY",
            ErrorCode::Poisoned => "WHARF_ERR_POISONED",
            ErrorCode::Closed => "WHARF_ERR_CLOSED",
            ErrorCode::Locked => "WHARF_ERR_LOCKED",
            ErrorCode::CorruptJournal => "WHARF_ERR_CORRUPT_JOURNAL",
            ErrorCode::CorruptCheckpoint => "WHARF_ERR_CORRUPT_CHECKPOINT",
            ErrorCode::Io => "WHARF_ERR_IO",
        }
    }
}

/// An engine error: a code plus a message that says what and where, in the user's terms, and the
/// names it concerns as fields, so callers never parse them out of the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
    /// The table the error concerns, when there is one.
    pub table: Option<String>,
    /// The secondary index the error concerns, when there is one.
    pub index: Option<String>,
}

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), table: None, index: None }
    }
    pub fn with_table(mut self, table: &str) -> Self {
        self.table = Some(table.to_owned());
        self
    }
    pub fn with_index(mut self, index: &str) -> Self {
        self.index = Some(index.to_owned());
        self
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidArgument, message)
    }
    pub fn table_not_found(name: &str) -> Self {
        Error::new(ErrorCode::TableNotFound, format!("table `{name}` does not exist")).with_table(name)
    }
    pub fn io(context: impl fmt::Display, err: std::io::Error) -> Self {
        Error::new(ErrorCode::Io, format!("{context}: {err}"))
    }
    pub fn corrupt_journal(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::CorruptJournal, message)
    }
    pub fn corrupt_checkpoint(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::CorruptCheckpoint, message)
    }
    pub fn closed() -> Self {
        Error::new(ErrorCode::Closed, "the database is closed")
    }
    /// The error every write gets after the first failed write or fdatasync.
    pub fn poisoned(cause: &str) -> Self {
        Error::new(
            ErrorCode::Poisoned,
            format!(
                "an earlier journal write or fdatasync failed ({cause}); nothing written after it \
                 is durable. Close and reopen the database to recover."
            ),
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn all_lists_every_code_once_with_a_distinct_string() {
        let strings: HashSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(strings.len(), ErrorCode::ALL.len());
        assert!(strings.iter().all(|s| s.starts_with("WHARF_ERR_")));
        // A new variant must be added to ALL: this match stops compiling until it is handled.
        for code in ErrorCode::ALL {
            match code {
                ErrorCode::InvalidArgument
                | ErrorCode::MalformedJson
                | ErrorCode::TableNotFound
                | ErrorCode::TableExists
                | ErrorCode::IndexNotFound
                | ErrorCode::IndexExists
                | ErrorCode::IndexNotReady
                | ErrorCode::Poisoned
                | ErrorCode::Closed
                | ErrorCode::Locked
                | ErrorCode::CorruptJournal
                | ErrorCode::CorruptCheckpoint
                | ErrorCode::Io => {}
            }
        }
    }
}
