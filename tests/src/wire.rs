//! A loopback TCP forwarder between a host process (TensorFlow) and a
//! device's link, which breaks the wire on demand: it drops the
//! connection, flips a bit in what the device sends next, cuts it short,
//! or holds it back for a while. One client at a time; each gets a fresh upstream
//! from `connect`. It can also record what passes, each way (the fuzz
//! seeds of `tests/tests/fuzz_seeds.rs`).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tensorplug_core::link::{Decoder, FeedResult, MessageClass, MessageId};

/// How often a pump checks that its connection still stands.
const POLL: Duration = Duration::from_millis(100);

#[derive(Default)]
struct Control {
    /// The client now served (to drop it).
    client: Mutex<Option<TcpStream>>,
    corrupt_next: AtomicBool,
    /// Lose the end of the device's next bytes, then flip a bit near the
    /// end of the bytes after.
    cut_next: AtomicBool,
    /// Flip near the end, not in the middle (a frame's header stays whole).
    corrupt_late: AtomicBool,
    /// Milliseconds to hold the device's next bytes back.
    delay_next_ms: AtomicU64,
    /// Milliseconds to hold each of the device's bytes back once the host
    /// has started a stored program (`hold_answers_after_first_run`).
    hold_ms: AtomicU64,
    /// The host has sent its first `RunProgram`.
    ran: AtomicBool,
    recording: Mutex<Option<Recording>>,
}

/// The bytes that passed the wire, each way, up to a cap.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    /// What the host sent (its requests).
    pub from_host: Vec<u8>,
    /// What the device sent (answers and notifications).
    pub from_device: Vec<u8>,
    /// Each time the host sent again after the device had spoken: the
    /// offsets in `from_host` and `from_device` at that moment
    /// ([`round_trips`](Self::round_trips) reads them).
    pub turns: Vec<(usize, usize)>,
    /// Who sent last.
    device_last: bool,
    cap: usize,
}

impl Recording {
    /// The offsets in `from_host` where the host sent again after every
    /// request it had sent was answered: it had waited a whole round trip
    /// (a host that keeps a window of requests in flight resumes before
    /// that, and those turns do not count).
    pub fn round_trips(&self) -> Vec<usize> {
        let sent = frame_ends(&self.from_host, Decoder::requests(), MessageClass::Request);
        let answered = frame_ends(&self.from_device, Decoder::new(), MessageClass::Response);
        self.turns
            .iter()
            .filter(|&&(host, device)| {
                let asked = sent.iter().take_while(|&&end| end <= host).count();
                let got = answered.iter().take_while(|&&end| end <= device).count();
                got >= asked
            })
            .map(|&(host, _)| host)
            .collect()
    }
}

/// The end offset of each frame of `class` in `bytes`; for answers, a
/// `Completion` (a queued command's end, which follows its `Ack`) is none.
fn frame_ends(bytes: &[u8], mut decoder: Decoder, class: MessageClass) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut rest = bytes;
    loop {
        match decoder.feed(rest) {
            FeedResult::Consumed => return ends,
            FeedResult::Error { remaining, .. } => rest = remaining,
            FeedResult::Frame { frame, remaining } => {
                let id = frame.message.id();
                if id.class() == class && id != MessageId::Completion {
                    ends.push(bytes.len() - remaining.len());
                }
                rest = remaining;
            }
        }
    }
}

impl Control {
    fn record(&self, from_host: bool, bytes: &[u8]) {
        if let Ok(mut recording) = self.recording.lock()
            && let Some(r) = recording.as_mut()
        {
            let cap = r.cap;
            if from_host && std::mem::replace(&mut r.device_last, false) {
                r.turns.push((r.from_host.len(), r.from_device.len()));
            }
            r.device_last |= !from_host;
            let log = if from_host {
                &mut r.from_host
            } else {
                &mut r.from_device
            };
            let room = cap.saturating_sub(log.len());
            log.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }
}

/// A forwarder on `127.0.0.1:<port>`.
pub struct Wire {
    /// Its port.
    pub port: u16,
    control: Arc<Control>,
}

impl Wire {
    /// Listens on a new loopback port; every client is forwarded to the
    /// stream `connect` returns for it.
    ///
    /// # Errors
    /// The port cannot be bound.
    pub fn start(connect: impl Fn() -> io::Result<TcpStream> + Send + 'static) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let control = Arc::new(Control::default());
        let serving = Arc::clone(&control);
        std::thread::spawn(move || {
            while let Ok((client, _)) = listener.accept() {
                let Ok(device) = connect() else { continue };
                let _ = forward(client, device, &serving);
            }
        });
        Ok(Self { port, control })
    }

    /// Closes the client's connection now, as a cable pulled out.
    pub fn drop_connection(&self) {
        if let Ok(mut client) = self.control.client.lock()
            && let Some(client) = client.take()
        {
            let _ = client.shutdown(Shutdown::Both);
        }
    }

    /// Holds the next bytes the device sends back for `delay`: a slow answer.
    pub fn delay_next(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.control.delay_next_ms.store(ms, Ordering::SeqCst);
    }

