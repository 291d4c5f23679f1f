//! Device programs over the link (protocol 2.3): a program crosses once
//! (`LoadProgram`, in chunks), then each run is one `RunProgram` request.
//! `docs/device-programs.md`, `docs/link-protocol.md` "Programs (2.3)".

use super::{Answer, RemoteAccelerator, RemoteError, SessionState};
use tensorplug_core::accelerator::{DeviceAddr, ErrorKind, Fence, QueueId};
use tensorplug_core::link::{
    ForgetPrograms, LinkStream, LoadProgram, MAX_BULK_CHUNK, Message, RemoteErrorCode, RunProgram,
};
use tensorplug_core::program::{Limit, Program, ProgramError};

impl<S: LinkStream> RemoteAccelerator<S> {
    /// Whether the MCU may store programs: it speaks protocol 2.3 and has
    /// not answered a `LoadProgram` with `Unsupported`.
    pub fn runs_programs(&self) -> bool {
        self.peer_programs
    }

    /// [`Launch::load_program`](tensorplug_core::accelerator::Launch::load_program):
    /// stores `program` on the MCU, which validates it, and returns its
    /// name (its CRC-32); `None` if the MCU keeps no programs (protocol
    /// 2.2, or a firmware without a store). A program already stored is
    /// not sent again.
    ///
    /// # Errors
    /// A program that does not parse here; the MCU's refusal, naming the
    /// fault (`OutOfMemory` when its store is full: [`forget_programs`](Self::forget_programs)).
    pub(super) fn store_program(&mut self, program: &[u8]) -> Result<Option<u32>, RemoteError> {
        if !self.peer_programs {
            return Ok(None);
        }
        let crc = Program::parse(program)
            .map_err(|e| {
                RemoteError::new(ErrorKind::InvalidArgument, format!("not a program: {e}"))
            })?
            .crc();
        if self.programs.iter().any(|(c, _)| *c == crc) {
            return Ok(Some(crc));
        }
        match self.send_program(program) {
            Ok(()) => {}
            Err(_) if !self.peer_programs => return Ok(None),
            Err(e) => return Err(e),
        }
        self.programs.push((crc, program.to_vec()));
        Ok(Some(crc))
    }

    /// Drops every program the MCU stores.
    ///
    /// # Errors
    /// The link's.
    pub fn forget_programs(&mut self) -> Result<(), RemoteError> {
        self.programs.clear();
        if !self.peer_programs {
            return Ok(());
        }
        self.call(&Message::ForgetPrograms(ForgetPrograms), "ForgetPrograms")
            .map(drop)
    }

    /// [`Launch::run_program`](tensorplug_core::accelerator::Launch::run_program):
    /// runs the stored program `program` on `queue` with one request: one
    /// device address per binding slot, and the arena's. Returns the fence
    /// of the run's last command; a refusal fails it (or, with a window of
    /// 1, is returned here).
    ///
    /// # Errors
    /// A program not loaded through this link; the link's.
    pub(super) fn run_stored(
        &mut self,
        queue: QueueId,
        program: u32,
        slots: &[DeviceAddr],
        arena: DeviceAddr,
    ) -> Result<Fence, RemoteError> {
        if !self.programs.iter().any(|(c, _)| *c == program) {
            return Err(RemoteError::new(
                ErrorKind::InvalidArgument,
                format!("program {program:08x} was not loaded on this link"),
            ));
        }
        if queue.0 >= self.info.queues {
            return Err(RemoteError::new(
                ErrorKind::InvalidArgument,
                format!("queue {} of a device with {}", queue.0, self.info.queues),
            ));
        }
        if let Some(index) = self.programs.iter().position(|(c, _)| *c == program) {
            let stored = core::mem::take(&mut self.programs[index].1);
            let access = self.program_access(&stored, slots);
            self.programs[index].1 = stored;
            access?;
        }
        let bytes: Vec<u8> = slots.iter().flat_map(|a| a.0.to_le_bytes()).collect();
        if bytes.len() > MAX_BULK_CHUNK {
            return Err(RemoteError::new(
                ErrorKind::InvalidArgument,
                format!("{} bindings do not fit one frame", slots.len()),
            ));
        }
        let message = Message::RunProgram(RunProgram {
            queue: queue.0,
            program,
            arena: arena.0,
            slots: &bytes,
        });
        self.send_queued(queue, &message, "a program run")
    }

    /// Sends `program` in chunks, each answered before the next.
    fn send_program(&mut self, program: &[u8]) -> Result<(), RemoteError> {
        if !self.peer_programs {
            return Err(RemoteError::new(
                ErrorKind::Unsupported,
                "the MCU speaks link protocol 2.2 or older, without device programs",
            ));
        }
        let total = u32::try_from(program.len()).map_err(|_| {
            RemoteError::new(
                ErrorKind::OutOfMemory,
                ProgramError::TooLarge(Limit::Bytes).to_string(),
            )
        })?;
        for (i, data) in program.chunks(MAX_BULK_CHUNK).enumerate() {
            let load = LoadProgram {
                offset: (i * MAX_BULK_CHUNK) as u32,
                total,
                data,
            };
            match self.call(&Message::LoadProgram(load), "a program") {
                Ok(Answer::Ack) => {}
                Ok(_) => {
                    return Err(RemoteError::new(
                        ErrorKind::Transport,
                        "the MCU answered a program chunk with something else",
                    ));
                }
                Err(e) if e.link_code == Some(RemoteErrorCode::Unsupported as u16) => {
                    self.peer_programs = false;
                    return Err(RemoteError::new(
                        ErrorKind::Unsupported,
                        "the MCU's firmware has no program store",
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Loads every known program again, in a new session after a restart.
    pub(super) fn reload_programs(&mut self) -> Result<(), RemoteError> {
        debug_assert_eq!(self.session, SessionState::Open);
        let programs = core::mem::take(&mut self.programs);
        let mut result = Ok(());
        for (crc, bytes) in programs {
            match self.send_program(&bytes) {
                Ok(()) => self.programs.push((crc, bytes)),
                Err(e) => result = result.and(Err(e)),
            }
        }
        result
    }
}
