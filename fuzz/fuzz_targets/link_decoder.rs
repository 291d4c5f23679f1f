//! Fuzzes the link decoder: arbitrary bytes, fed in arbitrary pieces.
//!
//! Oracles: no panic; each outcome consumes input (progress); every frame
//! that decodes re-encodes and decodes to the same message and header
//! (message id, sequence number, request id and payload length).

#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorplug_core::link::{Decoder, FeedResult, MAX_ENCODED_FRAME_LEN, decode_frame, encode_frame};

fuzz_target!(|input: &[u8]| {
    // The first byte picks the piece size, so chunking is fuzzed too.
    let Some((&piece, bytes)) = input.split_first() else {
        return;
    };
    let piece = usize::from(piece).max(1);
    let mut decoder = Decoder::new();
    for chunk in bytes.chunks(piece) {
        let mut rest = chunk;
        loop {
            let before = rest.len();
            match decoder.feed(rest) {
                FeedResult::Consumed => break,
                FeedResult::Frame { frame, remaining } => {
                    let mut wire = [0u8; MAX_ENCODED_FRAME_LEN];
                    let header = frame.header;
                    let len = encode_frame(header.seq, header.request_id, &frame.message, &mut wire)
                        .expect("a decoded message re-encodes");
                    let again = decode_frame(&mut wire[..len - 1]).expect("a re-encoded frame decodes");
                    assert_eq!(again.message, frame.message);
                    assert_eq!(again.header, header);
                    rest = remaining;
                }
                FeedResult::Error { remaining, .. } => rest = remaining,
            }
            assert!(rest.len() < before || rest.is_empty(), "the decoder makes progress");
        }
    }
});