    /// Once the host has sent its first `RunProgram`, holds everything the
    /// device sends for `hold` before it passes on. A host that sends while
    /// an answer is held did not wait for it: a host slowed down between
    /// two sends of one step (a busy machine) is not taken for one that
    /// waited, so [`Recording::round_trips`] counts only real waits. Each
    /// real wait costs `hold` more. The set-up before (the delegate's link
    /// measurement, allocations) runs at the wire's own speed.
    pub fn hold_answers_after_first_run(&self, hold: Duration) {
        let ms = u64::try_from(hold.as_millis()).unwrap_or(u64::MAX);
        self.control.hold_ms.store(ms, Ordering::SeqCst);
    }

    /// Starts recording what passes, up to `cap` bytes each way (what
    /// came before is not kept).
    pub fn record(&self, cap: usize) {
        if let Ok(mut recording) = self.control.recording.lock() {
            *recording = Some(Recording {
                cap,
                ..Recording::default()
            });
        }
    }

    /// What was recorded since [`record`](Self::record) (empty if never).
    pub fn recorded(&self) -> Recording {
        self.control
            .recording
            .lock()
            .ok()
            .and_then(|r| r.clone())
            .unwrap_or_default()
    }

    /// Flips one bit in the next bytes the device sends.
    pub fn corrupt_next(&self) {
        self.control.corrupt_next.store(true, Ordering::SeqCst);
    }

    /// Loses the three bytes before the end of the next bytes the device
    /// sends (the frame there ends early, with no tail), then flips one bit
    /// three bytes before the end of the bytes after (past a small
    /// answer's header): a damaged answer right after a truncated one.
    pub fn cut_then_corrupt(&self) {
        self.control.cut_next.store(true, Ordering::SeqCst);
    }
}

/// Reads what `from` holds now into `into`, without waiting; its length.
fn drain(mut from: &TcpStream, into: &mut [u8]) -> io::Result<usize> {
    from.set_nonblocking(true)?;
    let mut n = 0;
    while n < into.len() {
        match from.read(&mut into[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    from.set_nonblocking(false)?;
    Ok(n)
}

/// Whether `bytes`, fed on to what `requests` holds, end a `RunProgram`.
fn sends_a_run(requests: &mut Decoder, bytes: &[u8]) -> bool {
    let mut rest = bytes;
    let mut ran = false;
    loop {
        match requests.feed(rest) {
            FeedResult::Consumed => return ran,
            FeedResult::Error { remaining, .. } => rest = remaining,
            FeedResult::Frame { frame, remaining } => {
                ran |= frame.message.id() == MessageId::RunProgram;
                rest = remaining;
            }
        }
    }
}

/// Forwards both ways until the client leaves or the connection drops.
fn forward(client: TcpStream, device: TcpStream, control: &Arc<Control>) -> io::Result<()> {
    client.set_nodelay(true)?;
    device.set_read_timeout(Some(POLL))?;
    *control
        .client
        .lock()
        .map_err(|_| io::Error::other("poisoned"))? = Some(client.try_clone()?);
    let done = Arc::new(AtomicBool::new(false));
    let upstream = {
        let (mut from, mut to) = (client.try_clone()?, device.try_clone()?);
        let (done, control) = (Arc::clone(&done), Arc::clone(control));
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            let mut requests = Decoder::requests();
            loop {
                let n = match from.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                control.record(true, &chunk[..n]);
                if control.hold_ms.load(Ordering::SeqCst) > 0 && !control.ran.load(Ordering::SeqCst)
                {
                    let ran = sends_a_run(&mut requests, &chunk[..n]);
                    control.ran.fetch_or(ran, Ordering::SeqCst);
                }
                if to.write_all(&chunk[..n]).is_err() {
                    break;
                }
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let (mut from, mut to) = (device, client);
    let mut chunk = vec![0u8; 1 << 16];
    while !done.load(Ordering::SeqCst) {
        let n = match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(_) => break,
        };
        let mut n = n;
        let delay = control.delay_next_ms.swap(0, Ordering::SeqCst);
        if delay > 0 {
            std::thread::sleep(Duration::from_millis(delay));
        }
        let hold = control.hold_ms.load(Ordering::SeqCst);
        if hold > 0 && control.ran.load(Ordering::SeqCst) {
            // What arrives while held passes with it: one hold a burst.
            std::thread::sleep(Duration::from_millis(hold));
            n += drain(&from, &mut chunk[n..])?;
        }
        if n > 4 && control.cut_next.swap(false, Ordering::SeqCst) {
            chunk.copy_within(n - 1..n, n - 4);
            n -= 3;
            control.corrupt_late.store(true, Ordering::SeqCst);
        } else if n > 3 && control.corrupt_late.swap(false, Ordering::SeqCst) {
            chunk[n - 3] ^= 0x10;
        } else if control.corrupt_next.swap(false, Ordering::SeqCst) {
            chunk[n / 2] ^= 0x10;
        }
        control.record(false, &chunk[..n]);
        if to.write_all(&chunk[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = upstream.join();
    Ok(())
}
