//! JSON strings in canonical form (RFC 8785 § 3.2.2.2): the escaping writer.

use crate::canonical::Output;

// For each byte: 0 = copy as is, b'u' = write as \u00xx, anything else = write backslash + it.
const ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// For each byte that needs an escape, its escape padded to eight bytes and its length, so
/// an escape is one eight-byte store (built from [`ESCAPES`] at compile time).
const ESCAPED: [([u8; 8], u8); 256] = {
    let mut table = [([0u8; 8], 0u8); 256];
    let mut b = 0;
    while b < 256 {
        let escape = ESCAPES[b];
        if escape == b'u' {
            let hex = [HEX[b >> 4], HEX[b & 0xf]];
            table[b] = ([b'\\', b'u', b'0', b'0', hex[0], hex[1], 0, 0], 6);
        } else if escape != 0 {
            table[b] = ([b'\\', escape, 0, 0, 0, 0, 0, 0], 2);
        }
        b += 1;
    }
    table
};

/// Writes `s` as a JSON string: `"` and `\` and U+0000–U+001F escaped (short forms where
/// JSON has them, else `\u00xx` in lowercase hex), everything else as raw UTF-8.
///
/// The text is copied as it is scanned: each block of sixteen bytes (eight, then fewer, at
/// the end) is stored whole into the output and then only its bytes before the first one
/// that needs an escape are kept, so a run without escapes is read once and written once,
/// and an escape costs one block load and one eight-byte store (issue 13: the scan-then-copy
/// writer before ran ~60 instructions per escaped character, orjson ~22).
pub fn write_str<O: Output>(out: &mut O, s: &str) {
    let bytes = s.as_bytes();
    let n = bytes.len();
    // Room for the text, both quotes and a block of slack (stores are up to sixteen bytes
    // wide, of which fewer may be kept); every escape makes sure of it again.
    const SLACK: usize = 40;
    out.reserve(n + SLACK);
    let src = bytes.as_ptr();
    let mut i = 0; // the first byte of `s` not yet written
                   // SAFETY: every store below writes at `dst` at most thirty-two bytes (two blocks), and
                   // the capacity from `dst` (to `end`) stays at least `n - i + SLACK - 5`: blocks and
                   // words keep exactly the bytes they consume, an escape keeps at most six for one, and
                   // before each escape the room is checked and grown back to `n - i + SLACK`. So two
                   // blocks (when `n - i >= 32`), a word or an escape (8) and the closing quote always fit.
                   // Every kept byte is initialised by the store that kept it, and `set_len` covers
                   // exactly the kept bytes. Loads read only within `bytes` (`i + 16 <= n`, `i + 8 <= n`,
                   // or `load_partial` within `len`).
    unsafe {
        let mut dst = out.as_mut_ptr().add(out.len());
        let mut end = out.as_mut_ptr().add(out.capacity()); // the end of the capacity
        *dst = b'"';
        dst = dst.add(1);
        loop {
            // Copy clean bytes; stop at the next one needing an escape (`skip` bytes on).
            let skip = 'scan: {
                while i + 32 <= n {
                    // Two blocks a turn; the first decides alone where escapes are dense.
                    let mask = store_block(src.add(i), dst);
                    if mask != 0 {
                        break 'scan mask.trailing_zeros() as usize;
                    }
                    let mask = store_block(src.add(i + 16), dst.add(16));
                    if mask != 0 {
                        break 'scan 16 + mask.trailing_zeros() as usize;
                    }
                    dst = dst.add(32);
                    i += 32;
                }
                if i + 16 <= n {
                    let mask = store_block(src.add(i), dst);
                    if mask != 0 {
                        break 'scan mask.trailing_zeros() as usize;
                    }
                    dst = dst.add(16);
                    i += 16;
                }
                // Fewer than sixteen bytes left: a word of eight, then one of the rest.
                while i < n {
                    let len = (n - i).min(8);
                    // The bytes as a little-endian number: the first byte is the lowest.
                    let word = if len == 8 {
                        u64::from_le(std::ptr::read_unaligned(src.add(i).cast::<u64>()))
                    } else {
                        load_partial(src.add(i), len)
                    };
                    dst.cast::<u64>().write_unaligned(word.to_le());
                    let mask = word_mask(word) & valid(len);
                    if mask != 0 {
                        break 'scan (mask.trailing_zeros() / 8) as usize;
                    }
                    dst = dst.add(len);
                    i += len;
                }
                // The end of the text.
                *dst = b'"';
                let written = dst.add(1).offset_from(out.as_mut_ptr()) as usize;
                out.set_len(written);
                return;
            };
            dst = dst.add(skip);
            i += skip;
            if (end.offset_from(dst) as usize) < n - i + SLACK {
                let written = dst.offset_from(out.as_mut_ptr()) as usize;
                out.set_len(written);
                out.reserve(n - i + SLACK);
                dst = out.as_mut_ptr().add(written);
                end = out.as_mut_ptr().add(out.capacity());
            }
            let (escape, len) = ESCAPED[*src.add(i) as usize];
            dst.cast::<[u8; 8]>().write_unaligned(escape);
            dst = dst.add(usize::from(len));
            i += 1;
        }
    }
}

