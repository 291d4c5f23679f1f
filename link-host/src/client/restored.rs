//! Device memory across an MCU restart (`docs/link-protocol.md`, "A device
//! that restarts"). The restart empties the MCU's memory, but the host's
//! caller (TF's allocator) still holds its buffers. When a new session
//! opens, the buffers are allocated again at their addresses, so that no
//! new allocation aliases one; their bytes stay *stale* until something
//! writes them, and a command that reads stale bytes fails, naming the
//! restart, instead of reading what the restart left.

use std::collections::BTreeMap;

use rangemap::RangeSet;
use tensorplug_core::accelerator::{DeviceAddr, ErrorKind, TensorDesc};
use tensorplug_core::link::LinkStream;
use tensorplug_core::program::{BufferKind, BufferSpec, Program};

use super::{RemoteAccelerator, RemoteError};

/// The buffers of a session, and the bytes a restart left stale.
#[derive(Debug, Default)]
pub(super) struct Buffers {
    /// This session's allocations: address → bytes asked for.
    pub live: BTreeMap<u64, u64>,
    /// Allocations a restart took, still held by the caller.
    pub lost: BTreeMap<u64, u64>,
    /// Whether putting them back failed: then no session opens until the
    /// caller frees them (the MCU's allocator is not first fit, or others
    /// allocated meanwhile).
    pub unrestorable: bool,
    stale: RangeSet<u64>,
}

impl Buffers {
    /// The restart took this session's buffers.
    pub fn lose(&mut self) {
        let live = core::mem::take(&mut self.live);
        self.lost.extend(live);
    }

    /// `len` bytes at `addr` were written.
    pub fn written(&mut self, addr: u64, len: u64) {
        if !self.stale.is_empty() && len > 0 {
            self.stale.remove(addr..addr.saturating_add(len));
        }
    }

    /// `Err` if any of `len` bytes at `addr` are stale.
    pub fn check_read(&self, addr: u64, len: u64, what: &str) -> Result<(), RemoteError> {
        let range = addr..addr.saturating_add(len);
        if len == 0 || !self.stale.overlaps(&range) {
            return Ok(());
        }
        Err(RemoteError::new(
            ErrorKind::DeviceFault,
            format!(
                "{what} reads device memory at {addr:#x} ({len} bytes) that the MCU lost when it \
                 restarted: the tensor there was on the device before the restart and has not \
                 been written since (in TF: assign the variables again, e.g. load the weights, \
                 or restart the process)"
            ),
        ))
    }

    /// A freed buffer's bytes are no longer anyone's.
    pub fn freed(&mut self, addr: u64, len: u64) {
        self.stale.remove(addr..addr.saturating_add(len.max(1)));
    }
}

