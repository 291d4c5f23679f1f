//! [`RemoteAccelerator`]: the host end of the op-level mode. An
//! [`Accelerator`](tensorplug_core::accelerator::Accelerator) whose calls
//! run on an MCU's driver, over any byte
//! stream with a read timeout (a TCP connection, a UART).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io;
use std::time::{Duration, Instant};

use tensorplug_core::accelerator::{
    Device, DeviceAddr, DeviceInfo, Drained, ErrorKind, Fence, Launch, Memory, MemoryUsage, OpDecl,
    OpDesc, Profiling, QueueId, Transfer, VendorOps,
};
use tensorplug_core::event::Event;
use tensorplug_core::link::ops::{
    Allocate, Command, Deallocate, DrainEvents, GetInfo, GetLinkInfo, ReadClock, Reset, Submit,
    SubmitBatch, WireOp, error_kind,
};
use tensorplug_core::link::{
    Decoder, Encoder, FeedResult, FrameStart, Hello, LinkError, LinkErrorKind, LinkStream,
    MAX_BULK_CHUNK, MAX_ENCODED_FRAME_LEN, MAX_EVENTS_PER_BATCH, Message, NO_REQUEST,
    ProtocolVersion, SetProfiling, negotiate,
};

mod buffers;
mod programs;
mod refusal;
mod restored;

/// The first protocol version with the op-level mode as it is now (2.0:
/// ops by catalogue identity and attribute block; 1.1 had per-op codes).
pub const OP_LEVEL_VERSION: ProtocolVersion = ProtocolVersion { major: 2, minor: 0 };

/// A failed call on a [`RemoteAccelerator`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteError {
    kind: ErrorKind,
    message: String,
    /// The link's error code, when the MCU answered with one.
    link_code: Option<u16>,
}

impl RemoteError {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            link_code: None,
        }
    }

    /// The error an MCU answered with `code` (and `detail`) means.
    fn remote(code: u16, detail: u32, what: &str) -> Self {
        let mut error = Self::remote_kind(code, detail, what);
        error.link_code = Some(code);
        error
    }

    fn remote_kind(code: u16, detail: u32, what: &str) -> Self {
        if let Some((kind, message)) = refusal::program_refusal(code, detail, what) {
            return Self::new(kind, message);
        }
        match error_kind(code) {
            Some(kind) => Self::new(kind, format!("the MCU's driver failed {what}: {kind:?}")),
            None => Self::new(
                ErrorKind::Transport,
                format!("the MCU refused {what}: link error code {code}"),
            ),
        }
    }
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MCU link: {}", self.message)
    }
}

impl std::error::Error for RemoteError {}

impl tensorplug_core::accelerator::Error for RemoteError {
    fn kind(&self) -> ErrorKind {
        self.kind
    }
}

/// Bits of a [`Fence`] that hold its queue; the rest is a sequence number.
const QUEUE_BITS: u32 = 8;

/// The error an MCU without a session answers with, and announces at boot.
const HANDSHAKE_REQUIRED: u16 = tensorplug_core::link::RemoteErrorCode::HandshakeRequired as u16;

/// The largest window the host uses, whatever the peer offers.
pub const MAX_WINDOW: u16 = 16;

/// An accelerator on the other end of a link in op-level mode.
///
/// Every call is one request (copies: one per 2 KiB chunk) answered within
/// the timeout given to [`RemoteAccelerator::connect`]. Launches, fills,
/// device copies and host-to-device chunks are sent without waiting for
/// their `Ack` while fewer than the peer's window (protocol 2.1,
/// `LinkInfo`) are unanswered; they complete asynchronously, and their
/// answers and `Completion`s are read whenever the link is read. A command
/// the peer refuses fails its fence and every later fence of its queue
/// waited for. Event batches the MCU streams are kept until
/// [`Profiling::drain_events`].
pub struct RemoteAccelerator<S> {
    stream: S,
    timeout: Duration,
    encoder: Encoder,
    decoder: Box<Decoder>,
    /// The first bytes of the frame the decoder is reading.
    start: FrameStart,
    tx: Vec<u8>,
    unread: Vec<u8>,
    /// The last bad frame ended early (`Truncated`: most often a `0x00`
    /// where a byte was): the bad frame its tail makes next is the same
    /// damage, not reported again. Cleared by a good frame.
    cut_short: bool,
    info: DeviceInfo,
    /// The host's declarations of the device's vendor ops.
    known_vendor_ops: VendorOps,
    usage: MemoryUsage,
    next_seq: u64,
    /// Request id → fence of each command not yet completed.
    in_flight: HashMap<u16, Fence>,
    /// Highest completed sequence number per queue (queues complete in order).
    completed: HashMap<u8, u64>,
    /// Failed commands by sequence number, with their queue: reported once,
    /// by the first wait on a fence at or after them on that queue.
    failed: HashMap<u64, (u8, RemoteError)>,
    /// Commands sent and not yet answered (`Ack`), oldest first.
    unanswered: VecDeque<(u16, Fence)>,
    /// How many of those may be outstanding (1: stop-and-wait).
    window: usize,
    /// Fences below this sequence number were cut off by a reset.
    reset_mark: u64,
    /// Whether the peer takes `SubmitBatch` (protocol 2.2).
    peer_batches: bool,
    /// Whether the peer may store programs (protocol 2.3; a peer without a
    /// store answers `Unsupported`, which clears it).
    peer_programs: bool,
    /// The programs loaded through this link, by CRC, with their bytes.
    programs: Vec<(u32, Vec<u8>)>,
    /// Those the MCU stores now. The rest were evicted to make room, or
    /// lost in a restart, and are loaded again before their next run.
    resident: Vec<u32>,
    /// Whether queued commands go in `SubmitBatch`es.
    batching: bool,
    /// Queued commands not sent yet: sent by the next call that is not one.
    batch: Option<Batch>,
    /// Request id → sequence number of the first command, per batch sent
    /// and not yet answered.
    batches: HashMap<u16, u64>,
    /// Refused commands, and those after them in their batch, that never
    /// run: (queue, first, last). Each counts as done when the command
    /// before the first is; the newest [`MAX_REFUSED_RANGES`] are kept.
    refused: VecDeque<(u8, u64, u64)>,
    events: VecDeque<Event>,
    dropped: u64,
    /// Where the session stands: the MCU forgets it when it restarts.
    session: SessionState,
    /// This session's buffers, those a restart took, and the bytes it
    /// left stale (`client/restored.rs`).
    buffers: buffers::Buffers,
    /// Whether the host turned profiling on: a new session after a
    /// restart turns it on again.
    profiling: bool,
}

