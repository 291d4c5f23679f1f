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
    /// not sent again. When the MCU's store is full, the programs it holds
    /// are forgotten there (kept here, and loaded again before their next
    /// run) to make room.
    ///
    /// # Errors
    /// A program that does not parse here; the MCU's refusal, naming the
    /// fault (`OutOfMemory` for a program larger than the empty store).
    pub(super) fn store_program(&mut self, program: &[u8]) -> Result<Option<u32>, RemoteError> {
        if !self.peer_programs {
            return Ok(None);
        }
        let crc = Program::parse(program)
            .map_err(|e| {
                RemoteError::new(ErrorKind::InvalidArgument, format!("not a program: {e}"))
            })?
            .crc();
        let new = !self.programs.iter().any(|(c, _)| *c == crc);
        if new {
            self.programs.push((crc, program.to_vec()));
        }
        let stored = self.make_resident(crc);
        if stored.is_err() && new {
            self.programs.retain(|(c, _)| *c != crc);
        }
        match stored {
            Ok(()) => Ok(Some(crc)),
            Err(_) if !self.peer_programs => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Loads the known program `crc` on the MCU unless it is there; a full
    /// store is emptied (its programs stay known here) and the load tried
    /// once more.
    fn make_resident(&mut self, crc: u32) -> Result<(), RemoteError> {
        if self.resident.contains(&crc) {
            return Ok(());
        }
        let Some(index) = self.programs.iter().position(|(c, _)| *c == crc) else {
            return Err(RemoteError::new(
                ErrorKind::InvalidArgument,
                format!("program {crc:08x} was not loaded on this link"),
            ));
        };
        let bytes = core::mem::take(&mut self.programs[index].1);
        let mut sent = self.send_program(&bytes);
        let full = matches!(&sent, Err(e) if e.kind == ErrorKind::OutOfMemory);
        if full && !self.resident.is_empty() {
            let forget = Message::ForgetPrograms(ForgetPrograms);
            sent = self.call(&forget, "ForgetPrograms").and_then(|_| {
                self.resident.clear();
                self.send_program(&bytes)
            });
        }
        self.programs[index].1 = bytes;
        sent?;
        self.resident.push(crc);
        Ok(())
    }

    /// Drops every program the MCU stores, and forgets them here too: a
    /// later run of one is refused until it is loaded again.
    ///
    /// # Errors
    /// The link's.
    pub fn forget_programs(&mut self) -> Result<(), RemoteError> {
        self.programs.clear();
        self.resident.clear();
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
        self.make_resident(program)?;
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

    /// A new session after a restart: the MCU's store is empty, so every
    /// known program is loaded again before its next run.
    pub(super) fn reload_programs(&mut self) -> Result<(), RemoteError> {
        debug_assert_eq!(self.session, SessionState::Open);
        self.resident.clear();
        Ok(())
    }
}