impl<S: LinkStream> RemoteAccelerator<S> {
    /// In a new session, allocates the lost buffers again at their
    /// addresses (first fit in address order, a filler over each gap,
    /// freed after) and marks their bytes stale.
    pub(super) fn restore_buffers(&mut self) -> Result<(), RemoteError> {
        let lost = core::mem::take(&mut self.buffers.lost);
        let mut fillers = Vec::new();
        let mut restored = Vec::new();
        let mut result = Ok(());
        for (&addr, &bytes) in &lost {
            match self.allocate_at(addr, bytes, &mut fillers) {
                Ok(()) => restored.push(addr),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        for filler in fillers {
            let _ = tensorplug_core::accelerator::Memory::deallocate(self, DeviceAddr(filler));
        }
        match result {
            Ok(()) => {
                for (&addr, &bytes) in &lost {
                    self.buffers.stale.insert(addr..addr + bytes.max(1));
                }
                Ok(())
            }
            Err(e) => {
                // Free what came back; the caller frees the rest first.
                for addr in restored {
                    let _ =
                        tensorplug_core::accelerator::Memory::deallocate(self, DeviceAddr(addr));
                }
                self.buffers.lost = lost;
                self.buffers.unrestorable = true;
                Err(RemoteError::new(
                    ErrorKind::DeviceFault,
                    format!(
                        "the MCU restarted and lost device memory, and its {} buffers could not \
                         be put back at their addresses ({}): free them (in TF: restart the \
                         process) before reset() opens a new session",
                        self.buffers.lost.len(),
                        e
                    ),
                ))
            }
        }
    }

    /// One lost buffer back at `addr`.
    fn allocate_at(
        &mut self,
        addr: u64,
        bytes: u64,
        fillers: &mut Vec<u64>,
    ) -> Result<(), RemoteError> {
        use tensorplug_core::accelerator::Memory;
        let got = self.allocate(bytes, 1)?.0;
        if got == addr {
            return Ok(());
        }
        self.deallocate(DeviceAddr(got))?;
        if got < addr {
            let filler = self.allocate(addr - got, 1)?.0;
            fillers.push(filler);
            let again = self.allocate(bytes, 1)?.0;
            if again == addr {
                return Ok(());
            }
            self.deallocate(DeviceAddr(again))?;
            return Err(misplaced(addr, again));
        }
        Err(misplaced(addr, got))
    }

    /// Checks what a launch reads and marks what it writes.
    pub(super) fn launch_access(
        &mut self,
        inputs: &[TensorDesc],
        output: &TensorDesc,
    ) -> Result<(), RemoteError> {
        for input in inputs {
            let len = input.byte_len().unwrap_or(0) as u64;
            self.buffers.check_read(input.addr.0, len, "a launch")?;
        }
        let len = output.byte_len().unwrap_or(0) as u64;
        self.buffers.written(output.addr.0, len);
        Ok(())
    }

    /// Checks what a stored program's run reads (its inputs, constants and
    /// variables) and marks what it writes (its outputs and variables).
    pub(super) fn program_access(
        &mut self,
        program: &[u8],
        slots: &[DeviceAddr],
    ) -> Result<(), RemoteError> {
        let Ok(view) = Program::parse(program) else {
            return Ok(());
        };
        let specs = (0..view.buffer_count())
            .filter_map(|i| view.buffer(i))
            .filter_map(|r| BufferSpec::decode(&r).ok())
            .filter(|s| s.kind != BufferKind::Scratch);
        let mut writes = Vec::new();
        for spec in specs {
            let Some(&addr) = slots.get(spec.place as usize) else {
                continue;
            };
            let len = spec.byte_len().unwrap_or(0) as u64;
            if spec.kind != BufferKind::Output {
                self.buffers.check_read(addr.0, len, "a program run")?;
            }
            if spec.kind.writable() {
                writes.push((addr.0, len));
            }
        }
        for (addr, len) in writes {
            self.buffers.written(addr, len);
        }
        Ok(())
    }
}

fn misplaced(want: u64, got: u64) -> RemoteError {
    RemoteError::new(
        ErrorKind::DeviceFault,
        format!("the MCU allocated {got:#x} where the buffer was at {want:#x}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_bytes_fail_reads_until_written_and_freeing_forgets_them() {
        let mut b = Buffers::default();
        b.live.insert(0x1000, 256);
        b.lose();
        assert!(b.live.is_empty());
        assert_eq!(b.lost.get(&0x1000), Some(&256));
        b.stale.insert(0x1000..0x1100);
        assert!(
            b.check_read(0x0f00, 0x100, "x").is_ok(),
            "ends where it starts"
        );
        let e = b.check_read(0x10f0, 0x40, "a launch").unwrap_err();
        assert_eq!(e.kind, ErrorKind::DeviceFault);
        assert!(
            e.message.contains("a launch reads device memory at 0x10f0"),
            "{e}"
        );
        // Half written: the other half still fails.
        b.written(0x1000, 0x80);
        assert!(b.check_read(0x1000, 0x80, "x").is_ok());
        assert!(b.check_read(0x1000, 0x81, "x").is_err());
        assert!(b.check_read(0x1040, 0, "x").is_ok(), "an empty read");
        b.freed(0x1000, 256);
        assert!(b.check_read(0x1000, 256, "x").is_ok());
    }
}
