//! [`WakingTransport`]: an in-process device's MMIO transport plus an
//! in-process "doorbell interrupt" — every register write unparks the model thread, so
//! a command starts within the thread's wake-up time instead of after up to
//! one idle sleep (`IdlePolicy::max_sleep`, 500 µs). Measured in the
//! profiler e2e: the median launch → device-op delay of eager ops was
//! ~500 µs without it.

use super::in_process::DeviceWaker;
use tensorplug_device_fpga::transport::{DmaRegion, Error, Transport};

/// `T`, waking the model thread after each register write.
pub struct WakingTransport<T> {
    inner: T,
    waker: Option<DeviceWaker>,
}

impl<T> WakingTransport<T> {
    /// Wraps `inner`; `None`: no model thread to wake (plain `inner`).
    pub fn new(inner: T, waker: Option<DeviceWaker>) -> Self {
        Self { inner, waker }
    }
}

impl<T: Transport> Transport for WakingTransport<T> {
    fn read_reg(&mut self, offset: u32) -> Result<u32, Error> {
        self.inner.read_reg(offset)
    }
    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), Error> {
        self.inner.write_reg(offset, value)?;
        // Cheap when the thread is awake (an atomic swap); a futex wake when parked.
        if let Some(waker) = &self.waker {
            waker.wake();
        }
        Ok(())
    }
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        self.inner.read_mem(addr, buf)
    }
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), Error> {
        self.inner.write_mem(addr, data)
    }
    fn dma(&self) -> Option<DmaRegion<'_>> {
        self.inner.dma()
    }
}
