//! `LinkTransport` against scripted bytes: which answer a call takes when
//! the stream holds more than its answer.
#![cfg(feature = "std")]

use std::collections::VecDeque;
use std::io::{self, Read, Write};

use tensorplug_core::link::{
    Encoder, Hello, LinkErrorKind, MAX_ENCODED_FRAME_LEN, Message, RegisterValue,
};
use tensorplug_device_fpga::transport::link::LinkTransport;
use tensorplug_device_fpga::transport::{Error, Transport};

/// Each `read` returns the next scripted chunk; writes are kept.
struct Script(VecDeque<Vec<u8>>, Vec<u8>);

impl Read for Script {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let chunk = self.0.pop_front().ok_or(io::ErrorKind::TimedOut)?;
        assert!(chunk.len() <= buf.len(), "a chunk longer than a read");
        buf[..chunk.len()].copy_from_slice(&chunk);
        Ok(chunk.len())
    }
}

impl Write for Script {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.1.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The device's frame answering request `id`.
fn answer(device: &mut Encoder, id: u16, message: &Message<'_>) -> Vec<u8> {
    let mut out = vec![0; MAX_ENCODED_FRAME_LEN];
    let len = device.response(id, message, &mut out).expect("encodes");
    out.truncate(len);
    out
}

fn register(value: u32) -> Message<'static> {
    Message::RegisterValue(RegisterValue { offset: 0, value })
}

/// Request ids: 1 is the handshake, then one per call.
fn connect(device: &mut Encoder, chunks: Vec<Vec<u8>>) -> LinkTransport<Script> {
    let mut script = VecDeque::from(chunks);
    script.push_front(answer(device, 1, &Message::HelloAck(Hello::ours())));
    LinkTransport::connect(Script(script, Vec::new()), 1000).expect("handshake")
}

#[test]
fn the_end_of_a_frame_begun_before_a_request_is_not_its_answer() {
    let mut device = Encoder::new();
    let first = answer(&mut device, 2, &register(7));
    // A damaged frame (a bit flipped), its start read with the first
    // answer and its end only after the next request went out.
    let mut damaged = answer(&mut device, 2, &register(8));
    let cut = damaged.len() / 2;
    damaged[cut + 1] ^= 0x80;
    assert_ne!(damaged[cut + 1], 0, "still one frame");
    let second = answer(&mut device, 3, &register(9));
    let mut link = connect(
        &mut device,
        vec![
            [first, damaged[..cut].to_vec()].concat(),
            [damaged[cut..].to_vec(), second].concat(),
        ],
    );
    assert_eq!(link.read_reg(0), Ok(7));
    assert_eq!(link.read_reg(0), Ok(9), "the damaged frame was skipped");
}

#[test]
fn a_damaged_answer_fails_its_call_and_not_the_next() {
    let mut device = Encoder::new();
    let mut damaged = answer(&mut device, 2, &register(7));
    damaged[3] = 0;
    let second = answer(&mut device, 3, &register(9));
    let mut link = connect(&mut device, vec![damaged, second]);
    assert_eq!(
        link.read_reg(0),
        Err(Error::BadFrame(LinkErrorKind::Truncated))
    );
    assert_eq!(link.read_reg(0), Ok(9));
}

#[test]
fn the_tail_of_a_cut_answer_read_after_the_next_request_is_skipped() {
    let mut device = Encoder::new();
    let mut damaged = answer(&mut device, 2, &register(7));
    damaged[3] = 0;
    let second = answer(&mut device, 3, &register(9));
    // The first read ends at the stray delimiter; the tail comes later.
    let mut link = connect(
        &mut device,
        vec![
            damaged[..4].to_vec(),
            [damaged[4..].to_vec(), second].concat(),
        ],
    );
    assert_eq!(
        link.read_reg(0),
        Err(Error::BadFrame(LinkErrorKind::Truncated))
    );
    assert_eq!(link.read_reg(0), Ok(9));
}

/// When a frame ends early with no tail after it (bytes lost) and the next
/// answer is damaged too, that answer is not taken for the tail: it is a
/// whole frame naming this request, so its call fails at once, and the
/// next call gets its answer (before, it waited out the timeout, and the
/// link then failed every call for one more budget).
#[test]
fn a_damaged_answer_right_after_a_truncated_one_fails_at_once() {
    let mut device = Encoder::new();
    let whole = answer(&mut device, 2, &register(7));
    let lost = [&whole[..5], &whole[9..]].concat();
    let mut second = answer(&mut device, 3, &register(8));
    let flip = second.len() / 2;
    second[flip] ^= 0x80;
    let third = answer(&mut device, 4, &register(9));
    let mut link = connect(&mut device, vec![lost, second, third]);
    assert_eq!(
        link.read_reg(0),
        Err(Error::BadFrame(LinkErrorKind::Truncated))
    );
    // The flipped bit lands on a COBS code byte: the frame ends early too.
    assert_eq!(
        link.read_reg(0),
        Err(Error::BadFrame(LinkErrorKind::Truncated))
    );
    assert_eq!(link.read_reg(0), Ok(9));
}

/// The end of a frame the device sent before the host opened (a cable
/// plugged in again) does not fail the handshake, and the host's `Hello`
/// starts with a lone delimiter, so that the device drops what part of a
/// frame it still holds.
#[test]
fn the_handshake_skips_what_came_before_and_flushes_the_device() {
    let mut device = Encoder::new();
    let stale = answer(&mut device, 9, &register(1));
    let hello_ack = answer(&mut device, 1, &Message::HelloAck(Hello::ours()));
    let script = Script(
        VecDeque::from([[&stale[stale.len() / 2..], &hello_ack[..]].concat()]),
        Vec::new(),
    );
    let mut link = LinkTransport::connect(script, 1000).expect("the handshake");
    let sent = &link.stream_mut().1;
    assert_eq!(sent[0], 0, "a lone delimiter first");
    assert_ne!(sent[1], 0, "then the Hello");
}

/// The same when the damaged answer comes in two reads: the frame's first
/// bytes are kept across them ([`tensorplug_core::link::FrameStart`]).
#[test]
fn a_damaged_answer_split_across_reads_after_a_truncated_one_fails_at_once() {
    let mut device = Encoder::new();
    let whole = answer(&mut device, 2, &register(7));
    let lost = [&whole[..5], &whole[9..]].concat();
    let mut second = answer(&mut device, 3, &register(8));
    let crc = second.len() - 3;
    second[crc] ^= 0x01;
    assert_ne!(second[crc], 0, "still one frame");
    let third = answer(&mut device, 4, &register(9));
    let mut link = connect(
        &mut device,
        vec![lost, second[..4].to_vec(), second[4..].to_vec(), third],
    );
    assert_eq!(
        link.read_reg(0),
        Err(Error::BadFrame(LinkErrorKind::Truncated))
    );
    let damaged = link.read_reg(0);
    assert!(matches!(damaged, Err(Error::Crc(_))), "{damaged:?}");
    assert_eq!(link.read_reg(0), Ok(9));
}
