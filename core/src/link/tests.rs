//! Unit tests of the link protocol: golden vector, round trips, every bad
//! input, chunking, and the payload-efficiency figure.

use super::framing::CRC32;
use super::*;
use crate::accelerator::{Attrs, OpId};
use crate::event::{Event, EventKind};

const BULK: [u8; 300] = {
    let mut data = [0u8; 300];
    let mut i = 0;
    while i < data.len() {
        data[i] = (i * 7) as u8; // includes zeros every so often
        i += 1;
    }
    data
};

static EVENTS: [Event; MAX_EVENTS_PER_BATCH] = {
    let mut events = [Event::new(EventKind::OpBegin, 0, 0, 0, 0); MAX_EVENTS_PER_BATCH];
    let mut i = 0;
    while i < events.len() {
        let kind = if i % 2 == 0 {
            EventKind::OpBegin
        } else {
            EventKind::OpEnd
        };
        events[i] = Event::new(
            kind,
            u64::MAX - i as u64,
            3,
            i as u16,
            0xdead_0000 + i as u32,
        );
        i += 1;
    }
    events
};

fn batch() -> EventBatch<'static> {
    EventBatch {
        dropped: 7,
        events: EventRecords::new(&EVENTS).expect("a full batch is allowed"),
    }
}

/// One message of every id, with boundary values.
fn every_message() -> [Message<'static>; 25] {
    [
        Message::Hello(Hello::ours()),
        Message::Ping(Ping { nonce: u32::MAX }),
        Message::ReadRegister(ReadRegister { offset: 0x10 }),
        Message::WriteRegister(WriteRegister {
            offset: 0x14,
            value: 0,
        }),
        Message::ReadMemory(ReadMemory {
            address: u64::MAX,
            len: MAX_BULK_CHUNK as u32,
        }),
        Message::WriteMemory(WriteMemory {
            address: 0x2000_0000,
            data: &BULK,
        }),
        Message::Submit(Submit {
            queue: 2,
            command: ops::Command::Write {
                dst: u64::MAX,
                data: &BULK,
            },
        }),
        Message::GetInfo(ops::GetInfo),
        Message::Allocate(ops::Allocate {
            bytes: u64::MAX,
            align: 64,
        }),
        Message::Deallocate(ops::Deallocate { addr: 0x1000 }),
        Message::ReadClock(ops::ReadClock),
        Message::Reset(ops::Reset),
        Message::DrainEvents(ops::DrainEvents { max: 128 }),
        Message::SetProfiling(SetProfiling { enabled: true }),
        Message::HelloAck(Hello {
            version: ProtocolVersion { major: 1, minor: 9 },
            max_frame_len: 64,
        }),
        Message::Pong(Ping { nonce: 0 }),
        Message::RegisterValue(RegisterValue {
            offset: 0x10,
            value: 0xCAFE_F00D,
        }),
        Message::Ack(Ack),
        Message::MemoryData(MemoryData {
            address: 0,
            data: &[],
        }),
        Message::Completion(Completion {
            queue: 1,
            status: 0,
            device_ticks: 123_456_789,
        }),
        Message::Error(ErrorResponse {
            code: RemoteErrorCode::OutOfRange as u16,
            detail: 0x4000_0000,
        }),
        Message::EventBatch(batch()),
        Message::Info(ops::Info {
            name: "reference-fpga",
            memory_bytes: 3 << 20,
            clock_hz: 100_000_000,
            abi: [1, 0, 0],
            queues: 4,
            ops: [0x3FF, 0, 1 << 63, 0],
            dtypes: 1,
            profiling: true,
            vendor_ops: heapless::Vec::from_slice(&[OpId {
                namespace: crate::accelerator::Namespace::named("x"),
                code: 3,
            }])
            .unwrap(),
        }),
        Message::MemoryState(ops::MemoryState {
            addr: 64,
            used: 128,
            total: u64::MAX,
        }),
        Message::ClockValue(ops::ClockValue { ticks: u64::MAX }),
    ]
}

