//! The journal shared by all tables: fixed-size, preallocated segment files holding records.

mod flusher;
mod reader;
mod segment;
mod writer;

pub(crate) use crate::record::MAX_RECORD_PAYLOAD;
pub(crate) use flusher::{Flusher, SyncTicket};
pub(crate) use reader::recover;
pub use segment::{segment_file_name, SEGMENT_HEADER_SIZE};
pub(crate) use segment::{slot_of, SegmentFile, SegmentPool};
pub(crate) use writer::{seal, Journal, Position};
