//! Byte-exact SPI frames, pinned with embedded-hal-mock. The CRCs were
//! computed independently (a bitwise CRC-16/IBM-3740 in Python, check value
//! `crc("123456789") == 0x29B1`).

use embedded_hal_mock::eh1::spi::{Mock, Transaction as T};
use tensorplug_device_fpga::transport::spi::frame::{self, Command, Header, Status};
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_device_fpga::transport::{CrcSide, Error, ErrorKind, Transport};

/// One CS window: the operations between start and end.
fn window(ops: Vec<T<u8>>) -> Vec<T<u8>> {
    let mut all = vec![T::transaction_start()];
    all.extend(ops);
    all.push(T::transaction_end());
    all
}

fn transport(expectations: Vec<Vec<T<u8>>>, config: SpiConfig) -> SpiTransport<Mock<u8>> {
    let flat: Vec<T<u8>> = expectations.into_iter().flatten().collect();
    SpiTransport::new(Mock::new(&flat), config)
}

fn finish(t: SpiTransport<Mock<u8>>) {
    t.into_inner().done();
}

#[test]
fn write_reg_frames() {
    let mut t = transport(
        vec![
            window(vec![
                T::write_vec(vec![0x02, 0x01, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00]),
                T::write_vec(vec![0xEF, 0xBE, 0xAD, 0xDE]),
                T::write_vec(vec![0x9B, 0x60]),
            ]),
            window(vec![
                T::write_vec(vec![0x05]),
                T::read_vec(vec![0xA0, 0x01]),
                T::read_vec(vec![0x50, 0x10]),
            ]),
        ],
        SpiConfig::default(),
    );
    t.write_reg(0x0C, 0xDEAD_BEEF).unwrap();
    finish(t);
}

#[test]
fn read_reg_frames() {
    let mut t = transport(
        vec![
            // Sequence 1 is spent on a write so this request carries seq 2.
            window(vec![
                T::write_vec(vec![0x02, 0x01, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00]),
                T::write_vec(vec![0xEF, 0xBE, 0xAD, 0xDE]),
                T::write_vec(vec![0x9B, 0x60]),
            ]),
            window(vec![
                T::write_vec(vec![0x05]),
                T::read_vec(vec![0xA0, 0x01]),
                T::read_vec(vec![0x50, 0x10]),
            ]),
            window(vec![
                T::write_vec(vec![0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00]),
                T::write_vec(vec![0xFB, 0xEB]),
            ]),
            window(vec![
                T::write_vec(vec![0x05]),
                T::read_vec(vec![0xA0, 0x02]),
                T::read_vec(vec![0x47, 0x4C, 0x50, 0x54]),
                T::read_vec(vec![0x08, 0xE8]),
            ]),
        ],
        SpiConfig::default(),
    );
    t.write_reg(0x0C, 0xDEAD_BEEF).unwrap();
    assert_eq!(t.read_reg(0x00).unwrap(), 0x5450_4C47);
    finish(t);
}

/// Frames with sequence numbers 1 and 2 that the next tests skip over.
fn two_dummy_writes() -> Vec<Vec<T<u8>>> {
    let mut v = Vec::new();
    for (seq, crc, resp_crc) in [
        (1u8, [0x9B, 0x60], [0x50, 0x10]),
        (2, [0xBE, 0x83], [0x33, 0x20]),
    ] {
        v.push(window(vec![
            T::write_vec(vec![0x02, seq, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00]),
            T::write_vec(vec![0xEF, 0xBE, 0xAD, 0xDE]),
            T::write_vec(crc.to_vec()),
        ]));
        v.push(window(vec![
            T::write_vec(vec![0x05]),
            T::read_vec(vec![0xA0, seq]),
            T::read_vec(resp_crc.to_vec()),
        ]));
    }
    v
}

