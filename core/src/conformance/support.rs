//! What the cases share: a failure type that carries its message, device
//! calls with context, a scope that frees what a case allocated, test data.

use crate::accelerator::prelude::*;
use core::fmt::Display;
use core::time::Duration;
use std::boxed::Box;
use std::format;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::string::{String, ToString};
use std::vec;
use std::vec::Vec;

use super::types::{Config, Fixture, Outcome};
use crate::accelerator::{Accelerator, DeviceAddr, Error, ErrorKind, Fence};

/// Why a case failed: a message a vendor can act on.
#[derive(Debug)]
pub(crate) struct Fail(pub(crate) String);

/// A case step: `Err` ends the case as failed.
pub(crate) type Check<T = ()> = Result<T, Fail>;

/// Fails the case with a formatted message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        {
            // A bound `bool`: `!(x >= y)` on floats would read ambiguously.
            let held: bool = $cond;
            if !held {
                return Err($crate::conformance::support::Fail(std::format!($($fmt)+)));
            }
        }
    };
}
pub(crate) use ensure;

/// Fails the case with a formatted message.
macro_rules! fail {
    ($($fmt:tt)+) => {
        return Err($crate::conformance::support::Fail(std::format!($($fmt)+)))
    };
}
pub(crate) use fail;

/// An accelerator error, with its kind.
pub(crate) fn describe<E: Error>(e: &E) -> String {
    format!("{e} (kind {:?})", e.kind())
}

/// Turns a device error into a failure that says what was being done.
pub(crate) trait Ctx<T> {
    fn ctx(self, what: impl Display) -> Check<T>;
}

impl<T, E: Error> Ctx<T> for Result<T, E> {
    fn ctx(self, what: impl Display) -> Check<T> {
        self.map_err(|e| Fail(format!("{what}: {}", describe(&e))))
    }
}

/// The fixture for one case, plus every allocation the case made, so they
/// are freed when the case ends (pass or fail).
pub(crate) struct Scope<'a, F: Fixture> {
    pub(crate) fx: &'a mut F,
    pub(crate) cfg: &'a Config,
    allocs: Vec<DeviceAddr>,
}

impl<'a, F: Fixture> Scope<'a, F> {
    pub(crate) fn new(fx: &'a mut F, cfg: &'a Config) -> Self {
        Self {
            fx,
            cfg,
            allocs: Vec::new(),
        }
    }

    pub(crate) fn dev(&mut self) -> &mut F::Device {
        self.fx.device()
    }

    /// Allocates `bytes` (at least 1) aligned to `align`.
    pub(crate) fn alloc(&mut self, bytes: u64, align: u64) -> Check<DeviceAddr> {
        let addr = self
            .dev()
            .allocate(bytes.max(1), align)
            .ctx(format_args!("allocate({bytes}, align {align})"))?;
        self.allocs.push(addr);
        Ok(addr)
    }

    /// Frees an allocation of this scope.
    pub(crate) fn free(&mut self, addr: DeviceAddr) -> Check {
        self.allocs.retain(|&a| a != addr);
        self.dev()
            .deallocate(addr)
            .ctx(format_args!("deallocate({:#x})", addr.0))
    }

    /// Frees every allocation of this scope, ignoring errors (after a
    /// reset a device may have forgotten them).
    pub(crate) fn free_all_quietly(&mut self) {
        for addr in core::mem::take(&mut self.allocs) {
            let _ = self.fx.device().deallocate(addr);
        }
    }

    /// Host → device, waited for.
    pub(crate) fn write(&mut self, addr: DeviceAddr, data: &[u8]) -> Check {
        let (q, t) = (self.cfg.queue, self.cfg.timeout);
        self.dev()
            .write_blocking(q, addr, data, t)
            .ctx(format_args!("write {} bytes to {:#x}", data.len(), addr.0))
    }

    /// Device → host, waited for.
    pub(crate) fn read(&mut self, addr: DeviceAddr, len: usize) -> Check<Vec<u8>> {
        let (q, t) = (self.cfg.queue, self.cfg.timeout);
        let mut out = vec![0u8; len];
        self.dev()
            .read_blocking(q, &mut out, addr, t)
            .ctx(format_args!("read {len} bytes from {:#x}", addr.0))?;
        Ok(out)
    }

    /// Waits for `fence` with the generous timeout.
    pub(crate) fn wait(&mut self, fence: Fence, what: impl Display) -> Check {
        let t = self.cfg.timeout;
        self.dev()
            .wait(fence, t)
            .ctx(format_args!("wait for {what} (fence {})", fence.0))
    }

    /// Writes 333 bytes to a fresh buffer and reads them back.
    pub(crate) fn round_trip(&mut self, what: &str) -> Check {
        let data = bytes(333, 0xC0FFEE);
        let addr = self.alloc(data.len() as u64, 64)?;
        self.write(addr, &data)?;
        let back = self.read(addr, data.len())?;
        ensure!(
            back == data,
            "{what}: a round trip of 333 bytes came back different"
        );
        self.free(addr)
    }
}

impl<F: Fixture> Drop for Scope<'_, F> {
    fn drop(&mut self) {
        // After a panic the device may be in any state; do not risk a
        // second panic (an abort) by calling into it again.
        if !std::thread::panicking() {
            self.free_all_quietly();
        }
    }
}

/// Deterministic pseudo-random f32s in [-4, 4).
pub(crate) fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32 * 8.0 - 4.0
        })
        .collect()
}

/// Deterministic pseudo-random bytes.
pub(crate) fn bytes(n: usize, seed: u32) -> Vec<u8> {
    let mut state = seed ^ 0x9E37_79B9;
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 24) as u8
        })
        .collect()
}

pub(crate) fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn to_floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The first index where `got` and `want` differ, as a message.
pub(crate) fn first_difference(got: &[u8], want: &[u8]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} bytes, expected {}", got.len(), want.len()));
    }
    let i = got.iter().zip(want).position(|(g, w)| g != w)?;
    let wrong = got.iter().zip(want).filter(|(g, w)| g != w).count();
    Some(format!(
        "byte {i} is {:#04x}, expected {:#04x} ({wrong} bytes differ)",
        got[i], want[i]
    ))
}

/// The kind of an error result, for messages.
pub(crate) fn kind_of<T, E: Error>(r: &Result<T, E>) -> Option<ErrorKind> {
    r.as_ref().err().map(Error::kind)
}

/// `Ok`, or the error described.
pub(crate) fn show<T, E: Error>(r: &Result<T, E>) -> String {
    match r {
        Ok(_) => "Ok".to_string(),
        Err(e) => describe(e),
    }
}

/// Seconds, for messages.
pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Runs a case body: its `Err` and any panic become [`Outcome::Failed`].
pub(crate) fn guarded(body: impl FnOnce() -> Result<Outcome, Fail>) -> Outcome {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(Fail(why))) => Outcome::Failed(why),
        Err(payload) => Outcome::Failed(format!("panicked: {}", panic_message(&payload))),
    }
}

fn panic_message(payload: &Box<dyn core::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_string()
    }
}
