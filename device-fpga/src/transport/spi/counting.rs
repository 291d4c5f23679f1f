//! An `SpiDevice` wrapper that counts what goes over the wire.

use embedded_hal::spi::{ErrorType, Operation, SpiDevice};

/// Wraps an `SpiDevice` and counts bytes clocked and transactions (chip
/// select windows). SPI is full duplex: a `Transfer` of `r` read and `w`
/// written bytes clocks `max(r, w)` bytes.
#[derive(Debug, Default)]
pub struct CountingSpi<D> {
    inner: D,
    bytes_clocked: u64,
    transactions: u64,
}

impl<D> CountingSpi<D> {
    /// Starts counting at zero.
    pub const fn new(inner: D) -> Self {
        Self {
            inner,
            bytes_clocked: 0,
            transactions: 0,
        }
    }

    /// Bytes clocked since creation or the last [`CountingSpi::reset`].
    pub const fn bytes_clocked(&self) -> u64 {
        self.bytes_clocked
    }

    /// Transactions since creation or the last reset.
    pub const fn transactions(&self) -> u64 {
        self.transactions
    }

    /// Zeroes the counters.
    pub fn reset(&mut self) {
        self.bytes_clocked = 0;
        self.transactions = 0;
    }

    /// The wrapped device.
    pub const fn inner(&self) -> &D {
        &self.inner
    }

    /// The wrapped device, mutably.
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }
}

impl<D: ErrorType> ErrorType for CountingSpi<D> {
    type Error = D::Error;
}

impl<D: SpiDevice> SpiDevice for CountingSpi<D> {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), Self::Error> {
        self.transactions += 1;
        for op in operations.iter() {
            let n = match op {
                Operation::Read(buf) => buf.len(),
                Operation::Write(data) => data.len(),
                Operation::Transfer(read, write) => read.len().max(write.len()),
                Operation::TransferInPlace(buf) => buf.len(),
                Operation::DelayNs(_) => 0,
            };
            self.bytes_clocked += n as u64;
        }
        self.inner.transaction(operations)
    }
}