fn encode(
    seq: u16,
    request_id: u16,
    message: &Message<'_>,
) -> heapless::Vec<u8, MAX_ENCODED_FRAME_LEN> {
    let mut out = [0u8; MAX_ENCODED_FRAME_LEN];
    let len = encode_frame(seq, request_id, message, &mut out).expect("encodes");
    heapless::Vec::from_slice(&out[..len]).expect("fits")
}

/// Feeds `input` and collects every outcome, as `Ok(message id)` or `Err`.
fn outcomes(
    decoder: &mut Decoder,
    input: &[u8],
) -> heapless::Vec<Result<(u8, u16), LinkError>, 64> {
    let mut seen = heapless::Vec::new();
    let mut rest = input;
    loop {
        let (outcome, remaining) = match decoder.feed(rest) {
            FeedResult::Consumed => return seen,
            FeedResult::Frame { frame, remaining } => {
                (Ok((frame.message.id() as u8, frame.header.seq)), remaining)
            }
            FeedResult::Error { error, remaining } => (Err(error), remaining),
        };
        seen.push(outcome).expect("test feeds fewer than 64 frames");
        rest = remaining;
    }
}

#[test]
fn golden_vector_matches_the_documented_bytes() {
    // docs/link-protocol.md, "Worked example": ReadRegister { offset: 0x10 },
    // sequence 1, request id 1.
    let frame = encode(1, 1, &Message::ReadRegister(ReadRegister { offset: 0x10 }));
    let expected = [
        0x03, 0x03, 0x01, 0x02, 0x01, 0x02, 0x01, 0x06, 0x10, 0xdd, 0x80, 0xcf, 0x6c, 0x00,
    ];
    assert_eq!(frame.as_slice(), expected.as_slice());
}

#[test]
fn crc_is_crc32_iso_hdlc() {
    assert_eq!(CRC32.checksum(b"123456789"), 0xCBF4_3926);
}

#[test]
fn every_message_round_trips_with_its_header() {
    let mut seen_ids = [false; 256];
    for (i, message) in every_message().iter().enumerate() {
        let seq = 0xFFE0_u16.wrapping_add(i as u16 * 2);
        let request_id = if message.id().class() == MessageClass::Notification {
            NO_REQUEST
        } else {
            0x100 + i as u16
        };
        let mut wire = encode(seq, request_id, message);
        assert_eq!(
            wire.iter().filter(|&&b| b == 0).count(),
            1,
            "only the delimiter is zero"
        );
        let len = wire.len();
        let frame = decode_frame(&mut wire[..len - 1]).expect("decodes");
        assert_eq!(frame.message, *message);
        assert_eq!(frame.header.seq, seq);
        assert_eq!(frame.header.request_id, request_id);
        assert_eq!(frame.header.message_id, message.id() as u8);
        assert_eq!(usize::from(frame.header.payload_len), message.payload_len());
        assert!(
            !core::mem::replace(&mut seen_ids[message.id() as usize], true),
            "ids are unique"
        );
    }
}

#[test]
fn message_classes_follow_the_id_ranges() {
    assert_eq!(MessageId::Hello.class(), MessageClass::Request);
    assert_eq!(MessageId::SetProfiling.class(), MessageClass::Request);
    assert_eq!(MessageId::HelloAck.class(), MessageClass::Response);
    assert_eq!(MessageId::Error.class(), MessageClass::Response);
    assert_eq!(MessageId::EventBatch.class(), MessageClass::Notification);
    for raw in 0..=u8::MAX {
        if let Some(id) = MessageId::from_u8(raw) {
            assert_eq!(id as u8, raw);
        }
    }
}

