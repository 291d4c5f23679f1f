//! [`LinkStream`]: a byte stream whose reads can be bounded (feature
//! `std`), what the link's std ends run over: `server::serve_stream` here,
//! the op-level client in `tensorplug-link-host`.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A byte stream whose reads can be bounded.
pub trait LinkStream: Read + Write {
    /// Bounds every following read by `timeout`.
    ///
    /// # Errors
    /// The stream's, if it cannot.
    fn set_read_timeout(&mut self, timeout: Duration) -> io::Result<()>;

    /// Reads bytes already received, without waiting: `WouldBlock` when
    /// there are none (`Ok(0)` is the end of the stream). A poll uses it.
    ///
    /// The default reads with a 1 µs timeout, which an OS may round up (a
    /// socket's to a scheduler tick); implement it where the stream can say
    /// what is waiting.
    ///
    /// # Errors
    /// `WouldBlock` (nothing waiting) or the stream's.
    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.set_read_timeout(Duration::from_micros(1))?;
        self.read(buf)
    }
}

impl LinkStream for TcpStream {
    fn set_read_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        TcpStream::set_read_timeout(self, Some(timeout.max(Duration::from_micros(1))))
    }

    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.set_nonblocking(true)?;
        let read = self.read(buf);
        self.set_nonblocking(false)?;
        read
    }
}