/// The host's view of the link session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SessionState {
    /// The handshake is under way: a boot announcement is expected noise.
    Opening,
    Open,
    /// The MCU restarted (it said so, or answered `HandshakeRequired`):
    /// everything fails until [`Reset::reset`](tensorplug_core::accelerator::Reset::reset) opens a new session
    /// (with the lost buffers back at their addresses, their bytes stale).
    Lost,
}

/// Commands for one queue waiting to go in one `SubmitBatch`.
struct Batch {
    queue: u8,
    commands: Vec<u8>,
    first_seq: u64,
    last: Fence,
}

/// Refused ranges a host keeps (a wait on an older one may time out).
const MAX_REFUSED_RANGES: usize = 64;

/// The most bytes of encoded commands one `SubmitBatch` carries.
const MAX_BATCH_BYTES: usize = MAX_BULK_CHUNK;
/// Room one encoded command may need (a launch with three rank-6 inputs
/// takes about 330 bytes).
const MAX_COMMAND_BYTES: usize = 512;

impl<S> fmt::Debug for RemoteAccelerator<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteAccelerator")
            .field("info", &self.info)
            .field("in_flight", &self.in_flight.len())
            .finish_non_exhaustive()
    }
}

/// An answer to a request, owned.
enum Answer {
    Ack,
    Hello(Hello),
    Info(DeviceInfo),
    Memory(u64, MemoryUsage),
    Clock(u64),
    Data(Vec<u8>),
    Events(usize),
    LinkWindow(u16),
}

impl<S: LinkStream> RemoteAccelerator<S> {
    /// Opens the link on `stream`: the version handshake (another major, or
    /// a peer without the op-level mode, is refused naming both versions),
    /// then the device's info. Every answer must come within `timeout`.
    ///
    /// # Errors
    /// A clear [`RemoteError`] for a silent, incompatible or broken peer.
    pub fn connect(stream: S, timeout: Duration) -> Result<Self, RemoteError> {
        Self::connect_with_vendor_ops(stream, timeout, &[])
    }

