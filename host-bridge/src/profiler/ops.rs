//! Op tags: the `u16` every device launch carries in `OpDesc::op_id`, which
//! the device echoes in its events and the XSpace export keys its op table by.
//!
//! Tags are interned by TF node name, one per distinct op in a profiling
//! session. While no session runs, [`op_tag`] returns [`UNPROFILED`] without
//! touching the table (one relaxed load). Tag 0 is a real table entry
//! ("unprofiled op"), so a launch tagged before a session started still shows
//! up, just without its name.

use crate::host_spans::RECORDING;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use tensorplug_core::xspace::OpInfo;

/// The tag of ops launched while profiling was off (or the table was full).
pub const UNPROFILED: u16 = 0;
/// Event name of [`UNPROFILED`].
pub const UNPROFILED_NAME: &str = "unprofiled op";

/// What the profiler knows about one tagged op (owned form of [`OpInfo`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpEntry {
    /// TF node name, e.g. `sequential/dense/MatMul`.
    pub name: String,
    /// `name:type`, e.g. `sequential/dense/MatMul:MatMul` (empty for tag 0).
    pub tf_op: String,
    /// Floating-point operations of the first launch seen.
    pub flops: u64,
    /// Bytes read and written by the first launch seen.
    pub bytes: u64,
}

impl OpEntry {
    /// The borrowed form the XSpace builder takes.
    pub fn info(&self) -> OpInfo<'_> {
        OpInfo {
            name: &self.name,
            tf_op: &self.tf_op,
            flops: self.flops,
            bytes_accessed: self.bytes,
        }
    }
}

/// The interner: node name → tag, and tag → entry.
#[derive(Debug)]
pub struct OpTable {
    by_name: HashMap<String, u16>,
    entries: Vec<OpEntry>,
}

impl Default for OpTable {
    fn default() -> Self {
        Self::new()
    }
}

impl OpTable {
    /// A table holding only [`UNPROFILED`].
    pub fn new() -> Self {
        Self {
            by_name: HashMap::new(),
            entries: vec![unprofiled_entry()],
        }
    }

    /// The tag of `node_name`, interning it on first sight. A full table
    /// (65,535 distinct ops in one session) answers [`UNPROFILED`].
    pub fn intern(&mut self, node_name: &str, op_type: &str, flops: u64, bytes: u64) -> u16 {
        if let Some(&tag) = self.by_name.get(node_name) {
            return tag;
        }
        let Ok(tag) = u16::try_from(self.entries.len()) else {
            return UNPROFILED;
        };
        self.entries.push(OpEntry {
            name: node_name.to_owned(),
            tf_op: format!("{node_name}:{op_type}"),
            flops,
            bytes,
        });
        self.by_name.insert(node_name.to_owned(), tag);
        tag
    }

    /// Entries indexed by tag.
    #[cfg(test)]
    pub fn entries(&self) -> &[OpEntry] {
        &self.entries
    }

    /// Hands the entries over and starts empty again (only [`UNPROFILED`]).
    pub fn take(&mut self) -> Vec<OpEntry> {
        self.by_name = HashMap::new();
        std::mem::replace(&mut self.entries, vec![unprofiled_entry()])
    }
}

fn unprofiled_entry() -> OpEntry {
    OpEntry {
        name: UNPROFILED_NAME.to_owned(),
        ..OpEntry::default()
    }
}

static TABLE: Mutex<Option<OpTable>> = Mutex::new(None);

fn table() -> MutexGuard<'static, Option<OpTable>> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tag to put in `OpDesc::op_id` for TF node `node_name` of type
/// `op_type`, whose launch computes `flops` and touches `bytes`.
///
/// [`UNPROFILED`] while no profiling session runs; otherwise a short lock
/// and a hash lookup (first sight of a node allocates its entry).
pub fn op_tag(node_name: &str, op_type: &str, flops: u64, bytes: u64) -> u16 {
    if !RECORDING.is_enabled() {
        return UNPROFILED;
    }
    table()
        .get_or_insert_with(OpTable::new)
        .intern(node_name, op_type, flops, bytes)
}

/// Starts a session's table: tags from an earlier session are forgotten.
pub(crate) fn reset_table() {
    *table() = None;
}

/// The session's entries by tag, leaving the table empty (memory released).
pub(crate) fn take_table() -> Vec<OpEntry> {
    table()
        .take()
        .map_or_else(|| vec![unprofiled_entry()], |mut t| t.take())
}
