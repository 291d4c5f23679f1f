//! Host copies through the transport's DMA window: each chunk is staged in
//! the window and moved by a `COPY_H2D`/`COPY_D2H` command, which also
//! stamps the copy events. Synchronous: every chunk's command is waited for
//! (bounded), so no host buffer or window byte is used after return.

use tensorplug_abi::device::{CommandDescriptor, Features, Opcode};
use tensorplug_core::accelerator::{Fence, QueueId};

use super::{Clock, Driver, Error, WaitFor};
use crate::transport::Transport;

/// Largest chunk staged at once.
const MAX_CHUNK: usize = 4 << 20;

impl<T: Transport, C: Clock, const ALLOCS: usize> Driver<T, C, ALLOCS> {
    /// The DMA window's bus address and chunk size, if DMA copies are on
    /// and possible.
    pub(super) fn dma_window(&self) -> Option<(u64, usize)> {
        if !self.config.dma_copies || !self.facts.features.contains(Features::DMA) {
            return None;
        }
        let window = self.transport.dma()?;
        let chunk = window.len().min(MAX_CHUNK);
        (chunk > 0).then_some((window.bus_base(), chunk))
    }

    /// Waits for one DMA chunk's command and reports its failure, if any.
    fn finish_chunk(&mut self, fence: Fence) -> Result<(), Error> {
        let budget = self.config.idle_timeout_us.saturating_mul(1000);
        self.wait_reached(fence.0, budget, WaitFor::Completion)?;
        self.poll_fence(fence).map(drop)
    }

    pub(super) fn dma_to_device(
        &mut self,
        queue: QueueId,
        (bus, chunk): (u64, usize),
        dst: u64,
        data: &[u8],
    ) -> Result<Fence, Error> {
        let mut fence = Fence(self.queue.submitted);
        for (i, piece) in data.chunks(chunk).enumerate() {
            let window = self.transport.dma().ok_or(Error::InvalidArgument)?;
            window.write(bus, piece)?;
            let desc = CommandDescriptor {
                src0: bus,
                dst: dst + (i * chunk) as u64,
                len: piece.len() as u64,
                opcode: Opcode::COPY_H2D,
                ..self.base_command(queue, 0)
            };
            fence = self.push(&desc)?;
            self.ring_doorbell()?;
            self.finish_chunk(fence)?;
        }
        Ok(fence)
    }

    pub(super) fn dma_from_device(
        &mut self,
        queue: QueueId,
        (bus, chunk): (u64, usize),
        src: u64,
        out: &mut [u8],
    ) -> Result<Fence, Error> {
        let mut fence = Fence(self.queue.submitted);
        for (i, piece) in out.chunks_mut(chunk).enumerate() {
            let desc = CommandDescriptor {
                src0: src + (i * chunk) as u64,
                dst: bus,
                len: piece.len() as u64,
                opcode: Opcode::COPY_D2H,
                ..self.base_command(queue, 0)
            };
            fence = self.push(&desc)?;
            self.ring_doorbell()?;
            self.finish_chunk(fence)?;
            let window = self.transport.dma().ok_or(Error::InvalidArgument)?;
            window.read(bus, piece)?;
        }
        Ok(fence)
    }
}