/// One bit per byte (0x80 in each byte's place) of a little-endian word for the bytes that
/// need an escape: exact for the lowest set byte (which is all a caller reads), as the
/// borrows of the subtractions run only upwards from a byte that is set.
#[inline(always)]
fn word_mask(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    // Below 0x20: subtracting 0x20 borrows into the high bit of a byte that was below it.
    let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    control | zero_byte(w ^ (ONES * u64::from(b'"'))) | zero_byte(w ^ (ONES * u64::from(b'\\')))
}

/// The high bits of the first `len` bytes (0 < `len` <= 8) of a little-endian word.
#[inline(always)]
fn valid(len: usize) -> u64 {
    0x8080_8080_8080_8080 >> (64 - 8 * len)
}

/// The `len` bytes (1..8) at `p` as a little-endian number (the first byte lowest, the
/// bytes above `len` zero), read with at most two loads that stay within them.
///
/// # Safety
/// `len` bytes at `p` must be readable.
#[inline(always)]
unsafe fn load_partial(p: *const u8, len: usize) -> u64 {
    // SAFETY: each pair of loads reads within `p..p + len` (they overlap when len is not a
    // power of two; the overlapping bytes are the same bytes, so OR keeps them).
    unsafe {
        if len >= 4 {
            let lo = u64::from(std::ptr::read_unaligned(p.cast::<u32>()).to_le());
            let hi = u64::from(std::ptr::read_unaligned(p.add(len - 4).cast::<u32>()).to_le());
            lo | hi << (8 * (len - 4))
        } else if len >= 2 {
            let lo = u64::from(std::ptr::read_unaligned(p.cast::<u16>()).to_le());
            let hi = u64::from(std::ptr::read_unaligned(p.add(len - 2).cast::<u16>()).to_le());
            lo | hi << (8 * (len - 2))
        } else {
            u64::from(*p)
        }
    }
}

/// Copies the sixteen bytes at `src` to `dst` and returns one bit for each that needs an
/// escape.
///
/// # Safety
/// Sixteen bytes must be readable at `src` and writable at `dst`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn store_block(src: *const u8, dst: *mut u8) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_storeu_si128,
    };
    // Sixteen bytes at a time with SSE2, which every x86_64 processor has.
    // A byte needs an escape when it is a quote, a backslash, or at most 0x1f (max(b, 0x1f)
    // == 0x1f, unsigned).
    // SAFETY: SSE2 is part of x86_64; the caller makes both sixteen-byte ranges valid.
    unsafe {
        let v = _mm_loadu_si128(src.cast::<__m128i>());
        _mm_storeu_si128(dst.cast::<__m128i>(), v);
        let limit = _mm_set1_epi8(0x1f);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, limit), limit);
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(control, quote), backslash)) as u32
    }
}

/// Copies the sixteen bytes at `src` to `dst` and returns one bit for each that needs an
/// escape (two words elsewhere than x86_64).
///
/// # Safety
/// Sixteen bytes must be readable at `src` and writable at `dst`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn store_block(src: *const u8, dst: *mut u8) -> u32 {
    // SAFETY: the caller makes both sixteen-byte ranges valid.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, 16);
        let lo = u64::from_le(std::ptr::read_unaligned(src.cast::<u64>()));
        let hi = u64::from_le(std::ptr::read_unaligned(src.add(8).cast::<u64>()));
        let bits =
            |m: u64| (0..8).fold(0u32, |acc, b| acc | (((m >> (8 * b + 7)) & 1) as u32) << b);
        let (lo, hi) = (word_mask(lo), word_mask(hi));
        // Only the lowest set bit is exact (see word_mask): keep the bits of `hi` only when
        // `lo` has none.
        if lo != 0 {
            bits(lo)
        } else {
            bits(hi) << 8
        }
    }
}

