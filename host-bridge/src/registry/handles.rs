//! The `SP_DeviceMemoryBase.opaque` scheme.
//!
//! TF treats `opaque` as a host pointer and does arithmetic on it
//! (tensorflow#64372: sub-buffers are `opaque + offset`). Each device gets a
//! window of host virtual addresses reserved with `mmap(PROT_NONE)`: never
//! backed, never dereferenceable (a stray host access faults instead of
//! corrupting memory), and unique per device. Device address `a` is handed
//! to TF as `window_base + a`; any pointer inside the window maps back to
//! `pointer - window_base`, so TF's offsets stay valid device addresses.

use crate::error::{Error, Result};
use std::ffi::c_void;
use tensorplug_core::accelerator::DeviceAddr;

/// The smallest window: device addresses up to 64 GiB.
pub const MIN_WINDOW: u64 = 1 << 36;

/// A reserved, inaccessible range of host addresses standing for one
/// device's address space.
#[derive(Debug)]
pub struct HandleWindow {
    base: usize,
    len: usize,
}

// SAFETY: the window is never dereferenced; it is only an address range.
unsafe impl Send for HandleWindow {}
// SAFETY: as above.
unsafe impl Sync for HandleWindow {}

impl HandleWindow {
    /// Reserves a window covering device addresses `0..max(MIN_WINDOW, 2 * memory_bytes)`.
    pub fn reserve(memory_bytes: u64) -> Result<Self> {
        let wanted = memory_bytes
            .checked_mul(2)
            .and_then(u64::checked_next_power_of_two)
            .map_or(MIN_WINDOW, |w| w.max(MIN_WINDOW));
        let len = usize::try_from(wanted)
            .map_err(|_| Error::Internal(format!("device memory of {memory_bytes} bytes")))?;
        // SAFETY: a fresh anonymous PROT_NONE mapping; no existing memory changes.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(Error::Internal(format!(
                "cannot reserve {len} bytes of address space for device handles: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(Self {
            base: base as usize,
            len,
        })
    }

    /// The `opaque` value for device address `addr` (a `len`-byte buffer).
    pub fn to_opaque(&self, addr: DeviceAddr, len: u64) -> Result<*mut c_void> {
        let end = addr.0.checked_add(len);
        match end {
            Some(end) if end <= self.len as u64 => {
                Ok(self.base.wrapping_add(addr.0 as usize) as *mut c_void)
            }
            _ => Err(Error::Internal(format!(
                "device address {:#x}+{len} lies outside the {:#x}-byte handle window",
                addr.0, self.len
            ))),
        }
    }

    /// The device address of `opaque`, checking that `len` bytes from it
    /// stay inside this device's window. `what` names the argument.
    pub fn to_device(&self, opaque: *const c_void, len: u64, what: &str) -> Result<DeviceAddr> {
        let offset = (opaque as usize).wrapping_sub(self.base) as u64;
        let inside = (opaque as usize) >= self.base
            && offset
                .checked_add(len)
                .is_some_and(|end| end <= self.len as u64);
        if inside {
            Ok(DeviceAddr(offset))
        } else {
            Err(Error::InvalidArgument(format!(
                "{what} ({opaque:p}, {len} bytes) is not memory of this device \
                 (its handles are {:#x}..{:#x})",
                self.base,
                self.base + self.len
            )))
        }
    }
}

impl Drop for HandleWindow {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping created in `reserve`.
        unsafe { libc::munmap(self.base as *mut c_void, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_added_by_tf_map_back_to_device_addresses() {
        let window = HandleWindow::reserve(1 << 20).unwrap();
        let opaque = window.to_opaque(DeviceAddr(0x1000), 256).unwrap();
        assert!(!opaque.is_null());
        // TF's sub-buffer: opaque + 64.
        let inner = opaque.cast::<u8>().wrapping_add(64).cast::<c_void>();
        assert_eq!(
            window.to_device(inner, 192, "x").unwrap(),
            DeviceAddr(0x1040)
        );
        assert_eq!(
            window.to_device(opaque, 256, "x").unwrap(),
            DeviceAddr(0x1000)
        );
    }

    #[test]
    fn foreign_and_overflowing_pointers_are_rejected() {
        let a = HandleWindow::reserve(1 << 20).unwrap();
        let b = HandleWindow::reserve(1 << 20).unwrap();
        let from_b = b.to_opaque(DeviceAddr(0), 16).unwrap();
        let error = a
            .to_device(from_b, 16, "device_src")
            .unwrap_err()
            .to_string();
        assert!(error.contains("device_src"), "{error}");
        assert!(a.to_device(std::ptr::null(), 1, "x").is_err());
        let last = a.to_opaque(DeviceAddr(MIN_WINDOW - 8), 8).unwrap();
        assert!(a.to_device(last, 9, "x").is_err());
        assert!(a.to_opaque(DeviceAddr(MIN_WINDOW), 1).is_err());
        assert!(a.to_opaque(DeviceAddr(u64::MAX), 2).is_err());
    }
}
