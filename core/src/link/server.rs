//! [`OpServer`]: the op-level mode's device end. It runs the host's
//! [`Accelerator`] calls on any driver, on the MCU next to the device.
//! `no_std`, no allocation.

use core::time::Duration;

use super::decode::Frame;
use super::error::LinkError;
use super::framing::{MAX_BULK_CHUNK, MAX_ENCODED_FRAME_LEN};
use super::header::NO_REQUEST;
use super::message::{Ack, Completion, EventBatch, MemoryData, Message, RemoteErrorCode};
use super::ops::{ClockValue, Command, Info, MemoryState, Submit, SubmitBatch, WireOp, error_code};
use super::program_ops::{LoadProgram, RunProgram};
use super::program_store::{LoadFault, ProgramStore};
use super::records::{EventRecords, MAX_EVENTS_PER_BATCH};
use super::session::Session;
use crate::accelerator::{Accelerator, DType, DeviceAddr, Drained, Error, Fence, QueueId, Shape};
use crate::accelerator::{Namespace, TensorDesc, VendorOps};
use crate::event::Event;
use crate::program::{Bindings, Limits, RunError, replay};
use crate::ring::Consumer;

/// How long the server waits for the oldest command when its table of
/// outstanding commands is full, and for a copy.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Bytes of programs [`serve_stream`] stores (a host's model server).
pub const HOST_PROGRAM_BYTES: usize = 256 * 1024;

/// Where the server takes the events it sends.
pub trait EventSource<A: Accelerator + ?Sized> {
    /// Moves recorded events into `out`.
    ///
    /// # Errors
    /// The driver's, when the events come from it.
    fn drain(&mut self, accel: &mut A, out: &mut [Event]) -> Result<Drained, A::Error>;
    /// Events waiting; the server streams a batch when this reaches half a
    /// batch.
    fn backlog(&mut self) -> usize {
        0
    }
}

/// Events straight from the driver's
/// [`Profiling::drain_events`](crate::accelerator::Profiling::drain_events).
#[derive(Clone, Copy, Debug, Default)]
pub struct DriverEvents;

impl<A: Accelerator + ?Sized> EventSource<A> for DriverEvents {
    fn drain(&mut self, accel: &mut A, out: &mut [Event]) -> Result<Drained, A::Error> {
        accel.drain_events(out)
    }
}

/// Events from a [`crate::ring`] filled elsewhere, typically by an interrupt
/// handler; its drop count becomes the batches' `dropped`.
#[derive(Debug)]
pub struct RingEvents<'a, const N: usize> {
    consumer: Consumer<'a, Event, N>,
    reported: usize,
}

impl<'a, const N: usize> RingEvents<'a, N> {
    /// Sends what `consumer` receives.
    pub fn new(consumer: Consumer<'a, Event, N>) -> Self {
        Self {
            consumer,
            reported: 0,
        }
    }
}

impl<const N: usize> RingEvents<'_, N> {
    /// Drops every waiting event and forgets earlier drops (a new session).
    pub fn clear(&mut self) {
        self.consumer.drain_each(drop);
        self.reported = self.consumer.dropped();
    }
}

impl<A: Accelerator + ?Sized, const N: usize> EventSource<A> for RingEvents<'_, N> {
    fn drain(&mut self, _accel: &mut A, out: &mut [Event]) -> Result<Drained, A::Error> {
        let events = self.consumer.drain(out);
        let total = self.consumer.dropped();
        let dropped = total.wrapping_sub(self.reported) as u64;
        self.reported = total;
        Ok(Drained { events, dropped })
    }

    fn backlog(&mut self) -> usize {
        self.consumer.len()
    }
}

#[derive(Clone, Copy, Debug)]
struct Outstanding {
    request: u16,
    queue: u8,
    fence: Fence,
    /// Whether finishing well sends a `Completion`: every `Submit`, and
    /// the last enqueued command of a `SubmitBatch`. A failure always does.
    reports: bool,
}