#[test]
fn write_mem_then_read_mem_frames() {
    let mut frames = two_dummy_writes();
    frames.push(window(vec![
        T::write_vec(vec![0x04, 0x03, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x03, 0x00]),
        T::write_vec(vec![1, 2, 3]),
        T::write_vec(vec![0x61, 0xE0]),
    ]));
    frames.push(window(vec![
        T::write_vec(vec![0x05]),
        T::read_vec(vec![0xA0, 0x03]),
        T::read_vec(vec![0x12, 0x30]),
    ]));
    frames.push(window(vec![
        T::write_vec(vec![0x03, 0x04, 0x00, 0x20, 0, 0, 0, 0, 0, 0, 0x03, 0x00]),
        T::write_vec(vec![0x8E, 0x22]),
    ]));
    frames.push(window(vec![
        T::write_vec(vec![0x05]),
        T::read_vec(vec![0xA0, 0x04]),
        T::read_vec(vec![9, 8, 7]),
        T::read_vec(vec![0x46, 0x96]),
    ]));
    let mut t = transport(frames, SpiConfig::default());
    for _ in 0..2 {
        t.write_reg(0x0C, 0xDEAD_BEEF).unwrap();
    }
    t.write_mem(0x1000, &[1, 2, 3]).unwrap();
    let mut buf = [0; 3];
    t.read_mem(0x2000, &mut buf).unwrap();
    assert_eq!(buf, [9, 8, 7]);
    finish(t);
}

#[test]
fn busy_device_gets_short_polls_then_a_full_fetch() {
    let request = window(vec![
        T::write_vec(vec![0x02, 0x01, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00]),
        T::write_vec(vec![0xEF, 0xBE, 0xAD, 0xDE]),
        T::write_vec(vec![0x9B, 0x60]),
    ]);
    let busy_fetch = window(vec![
        T::write_vec(vec![0x05]),
        T::read_vec(vec![0xB5, 0xFF]),
        T::read_vec(vec![0xFF, 0xFF]),
    ]);
    let short = |status: u8| window(vec![T::write_vec(vec![0x05]), T::read_vec(vec![status])]);
    let ready_fetch = window(vec![
        T::write_vec(vec![0x05]),
        T::read_vec(vec![0xA0, 0x01]),
        T::read_vec(vec![0x50, 0x10]),
    ]);
    let mut t = transport(
        vec![request, busy_fetch, short(0xB5), short(0xA0), ready_fetch],
        SpiConfig {
            max_busy_polls: 2,
            ..SpiConfig::default()
        },
    );
    t.write_reg(0x0C, 0xDEAD_BEEF).unwrap();
    finish(t);
}

#[test]
fn busy_past_the_limit_is_a_timeout() {
    let request = window(vec![
        T::write_vec(vec![0x02, 0x01, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00]),
        T::write_vec(vec![0xEF, 0xBE, 0xAD, 0xDE]),
        T::write_vec(vec![0x9B, 0x60]),
    ]);
    let busy_fetch = window(vec![
        T::write_vec(vec![0x05]),
        T::read_vec(vec![0xB5, 0xFF]),
        T::read_vec(vec![0xFF, 0xFF]),
    ]);
    let short = window(vec![T::write_vec(vec![0x05]), T::read_vec(vec![0xB5])]);
    let mut t = transport(
        vec![request, busy_fetch, short.clone(), short],
        SpiConfig {
            max_busy_polls: 2,
            ..SpiConfig::default()
        },
    );
    assert_eq!(
        t.write_reg(0x0C, 0xDEAD_BEEF),
        Err(Error::Timeout { polls: 3 })
    );
    finish(t);
}

#[test]
fn responses_are_checked() {
    let request = || {
        window(vec![
            T::write_vec(vec![0x02, 0x01, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00]),
            T::write_vec(vec![0xEF, 0xBE, 0xAD, 0xDE]),
            T::write_vec(vec![0x9B, 0x60]),
        ])
    };
    let fetch = |head: [u8; 2], crc: [u8; 2]| {
        window(vec![
            T::write_vec(vec![0x05]),
            T::read_vec(head.to_vec()),
            T::read_vec(crc.to_vec()),
        ])
    };
    let cases = [
        // One bit flipped in the CRC.
        (
            fetch([0xA0, 0x01], [0x50, 0x11]),
            Error::Crc(CrcSide::Response),
        ),
        // The device saw a bad CRC in our request.
        (
            fetch([0xA1, 0x01], [0x61, 0x23]),
            Error::Crc(CrcSide::Request),
        ),
        // A well-formed answer to another request.
        (
            fetch([0xA0, 0x03], [0x12, 0x30]),
            Error::Framing {
                status: 0xA0,
                expected_seq: 1,
                seq: 3,
            },
        ),
    ];
    for (answer, expected) in cases {
        let mut t = transport(vec![request(), answer], SpiConfig::default());
        let err = t.write_reg(0x0C, 0xDEAD_BEEF).unwrap_err();
        assert_eq!(err, expected);
        finish(t);
    }
}

