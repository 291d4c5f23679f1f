//! The collected session, kept between TF's two `collect_data_xspace` calls:
//! owned events and op table, planned once for the size call and encoded
//! straight into TF's buffer on the second call.

use super::ops::OpEntry;
use crate::error::{Error, Result};
use tensorplug_core::clock::ClockMap;
use tensorplug_core::event::Event;
use tensorplug_core::xspace::{DeviceTrace, OpInfo, XSpaceBuilder};

/// One device plane's data.
#[derive(Debug)]
pub struct PlaneData {
    /// Plane `/device:GPU:<1000 + ordinal>`: the plugin's plane base
    /// ([`crate::backend::plane_base`]) plus the TF ordinal.
    pub ordinal: u32,
    /// Device ticks → TF's clock.
    pub clock: ClockMap,
    /// Device events (ticks).
    pub device_events: Vec<Event>,
    /// Host-API spans (TF's clock).
    pub host_events: Vec<Event>,
    /// Device events lost.
    pub dropped_device: u64,
    /// Host records lost.
    pub dropped_host: u64,
}

impl PlaneData {
    /// A plane is written only when it has something to show.
    pub fn is_empty(&self) -> bool {
        self.device_events.is_empty()
            && self.host_events.is_empty()
            && self.dropped_device == 0
            && self.dropped_host == 0
    }
}

/// A stopped session's data, ready to encode.
#[derive(Debug)]
pub struct Collection {
    /// Session start on TF's clock: every line's `timestamp_ns`.
    pub start_ns: u64,
    /// The op table by tag.
    pub ops: Vec<OpEntry>,
    /// Non-empty planes only.
    pub planes: Vec<PlaneData>,
    /// `encoded_len` of the plan, answered to TF's size call.
    pub encoded_len: usize,
}

impl Collection {
    /// Plans the XSpace (pairs every event once) and records its exact size.
    /// Empty planes are dropped first, so no events means zero bytes.
    pub fn new(start_ns: u64, ops: Vec<OpEntry>, mut planes: Vec<PlaneData>) -> Self {
        planes.retain(|plane| !plane.is_empty());
        let mut collection = Self {
            start_ns,
            ops,
            planes,
            encoded_len: 0,
        };
        collection.encoded_len = collection.with_builder(|b| b.plan().encoded_len());
        collection
    }

    /// Encodes into `buffer` (TF's, of `encoded_len` bytes); returns the
    /// bytes written. A short buffer is an error and nothing is overrun.
    pub fn encode_into(&self, buffer: &mut [u8]) -> Result<usize> {
        if buffer.len() < self.encoded_len {
            return Err(Error::InvalidArgument(format!(
                "collect_data_xspace got a {}-byte buffer for a {}-byte XSpace; \
                 call it with a null buffer first to get the size",
                buffer.len(),
                self.encoded_len
            )));
        }
        self.with_builder(|builder| {
            let plan = builder.plan();
            if plan.encoded_len() != self.encoded_len {
                return Err(Error::Internal(
                    "the XSpace size changed between calls".into(),
                ));
            }
            plan.encode_into(buffer)
                .map_err(|e| Error::Internal(format!("XSpace encoding: {e}")))
        })
    }

    fn with_builder<T>(&self, f: impl FnOnce(&XSpaceBuilder<'_>) -> T) -> T {
        let ops: Vec<OpInfo<'_>> = self.ops.iter().map(OpEntry::info).collect();
        let traces: Vec<DeviceTrace<'_>> = self
            .planes
            .iter()
            .map(|plane| DeviceTrace {
                device_index: plane.ordinal,
                clock: plane.clock,
                device_events: &plane.device_events,
                host_events: &plane.host_events,
                dropped_device_events: plane.dropped_device,
                dropped_host_events: plane.dropped_host,
            })
            .collect();
        f(&XSpaceBuilder::new(self.start_ns, &ops, &traces))
    }
}