    /// [`connect`](Self::connect) to a device that may declare vendor ops:
    /// `known` are the host's declarations of them, in code order; the
    /// device's info declares those it lists ([`Info::to_info_with`]), and
    /// their launches cross the link by identity.
    ///
    /// [`Info::to_info_with`]: tensorplug_core::link::ops::Info::to_info_with
    ///
    /// # Errors
    /// As [`connect`](Self::connect).
    pub fn connect_with_vendor_ops(
        mut stream: S,
        timeout: Duration,
        known: &'static [&'static OpDecl],
    ) -> Result<Self, RemoteError> {
        stream.set_read_timeout(timeout).map_err(|e| {
            RemoteError::new(ErrorKind::Transport, format!("cannot set a timeout: {e}"))
        })?;
        let mut link = Self {
            stream,
            timeout,
            encoder: Encoder::new(),
            decoder: Box::default(),
            start: FrameStart::default(),
            tx: vec![0; MAX_ENCODED_FRAME_LEN],
            unread: Vec::new(),
            cut_short: false,
            info: DeviceInfo::new("", 0, 1, Default::default(), 0),
            known_vendor_ops: VendorOps(known),
            usage: MemoryUsage::default(),
            next_seq: 1,
            in_flight: HashMap::new(),
            completed: HashMap::new(),
            failed: HashMap::new(),
            unanswered: VecDeque::new(),
            window: 1,
            reset_mark: 0,
            peer_batches: false,
            peer_programs: false,
            programs: Vec::new(),
            resident: Vec::new(),
            batching: false,
            batch: None,
            batches: HashMap::new(),
            refused: VecDeque::new(),
            events: VecDeque::new(),
            dropped: 0,
            session: SessionState::Opening,
            buffers: buffers::Buffers::default(),
            profiling: false,
        };
        let ours = Hello::ours();
        let Answer::Hello(peer) = link.call(&Message::Hello(ours), "the handshake")? else {
            unreachable!("call checks the answer's type")
        };
        let agreed = negotiate(&ours, &peer)
            .map_err(|e| RemoteError::new(ErrorKind::Incompatible, e.to_string()))?;
        let v = agreed.version;
        if (v.major, v.minor) < (OP_LEVEL_VERSION.major, OP_LEVEL_VERSION.minor) {
            return Err(RemoteError::new(
                ErrorKind::Incompatible,
                format!(
                    "the firmware speaks link protocol {}, without the op-level mode (needs {}); \
                     update the firmware, or use its remote-bus device kind",
                    peer.version, OP_LEVEL_VERSION
                ),
            ));
        }
        let Answer::Info(info) = link.call(&Message::GetInfo(GetInfo), "GetInfo")? else {
            unreachable!("call checks the answer's type")
        };
        link.usage.total = info.memory_bytes;
        link.info = info;
        if v.minor >= 1 {
            // A peer that cannot say keeps stop-and-wait.
            link.window = match link.call(&Message::GetLinkInfo(GetLinkInfo), "GetLinkInfo") {
                Ok(Answer::LinkWindow(window)) => usize::from(window.clamp(1, MAX_WINDOW)),
                Ok(_) => unreachable!("read_some returns only answers"),
                Err(e)
                    if e.kind == ErrorKind::Unsupported
                        || e.link_code
                            == Some(tensorplug_core::link::RemoteErrorCode::Unsupported as u16) =>
                {
                    1
                }
                Err(e) => return Err(e),
            };
        }
        link.peer_batches = v.minor >= 2;
        link.peer_programs = v.minor >= 3;
        link.batching = link.peer_batches && link.window > 1;
        link.session = SessionState::Open;
        Ok(link)
    }

    /// Opens a new session with an MCU that restarted: the handshake again
    /// (its window and version are those of the same firmware).
    fn reopen(&mut self) -> Result<(), RemoteError> {
        self.session = SessionState::Opening;
        // A frame cut short in the old session has no tail in this one.
        self.cut_short = false;
        let ours = Hello::ours();
        let opened = match self.call(&Message::Hello(ours), "the handshake") {
            Ok(Answer::Hello(peer)) => negotiate(&ours, &peer)
                .map(drop)
                .map_err(|e| RemoteError::new(ErrorKind::Incompatible, e.to_string())),
            Ok(_) => unreachable!("call checks the answer's type"),
            Err(e) => Err(e),
        };
        self.session = match opened {
            Ok(()) => SessionState::Open,
            Err(_) => SessionState::Lost,
        };
        self.usage.used = 0;
        self.buffers.live.clear();
        opened?;
        if self.profiling {
            let on = Message::SetProfiling(SetProfiling { enabled: true });
            self.call(&on, "SetProfiling")?;
        }
        self.reload_programs()
    }

    /// The MCU restarted: every command in flight is lost with its memory.
    fn lost_session(&mut self, what: &str) -> RemoteError {
        if self.session == SessionState::Open {
            self.session = SessionState::Lost;
            self.buffers.lose();
            self.batch = None;
            self.in_flight.clear();
            self.unanswered.clear();
            self.batches.clear();
            self.refused.clear();
            self.reset_mark = self.next_seq;
        }
        RemoteError::new(
            ErrorKind::DeviceFault,
            format!(
                "the MCU restarted during {what}: its session, the commands in flight and \
                 device memory are lost; reset() opens a new session, where the buffers \
                 allocated before read as lost until they are written again"
            ),
        )
    }

    /// `reset()` of a lost session whose buffers could not be put back.
    fn buffers_outlive_session(&self) -> RemoteError {
        RemoteError::new(
            ErrorKind::DeviceFault,
            format!(
                "the MCU restarted and lost device memory, and {} buffers allocated before \
                 could not be put back at their addresses: free them (in TF: restart the \
                 process) before reset() opens a new session, whose allocations could reuse \
                 their addresses",
                self.buffers.lost.len()
            ),
        )
    }

    /// A call after the one that met a restart opens a new session first
    /// (`reset()`): the restart was reported once, and the buffers it took
    /// read as lost until written again.
    fn revive(&mut self) -> Result<(), RemoteError> {
        if self.session == SessionState::Lost {
            tensorplug_core::accelerator::Reset::reset(self)?;
        }
        Ok(())
    }

    /// A new session after a restart; `reset` then puts the lost buffers
    /// back, unless that failed before and they are not all freed yet.
    fn reopen_after_restart(&mut self) -> Result<(), RemoteError> {
        if self.buffers.unrestorable && !self.buffers.lost.is_empty() {
            return Err(self.buffers_outlive_session());
        }
        self.buffers.unrestorable = false;
        self.reopen()
    }

    /// Requests that may be unanswered at once: the peer's window (at most
    /// `MAX_WINDOW`), 1 for a 2.0 peer.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Lowers the window (1: stop-and-wait, as with a 2.0 peer); a value
    /// above the peer's is ignored.
    pub fn limit_window(&mut self, window: usize) {
        self.window = self.window.min(window.max(1));
        self.batching &= self.window > 1;
    }

    /// Whether launches, fills, device copies and fences are gathered into
    /// `SubmitBatch` frames (protocol 2.2; on when the peer speaks it and
    /// the window is above 1). A batch is sent by the next call that is not
    /// one of those, or when it fills a frame.
    pub fn batching(&self) -> bool {
        self.batching
    }

    /// Sends queued commands one `Submit` each (`false`), or in batches
    /// again (`true`, if the peer speaks 2.2 and the window is above 1).
    ///
    /// # Errors
    /// Sending the batch gathered so far failed.
    pub fn set_batching(&mut self, on: bool) -> Result<(), RemoteError> {
        self.flush()?;
        self.batching = on && self.window > 1 && self.peer_batches;
        Ok(())
    }

    /// The byte stream.
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// Commands sent and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Sends `request`, then reads until its answer (not its completion).
    fn call(&mut self, request: &Message<'_>, what: &str) -> Result<Answer, RemoteError> {
        self.flush()?;
        let id = self.send(request, what)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(answer) = self.read_some(Some(id), what, Some(deadline))? {
                return Ok(answer);
            }
        }
    }

    /// Reads one chunk of the stream (waiting until `deadline`; `None`:
    /// only what is already there) and handles every frame in it; returns
    /// the answer to request `want` if it came.
    fn read_some(
        &mut self,
        want: Option<u16>,
        what: &str,
        deadline: Option<Instant>,
    ) -> Result<Option<Answer>, RemoteError> {
        let mut input = core::mem::take(&mut self.unread);
        if input.is_empty() {
            let mut chunk = [0u8; 4096];
            let read = match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(timeout(what, self.timeout));
                    }
                    self.stream
                        .set_read_timeout(left)
                        .and_then(|()| self.stream.read(&mut chunk))
                }
                None => self.stream.read_ready(&mut chunk),
            };
            let n = read.map_err(|e| io_failure(&e, what, self.timeout))?;
            if n == 0 {
                return Err(RemoteError::new(
                    ErrorKind::Transport,
                    format!("the MCU closed the link during {what}"),
                ));
            }
            input.extend_from_slice(&chunk[..n]);
        }
        let mut rest: &[u8] = &input;
        while !rest.is_empty() {
            let (fed, fresh) = (rest, self.decoder.buffered() == 0);
            match self.decoder.feed(rest) {
                FeedResult::Consumed => {
                    self.start.note(fresh, fed);
                    rest = &[];
                }
                FeedResult::Error { error, remaining } => {
                    // Opening: bytes from before this session (the end of a
                    // frame sent before a cable was plugged in again), or the
                    // tail of a frame cut short, unless its first bytes name
                    // a request in flight: an answer damaged on the wire.
                    self.start.note(fresh, &fed[..fed.len() - remaining.len()]);
                    let named = self.start.request_id();
                    let in_flight = named.is_some_and(|id| {
                        want == Some(id) || self.unanswered.iter().any(|&(i, _)| i == id)
                    });
                    if self.session == SessionState::Opening
                        || (core::mem::take(&mut self.cut_short) && !in_flight)
                    {
                        rest = remaining;
                        continue;
                    }
                    self.cut_short = error.kind() == LinkErrorKind::Truncated;
                    self.unread = remaining.to_vec();
                    return Err(frame_failure(&error, what));
                }
                FeedResult::Frame { frame, remaining } => {
                    self.cut_short = false;
                    rest = remaining;
                    let id = frame.header.request_id;
                    let answer = match &frame.message {
                        Message::Completion(c) => {
                            self.completed_request(id, c.status as u16);
                            continue;
                        }
                        Message::EventBatch(batch) => {
                            self.events.extend(batch.events.iter());
                            self.dropped += u64::from(batch.dropped);
                            Answer::Events(batch.events.len())
                        }
                        // Opening: the MCU's boot announcement, or its answers
                        // to what the host sent before it restarted.
                        Message::Error(_)
                            if self.session == SessionState::Opening && Some(id) != want =>
                        {
                            continue;
                        }
                        Message::Error(e) if e.code == HANDSHAKE_REQUIRED => {
                            self.unread = rest.to_vec();
                            return Err(self.lost_session(what));
                        }
                        Message::Error(e) if id == NO_REQUEST || Some(id) == want => {
                            self.unread = rest.to_vec();
                            return Err(RemoteError::remote(e.code, e.detail, what));
                        }
                        Message::Ack(_) if Some(id) != want => {
                            self.answered(id, None);
                            continue;
                        }
                        Message::Error(e) if Some(id) != want => {
                            let error = RemoteError::remote(e.code, e.detail, "a queued command");
                            self.answered(id, Some((error, e.detail)));
                            continue;
                        }
                        _ if Some(id) != want => continue, // stale
                        Message::Ack(_) => Answer::Ack,
                        Message::HelloAck(h) => Answer::Hello(*h),
                        Message::Info(info) => {
                            Answer::Info(info.to_info_with(&self.known_vendor_ops))
                        }
                        Message::MemoryState(m) => Answer::Memory(
                            m.addr,
                            MemoryUsage {
                                total: m.total,
                                used: m.used,
                            },
                        ),
                        Message::ClockValue(c) => Answer::Clock(c.ticks),
                        Message::LinkInfo(l) => Answer::LinkWindow(l.window),
                        Message::MemoryData(d) => Answer::Data(d.data.to_vec()),
                        other => {
                            self.unread = rest.to_vec();
                            return Err(RemoteError::new(
                                ErrorKind::Transport,
                                format!("the MCU answered {what} with {:?}", other.id()),
                            ));
                        }
                    };
                    if want.is_some() && Some(id) == want {
                        self.unread = rest.to_vec();
                        return Ok(Some(answer));
                    }
                }
            }
        }
        Ok(None)
    }

    fn completed_request(&mut self, request: u16, status: u16) {
        let Some(fence) = self.in_flight.remove(&request) else {
            return; // cut off by a reset
        };
        let (queue, seq) = split(fence);
        if status != 0 {
            self.failed.insert(
                seq,
                (queue, RemoteError::remote(status, 0, "a queued command")),
            );
        }
        let done = self.completed.entry(queue).or_default();
        *done = (*done).max(seq);
    }

    /// Records the answer to an unanswered command: `error` fails it (no
    /// `Completion` will come), or, for a batch, its command at the index
    /// `detail` and those after it (the batch's `Completion` is that of the
    /// command before).
    fn answered(&mut self, id: u16, error: Option<(RemoteError, u32)>) {
        let first = self.batches.remove(&id);
        let Some(at) = self.unanswered.iter().position(|&(i, _)| i == id) else {
            return; // stale: cut off by a reset
        };
        let Some((_, fence)) = self.unanswered.remove(at) else {
            return;
        };
        let Some((error, detail)) = error else {
            return;
        };
        let (queue, last) = split(fence);
        let failed = match first {
            Some(first) => first.saturating_add(u64::from(detail)).min(last),
            None => last,
        };
        match first {
            Some(first) if failed > first => {
                let before = Fence((failed - 1) << QUEUE_BITS | u64::from(queue));
                self.in_flight.insert(id, before);
            }
            _ => {
                self.in_flight.remove(&id);
            }
        }
        self.failed.insert(failed, (queue, error));
        if self.refused.len() == MAX_REFUSED_RANGES {
            self.refused.pop_front();
        }
        self.refused.push_back((queue, failed, last));
    }

    /// Sends a command; returns its fence once it is sent and fewer than
    /// the window are unanswered. With a window of 1 the MCU's refusal is
    /// returned here; with more, it fails the fence.
    fn submit(
        &mut self,
        queue: QueueId,
        command: Command<'_>,
        what: &str,
    ) -> Result<Fence, RemoteError> {
        if queue.0 >= self.info.queues {
            return Err(RemoteError::new(
                ErrorKind::InvalidArgument,
                format!("queue {} of a device with {}", queue.0, self.info.queues),
            ));
        }
        if self.batching && command.batchable() {
            return self.gather(queue.0, &command, what);
        }
        let message = Message::Submit(Submit {
            queue: queue.0,
            command,
        });
        self.send_queued(queue, &message, what)
    }

    /// Sends `message`, work queued on `queue` (a `Submit`, a
    /// `RunProgram`), after the gathered batch; returns its fence once
    /// fewer than the window are unanswered. With a window of 1 the MCU's
    /// refusal is returned here; with more, it fails the fence.
    fn send_queued(
        &mut self,
        queue: QueueId,
        message: &Message<'_>,
        what: &str,
    ) -> Result<Fence, RemoteError> {
        self.flush()?;
        let fence = Fence(self.next_seq << QUEUE_BITS | u64::from(queue.0));
        let id = self.send(message, what)?;
        self.in_flight.insert(id, fence);
        self.unanswered.push_back((id, fence));
        self.next_seq += 1;
        self.within_window(what)?;
        if self.window == 1 {
            let (_, seq) = split(fence);
            if let Some((_, error)) = self.failed.remove(&seq) {
                return Err(error);
            }
        }
        Ok(fence)
    }

    /// Adds a queued command to the batch, sending the batch first if the
    /// command is for another queue or does not fit.
    fn gather(
        &mut self,
        queue: u8,
        command: &Command<'_>,
        what: &str,
    ) -> Result<Fence, RemoteError> {
        let mut encoded = [0u8; MAX_COMMAND_BYTES];
        let bytes = postcard::to_slice(command, &mut encoded).map_err(|e| {
            RemoteError::new(
                ErrorKind::InvalidArgument,
                format!("cannot encode {what}: {e}"),
            )
        })?;
        if self
            .batch
            .as_ref()
            .is_some_and(|b| b.queue != queue || b.commands.len() + bytes.len() > MAX_BATCH_BYTES)
        {
            self.flush()?;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let fence = Fence(seq << QUEUE_BITS | u64::from(queue));
        let batch = self.batch.get_or_insert_with(|| Batch {
            queue,
            commands: Vec::with_capacity(MAX_BATCH_BYTES),
            first_seq: seq,
            last: fence,
        });
        batch.commands.extend_from_slice(bytes);
        batch.last = fence;
        Ok(fence)
    }

    /// Sends the gathered commands, if any, as one `SubmitBatch`. If that
    /// fails, their fences fail with the error too.
    fn flush(&mut self) -> Result<(), RemoteError> {
        let Some(batch) = self.batch.take() else {
            return Ok(());
        };
        let what = "a batch of commands";
        let message = Message::SubmitBatch(SubmitBatch {
            queue: batch.queue,
            commands: &batch.commands,
        });
        let id = match self.send(&message, what) {
            Ok(id) => id,
            Err(error) => {
                self.failed
                    .insert(batch.first_seq, (batch.queue, error.clone()));
                return Err(error);
            }
        };
        self.in_flight.insert(id, batch.last);
        self.unanswered.push_back((id, batch.last));
        self.batches.insert(id, batch.first_seq);
        self.within_window(what)
    }

    /// Reads answers until fewer than the window are unanswered.
    fn within_window(&mut self, what: &str) -> Result<(), RemoteError> {
        let deadline = Instant::now() + self.timeout;
        while self.unanswered.len() >= self.window {
            self.read_some(None, what, Some(deadline))?;
        }
        Ok(())
    }

    /// Encodes and sends `request`; returns its request id.
    fn send(&mut self, request: &Message<'_>, what: &str) -> Result<u16, RemoteError> {
        if self.session == SessionState::Lost {
            return Err(self.lost_session(what));
        }
        let (len, id) = self.encoder.request(request, &mut self.tx).map_err(|e| {
            RemoteError::new(
                ErrorKind::InvalidArgument,
                format!("cannot encode {what}: {e}"),
            )
        })?;
        // A `Hello` starts with a lone delimiter: it ends whatever part of a
        // frame the MCU's decoder still holds from before (a cable plugged
        // in again), which it drops; an idle decoder ignores it.
        let flush: &[u8] = if matches!(request, Message::Hello(_)) {
            &[0]
        } else {
            &[]
        };
        self.stream
            .write_all(flush)
            .and_then(|()| self.stream.write_all(&self.tx[..len]))
            .and_then(|()| self.stream.flush())
            .map_err(|e| io_failure(&e, what, self.timeout))?;
        Ok(id)
    }

    fn submit_read(
        &mut self,
        queue: QueueId,
        src: u64,
        dst: &mut [u8],
    ) -> Result<Fence, RemoteError> {
        self.flush()?;
        let fence = Fence(self.next_seq << QUEUE_BITS | u64::from(queue.0));
        let id = self.encoder_peek_id();
        self.in_flight.insert(id, fence);
        let message = Message::Submit(Submit {
            queue: queue.0,
            command: Command::Read {
                src,
                len: dst.len() as u32,
            },
        });
        match self.call(&message, "a device-to-host copy") {
            Ok(Answer::Data(data)) if data.len() == dst.len() => {
                dst.copy_from_slice(&data);
                self.next_seq += 1;
                Ok(fence)
            }
            Ok(_) => {
                self.in_flight.remove(&id);
                Err(RemoteError::new(
                    ErrorKind::Transport,
                    "the MCU answered a read with the wrong length",
                ))
            }
            Err(e) => {
                self.in_flight.remove(&id);
                Err(e)
            }
        }
    }

    /// The request id the encoder gives the next request.
    fn encoder_peek_id(&self) -> u16 {
        self.encoder.next_request_id()
    }

    fn status(&mut self, fence: Fence) -> Result<bool, RemoteError> {
        let (queue, seq) = split(fence);
        // The oldest failure at or before this fence on its queue.
        let failed = self
            .failed
            .iter()
            .filter(|&(&at, &(q, _))| q == queue && at <= seq)
            .map(|(&at, _)| at)
            .min();
        if let Some((_, error)) = failed.and_then(|at| self.failed.remove(&at)) {
            return Err(error);
        }
        // A command that never ran is done when the one before it is.
        if let Some(&(_, first, _)) = self
            .refused
            .iter()
            .find(|&&(q, first, last)| q == queue && (first..=last).contains(&seq))
        {
            let before = first - 1;
            return Ok(before < self.reset_mark
                || before <= self.completed.get(&queue).copied().unwrap_or(0));
        }
        if seq <= self.completed.get(&queue).copied().unwrap_or(0) {
            return Ok(true);
        }
        if seq < self.reset_mark || seq >= self.next_seq {
            return Err(RemoteError::new(
                ErrorKind::DeviceFault,
                "the command was cut off by a reset, or never submitted",
            ));
        }
        Ok(false)
    }
}