#[test]
fn device_out_of_range_names_the_chunk() {
    let mut t = transport(
        vec![
            window(vec![
                T::write_vec(vec![0x03, 0x01, 0x00, 0x20, 0, 0, 0, 0, 0, 0, 0x03, 0x00]),
                T::write_vec(vec![0x80, 0xAB]),
            ]),
            window(vec![
                T::write_vec(vec![0x05]),
                T::read_vec(vec![0xA2, 0x01]),
                T::read_vec(vec![0, 0, 0]),
                T::read_vec(vec![0x5F, 0x09]),
            ]),
        ],
        SpiConfig::default(),
    );
    let mut buf = [0; 3];
    let err = t.read_mem(0x2000, &mut buf).unwrap_err();
    assert_eq!(
        err,
        Error::OutOfRange {
            addr: 0x2000,
            len: 3
        }
    );
    assert_eq!(err.kind(), ErrorKind::OutOfRange);
    finish(t);
}

#[test]
fn misaligned_register_never_reaches_the_bus() {
    let mut t = transport(vec![], SpiConfig::default());
    assert_eq!(t.read_reg(0x02), Err(Error::Misaligned { addr: 2 }));
    assert_eq!(t.write_reg(0x03, 0), Err(Error::Misaligned { addr: 3 }));
    finish(t);
}

#[test]
fn large_writes_are_chunked() {
    let data: Vec<u8> = (0..10u8).collect();
    let mut frames = Vec::new();
    for (i, chunk) in data.chunks(4).enumerate() {
        let seq = i as u8 + 1;
        let addr = 0x10 + 4 * i as u8;
        let head = vec![
            0x04,
            seq,
            addr,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            chunk.len() as u8,
            0x00,
        ];
        let crc = frame::crc16(&[&head, chunk]).to_le_bytes();
        let resp_crc = frame::crc16(&[&[0xA0, seq]]).to_le_bytes();
        frames.push(window(vec![
            T::write_vec(head),
            T::write_vec(chunk.to_vec()),
            T::write_vec(crc.to_vec()),
        ]));
        frames.push(window(vec![
            T::write_vec(vec![0x05]),
            T::read_vec(vec![0xA0, seq]),
            T::read_vec(resp_crc.to_vec()),
        ]));
    }
    let mut t = transport(
        frames,
        SpiConfig {
            max_payload: 4,
            ..SpiConfig::default()
        },
    );
    t.write_mem(0x10, &data).unwrap();
    finish(t);
}

#[test]
fn header_codec_round_trips_and_rejects() {
    let h = Header {
        command: Command::WriteMem,
        seq: 7,
        addr: 0x0123_4567_89AB_CDEF,
        len: 1024,
    };
    assert_eq!(Header::decode(&h.encode()), Ok(h));
    let mut bad = h.encode();
    bad[10..12].copy_from_slice(&1025u16.to_le_bytes());
    assert!(Header::decode(&bad).is_err());
    bad[0] = Command::Status as u8;
    assert!(Header::decode(&bad).is_err());
    for byte in [0x00, 0xFF] {
        assert_eq!(
            Status::from_byte(byte),
            None,
            "{byte:#x} is what an idle bus reads"
        );
    }
}

/// The golden example in `docs/transports.md`, byte for byte.
#[test]
fn golden_example_matches_the_docs() {
    let doc = include_str!("../../docs/transports.md");
    let request = Header {
        command: Command::WriteReg,
        seq: 1,
        addr: 0x0C,
        len: 4,
    }
    .encode();
    let payload = 0xDEAD_BEEFu32.to_le_bytes();
    let crc = frame::crc16(&[&request, &payload]).to_le_bytes();
    let hex = |bytes: &[u8]| {
        bytes
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let frame_hex = format!("{} {} {}", hex(&request), hex(&payload), hex(&crc));
    assert_eq!(
        frame_hex,
        "02 01 0C 00 00 00 00 00 00 00 04 00 EF BE AD DE 9B 60"
    );
    assert!(
        doc.contains(&frame_hex),
        "docs/transports.md lacks the request {frame_hex}"
    );
    let response_crc = frame::crc16(&[&[Status::Ok as u8, 1]]).to_le_bytes();
    let response_hex = format!("05 | A0 01 {}", hex(&response_crc));
    assert!(
        doc.contains(&response_hex),
        "docs/transports.md lacks the response {response_hex}"
    );
}
