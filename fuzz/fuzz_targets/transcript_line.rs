//! Any bytes as the third line of a transcript: reading never panics, and debug assertions
//! (on in fuzz builds) check that every line the in-place reader takes, the general reader
//! takes with the same result.
#![no_main]

use libfuzzer_sys::fuzz_target;
use runcontext_core::digest_bytes;
use runcontext_core::transcript::Transcript;

fuzz_target!(|data: &[u8]| {
    let message = br#"{"content":"hi","role":"user"}"#;
    let mut writer = Transcript::new();
    let header = writer
        .write_header(&digest_bytes(message), "2026-12-01T09:00:00Z")
        .expect("header");
    let first = writer.write_message(message).expect("message");
    let mut reader = Transcript::new();
    for line in [&header, &first] {
        reader.read_line(&line[..line.len() - 1]).expect("written lines read back");
    }
    let _ = reader.read_line(data);
});