#[test]
fn encoder_numbers_frames_and_request_ids_skip_zero() {
    let mut encoder = Encoder::new();
    let mut out = [0u8; MAX_ENCODED_FRAME_LEN];
    let ping = Message::Ping(Ping { nonce: 1 });
    let (_, first) = encoder.request(&ping, &mut out).unwrap();
    assert_eq!(first, 1);
    let len = encoder
        .response(first, &Message::Pong(Ping { nonce: 1 }), &mut out)
        .unwrap();
    let frame = decode_frame(&mut out[..len - 1]).unwrap();
    assert_eq!((frame.header.seq, frame.header.request_id), (1, first));
    let len = encoder
        .notification(
            &Message::EventBatch(EventBatch {
                dropped: 0,
                events: EventRecords::empty(),
            }),
            &mut out,
        )
        .unwrap();
    let frame = decode_frame(&mut out[..len - 1]).unwrap();
    assert_eq!((frame.header.seq, frame.header.request_id), (2, NO_REQUEST));

    let mut wrapping = Encoder {
        next_seq: u16::MAX,
        last_request_id: u16::MAX,
    };
    let (len, id) = wrapping.request(&ping, &mut out).unwrap();
    assert_eq!(id, 1, "request id 0 is reserved");
    assert_eq!(
        decode_frame(&mut out[..len - 1]).unwrap().header.seq,
        u16::MAX
    );
    assert_eq!(wrapping.next_seq, 0);
}

#[test]
fn too_small_buffer_is_an_error_and_uses_no_sequence_number() {
    let mut encoder = Encoder::new();
    let message = Message::WriteMemory(WriteMemory {
        address: 0,
        data: &BULK,
    });
    let mut small = [0u8; 64];
    let err = encoder.request(&message, &mut small).unwrap_err();
    assert_eq!(err.kind(), LinkErrorKind::BufferTooSmall);
    assert!(matches!(err, LinkError::BufferTooSmall { available: 64, needed } if needed > 300));
    let mut out = [0u8; MAX_ENCODED_FRAME_LEN];
    let (len, id) = encoder.request(&message, &mut out).unwrap();
    assert_eq!(id, 1);
    assert_eq!(decode_frame(&mut out[..len - 1]).unwrap().header.seq, 0);
}