/// `text` as a JSON string, for messages: quotes added, control characters made visible.
pub(crate) fn quoted(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len() + 2);
    write_str(&mut out, text);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_only_quote_backslash_and_controls() {
        assert_eq!(s("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(s("\u{8}\t\n\u{c}\r"), r#""\b\t\n\f\r""#);
        assert_eq!(s("\u{0}\u{1f}\u{b}"), r#""\u0000\u001f\u000b""#);
        assert_eq!(s("/\u{7f}\u{2028}€😀"), "\"/\u{7f}\u{2028}€😀\"");
    }

    #[test]
    fn escapes_in_every_position_of_a_word() {
        // The eight-byte skip must find an escape wherever it sits, and never skip one.
        for special in ['"', '\\', '\u{0}', '\u{1f}', '\n'] {
            for at in 0..20 {
                let mut text = "a".repeat(20);
                text.replace_range(at..at + 1, &special.to_string());
                let expected = format!(
                    "\"{}\"",
                    text.replace('\\', "\\\\")
                        .replace('"', "\\\"")
                        .replace('\u{0}', "\\u0000")
                        .replace('\u{1f}', "\\u001f")
                        .replace('\n', "\\n")
                );
                assert_eq!(s(&text), expected, "{special:?} at {at}");
            }
        }
        // Bytes at or above 0x80 (UTF-8) and 0x20..0x7f other than quote and backslash pass.
        assert_eq!(s("ééééé~~~ \u{7f}"), "\"ééééé~~~ \u{7f}\"");
    }

    /// Escapes byte by byte, the obvious way: the reference for the block-wise writer.
    fn naive(v: &str) -> String {
        let mut out = String::from("\"");
        for c in v.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{8}' => out.push_str("\\b"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\u{c}' => out.push_str("\\f"),
                '\r' => out.push_str("\\r"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn escapes_agree_with_the_naive_writer() {
        // Random strings of every length up to 100 over an alphabet dense in escapes, so
        // runs of every length meet block boundaries and the end of the string.
        let alphabet = [
            'a', 'Z', ' ', '"', '\\', '\n', '\u{0}', '\u{1f}', 'é', '€', '😀',
        ];
        let mut state = 0x1234_5678_u64;
        for len in 0..=100 {
            for density in [1, 3, 11] {
                let text: String = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        let pick = (state % alphabet.len() as u64) as usize;
                        if pick < 3 || state % density == 0 {
                            alphabet[pick]
                        } else {
                            'x'
                        }
                    })
                    .collect();
                assert_eq!(s(&text), naive(&text), "{text:?}");
            }
        }
    }

    #[test]
    fn escapes_agree_in_a_buffer_that_must_grow() {
        // Every escape grows the output: the writer must reserve again, whatever is in the
        // buffer before it, at every length and offset of the escapes.
        for len in 0..80 {
            for first in ['"', 'a', '\u{1}'] {
                let text: String = (0..len)
                    .map(|i| if i % 2 == 0 { first } else { '\\' })
                    .collect();
                for prefix in 0..3 {
                    let mut out = vec![b'x'; prefix];
                    out.shrink_to_fit();
                    write_str(&mut out, &text);
                    assert_eq!(&out[..prefix], &b"xxx"[..prefix]);
                    assert_eq!(std::str::from_utf8(&out[prefix..]).unwrap(), naive(&text));
                }
            }
        }
        // Every byte value at every position of the last word and block.
        for len in 1..40 {
            for at in 0..len {
                for byte in (0u8..0x80).chain([0xc3]) {
                    let mut bytes = vec![b'm'; len];
                    bytes[at] = byte;
                    if byte == 0xc3 {
                        bytes.insert(at + 1, 0xa9); // é
                    }
                    let text = String::from_utf8(bytes).unwrap();
                    assert_eq!(s(&text), naive(&text), "{text:?}");
                }
            }
        }
    }
}