fn split(fence: Fence) -> (u8, u64) {
    ((fence.0 & 0xFF) as u8, fence.0 >> QUEUE_BITS)
}

fn timeout(what: &str, after: Duration) -> RemoteError {
    RemoteError::new(
        ErrorKind::Timeout,
        format!("no answer to {what} within {} ms", after.as_millis()),
    )
}

fn io_failure(e: &io::Error, what: &str, after: Duration) -> RemoteError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => timeout(what, after),
        _ => RemoteError::new(
            ErrorKind::Transport,
            format!("{what} failed on the link: {e}"),
        ),
    }
}

fn frame_failure(error: &LinkError, what: &str) -> RemoteError {
    RemoteError::new(
        ErrorKind::Transport,
        format!("a bad frame from the MCU during {what}: {error}"),
    )
}

impl<S: LinkStream> Device for RemoteAccelerator<S> {
    type Error = RemoteError;
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }
}

impl<S: LinkStream> Memory for RemoteAccelerator<S> {
    fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, RemoteError> {
        self.revive()?;
        match self.call(
            &Message::Allocate(Allocate { bytes, align }),
            "an allocation",
        )? {
            Answer::Memory(addr, usage) => {
                self.usage = usage;
                self.buffers.live.insert(addr, bytes);
                Ok(DeviceAddr(addr))
            }
            _ => unreachable!("read_some returns only answers"),
        }
    }
    fn deallocate(&mut self, addr: DeviceAddr) -> Result<(), RemoteError> {
        // Buffers of a session the MCU lost were freed with its memory,
        // unless a new session put them back.
        if let Some(bytes) = self.buffers.lost.remove(&addr.0) {
            self.buffers.freed(addr.0, bytes);
            return Ok(());
        }
        let request = Message::Deallocate(Deallocate { addr: addr.0 });
        match self.call(&request, "a deallocation") {
            Ok(answer) => {
                if let Answer::Memory(_, usage) = answer {
                    self.usage = usage;
                }
                if let Some(bytes) = self.buffers.live.remove(&addr.0) {
                    self.buffers.freed(addr.0, bytes);
                }
                Ok(())
            }
            // The restart this call found took the buffer's memory with it.
            Err(_) if self.buffers.lost.remove(&addr.0).is_some() => Ok(()),
            Err(e) => Err(e),
        }
    }
    fn memory_usage(&self) -> MemoryUsage {
        self.usage
    }
}

