//! Device memory across an MCU restart (`docs/link-protocol.md`, "A device
//! that restarts"). The restart empties the MCU's memory, but the host's
//! caller (TF's allocator) still holds its buffers. When a new session
//! opens, the buffers are allocated again at their addresses, so that no
//! new allocation aliases one; their bytes stay *stale* until something
//! writes them, and a command that reads stale bytes fails, naming the
//! restart, instead of reading what the restart left.

use tensorplug_core::accelerator::{DeviceAddr, ErrorKind, TensorDesc};
use tensorplug_core::link::LinkStream;
use tensorplug_core::program::{BufferKind, BufferSpec, Program};

use super::{RemoteAccelerator, RemoteError};

impl RemoteError {
    /// A read of bytes a restart left stale.
    pub(super) fn stale(message: String) -> Self {
        Self::new(ErrorKind::DeviceFault, message)
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
                    self.buffers.mark_stale(addr, bytes);
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
            self.buffers
                .check_read(input.addr.0, len, "a launch")
                .map_err(RemoteError::stale)?;
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
            .filter(|s| s.kind.bound());
        let mut writes = Vec::new();
        for spec in specs {
            let Some(&addr) = slots.get(spec.place as usize) else {
                continue;
            };
            let len = spec.byte_len().unwrap_or(0) as u64;
            if spec.kind != BufferKind::Output {
                self.buffers
                    .check_read(addr.0, len, "a program run")
                    .map_err(RemoteError::stale)?;
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
