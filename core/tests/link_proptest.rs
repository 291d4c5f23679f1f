//! Property tests of the link decoder: arbitrary garbage interleaved with
//! valid frames, random chunking, corrupted frames and round trips.

use proptest::prelude::*;
use tensorplug_core::event::Event;
use tensorplug_core::link::ops::Command;
use tensorplug_core::link::{
    Decoder, EventBatch, EventRecords, FeedResult, LinkError, MAX_BULK_CHUNK,
    MAX_ENCODED_FRAME_LEN, MAX_EVENTS_PER_BATCH, Message, Ping, ReadMemory, Submit, WriteMemory,
    WriteRegister, encode_frame,
};

/// Owned material from which a borrowed [`Message`] is built.
#[derive(Clone, Debug)]
enum Spec {
    Ping(u32),
    WriteRegister(u32, u32),
    ReadMemory(u64, u32),
    WriteMemory(u64, Vec<u8>),
    Submit(u8, Vec<u8>),
    Events(u32, Vec<Event>),
}

impl Spec {
    fn message(&self) -> Message<'_> {
        match self {
            Self::Ping(nonce) => Message::Ping(Ping { nonce: *nonce }),
            Self::WriteRegister(offset, value) => Message::WriteRegister(WriteRegister {
                offset: *offset,
                value: *value,
            }),
            Self::ReadMemory(address, len) => Message::ReadMemory(ReadMemory {
                address: *address,
                len: *len,
            }),
            Self::WriteMemory(address, data) => Message::WriteMemory(WriteMemory {
                address: *address,
                data,
            }),
            Self::Submit(queue, data) => Message::Submit(Submit {
                queue: *queue,
                command: Command::Write { dst: 0x40, data },
            }),
            Self::Events(dropped, events) => Message::EventBatch(EventBatch {
                dropped: *dropped,
                events: EventRecords::new(events).expect("strategy stays within a batch"),
            }),
        }
    }
}

fn event() -> impl Strategy<Value = Event> {
    (
        any::<u64>(),
        any::<u32>(),
        any::<u16>(),
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(|(timestamp, arg, op_id, queue, kind)| Event {
            timestamp,
            arg,
            op_id,
            queue,
            kind,
        })
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        any::<u32>().prop_map(Spec::Ping),
        (any::<u32>(), any::<u32>()).prop_map(|(o, v)| Spec::WriteRegister(o, v)),
        (any::<u64>(), 0..=MAX_BULK_CHUNK as u32).prop_map(|(a, l)| Spec::ReadMemory(a, l)),
        (any::<u64>(), prop::collection::vec(any::<u8>(), 0..=600))
            .prop_map(|(a, d)| Spec::WriteMemory(a, d)),
        (any::<u8>(), prop::collection::vec(any::<u8>(), 0..=64))
            .prop_map(|(q, d)| Spec::Submit(q, d)),
        (
            any::<u32>(),
            prop::collection::vec(event(), 0..=MAX_EVENTS_PER_BATCH)
        )
            .prop_map(|(n, e)| Spec::Events(n, e)),
    ]
}

fn encode(seq: u16, message: &Message<'_>) -> Vec<u8> {
    let mut out = vec![0; MAX_ENCODED_FRAME_LEN];
    let len = encode_frame(seq, 1, message, &mut out).expect("valid messages encode");
    out.truncate(len);
    out
}

/// Feeds `stream` in pieces of the given sizes (cycled); returns every outcome
/// as `Ok((seq, re-encoded frame))` or `Err`.
fn decode_all(stream: &[u8], pieces: &[usize]) -> Vec<Result<(u16, Vec<u8>), LinkError>> {
    let mut decoder = Decoder::new();
    let mut seen = Vec::new();
    let mut at = 0;
    for piece in pieces.iter().cycle() {
        if at >= stream.len() {
            break;
        }
        let end = (at + piece.max(&1)).min(stream.len());
        let mut rest = &stream[at..end];
        at = end;
        loop {
            match decoder.feed(rest) {
                FeedResult::Consumed => break,
                FeedResult::Frame { frame, remaining } => {
                    seen.push(Ok((
                        frame.header.seq,
                        encode(frame.header.seq, &frame.message),
                    )));
                    rest = remaining;
                }
                FeedResult::Error { error, remaining } => {
                    seen.push(Err(error));
                    rest = remaining;
                }
            }
        }
    }
    seen
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_message_round_trips(spec in spec(), seq in any::<u16>()) {
        let message = spec.message();
        let wire = encode(seq, &message);
        let seen = decode_all(&wire, &[wire.len()]);
        prop_assert_eq!(seen, vec![Ok((seq, wire.clone()))]);
    }

    #[test]
    fn garbage_between_frames_never_loses_a_frame_after_a_delimiter(
        parts in prop::collection::vec((prop::collection::vec(any::<u8>(), 0..3000), spec()), 1..6),
        pieces in prop::collection::vec(1usize..700, 1..8),
    ) {
        let mut stream = Vec::new();
        let mut sent = Vec::new();
        for (i, (garbage, spec)) in parts.iter().enumerate() {
            stream.extend_from_slice(garbage);
            stream.push(0x00);
            let seq = 0xA000 + i as u16;
            let frame = encode(seq, &spec.message());
            stream.extend_from_slice(&frame);
            sent.push((seq, frame));
        }
        let received: Vec<(u16, Vec<u8>)> = decode_all(&stream, &pieces)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|(seq, _)| *seq >= 0xA000)
            .collect();
        // Garbage cannot forge a frame with our sequence numbers (it would
        // need a valid CRC-32), so what arrives is exactly what was sent.
        prop_assert_eq!(received, sent);
    }

    #[test]
    fn corrupted_frame_is_dropped_and_the_next_frame_survives(
        spec in spec(),
        position in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let mut bad = encode(1, &spec.message());
        let at = position.index(bad.len() - 1); // not the delimiter
        bad[at] ^= flip;
        let good = encode(2, &Message::Ping(Ping { nonce: 42 }));
        let stream = [bad, good.clone()].concat();
        let seen = decode_all(&stream, &[stream.len()]);
        let (last, before) = seen.split_last().expect("the good frame decodes");
        prop_assert_eq!(last, &Ok((2, good)));
        prop_assert!(!before.is_empty(), "the corruption was noticed");
        prop_assert!(before.iter().all(Result::is_err), "{:?}", before);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..5000), pieces in prop::collection::vec(1usize..300, 1..4)) {
        let seen = decode_all(&bytes, &pieces);
        let delimiters = bytes.iter().filter(|&&b| b == 0).count();
        // At most one outcome per delimiter, plus one oversized report per
        // run of bytes longer than the limit.
        prop_assert!(seen.len() <= delimiters + bytes.len() / (MAX_ENCODED_FRAME_LEN - 1));
    }
}
