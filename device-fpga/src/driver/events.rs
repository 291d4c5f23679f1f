//! Readout of the hardware event ring into `core`'s [`Event`]s.

use tensorplug_abi::device::{EVENT_DESCRIPTOR_SIZE, EventDescriptor, Register};
use tensorplug_core::accelerator::Drained;
use tensorplug_core::event::Event;

use super::{Clock, Driver, Error};
use crate::transport::Transport;

/// Events read per bulk read.
const EVENT_BATCH: usize = 16;

impl<T: Transport, C: Clock, const ALLOCS: usize> Driver<T, C, ALLOCS> {
    /// Moves up to `out.len()` events from the device ring into `out`, and
    /// reports how many the device dropped (ring full) since the last call.
    pub(super) fn drain(&mut self, out: &mut [Event]) -> Result<Drained, Error> {
        let ring = self.rings.events;
        let mut moved = 0;
        if ring.entries > 0 {
            let head = self.events_head;
            let tail = self.read(Register::EVQ_TAIL)?;
            let available = tail.wrapping_sub(head);
            if available > ring.entries {
                return Err(Error::Protocol);
            }
            let wanted = available.min(u32::try_from(out.len()).unwrap_or(u32::MAX));
            let mut buf = [0u8; EVENT_BATCH * EVENT_DESCRIPTOR_SIZE];
            while moved < wanted {
                let index = head.wrapping_add(moved);
                let slot = index & (ring.entries - 1);
                let n = (wanted - moved)
                    .min(ring.entries - slot)
                    .min(EVENT_BATCH as u32);
                let bytes = &mut buf[..n as usize * EVENT_DESCRIPTOR_SIZE];
                self.transport
                    .read_mem(ring.slot_addr(index, EVENT_DESCRIPTOR_SIZE), bytes)?;
                for (chunk, event) in bytes
                    .chunks_exact(EVENT_DESCRIPTOR_SIZE)
                    .zip(&mut out[moved as usize..])
                {
                    let mut raw = [0u8; EVENT_DESCRIPTOR_SIZE];
                    raw.copy_from_slice(chunk);
                    *event = to_event(&EventDescriptor::from_le_bytes(&raw));
                }
                moved += n;
            }
            if moved > 0 {
                self.events_head = head.wrapping_add(moved);
                self.write(Register::EVQ_HEAD, self.events_head)?;
            }
        }
        let dropped_now = self.read(Register::EVQ_DROPPED)?;
        let dropped = dropped_now.wrapping_sub(self.dropped_seen);
        self.dropped_seen = dropped_now;
        Ok(Drained {
            events: moved as usize,
            dropped: u64::from(dropped),
        })
    }
}

/// Field for field: the layouts are the same by the ABI's design.
const fn to_event(d: &EventDescriptor) -> Event {
    Event {
        timestamp: d.timestamp,
        arg: d.arg,
        op_id: d.op_id,
        queue: d.queue,
        kind: d.kind.0,
    }
}

// The device writes `EventDescriptor`s; the driver copies them into core's
// `Event`s field for field, so the two layouts and the kind numbers agree.
mod same_as_core_event {
    use core::mem::{align_of, offset_of, size_of};
    use tensorplug_abi::device::{EventDescriptor as D, EventKind as DK};
    use tensorplug_core::event::{Event, EventKind};

    const _: () = assert!(size_of::<Event>() == size_of::<D>());
    const _: () = assert!(align_of::<Event>() == align_of::<D>());
    const _: () = assert!(offset_of!(Event, timestamp) == offset_of!(D, timestamp));
    const _: () = assert!(offset_of!(Event, arg) == offset_of!(D, arg));
    const _: () = assert!(offset_of!(Event, op_id) == offset_of!(D, op_id));
    const _: () = assert!(offset_of!(Event, queue) == offset_of!(D, queue));
    const _: () = assert!(offset_of!(Event, kind) == offset_of!(D, kind));
    const _: () = assert!(EventKind::OpBegin as u8 == DK::OP_BEGIN.0);
    const _: () = assert!(EventKind::OpEnd as u8 == DK::OP_END.0);
    const _: () = assert!(EventKind::CopyH2DBegin as u8 == DK::COPY_H2D_BEGIN.0);
    const _: () = assert!(EventKind::CopyH2DEnd as u8 == DK::COPY_H2D_END.0);
    const _: () = assert!(EventKind::CopyD2HBegin as u8 == DK::COPY_D2H_BEGIN.0);
    const _: () = assert!(EventKind::CopyD2HEnd as u8 == DK::COPY_D2H_END.0);
    const _: () = assert!(EventKind::CopyD2DBegin as u8 == DK::COPY_D2D_BEGIN.0);
    const _: () = assert!(EventKind::CopyD2DEnd as u8 == DK::COPY_D2D_END.0);
}