/// Runs op-level requests (`docs/link-protocol.md`, "Op-level mode") on an
/// [`Accelerator`] and reports completions.
///
/// Copies run to completion before they are answered (the data lives in
/// the frame); everything else is enqueued, acknowledged, and completed
/// later by [`OpServer::poll`]. At most `PENDING` commands are outstanding:
/// one more waits for the oldest first (bounded by [`STALL_TIMEOUT`]).
/// `PROGRAMS` bytes hold device programs (`LoadProgram`, `RunProgram`);
/// with 0 the server answers those `Unsupported`.
#[derive(Debug)]
pub struct OpServer<const PENDING: usize = 16, const PROGRAMS: usize = 0> {
    pending: heapless::Vec<Outstanding, PENDING>,
    programs: ProgramStore<PROGRAMS>,
    /// The window `GetLinkInfo` reports (1 unless [`OpServer::with_window`]).
    window: u16,
    scratch: [u8; MAX_BULK_CHUNK],
    events: [Event; MAX_EVENTS_PER_BATCH],
    out: [u8; MAX_ENCODED_FRAME_LEN],
}

impl<const PENDING: usize, const PROGRAMS: usize> Default for OpServer<PENDING, PROGRAMS> {
    fn default() -> Self {
        Self::new()
    }
}

/// The result of one answer step: `Err` carries the request's error code.
type Step<T> = Result<T, u16>;

fn code<E: Error>(e: E) -> u16 {
    error_code(e.kind())
}

impl<const PENDING: usize, const PROGRAMS: usize> OpServer<PENDING, PROGRAMS> {
    /// A server with nothing outstanding.
    pub const fn new() -> Self {
        Self {
            pending: heapless::Vec::new(),
            programs: ProgramStore::new(),
            window: 1,
            scratch: [0; MAX_BULK_CHUNK],
            events: [Event {
                timestamp: 0,
                arg: 0,
                op_id: 0,
                queue: 0,
                kind: 0,
            }; MAX_EVENTS_PER_BATCH],
            out: [0; MAX_ENCODED_FRAME_LEN],
        }
    }

    /// Reports `window` (at least 1) in `LinkInfo`: how many requests the
    /// host may send before it sees the oldest answered. Say more than 1
    /// only if bytes that arrive while a frame is being answered are not
    /// lost: a UART with flow control, a buffered receive path, TCP.
    /// `docs/link-protocol.md`, "Windows (2.1)".
    #[must_use]
    pub const fn with_window(mut self, window: u16) -> Self {
        self.window = if window == 0 { 1 } else { window };
        self
    }

    /// Commands enqueued and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    /// Answers one frame, sending each answer frame to `send`.
    ///
    /// # Errors
    /// Encoding errors only.
    pub fn answer<A, E>(
        &mut self,
        session: &mut Session,
        accel: &mut A,
        events: &mut E,
        frame: &Frame<'_>,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError>
    where
        A: Accelerator + ?Sized,
        E: EventSource<A> + ?Sized,
    {
        if let Some(len) = session.gate(frame, &mut self.out)? {
            send(&self.out[..len]);
            return Ok(());
        }
        let id = frame.header.request_id;
        let outcome: Step<Message<'_>> = match &frame.message {
            Message::GetInfo(_) => {
                let info = accel.info();
                let len =
                    session.respond(id, &Message::Info(Info::from_info(&info)), &mut self.out)?;
                send(&self.out[..len]);
                return Ok(());
            }
            Message::Allocate(a) => accel
                .allocate(a.bytes, a.align)
                .map_err(code)
                .map(|addr| Message::MemoryState(state(accel, addr.0))),
            Message::Deallocate(d) => accel
                .deallocate(DeviceAddr(d.addr))
                .map_err(code)
                .map(|()| Message::MemoryState(state(accel, 0))),
            Message::GetLinkInfo(_) => Ok(Message::LinkInfo(super::ops::LinkInfo {
                window: self.window,
            })),
            Message::ReadClock(_) => accel
                .timestamp()
                .map_err(code)
                .map(|ticks| Message::ClockValue(ClockValue { ticks })),
            Message::SetProfiling(p) => accel
                .set_profiling(p.enabled)
                .map_err(code)
                .map(|()| Message::Ack(Ack)),
            Message::Reset(_) => {
                self.pending.clear();
                accel.reset().map_err(code).map(|()| Message::Ack(Ack))
            }
            Message::DrainEvents(d) => {
                let max = (d.max as usize).min(MAX_EVENTS_PER_BATCH);
                return match events.drain(accel, &mut self.events[..max]) {
                    Ok(drained) => self.send_batch(session, id, drained, send),
                    Err(e) => self.send_error(session, id, code(e), send),
                };
            }
            Message::Submit(submit) => return self.submit(session, accel, id, submit, send),
            Message::SubmitBatch(batch) => {
                return self.submit_batch(session, accel, id, batch, send);
            }
            Message::LoadProgram(load) if PROGRAMS > 0 => {
                return self.load_program(session, accel, id, load, send);
            }
            Message::RunProgram(run) if PROGRAMS > 0 => {
                return self.run_program(session, accel, id, run, send);
            }
            Message::ForgetPrograms(_) => {
                self.programs.clear();
                Ok(Message::Ack(Ack))
            }
            _ => Err(RemoteErrorCode::Unsupported as u16),
        };
        match outcome {
            Ok(message) => {
                let len = session.respond(id, &message, &mut self.out)?;
                send(&self.out[..len]);
                Ok(())
            }
            Err(code) => self.send_error(session, id, code, send),
        }
    }

