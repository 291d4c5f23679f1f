//! The model behind the link protocol on a byte stream (a TCP connection
//! for `tensorplug-model-server --link`, a pty in tests): what the MCU
//! firmware does with the real FPGA.

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::vec;

use tensorplug_core::link::{Decoder, FeedResult, MAX_ENCODED_FRAME_LEN};

use super::super::{DeviceMemory, HostBus, Model, TickSource};
use super::serve::ServeControl;
use tensorplug_device_fpga::transport::link::LinkServer;

/// Answers link requests from `stream` on `model` until the peer closes the
/// stream (`Ok`) or `control.stop()`. Give the stream a read timeout so a
/// stop is seen while the peer is quiet. Fault switches set through
/// `control` are taken before the next request.
pub fn serve_link<S, M, B, C>(
    mut stream: S,
    model: &mut Model<M, B, C>,
    control: &ServeControl,
) -> io::Result<()>
where
    S: Read + Write,
    M: DeviceMemory,
    B: HostBus,
    C: TickSource,
{
    let mut server = LinkServer::new();
    let mut decoder = Decoder::new();
    let mut out = vec![0u8; MAX_ENCODED_FRAME_LEN];
    let mut chunk = [0u8; 4096];
    while !control.stop.load(Ordering::Acquire) {
        let n = match stream.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(faults) = control.take_faults() {
            *model.faults_mut() = faults;
        }
        let mut rest = &chunk[..n];
        while !rest.is_empty() {
            let len = match decoder.feed(rest) {
                FeedResult::Consumed => break,
                FeedResult::Frame { frame, remaining } => {
                    rest = remaining;
                    server.answer(model, &frame, &mut out)
                }
                FeedResult::Error { error, remaining } => {
                    rest = remaining;
                    server.answer_bad_frame(&error, &mut out)
                }
            }
            .map_err(|e| io::Error::other(std::format!("encoding an answer: {e}")))?;
            stream.write_all(&out[..len])?;
        }
        stream.flush()?;
    }
    Ok(())
}