impl<S: LinkStream> Transfer for RemoteAccelerator<S> {
    unsafe fn copy_to_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: *const u8,
        len: usize,
    ) -> Result<Fence, RemoteError> {
        self.revive()?;
        // SAFETY: the caller guarantees `src` is readable for `len` bytes.
        let data = unsafe { core::slice::from_raw_parts(src, len) };
        self.buffers.written(dst.0, len as u64);
        if data.is_empty() {
            return self.submit(queue, Command::Fence, "an empty copy");
        }
        let mut fence = Fence::default();
        for (i, chunk) in data.chunks(MAX_BULK_CHUNK).enumerate() {
            let command = Command::Write {
                dst: dst.0.wrapping_add((i * MAX_BULK_CHUNK) as u64),
                data: chunk,
            };
            fence = self.submit(queue, command, "a host-to-device copy")?;
        }
        Ok(fence)
    }
    unsafe fn copy_from_device(
        &mut self,
        queue: QueueId,
        dst: *mut u8,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, RemoteError> {
        self.revive()?;
        self.buffers
            .check_read(src.0, len as u64, "a device-to-host copy")
            .map_err(RemoteError::stale)?;
        // SAFETY: the caller guarantees `dst` is writable for `len` bytes.
        let out = unsafe { core::slice::from_raw_parts_mut(dst, len) };
        if out.is_empty() {
            return self.submit(queue, Command::Fence, "an empty copy");
        }
        let mut fence = Fence::default();
        for (i, chunk) in out.chunks_mut(MAX_BULK_CHUNK).enumerate() {
            let at = src.0.wrapping_add((i * MAX_BULK_CHUNK) as u64);
            fence = self.submit_read(queue, at, chunk)?;
        }
        Ok(fence)
    }
    fn copy_on_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, RemoteError> {
        self.revive()?;
        self.buffers
            .check_read(src.0, len as u64, "a device-to-device copy")
            .map_err(RemoteError::stale)?;
        self.buffers.written(dst.0, len as u64);
        let command = Command::Copy {
            dst: dst.0,
            src: src.0,
            len: len as u64,
        };
        self.submit(queue, command, "a device-to-device copy")
    }
    fn fill(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, RemoteError> {
        self.revive()?;
        self.buffers.written(dst.0, len as u64);
        let command = Command::Fill {
            dst: dst.0,
            len: len as u64,
            pattern,
        };
        self.submit(queue, command, "a fill")
    }
    fn poll(&mut self, fence: Fence) -> Result<bool, RemoteError> {
        if self.status(fence)? {
            return Ok(true);
        }
        self.flush()?;
        match self.read_some(None, "a poll", None) {
            Ok(_) => {}
            Err(e) if e.kind == ErrorKind::Timeout => {}
            Err(e) => return Err(e),
        }
        self.status(fence)
    }
    fn wait(&mut self, fence: Fence, timeout: Duration) -> Result<(), RemoteError> {
        self.flush()?;
        let deadline = Instant::now() + timeout;
        while !self.status(fence)? {
            if Instant::now() >= deadline {
                return Err(RemoteError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the command did not complete within {} ms",
                        timeout.as_millis()
                    ),
                ));
            }
            match self.read_some(None, "a wait", Some(deadline)) {
                Ok(_) => {}
                Err(e) if e.kind == ErrorKind::Timeout => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl<S: LinkStream> Launch for RemoteAccelerator<S> {
    fn launch(&mut self, queue: QueueId, op: &OpDesc<'_>) -> Result<Fence, RemoteError> {
        self.revive()?;
        op.validate()
            .map_err(|e| RemoteError::new(ErrorKind::InvalidArgument, format!("{e:?}")))?;
        // Refused here, not by a late answer: the device's info lists its ops.
        let caps = &self.info.capabilities;
        let declared = match op.kind {
            tensorplug_core::accelerator::OpKind::Vendor(v) => {
                caps.vendor_ops.find(v.decl.id).is_some()
            }
            builtin => caps.ops.contains(builtin),
        };
        if !declared {
            return Err(RemoteError::new(
                ErrorKind::Unsupported,
                format!("{} is not declared by the device", op.kind.name()),
            ));
        }
        let wire = WireOp::from_desc(op).map_err(|_| {
            RemoteError::new(ErrorKind::InvalidArgument, "an op with more than 3 inputs")
        })?;
        self.launch_access(op.inputs, &op.output)?;
        self.submit(queue, Command::Launch(wire), "a launch")
    }

    fn load_program(&mut self, program: &[u8]) -> Result<Option<u32>, RemoteError> {
        self.revive()?;
        self.store_program(program)
    }

    fn run_program(
        &mut self,
        queue: QueueId,
        program: u32,
        slots: &[DeviceAddr],
        arena: DeviceAddr,
    ) -> Option<Result<Fence, RemoteError>> {
        self.peer_programs.then(|| {
            self.revive()?;
            self.run_stored(queue, program, slots, arena)
        })
    }
}

impl<S: LinkStream> tensorplug_core::accelerator::Reset for RemoteAccelerator<S> {
    fn reset(&mut self) -> Result<(), RemoteError> {
        // Bytes already read stay: they may be the start of a frame the MCU
        // is still sending (a completion); stale answers are skipped by id.
        // Gathered commands are cut off with the rest; not sent.
        self.batch = None;
        if self.session != SessionState::Open {
            self.reopen_after_restart()?;
        }
        match self.call(&Message::Reset(Reset), "a reset") {
            Ok(_) => {}
            // The MCU restarted unseen: it answered without a session.
            Err(_) if self.session == SessionState::Lost => {
                self.reopen_after_restart()?;
                self.call(&Message::Reset(Reset), "a reset")?;
            }
            Err(e) => return Err(e),
        }
        self.in_flight.clear();
        self.unanswered.clear();
        self.batches.clear();
        self.refused.clear();
        self.reset_mark = self.next_seq;
        if self.buffers.lost.is_empty() {
            return Ok(());
        }
        self.restore_buffers()
    }
}

impl<S: LinkStream> Profiling for RemoteAccelerator<S> {
    fn timestamp(&mut self) -> Result<u64, RemoteError> {
        self.revive()?;
        match self.call(&Message::ReadClock(ReadClock), "a clock read")? {
            Answer::Clock(ticks) => Ok(ticks),
            _ => unreachable!("read_some returns only answers"),
        }
    }
    fn set_profiling(&mut self, enabled: bool) -> Result<(), RemoteError> {
        self.revive()?;
        self.call(
            &Message::SetProfiling(SetProfiling { enabled }),
            "SetProfiling",
        )?;
        self.profiling = enabled;
        Ok(())
    }
    fn drain_events(&mut self, out: &mut [Event]) -> Result<Drained, RemoteError> {
        while self.events.len() < out.len() {
            let request = Message::DrainEvents(DrainEvents {
                max: MAX_EVENTS_PER_BATCH as u32,
            });
            match self.call(&request, "DrainEvents")? {
                Answer::Events(n) if n == MAX_EVENTS_PER_BATCH => {}
                _ => break,
            }
        }
        let n = out.len().min(self.events.len());
        for (slot, event) in out.iter_mut().zip(self.events.drain(..n)) {
            *slot = event;
        }
        Ok(Drained {
            events: n,
            dropped: core::mem::take(&mut self.dropped),
        })
    }
}