    /// Sends a `Completion` for every finished command, and an unsolicited
    /// `EventBatch` once half a batch of events waits. Call it whenever the
    /// link is idle.
    ///
    /// # Errors
    /// Encoding errors only.
    pub fn poll<A, E>(
        &mut self,
        session: &mut Session,
        accel: &mut A,
        events: &mut E,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError>
    where
        A: Accelerator + ?Sized,
        E: EventSource<A> + ?Sized,
    {
        let mut i = 0;
        while i < self.pending.len() {
            let entry = self.pending[i];
            let status = match accel.poll(entry.fence) {
                Ok(false) => {
                    i += 1;
                    continue;
                }
                Ok(true) => 0,
                Err(e) => code(e),
            };
            self.pending.remove(i);
            if entry.reports || status != 0 {
                self.complete(session, accel, entry, status, send)?;
            }
        }
        if session.is_open()
            && events.backlog() >= MAX_EVENTS_PER_BATCH / 2
            && let Ok(drained) = events.drain(accel, &mut self.events)
        {
            self.send_batch(session, NO_REQUEST, drained, send)?;
        }
        Ok(())
    }

    fn submit<A: Accelerator + ?Sized>(
        &mut self,
        session: &mut Session,
        accel: &mut A,
        id: u16,
        submit: &Submit<'_>,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError> {
        let queue = QueueId(submit.queue);
        self.make_room(session, accel, send)?;
        let enqueued: Step<Option<Fence>> = match &submit.command {
            Command::Write { dst, data } => {
                if data.len() > MAX_BULK_CHUNK {
                    Err(RemoteErrorCode::OutOfRange as u16)
                } else {
                    accel
                        .write_blocking(queue, DeviceAddr(*dst), data, STALL_TIMEOUT)
                        .map(|()| None)
                        .map_err(code)
                }
            }
            Command::Read { src, len } => {
                return self.read(session, accel, id, queue, *src, *len, send);
            }
            queued => self.enqueue(accel, queue, queued),
        };
        match enqueued {
            Err(code) => self.send_error(session, id, code, send),
            Ok(fence) => {
                let len = session.respond(id, &Message::Ack(Ack), &mut self.out)?;
                send(&self.out[..len]);
                let entry = Outstanding {
                    request: id,
                    queue: submit.queue,
                    fence: fence.unwrap_or_default(),
                    reports: true,
                };
                match fence {
                    // Room was made above.
                    Some(_) => {
                        let _ = self.pending.push(entry);
                        Ok(())
                    }
                    None => self.complete(session, accel, entry, 0, send),
                }
            }
        }
    }

    /// Runs a batch's commands in order (protocol 2.2): one `Ack`, or an
    /// `Error` naming the first refused; one `Completion` for the batch.
    fn submit_batch<A: Accelerator + ?Sized>(
        &mut self,
        session: &mut Session,
        accel: &mut A,
        id: u16,
        batch: &SubmitBatch<'_>,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError> {
        let queue = QueueId(batch.queue);
        // The batch's newest command still outstanding, if any.
        let mut newest: Option<usize> = None;
        let mut refused = None;
        for (index, command) in batch.commands().enumerate() {
            if self.make_room(session, accel, send)? {
                newest = newest.and_then(|at| at.checked_sub(1));
            }
            let enqueued = match command {
                Ok(command) => self.enqueue(accel, queue, &command),
                Err(_) => Err(RemoteErrorCode::BadFrame as u16),
            };
            match enqueued {
                Ok(Some(fence)) => {
                    let entry = Outstanding {
                        request: id,
                        queue: batch.queue,
                        fence,
                        reports: false,
                    };
                    // Room was made above.
                    let _ = self.pending.push(entry);
                    newest = Some(self.pending.len() - 1);
                }
                // A fence with nothing before it: already complete.
                Ok(None) => {}
                Err(code) => {
                    refused = Some((index, code));
                    break;
                }
            }
        }
        match refused {
            None => {
                let len = session.respond(id, &Message::Ack(Ack), &mut self.out)?;
                send(&self.out[..len]);
            }
            Some((index, code)) => self.send_refusal(session, id, code, index, send)?,
        }
        match newest {
            Some(at) => {
                self.pending[at].reports = true;
                Ok(())
            }
            // Nothing ran (the first command was refused).
            None if refused.is_some_and(|(index, _)| index == 0) => Ok(()),
            // What ran has completed already.
            None => {
                let done = Outstanding {
                    request: id,
                    queue: batch.queue,
                    fence: Fence::default(),
                    reports: true,
                };
                self.complete(session, accel, done, 0, send)
            }
        }
    }

    /// Stores one chunk of a program; the last is validated first.
    fn load_program<A: Accelerator + ?Sized>(
        &mut self,
        session: &mut Session,
        accel: &mut A,
        id: u16,
        load: &LoadProgram<'_>,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError> {
        let vendor = accel.info().capabilities.vendor_ops;
        let limits = Limits {
            bytes: u32::try_from(PROGRAMS).unwrap_or(u32::MAX),
            ..Limits::HOST
        };
        match self
            .programs
            .load(load.offset, load.total, load.data, &vendor, &limits)
        {
            Ok(_) => {
                let len = session.respond(id, &Message::Ack(Ack), &mut self.out)?;
                send(&self.out[..len]);
                Ok(())
            }
            Err(LoadFault::OutOfOrder) => {
                self.send_error(session, id, RemoteErrorCode::OutOfRange as u16, send)
            }
            Err(LoadFault::Refused(e)) => {
                let code = RemoteErrorCode::ProgramRefused as u16;
                self.send_refusal(session, id, code, e.detail() as usize, send)
            }
        }
    }

    /// Runs a stored program: one `Ack` once its commands are enqueued (or
    /// an `Error` naming the first refused), one `Completion` when the last
    /// completes.
    fn run_program<A: Accelerator + ?Sized>(
        &mut self,
        session: &mut Session,
        accel: &mut A,
        id: u16,
        run: &RunProgram<'_>,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError> {
        self.make_room(session, accel, send)?;
        let vendor = accel.info().capabilities.vendor_ops;
        let Some(program) = self.programs.get(run.program, &vendor) else {
            return self.send_error(session, id, RemoteErrorCode::UnknownProgram as u16, send);
        };
        let at = Bindings::from_le_bytes(run.slots, DeviceAddr(run.arena));
        let refused = match replay(accel, QueueId(run.queue), &program, &at) {
            Ok(fence) => {
                let len = session.respond(id, &Message::Ack(Ack), &mut self.out)?;
                send(&self.out[..len]);
                let entry = Outstanding {
                    request: id,
                    queue: run.queue,
                    fence: fence.unwrap_or_default(),
                    reports: true,
                };
                return match fence {
                    // Room was made above.
                    Some(_) => {
                        let _ = self.pending.push(entry);
                        Ok(())
                    }
                    None => self.complete(session, accel, entry, 0, send),
                };
            }
            Err(RunError::Program(e)) => {
                (RemoteErrorCode::ProgramRefused as u16, e.detail() as usize)
            }
            Err(RunError::Device { command, error }) => (code(error), usize::from(command)),
        };
        self.send_refusal(session, id, refused.0, refused.1, send)
    }

    /// Enqueues a command that runs on the device queue (not a copy from
    /// or to the host); `None`: a fence with nothing before it.
    fn enqueue<A: Accelerator + ?Sized>(
        &self,
        accel: &mut A,
        queue: QueueId,
        command: &Command<'_>,
    ) -> Step<Option<Fence>> {
        match command {
            Command::Copy { dst, src, len } => match usize::try_from(*len) {
                Ok(len) => accel
                    .copy_on_device(queue, DeviceAddr(*dst), DeviceAddr(*src), len)
                    .map(Some)
                    .map_err(code),
                Err(_) => Err(RemoteErrorCode::OutOfRange as u16),
            },
            Command::Fill { dst, len, pattern } => match usize::try_from(*len) {
                Ok(len) => accel
                    .fill(queue, DeviceAddr(*dst), len, *pattern)
                    .map(Some)
                    .map_err(code),
                Err(_) => Err(RemoteErrorCode::OutOfRange as u16),
            },
            Command::Launch(op) => launch(accel, queue, op),
            Command::Fence => Ok(self
                .pending
                .iter()
                .rev()
                .find(|p| p.queue == queue.0)
                .map(|p| p.fence)),
            Command::Write { .. } | Command::Read { .. } => {
                Err(RemoteErrorCode::Unsupported as u16)
            }
        }
    }

    /// With the table of outstanding commands full, waits for the oldest
    /// and completes it; true if it did.
    fn make_room<A: Accelerator + ?Sized>(
        &mut self,
        session: &mut Session,
        accel: &mut A,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<bool, LinkError> {
        if !self.pending.is_full() {
            return Ok(false);
        }
        let oldest = self.pending.remove(0);
        let status = match accel.wait(oldest.fence, STALL_TIMEOUT) {
            Ok(()) => 0,
            Err(e) => code(e),
        };
        if oldest.reports || status != 0 {
            self.complete(session, accel, oldest, status, send)?;
        }
        Ok(true)
    }

    fn send_refusal(
        &mut self,
        session: &mut Session,
        id: u16,
        code: u16,
        index: usize,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError> {
        let detail = u32::try_from(index).unwrap_or(u32::MAX);
        let len = session.error(id, code, detail, &mut self.out)?;
        send(&self.out[..len]);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn read<A: Accelerator + ?Sized>(
        &mut self,
        session: &mut Session,
        accel: &mut A,
        id: u16,
        queue: QueueId,
        src: u64,
        len: u32,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError> {
        let Some(buf) = self.scratch.get_mut(..len as usize) else {
            return self.send_error(session, id, RemoteErrorCode::OutOfRange as u16, send);
        };
        if let Err(e) = accel.read_blocking(queue, buf, DeviceAddr(src), STALL_TIMEOUT) {
            return self.send_error(session, id, code(e), send);
        }
        let data = MemoryData {
            address: src,
            data: &self.scratch[..len as usize],
        };
        let len = session.respond(id, &Message::MemoryData(data), &mut self.out)?;
        send(&self.out[..len]);
        let entry = Outstanding {
            request: id,
            queue: queue.0,
            fence: Fence::default(),
            reports: true,
        };
        self.complete(session, accel, entry, 0, send)
    }

    fn complete<A: Accelerator + ?Sized>(
        &mut self,
        session: &mut Session,
        accel: &mut A,
        entry: Outstanding,
        status: u16,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError> {
        let device_ticks = accel.timestamp().unwrap_or(0);
        let completion = Completion {
            queue: entry.queue,
            status: u32::from(status),
            device_ticks,
        };
        let len = session.respond(
            entry.request,
            &Message::Completion(completion),
            &mut self.out,
        )?;
        send(&self.out[..len]);
        Ok(())
    }

    fn send_batch(
        &mut self,
        session: &mut Session,
        id: u16,
        drained: Drained,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError> {
        let batch = EventBatch {
            dropped: u32::try_from(drained.dropped).unwrap_or(u32::MAX),
            events: EventRecords::new(&self.events[..drained.events.min(MAX_EVENTS_PER_BATCH)])?,
        };
        let len = if id == NO_REQUEST {
            session.notify(&Message::EventBatch(batch), &mut self.out)?
        } else {
            session.respond(id, &Message::EventBatch(batch), &mut self.out)?
        };
        send(&self.out[..len]);
        Ok(())
    }

    fn send_error(
        &mut self,
        session: &mut Session,
        id: u16,
        code: u16,
        send: &mut impl FnMut(&[u8]),
    ) -> Result<(), LinkError> {
        let len = session.error(id, code, 0, &mut self.out)?;
        send(&self.out[..len]);
        Ok(())
    }
}

fn state<A: Accelerator + ?Sized>(accel: &A, addr: u64) -> MemoryState {
    let usage = accel.memory_usage();
    MemoryState {
        addr,
        used: usage.used,
        total: usage.total,
    }
}

fn launch<A: Accelerator + ?Sized>(
    accel: &mut A,
    queue: QueueId,
    op: &WireOp,
) -> Step<Option<Fence>> {
    let blank = TensorDesc::new(DeviceAddr(0), DType::F32, Shape::SCALAR);
    let mut inputs = [blank; 3];
    let vendor = if op.op.namespace == Namespace::TENSORPLUG {
        VendorOps::NONE
    } else {
        accel.info().capabilities.vendor_ops
    };
    let desc = op
        .to_desc_in(&mut inputs, &vendor)
        .map_err(|_| error_code(crate::accelerator::ErrorKind::InvalidArgument))?;
    accel.launch(queue, &desc).map(Some).map_err(code)
}

/// Serves the op-level mode on a byte stream until the peer closes it
/// (feature `std`; an MCU runs [`OpServer`] over its UART instead). Reads
/// are bounded by 1 ms so completions are sent while the host waits.
///
/// # Errors
/// The stream's, other than timeouts.
#[cfg(feature = "std")]
pub fn serve_stream<S, A, E>(stream: &mut S, accel: &mut A, events: &mut E) -> std::io::Result<()>
where
    S: super::stream::LinkStream,
    A: Accelerator + ?Sized,
    E: EventSource<A> + ?Sized,
{
    use std::io::ErrorKind;
    let mut session = Session::new();
    // TCP's flow control holds the host's frames while one is answered.
    let mut server = std::boxed::Box::new(OpServer::<16, HOST_PROGRAM_BYTES>::new().with_window(8));
    let mut decoder = std::boxed::Box::new(super::decode::Decoder::new());
    let mut tx = std::vec::Vec::new();
    let mut chunk = [0u8; 4096];
    stream.set_read_timeout(Duration::from_millis(1))?;
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => 0,
            Err(e) => return Err(e),
        };
        let mut send = |bytes: &[u8]| tx.extend_from_slice(bytes);
        let mut rest = &chunk[..n];
        while !rest.is_empty() {
            let (done, remaining) = match decoder.feed(rest) {
                super::decode::FeedResult::Consumed => (Ok(()), &[][..]),
                super::decode::FeedResult::Frame { frame, remaining } => (
                    server.answer(&mut session, accel, events, &frame, &mut send),
                    remaining,
                ),
                super::decode::FeedResult::Error { error, remaining } => {
                    let mut out = [0u8; 64];
                    let sent = session
                        .answer_bad_frame(&error, &mut out)
                        .map(|len| send(&out[..len]));
                    (sent, remaining)
                }
            };
            done.map_err(|e| std::io::Error::other(std::format!("{e}")))?;
            rest = remaining;
        }
        server
            .poll(&mut session, accel, events, &mut send)
            .map_err(|e| std::io::Error::other(std::format!("{e}")))?;
        if !tx.is_empty() {
            stream.write_all(&tx)?;
            stream.flush()?;
            tx.clear();
        }
    }
}
