//! XSpace export (feature `alloc`): drained events to TF's XPlane protobuf.
//!
//! [`XSpaceBuilder`] borrows the drained events (device events in device
//! ticks plus a [`ClockMap`](crate::clock::ClockMap), host-API events in
//! host ns) and an op table.
//! [`XSpaceBuilder::plan`] pairs begins with ends once to size every line and
//! plane exactly; [`XSpacePlan::encoded_len`] answers TF's size call and
//! [`XSpacePlan::encode_into`] writes the bytes straight into TF's buffer,
//! pairing a second time. No per-event structures are allocated, so the heap
//! used is a few small tables plus the output itself. The layout is in
//! `docs/xspace-layout.md`.

mod encode;
pub mod layout;
mod message;
mod pairing;
pub mod proto;
mod types;
mod wire;

pub use encode::XSpacePlan;
pub use pairing::Anomalies;
pub use types::{DeviceTrace, OpInfo, XSpaceBuilder, XSpaceError, XSpaceErrorKind};

use prost::Message;

impl<'a> XSpaceBuilder<'a> {
    /// Pairs every stream once and sizes every message.
    pub fn plan(&self) -> XSpacePlan<'_, 'a> {
        XSpacePlan::new(self)
    }

    /// The whole XSpace as prost messages: the slow reference path (one
    /// allocation per event), byte-identical to [`XSpacePlan::encode_into`].
    pub fn to_message(&self) -> proto::XSpace {
        message::to_message(self)
    }

    /// Encodes into a new exact-size vector.
    pub fn encode_to_vec(&self) -> alloc::vec::Vec<u8> {
        let plan = self.plan();
        let mut out = alloc::vec![0; plan.encoded_len()];
        match plan.encode_into(&mut out) {
            Ok(written) => out.truncate(written),
            // Same inputs, exact size: cannot fail; fall back to the reference.
            Err(_) => out = self.to_message().encode_to_vec(),
        }
        out
    }
}

#[cfg(all(test, not(miri)))]
mod tests;