#[test]
fn largest_chunk_fits_and_one_byte_more_is_refused() {
    let zeros = [0u8; MAX_BULK_CHUNK + 64];
    let ones = [0xFFu8; MAX_BULK_CHUNK];
    for data in [&zeros[..MAX_BULK_CHUNK], &ones[..]] {
        let message = Message::WriteMemory(WriteMemory {
            address: u64::MAX,
            data,
        });
        let mut wire = encode(0, 1, &message);
        assert!(wire.len() <= MAX_ENCODED_FRAME_LEN);
        let len = wire.len();
        assert_eq!(decode_frame(&mut wire[..len - 1]).unwrap().message, message);
    }
    let too_big = Message::WriteMemory(WriteMemory {
        address: u64::MAX,
        data: &zeros,
    });
    let mut out = [0u8; MAX_ENCODED_FRAME_LEN];
    let err = encode_frame(0, 1, &too_big, &mut out).unwrap_err();
    assert!(
        matches!(
            err,
            LinkError::PayloadTooLarge {
                limit: MAX_PAYLOAD_LEN,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn corrupt_byte_is_a_crc_error_and_the_next_frame_decodes() {
    let message = Message::WriteRegister(WriteRegister {
        offset: 0x44,
        value: 0x1234_5678,
    });
    let mut bad = encode(5, 9, &message);
    // Byte 9 is inside the payload's value varint, not a COBS code byte.
    bad[9] ^= 0x04;
    let good = encode(6, 10, &message);
    let mut decoder = Decoder::new();
    let seen = outcomes(
        &mut decoder,
        &[bad.as_slice(), good.as_slice()].concat_into::<64>(),
    );
    assert!(
        matches!(seen[0], Err(LinkError::CrcMismatch { .. })),
        "{:?}",
        seen[0]
    );
    assert_eq!(seen[0].unwrap_err().kind(), LinkErrorKind::Corrupt);
    assert_eq!(seen[1], Ok((MessageId::WriteRegister as u8, 6)));
    assert_eq!(seen.len(), 2);
}

#[test]
fn a_bad_frame_shows_its_request_id_unless_too_little_of_it_came() {
    let message = Message::WriteRegister(WriteRegister {
        offset: 0x44,
        value: 0x1234_5678,
    });
    let mut bad = encode(5, 9, &message);
    bad[9] ^= 0x04;
    assert_eq!(bad_frame_request_id(&bad), Some(9));
    // Its first bytes only (cut short after its header), then too few.
    let whole = encode(5, 0x0201, &message);
    assert_eq!(bad_frame_request_id(&whole[..12]), Some(0x0201));
    assert_eq!(bad_frame_request_id(&whole[..4]), None);
    // A bulk answer's first COBS block runs far past its header (no zero
    // in 300 bytes of data): its id still shows, damaged at its end.
    let data = [0x5a; 300];
    let bulk = Message::WriteMemory(WriteMemory {
        address: 0x0101_0101,
        data: &data,
    });
    let mut long = encode(0x0303, 0x0404, &bulk);
    let end = long.len() - 3;
    long[end] ^= 0x01;
    assert_eq!(bad_frame_request_id(&long), Some(0x0404));
}

#[test]
fn truncated_frame_is_reported_and_the_next_frame_decodes() {
    let message = Message::WriteMemory(WriteMemory {
        address: 0x100,
        data: &BULK,
    });
    let whole = encode(1, 1, &message);
    let next = encode(2, 2, &Message::Ping(Ping { nonce: 3 }));
    // Cut at every length: the delimiter arrives early.
    for cut in 1..whole.len() - 1 {
        let mut decoder = Decoder::new();
        let input = [&whole[..cut], &[DELIMITER][..], next.as_slice()].concat_into::<512>();
        let seen = outcomes(&mut decoder, &input);
        assert!(
            matches!(seen[0], Err(LinkError::Truncated { .. })),
            "cut {cut}: {:?}",
            seen[0]
        );
        assert_eq!(seen[1], Ok((MessageId::Ping as u8, 2)), "cut {cut}");
        assert_eq!(seen.len(), 2);
    }
}

#[test]
fn oversized_frame_is_reported_once_then_the_next_frame_decodes() {
    let mut decoder = Decoder::new();
    let junk = [0x55u8; MAX_ENCODED_FRAME_LEN + 100];
    let next = encode(7, 7, &Message::Ack(Ack));
    // Fed in pieces: the error comes once, when the limit is crossed.
    let mut seen = outcomes(&mut decoder, &junk[..1000]);
    assert!(seen.is_empty());
    seen.extend(outcomes(&mut decoder, &junk[1000..]));
    seen.extend(outcomes(
        &mut decoder,
        &[&[DELIMITER][..], next.as_slice()].concat_into::<64>(),
    ));
    assert_eq!(
        seen[0],
        Err(LinkError::Oversized {
            limit: MAX_ENCODED_FRAME_LEN
        })
    );
    assert_eq!(seen[0].unwrap_err().kind(), LinkErrorKind::Oversized);
    assert_eq!(seen[1], Ok((MessageId::Ack as u8, 7)));
    assert_eq!(seen.len(), 2);
}

#[test]
fn longest_acceptable_encoding_is_accepted_one_more_byte_is_oversized() {
    let mut decoder = Decoder::new();
    let just_fits = [0x01u8; MAX_ENCODED_FRAME_LEN - 1];
    // COBS-valid (all zeros), but longer than MAX_FRAME_LEN once decoded.
    let seen = outcomes(
        &mut decoder,
        &[&just_fits[..], &[DELIMITER]].concat_into::<{ MAX_ENCODED_FRAME_LEN }>(),
    );
    assert_eq!(
        seen.as_slice(),
        &[Err(LinkError::Oversized {
            limit: MAX_ENCODED_FRAME_LEN
        })]
    );
    let one_more = [0x01u8; MAX_ENCODED_FRAME_LEN];
    let seen = outcomes(&mut decoder, &one_more);
    assert_eq!(
        seen.as_slice(),
        &[Err(LinkError::Oversized {
            limit: MAX_ENCODED_FRAME_LEN
        })]
    );
    assert_eq!(decoder.buffered(), 0);
}

#[test]
fn unknown_message_id_is_reported_and_the_next_frame_decodes() {
    let mut raw = [0x7Fu8, 0, 0, 1, 0, 1, 0, 0xAB, 0, 0, 0, 0];
    let crc = CRC32.checksum(&raw[..8]);
    raw[8..].copy_from_slice(&crc.to_le_bytes());
    let mut wire = [0u8; 32];
    let len = cobs::encode(&raw, &mut wire);
    wire[len] = DELIMITER;
    let next = encode(1, 2, &Message::Ping(Ping { nonce: 1 }));
    let mut decoder = Decoder::new();
    let seen = outcomes(
        &mut decoder,
        &[&wire[..=len], next.as_slice()].concat_into::<64>(),
    );
    assert_eq!(seen[0], Err(LinkError::UnknownMessage { id: 0x7F }));
    assert_eq!(seen[1], Ok((MessageId::Ping as u8, 1)));
}

#[test]
fn malformed_payload_and_length_mismatch_are_reported() {
    // Good CRC, `Ping` id, but a varint that never ends.
    let frame = |declared: u16, payload: &[u8]| {
        let mut raw = [0u8; 32];
        let header = FrameHeader {
            message_id: MessageId::Ping as u8,
            seq: 0,
            request_id: 1,
            payload_len: declared,
        };
        raw[..HEADER_LEN].copy_from_slice(&header.to_bytes());
        raw[HEADER_LEN..HEADER_LEN + payload.len()].copy_from_slice(payload);
        let end = HEADER_LEN + payload.len();
        let crc = CRC32.checksum(&raw[..end]);
        raw[end..end + CRC_LEN].copy_from_slice(&crc.to_le_bytes());
        let mut wire = [0u8; 40];
        let len = cobs::encode(&raw[..end + CRC_LEN], &mut wire);
        (wire, len)
    };
    let (mut wire, len) = frame(2, &[0xFF, 0xFF]);
    assert_eq!(
        decode_frame(&mut wire[..len]),
        Err(LinkError::MalformedPayload { id: 0x02 })
    );
    let (mut wire, len) = frame(2, &[0x01, 0x01]);
    assert_eq!(
        decode_frame(&mut wire[..len]),
        Err(LinkError::MalformedPayload { id: 0x02 }),
        "trailing byte"
    );
    let (mut wire, len) = frame(1, &[0x01, 0x01]);
    let err = decode_frame(&mut wire[..len]).unwrap_err();
    assert_eq!(
        err,
        LinkError::LengthMismatch {
            declared: 1,
            received: 2
        }
    );
    assert_eq!(err.kind(), LinkErrorKind::Malformed);
}

#[test]
fn incompatible_peer_is_refused_naming_both_versions() {
    let ours = Hello::ours();
    let peer = Hello {
        version: ProtocolVersion { major: 1, minor: 1 },
        max_frame_len: 512,
    };
    let err = negotiate(&ours, &peer).unwrap_err();
    assert_eq!(
        err,
        LinkError::IncompatibleVersion {
            local: PROTOCOL_VERSION,
            peer: peer.version
        }
    );
    assert_eq!(err.kind(), LinkErrorKind::Incompatible);
    let mut text = heapless::String::<128>::new();
    core::fmt::write(&mut text, format_args!("{err}")).unwrap();
    assert_eq!(
        text.as_str(),
        "incompatible link protocol: we speak 2.3, the peer speaks 1.1"
    );
}

#[test]
fn compatible_peer_agrees_on_the_lower_minor_and_smaller_frame() {
    let ours = Hello {
        version: ProtocolVersion { major: 1, minor: 4 },
        max_frame_len: 4096,
    };
    let peer = Hello {
        version: ProtocolVersion { major: 1, minor: 2 },
        max_frame_len: 512,
    };
    let agreed = negotiate(&ours, &peer).unwrap();
    assert_eq!(agreed.version, ProtocolVersion { major: 1, minor: 2 });
    assert_eq!(agreed.max_frame_len, 512);
    assert_eq!(negotiate(&peer, &ours).unwrap(), agreed);
}

#[test]
fn frames_split_at_every_byte_boundary_decode() {
    let first = encode(
        10,
        1,
        &Message::WriteMemory(WriteMemory {
            address: 8,
            data: &BULK,
        }),
    );
    let second = encode(11, NO_REQUEST, &Message::EventBatch(batch()));
    let stream = [first.as_slice(), second.as_slice()].concat_into::<4096>();
    for split in 0..=stream.len() {
        let mut decoder = Decoder::new();
        let mut seen = outcomes(&mut decoder, &stream[..split]);
        seen.extend(outcomes(&mut decoder, &stream[split..]));
        assert_eq!(
            seen.as_slice(),
            &[
                Ok((MessageId::WriteMemory as u8, 10)),
                Ok((MessageId::EventBatch as u8, 11))
            ],
            "split at {split}"
        );
    }
    // And one byte at a time.
    let mut decoder = Decoder::new();
    let mut seen = heapless::Vec::<_, 4>::new();
    for byte in &stream {
        seen.extend(outcomes(&mut decoder, core::slice::from_ref(byte)));
    }
    assert_eq!(seen.len(), 2);
}

#[test]
fn many_frames_in_one_buffer_all_decode_in_order() {
    let mut stream = heapless::Vec::<u8, 8192>::new();
    let messages = every_message();
    for (seq, message) in messages.iter().enumerate() {
        stream
            .extend_from_slice(&encode(seq as u16, 1, message))
            .unwrap();
        stream.push(DELIMITER).unwrap(); // empty frames are ignored
    }
    let mut decoder = Decoder::new();
    let seen = outcomes(&mut decoder, &stream);
    assert_eq!(seen.len(), messages.len());
    for (seq, (outcome, message)) in seen.iter().zip(&messages).enumerate() {
        assert_eq!(*outcome, Ok((message.id() as u8, seq as u16)));
    }
}

#[test]
fn sequence_tracker_counts_lost_frames_across_wrap() {
    let mut tracker = SequenceTracker::new();
    assert_eq!(tracker.observe(u16::MAX - 1), 0);
    assert_eq!(tracker.observe(u16::MAX), 0);
    assert_eq!(tracker.observe(2), 2, "0 and 1 lost");
    tracker.reset();
    assert_eq!(tracker.observe(9), 0);
}

#[test]
fn remote_error_codes_round_trip_and_unknown_is_none() {
    for raw in 0..=u16::from(u8::MAX) {
        if let Some(code) = RemoteErrorCode::from_u16(raw) {
            assert_eq!(code as u16, raw);
        }
    }
    assert_eq!(
        ErrorResponse {
            code: 999,
            detail: 0
        }
        .code(),
        None
    );
    assert_eq!(
        ErrorResponse { code: 5, detail: 0 }.code(),
        Some(RemoteErrorCode::Busy)
    );
}

/// Wire bytes of a 4 KiB bulk write (all frames, COBS, header, CRC and
/// delimiters), with data that has no zeros (COBS's worst case).
pub(crate) fn bulk_write_wire_bytes(data: &[u8]) -> usize {
    let mut encoder = Encoder::new();
    let mut out = [0u8; MAX_ENCODED_FRAME_LEN];
    WriteMemory::chunks(0x1000_0000, data)
        .map(|chunk| {
            encoder
                .request(&Message::WriteMemory(chunk), &mut out)
                .expect("chunk encodes")
                .0
        })
        .sum()
}

#[test]
fn payload_efficiency_of_a_4_kib_bulk_write_is_at_least_97_percent() {
    let data = [0xA5u8; 4096];
    let wire = bulk_write_wire_bytes(&data);
    let efficiency = data.len() as f64 / wire as f64;
    assert!(efficiency >= 0.97, "4096 / {wire} = {efficiency}");
    assert!(wire > data.len(), "overhead is counted");
}

/// `concat` for a no_std test: joins slices into a fixed-capacity vector.
trait ConcatInto {
    fn concat_into<const N: usize>(&self) -> heapless::Vec<u8, N>;
}

impl ConcatInto for [&[u8]] {
    fn concat_into<const N: usize>(&self) -> heapless::Vec<u8, N> {
        let mut out = heapless::Vec::new();
        for part in self {
            out.extend_from_slice(part)
                .expect("test buffer is large enough");
        }
        out
    }
}

impl<const M: usize> ConcatInto for [&[u8]; M] {
    fn concat_into<const N: usize>(&self) -> heapless::Vec<u8, N> {
        self.as_slice().concat_into()
    }
}

#[test]
fn op_level_golden_vector_matches_the_documented_bytes() {
    // docs/link-protocol.md, "Op-level mode", worked example: Relu of 4
    // floats at 0x40 into 0x80, op id 7, queue 0; sequence 2, request id 2.
    // Relu is built-in op 8 and has no attributes (an empty block).
    let tensor = |addr| ops::WireTensor {
        addr,
        dtype: 1,
        dims: heapless::Vec::from_slice(&[4]).unwrap(),
    };
    let launch = Message::Submit(Submit {
        queue: 0,
        command: ops::Command::Launch(ops::WireOp {
            op_id: 7,
            op: OpId::builtin(8),
            attrs: Attrs::default(),
            inputs: heapless::Vec::from_slice(&[tensor(0x40)]).unwrap(),
            output: tensor(0x80),
        }),
    });
    let wire = encode(2, 2, &launch);
    let expected = [
        0x03, 0x07, 0x02, 0x02, 0x02, 0x02, 0x10, 0x01, 0x03, 0x04, 0x07, 0x02, 0x08, 0x0f, 0x01,
        0x40, 0x01, 0x01, 0x04, 0x80, 0x01, 0x01, 0x01, 0x04, 0x3e, 0x8f, 0x6b, 0xf1, 0x00,
    ];
    assert_eq!(wire.as_slice(), expected.as_slice());
}

#[test]
fn submit_batch_golden_vector_matches_the_documented_bytes() {
    // docs/link-protocol.md, "Batches (2.2)": a fill of 64 bytes at 0x40
    // with pattern 1, then a fence, on queue 0; sequence 3, request id 3.
    let mut commands = [0u8; 16];
    let mut len = 0;
    for command in [
        ops::Command::Fill {
            dst: 0x40,
            len: 64,
            pattern: 1,
        },
        ops::Command::Fence,
    ] {
        len += postcard::to_slice(&command, &mut commands[len..])
            .unwrap()
            .len();
    }
    assert_eq!(&commands[..len], [0x03, 0x40, 0x40, 0x01, 0x05]);
    let batch = Message::SubmitBatch(ops::SubmitBatch {
        queue: 0,
        commands: &commands[..len],
    });
    let wire = encode(3, 3, &batch);
    let expected = [
        0x03, 0x10, 0x03, 0x02, 0x03, 0x02, 0x07, 0x01, 0x0b, 0x05, 0x03, 0x40, 0x40, 0x01, 0x05,
        0xfd, 0xd9, 0xd2, 0x62, 0x00,
    ];
    assert_eq!(wire.as_slice(), expected.as_slice(), "{wire:02x?}");
    let mut bytes = wire.clone();
    let frame = decode_frame(&mut bytes[..wire.len() - 1]).unwrap();
    let Message::SubmitBatch(decoded) = frame.message else {
        panic!("{:?}", frame.message);
    };
    let mut decoded = decoded.commands();
    assert!(matches!(
        decoded.next(),
        Some(Ok(ops::Command::Fill { dst: 0x40, .. }))
    ));
    assert_eq!(decoded.next(), Some(Ok(ops::Command::Fence)));
    assert_eq!(decoded.next(), None);
}

#[test]
fn a_batch_with_no_command_or_a_data_command_does_not_decode() {
    let mut buf = [0u8; 64];
    let write = ops::Command::Write {
        dst: 0,
        data: &[1, 2],
    };
    let n = postcard::to_slice(&write, &mut buf).unwrap().len();
    for commands in [&[][..], &buf[..n], &[0x03, 0x40][..]] {
        let batch = ops::SubmitBatch { queue: 0, commands };
        assert!(batch.check().is_err(), "{commands:02x?}");
        let body = Message::SubmitBatch(batch);
        let mut wire = encode(1, 1, &body);
        let end = wire.len() - 1;
        assert!(
            decode_frame(&mut wire[..end]).is_err(),
            "{commands:02x?} decoded"
        );
    }
}

#[test]
fn attribute_blocks_drop_trailing_zeros_and_refuse_oversized_ones() {
    use crate::accelerator::{ATTR_BYTES, OpKind, Window};
    let mut buf = [0u8; 64];
    let none = postcard::to_slice(&Attrs::default(), &mut buf).unwrap();
    assert_eq!(none, [0]);
    let conv = OpKind::Conv2D(Window::new([3, 3])).attrs();
    let bytes = postcard::to_slice(&conv, &mut buf).unwrap().to_vec();
    // size 3×3, stride 1×1, dilation 1×1 (u16 LE): up to the last non-zero byte.
    assert_eq!(bytes, [11, 3, 0, 3, 0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(postcard::from_bytes::<Attrs>(&bytes), Ok(conv));
    let mut long = [1u8; ATTR_BYTES + 2];
    long[0] = ATTR_BYTES as u8 + 1;
    assert!(postcard::from_bytes::<Attrs>(&long).is_err());
}

#[test]
fn a_device_end_decoder_takes_requests_and_reports_anything_else_as_unknown() {
    let mut decoder = Decoder::requests();
    for (seq, message) in every_message().iter().enumerate() {
        let frame = encode(seq as u16, 1, message);
        let id = message.id() as u8;
        let want = if id < 0x80 {
            Ok((id, seq as u16))
        } else {
            Err(LinkError::UnknownMessage { id })
        };
        assert_eq!(
            outcomes(&mut decoder, &frame).as_slice(),
            [want],
            "{message:?}"
        );
    }
}

#[test]
fn run_program_golden_vector_matches_the_documented_bytes() {
    // docs/link-protocol.md, "Programs (2.3)": program 0x12345678 on
    // queue 0, arena at 0x1000, two slots 0x40 and 0x80; sequence 5,
    // request id 5.
    let slots: [u8; 16] = {
        let mut s = [0u8; 16];
        s[..8].copy_from_slice(&0x40u64.to_le_bytes());
        s[8..].copy_from_slice(&0x80u64.to_le_bytes());
        s
    };
    let run = Message::RunProgram(super::RunProgram {
        queue: 0,
        program: 0x1234_5678,
        arena: 0x1000,
        slots: &slots,
    });
    let mut payload = [0u8; 64];
    let body = postcard::to_slice(
        &super::RunProgram {
            queue: 0,
            program: 0x1234_5678,
            arena: 0x1000,
            slots: &slots,
        },
        &mut payload,
    )
    .unwrap();
    assert_eq!(
        &body[..9],
        [0x00, 0xf8, 0xac, 0xd1, 0x91, 0x01, 0x80, 0x20, 0x10]
    );
    let wire = encode(5, 5, &run);
    let expected = [
        0x03, 0x12, 0x05, 0x02, 0x05, 0x02, 0x19, 0x01, 0x0a, 0xf8, 0xac, 0xd1, 0x91, 0x01, 0x80,
        0x20, 0x10, 0x40, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x02, 0x80, 0x01, 0x01, 0x01, 0x01,
        0x01, 0x01, 0x05, 0xe7, 0x3f, 0x69, 0xeb, 0x00,
    ];
    assert_eq!(wire.as_slice(), expected.as_slice(), "{wire:02x?}");
    let mut bytes = wire.clone();
    let frame = decode_frame(&mut bytes[..wire.len() - 1]).unwrap();
    let Message::RunProgram(decoded) = frame.message else {
        panic!("{:?}", frame.message);
    };
    assert_eq!(decoded.slots().collect::<std::vec::Vec<_>>(), [0x40, 0x80]);
}
