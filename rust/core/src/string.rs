//! JSON strings in canonical form (RFC 8785 § 3.2.2.2): the escaping writer.

use crate::output::Output;

// For each byte: 0 = copy as is, b'u' = write as \u00xx, anything else = write backslash + it.
// The one statement of the canonical escapes: the writer below and the canonical-line scanner
// (`scan`) both read it.
pub(crate) const ESCAPES: [u8; 256] = {
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

/// For each byte that needs an escape, its escape as a little-endian word (the first byte
/// lowest) with the bytes it adds (its length less one) in the top byte, so an escape is
/// one load and one eight-byte store (built from [`ESCAPES`] at compile time; the top byte
/// is never kept, an escape
/// being at most six bytes).
const ESCAPED: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let escape = ESCAPES[b];
        let bytes = if escape == b'u' {
            [b'\\', b'u', b'0', b'0', HEX[b >> 4], HEX[b & 0xf], 0, 5]
        } else {
            [b'\\', escape, 0, 0, 0, 0, 0, 1]
        };
        if escape != 0 {
            table[b] = u64::from_le_bytes(bytes);
        }
        b += 1;
    }
    table
};

/// Input bytes written between two checks of the room left (a multiple of sixteen).
const WINDOW: usize = 4096;

/// Room past the written bytes for the widest store beyond what a step keeps (sixteen
/// bytes, of which the step may keep none) and the closing quote.
const SLACK: usize = 32;

/// The bytes of text the window starting `rest` bytes before the end takes: [`WINDOW`], or
/// all of them when at most `WINDOW + 32` are left, so the blocks of every window but the
/// last have sixteen bytes of text after them (see `block`).
#[inline(always)]
fn window(rest: usize) -> usize {
    if rest <= WINDOW + 32 {
        rest
    } else {
        WINDOW
    }
}

/// The room a window of `take` bytes needs: six bytes for each (an escape is at most six
/// bytes for one) and [`SLACK`].
#[inline(always)]
fn room_for(take: usize) -> usize {
    6 * take + SLACK
}

/// What to reserve when the room runs out with `rest` bytes of text left, having written
/// `written` bytes for the first `consumed`: the rest at the rate of escapes so far and an
/// eighth more. A long text with escapes then grows its output about once, early (a
/// `realloc` copies its whole block, used or not: a late grow of a 1 MB text was a 1 MB
/// copy), and a text without any to its own length (a larger block than the
/// `bytes` that is left would keep glibc from reusing it on the next call: a fresh `mmap`,
/// faulted in on every call).
fn estimate(rest: usize, written: usize, consumed: usize) -> usize {
    let added = written.saturating_sub(consumed) as u128;
    let more = (rest as u128 * added * 9 / (8 * consumed.max(1) as u128)) as usize;
    rest.saturating_add(more).saturating_add(SLACK)
}

/// How many bytes the escapes of the `len` bytes (a multiple of sixteen) at `src` add.
///
/// # Safety
/// `len` bytes must be readable at `src`.
unsafe fn added_in(src: *const u8, len: usize) -> usize {
    let mut added = 0;
    let mut scratch = [0u8; 16];
    // SAFETY: the caller's promise; each block is copied into `scratch`, not the output.
    unsafe {
        for at in (0..len).step_by(16) {
            let mut mask = store_block(src.add(at), scratch.as_mut_ptr());
            while mask != 0 {
                let p = mask.trailing_zeros() as usize;
                added += (ESCAPED[usize::from(*src.add(at + p))] >> 56) as usize;
                mask &= mask - 1;
            }
        }
    }
    added
}

/// Makes sure of `need` bytes of room at `dst` (at least [`estimate`]); returns where the
/// output is written now.
///
/// # Safety
/// `dst` is within the capacity of `out`, past its length, and `first` the length of `out`
/// when the text began; the bytes before `dst` are initialised.
#[cold]
#[inline(never)]
unsafe fn grow<O: Output>(
    out: &mut O,
    dst: *mut u8,
    need: usize,
    rest: usize,
    first: usize,
    consumed: usize,
) -> *mut u8 {
    // SAFETY: the caller's promise; the length covers exactly the written bytes.
    unsafe {
        let written = dst.offset_from(out.as_mut_ptr()) as usize;
        out.set_len(written);
        out.reserve(need.max(estimate(rest, written - first, consumed)));
        out.as_mut_ptr().add(written)
    }
}

/// Whether any of the `len` bytes (1..=16) at `src` needs an escape.
///
/// # Safety
/// `len` bytes must be readable at `src`.
#[inline(always)]
unsafe fn dirty(src: *const u8, len: usize) -> bool {
    // SAFETY: the caller's promise.
    unsafe { word_mask(load_word(src, len)) & (u32::MAX >> (32 - len)) != 0 }
}

/// Writes `s` as a JSON string: `"` and `\` and U+0000–U+001F escaped (short forms where
/// JSON has them, else `\u00xx` in lowercase hex), everything else as raw UTF-8.
///
/// The text is copied as it is scanned, sixteen bytes at a time: each block is stored whole
/// into the output, and when it holds bytes that need an escape, each of them (the set bits
/// of the block's mask, in order) is written over its copy and the rest of the block stored
/// again after it; so a run without escapes is read once and written once, and an escape
/// costs a table load, an eight-byte store and one sixteen-byte copy, without scanning
/// again. The room is checked once per window of [`WINDOW`] bytes of text, for
/// the longest form of the window, instead of once per escape; where the output was sized
/// closer than that (the end of a long text), block by block, for the blocks that have
/// escapes.
#[inline]
pub fn write_str<O: Output>(out: &mut O, s: &str) {
    let n = s.len();
    if n >= LONG_FROM {
        #[cfg(target_arch = "x86_64")]
        if n <= WINDOW + 32 {
            return write_medium(out, s);
        }
        return write_long(out, s);
    }
    // A short text (most keys and values) is one window, sized at once: kept inline, as
    // the part of the writer every string runs.
    out.reserve(2 + room_for(n));
    // SAFETY: as in `write_long` for its last window: the room is `room_for(n)` after the
    // opening quote.
    unsafe {
        let mut dst = out.as_mut_ptr().add(out.len());
        *dst = b'"';
        dst = last_window(s.as_ptr(), n, dst.add(1));
        *dst = b'"';
        let written = dst.add(1).offset_from(out.as_mut_ptr()) as usize;
        out.set_len(written);
    }
}

/// Texts from this length leave the inline part of [`write_str`]: where AVX2 may be, for
/// [`write_medium`] (one branch for both, so the short texts' code is what it was without
/// AVX2: with the check inline, the chat transcript took 3-5 % more wall time).
const LONG_FROM: usize = if cfg!(target_arch = "x86_64") {
    256
} else {
    WINDOW + 33
};

/// [`write_str`] for a text of one window, from [`LONG_FROM`] bytes: 32 bytes a step where
/// the processor has AVX2 (the call, its constants and the check cost more than they save
/// on shorter texts).
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn write_medium<O: Output>(out: &mut O, s: &str) {
    let n = s.len();
    out.reserve(2 + room_for(n));
    // SAFETY: as in `write_str`: the room is `room_for(n)` after the opening quote.
    unsafe {
        let mut dst = out.as_mut_ptr().add(out.len());
        *dst = b'"';
        dst = wide_last_window(s.as_ptr(), n, dst.add(1));
        *dst = b'"';
        let written = dst.add(1).offset_from(out.as_mut_ptr()) as usize;
        out.set_len(written);
    }
}

/// [`last_window`], 32 bytes a step while it can where the processor has AVX2.
///
/// # Safety
/// As for [`last_window`].
#[inline(always)]
unsafe fn wide_last_window(src: *const u8, len: usize, dst: *mut u8) -> *mut u8 {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the caller's promises; `wide_blocks` asks for less room than
        // `room_for(len)`, and leaves each byte it consumed at most six bytes on from `dst`
        // for each byte before it, so the room from where it stops is `room_for` of the rest.
        unsafe {
            let (i, dst) = wide_blocks(src, len, dst);
            return last_window(src.add(i), len - i, dst);
        }
    }
    // SAFETY: the caller's promises.
    unsafe { last_window(src, len, dst) }
}

/// [`write_str`] for a text of more than one window.
#[inline(never)]
fn write_long<O: Output>(out: &mut O, s: &str) {
    let bytes = s.as_bytes();
    let n = bytes.len();
    // The opening quote, then the text at the rate of escapes of its first window (read
    // once more), and at least that window's room: a text
    // without escapes is sized to its length, one with escapes grows about never.
    // SAFETY: `WINDOW < n` bytes are readable at the start of the text.
    let added = unsafe { added_in(bytes.as_ptr(), WINDOW) };
    out.reserve(1 + room_for(WINDOW).max(estimate(n, WINDOW + added, WINDOW)));
    let src = bytes.as_ptr();
    // The first byte of `s` not yet written.
    let mut i = 0;
    // SAFETY: a window runs unchecked when the capacity from `dst` is at least `room_for(w)`
    // for its `w` bytes: each store in it writes at most sixteen bytes (thirty-two in
    // `wide_blocks`, only where AVX2 is, called at the window's start with the `w` bytes and
    // the 32 after them, so it asks for `room_for(w)`) at a `dst` at most six bytes on for
    // each byte of the window consumed before it, so every store ends within
    // `6 * (w - 1) + 32 <= room_for(w)` of the window's start. Otherwise it runs step by
    // step with at least `n - i + SLACK` bytes of room before each step (made sure of on
    // entry, kept by a step without escapes, which writes what it consumes, and made sure of
    // as `n - i + 80 + SLACK` before a step with escapes, which writes at most 96 bytes for
    // sixteen). After the last window the closing quote fits in the slack. Every kept byte
    // is initialised by the store that kept it, and `set_len` covers exactly the kept bytes.
    // Loads read only within `bytes`: `block` at `i + 32 <= n` (it reads up to sixteen
    // bytes past its block), `last_block` at `i + 16 <= n`, `tail` and `dirty` within
    // `n - i`.
    unsafe {
        let mut dst = out.as_mut_ptr().add(out.len());
        *dst = b'"';
        dst = dst.add(1);
        let first = dst.offset_from(out.as_mut_ptr()) as usize;
        loop {
            let take = window(n - i);
            let stop = i + take;
            let room = out.as_mut_ptr().add(out.capacity()).offset_from(dst) as usize;
            if room >= room_for(take) {
                // A window that is not the last ends at least 32 bytes before the end, so
                // each of its blocks has sixteen bytes of text after it.
                if stop == n {
                    dst = wide_last_window(src.add(i), n - i, dst);
                } else {
                    // The thirty-two bytes after the window are text too.
                    #[cfg(target_arch = "x86_64")]
                    if has_avx2() {
                        let (consumed, end) = wide_blocks(src.add(i), stop - i + 32, dst);
                        i += consumed;
                        dst = end;
                    }
                    while i < stop {
                        dst = block(src.add(i), dst);
                        i += 16;
                    }
                    continue;
                }
            } else {
                if room < n - i + SLACK {
                    dst = grow(out, dst, n - i + SLACK, n - i, first, i);
                }
                while i < stop {
                    let len = (n - i).min(16);
                    let room = out.as_mut_ptr().add(out.capacity()).offset_from(dst) as usize;
                    if room < n - i + 80 + SLACK && dirty(src.add(i), len) {
                        dst = grow(out, dst, n - i + 80 + SLACK, n - i, first, i);
                    }
                    dst = if i + 32 <= n {
                        block(src.add(i), dst)
                    } else if len == 16 {
                        last_block(src.add(i), dst)
                    } else {
                        tail(src.add(i), len, dst)
                    };
                    i += len;
                }
                if stop < n {
                    continue;
                }
            }
            *dst = b'"';
            let written = dst.add(1).offset_from(out.as_mut_ptr()) as usize;
            out.set_len(written);
            return;
        }
    }
}

/// Writes the last `len` bytes of a text, at `src`, escaped, at `dst`: blocks while sixteen
/// bytes of text follow them, then the last block and the last bytes, which cannot be read
/// past. Returns the end of what it wrote.
///
/// # Safety
/// `len` bytes must be readable at `src`, and `room_for(len)` writable at `dst`.
#[inline(always)]
unsafe fn last_window(src: *const u8, len: usize, mut dst: *mut u8) -> *mut u8 {
    // SAFETY: the caller's promises (see the SAFETY comment of `write_long`).
    unsafe {
        let mut i = 0;
        while i + 32 <= len {
            dst = block(src.add(i), dst);
            i += 16;
        }
        if i + 16 <= len {
            dst = last_block(src.add(i), dst);
            i += 16;
        }
        if i < len {
            dst = tail(src.add(i), len - i, dst);
        }
        dst
    }
}

/// Writes the sixteen bytes at `src`, escaped, at `dst`; returns the end of what it wrote.
///
/// # Safety
/// Thirty-two bytes must be readable at `src` (the sixteen after the block are copied, and
/// not kept, after an escape at its end), and `16 * 6` writable at `dst`, with sixteen more
/// after those of its escapes.
#[inline(always)]
unsafe fn block(src: *const u8, dst: *mut u8) -> *mut u8 {
    // SAFETY: the caller's promises; `p + 1 <= 16`, so `src + p + 1` has sixteen readable
    // bytes.
    unsafe {
        let mut mask = store_block(src, dst);
        if mask == 0 {
            return dst.add(16);
        }
        // Where byte `p` of the block goes is `lag + p`: `lag` starts at `dst` and moves on
        // by what each escape adds to its byte.
        let mut lag = dst;
        loop {
            let p = mask.trailing_zeros() as usize;
            lag = lag.add(write_escape(lag.add(p), *src.add(p)));
            copy16(src.add(p + 1), lag.add(p + 1));
            mask &= mask - 1;
            if mask == 0 {
                return lag.add(16);
            }
        }
    }
}

/// Whether the processor has AVX2 and the system saves its registers (std asks once and
/// keeps the answer).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// [`block`] thirty-two bytes at a time with AVX2, from the start of the `len` bytes at
/// `src` while each block has thirty-two bytes of text after it; returns the bytes consumed
/// (a multiple of 32, more than `len - 64`) and the end of what it wrote. The rest is left to
/// `block` and its kin.
///
/// Cheaper than `block` for text without escapes (CJK and emoji text, long runs without an
/// escape); an escape costs what it costs there, with a 32-byte copy.
///
/// # Safety
/// The processor must have AVX2 ([`has_avx2`]), `len` bytes must be readable at `src`, and
/// `room_for(len - 32)` writable at `dst` when `len >= 64`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn wide_blocks(src: *const u8, len: usize, mut dst: *mut u8) -> (usize, *mut u8) {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8, _mm256_storeu_si256,
    };
    // SAFETY: the caller's promises. Byte `k` of the text goes at most `6 * k` bytes past
    // `dst` (an escape is at most six bytes for one), and `k + 1 <= len - 32` for every byte
    // of a block here (`i + 64 <= len`); so each store (at byte `i` for a block, at the
    // escape's byte for its eight bytes, after it for the 32-byte copy of the rest) ends
    // within `6 * (len - 32) + 32 = room_for(len - 32)`. The loads read `src[i..i + 32]` and
    // `src[i + p + 1..i + p + 33]` (`p < 32`), within `len`.
    unsafe {
        let limit = _mm256_set1_epi8(0x1f);
        let quote = _mm256_set1_epi8(b'"' as i8);
        let backslash = _mm256_set1_epi8(b'\\' as i8);
        let mut i = 0;
        while i + 64 <= len {
            let at = src.add(i);
            let v = _mm256_loadu_si256(at.cast::<__m256i>());
            _mm256_storeu_si256(dst.cast::<__m256i>(), v);
            // As `vector_mask`: a control character, a quote or a backslash.
            let control = _mm256_cmpeq_epi8(_mm256_max_epu8(v, limit), limit);
            let special =
                _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash));
            let mut mask = _mm256_movemask_epi8(_mm256_or_si256(control, special)) as u32;
            // As in `block`: byte `p` of the block goes to `lag + p`.
            let mut lag = dst;
            while mask != 0 {
                let p = mask.trailing_zeros() as usize;
                lag = lag.add(write_escape(lag.add(p), *at.add(p)));
                let rest = _mm256_loadu_si256(at.add(p + 1).cast::<__m256i>());
                _mm256_storeu_si256(lag.add(p + 1).cast::<__m256i>(), rest);
                mask &= mask - 1;
            }
            dst = lag.add(32);
            i += 32;
        }
        (i, dst)
    }
}

/// [`block`] for the last sixteen-byte block, after which the text may end: the rest of the
/// block after an escape is shifted out of a register instead of read again.
///
/// # Safety
/// Sixteen bytes must be readable at `src`, and `16 * 6` writable at `dst`, with sixteen
/// more after those of its escapes.
#[inline(always)]
unsafe fn last_block(src: *const u8, dst: *mut u8) -> *mut u8 {
    // SAFETY: the caller's promises.
    unsafe {
        let mask = store_block(src, dst);
        if mask == 0 {
            return dst.add(16);
        }
        let word = u128::from_le(std::ptr::read_unaligned(src.cast::<u128>()));
        escape_word(dst, word, mask, 16)
    }
}

/// Writes the `len` bytes (1..16) at `src`, escaped, at `dst`; returns the end of what it
/// wrote.
///
/// # Safety
/// `len` bytes must be readable at `src`, and `len * 6 + 16` writable at `dst`.
#[inline(always)]
unsafe fn tail(src: *const u8, len: usize, dst: *mut u8) -> *mut u8 {
    // SAFETY: the loads stay within the `len` bytes (see load_partial); the caller's
    // promises for `dst`.
    unsafe {
        let word = load_word(src, len);
        dst.cast::<u128>().write_unaligned(word.to_le());
        let mask = word_mask(word) & ((1 << len) - 1);
        if mask == 0 {
            return dst.add(len);
        }
        escape_word(dst, word, mask, len)
    }
}

/// The escapes of a block of `len` bytes (at most sixteen) held in `word` (the first byte
/// lowest), of which the bytes needing an escape have their bits set in `mask` (non-zero),
/// when `word` is already stored at `dst`: each escape written over its copy and the rest
/// of the block stored again after it. Returns the end of the block's output.
///
/// # Safety
/// `len * 6 + 16` bytes must be writable at `dst`.
#[inline(always)]
unsafe fn escape_word(dst: *mut u8, word: u128, mut mask: u32, len: usize) -> *mut u8 {
    // SAFETY: the caller's promise: each escape and each store of sixteen bytes starts at
    // most six bytes on for each byte consumed before it.
    unsafe {
        // As in `block`: byte `p` goes to `lag + p`.
        let mut lag = dst;
        loop {
            let p = mask.trailing_zeros() as usize;
            let from = word >> (8 * p); // the escaped byte lowest (`p < 16`)
            lag = lag.add(write_escape(lag.add(p), from as u8));
            lag.add(p + 1)
                .cast::<u128>()
                .write_unaligned((from >> 8).to_le());
            mask &= mask - 1;
            if mask == 0 {
                return lag.add(len);
            }
        }
    }
}

/// Writes the escape of `byte` (one that needs an escape) at `dst` with one eight-byte
/// store; returns how many bytes longer than the byte the escape is (one or five).
///
/// # Safety
/// Eight bytes must be writable at `dst`.
#[inline(always)]
unsafe fn write_escape(dst: *mut u8, byte: u8) -> usize {
    let escape = ESCAPED[usize::from(byte)];
    // SAFETY: the caller's promise; an escape is at most six bytes, within the eight.
    unsafe { dst.cast::<u64>().write_unaligned(escape.to_le()) };
    (escape >> 56) as usize
}

/// Copies sixteen bytes from `src` to `dst`.
///
/// # Safety
/// Sixteen bytes must be readable at `src` and writable at `dst`, not overlapping.
#[inline(always)]
unsafe fn copy16(src: *const u8, dst: *mut u8) {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, 16) }
}

/// The `len` bytes (1..=16) at `src` as a little-endian number (the first byte lowest, the
/// bytes above `len` zero), read without reading past them.
///
/// # Safety
/// `len` bytes must be readable at `src`.
#[inline(always)]
unsafe fn load_word(src: *const u8, len: usize) -> u128 {
    // SAFETY: the loads stay within the `len` bytes (see load_partial).
    unsafe {
        if len >= 8 {
            let lo = u64::from_le(std::ptr::read_unaligned(src.cast::<u64>()));
            // The bytes after the first eight: the last eight, shifted down past those
            // that the first word holds already (none when `len` is 8).
            let hi = if len > 8 {
                let last = u64::from_le(std::ptr::read_unaligned(src.add(len - 8).cast::<u64>()));
                last >> (8 * (16 - len))
            } else {
                0
            };
            u128::from(lo) | u128::from(hi) << 64
        } else {
            u128::from(load_partial(src, len))
        }
    }
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

/// One bit (bit `k` for byte `k`) for each of the sixteen bytes of `v` that needs an escape.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn vector_mask(v: std::arch::x86_64::__m128i) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // A byte needs an escape when it is a quote, a backslash, or at most 0x1f (max(b, 0x1f)
    // == 0x1f, unsigned).
    // SAFETY: SSE2 is part of x86_64.
    unsafe {
        let limit = _mm_set1_epi8(0x1f);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, limit), limit);
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(control, quote), backslash)) as u32
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
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_storeu_si128};
    // Sixteen bytes at a time with SSE2, which every x86_64 processor has.
    // SAFETY: SSE2 is part of x86_64; the caller makes both sixteen-byte ranges valid.
    unsafe {
        let v = _mm_loadu_si128(src.cast::<__m128i>());
        _mm_storeu_si128(dst.cast::<__m128i>(), v);
        vector_mask(v)
    }
}

/// Copies the sixteen bytes at `src` to `dst` and returns one bit for each that needs an
/// escape.
///
/// # Safety
/// Sixteen bytes must be readable at `src` and writable at `dst`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn store_block(src: *const u8, dst: *mut u8) -> u32 {
    // SAFETY: the caller makes both sixteen-byte ranges valid.
    unsafe {
        let word = u128::from_le(std::ptr::read_unaligned(src.cast::<u128>()));
        dst.cast::<u128>().write_unaligned(word.to_le());
        word_mask(word)
    }
}

/// One bit (bit `k` for byte `k`, the first byte lowest) for each of the sixteen bytes of
/// `word` that needs an escape.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn word_mask(word: u128) -> u32 {
    use std::arch::x86_64::_mm_set_epi64x;
    // SAFETY: SSE2 is part of x86_64.
    vector_mask(unsafe { _mm_set_epi64x((word >> 64) as i64, word as i64) })
}

/// One bit (bit `k` for byte `k`, the first byte lowest) for each of the sixteen bytes of
/// `word` that needs an escape (two words of eight, without SIMD).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn word_mask(word: u128) -> u32 {
    swar_mask(word as u64) | swar_mask((word >> 64) as u64) << 8
}

/// One bit (bit `k` for byte `k`) for each of the eight bytes of a little-endian word that
/// needs an escape, exact for every byte (bit iteration reads them all).
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
#[inline(always)]
fn swar_mask(w: u64) -> u32 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // 0x80 in each zero byte of `v`: the sum sets a byte's high bit when its low seven bits
    // are not all zero, and cannot carry into the next byte.
    let zero = |v: u64| !(((v & LOW7) + LOW7) | v) & !LOW7;
    // Below 0x20: the three high bits are zero.
    let high = zero(w & (ONES * 0xe0))
        | zero(w ^ (ONES * u64::from(b'"')))
        | zero(w ^ (ONES * u64::from(b'\\')));
    // Gathers the high bit of byte k into bit 56 + k (no two products share a bit).
    ((high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
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
    /// The bytes of `v` that need an escape, one bit each, byte by byte.
    fn naive_mask(v: &[u8]) -> u32 {
        v.iter().enumerate().fold(0, |acc, (k, &b)| {
            acc | u32::from(b < 0x20 || b == b'"' || b == b'\\') << k
        })
    }

    #[test]
    fn masks_flag_every_byte_exactly() {
        // Bit iteration reads every bit of a mask, not only the lowest: each byte value at
        // each position, among neighbours that need escapes and neighbours that do not.
        for fill in [b'a', b'"', 0x00, 0x1f, 0x20, 0x80, 0xff] {
            for at in 0..16 {
                for byte in 0..=255u8 {
                    let mut v = [fill; 16];
                    v[at] = byte;
                    let word = u128::from_le_bytes(v);
                    assert_eq!(word_mask(word), naive_mask(&v), "{v:?}");
                    let lo = u64::from_le_bytes(v[..8].try_into().unwrap());
                    assert_eq!(swar_mask(lo), naive_mask(&v[..8]), "{v:?}");
                    let mut copy = [0u8; 16];
                    // SAFETY: both arrays are sixteen bytes.
                    let mask = unsafe { store_block(v.as_ptr(), copy.as_mut_ptr()) };
                    assert_eq!((mask, copy), (naive_mask(&v), v));
                }
            }
        }
    }

    #[test]
    fn escapes_at_every_position_of_blocks() {
        // One escape, two in a row, and one at each end of a block, at every position of
        // texts that end in each way (a block that can be read past, the last block, the
        // last bytes); and texts of escapes only.
        for len in [
            15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 80, 95, 96, 97,
        ] {
            for special in ["\"", "\\", "\u{0}", "\u{1f}", "\n"] {
                for at in 0..len {
                    for run in [1, 2, 3] {
                        let mut text = "q".repeat(len);
                        let run = run.min(len - at);
                        text.replace_range(at..at + run, &special.repeat(run));
                        assert_eq!(s(&text), naive(&text), "{text:?}");
                    }
                    let mut ends = "q".repeat(len).into_bytes();
                    for k in (at % 16..len).step_by(16) {
                        ends[k] = b'\\';
                    }
                    let ends = String::from_utf8(ends).unwrap();
                    assert_eq!(s(&ends), naive(&ends), "{ends:?}");
                }
                let all = special.repeat(len);
                assert_eq!(s(&all), naive(&all));
            }
        }
    }

    #[test]
    fn multibyte_characters_across_block_boundaries() {
        // Characters of two, three and four bytes starting at each offset before a block's
        // end, escapes next to them, at the ends of texts of every length up to 70.
        for c in ['é', '€', '😀'] {
            for len in 0..70 {
                for at in 0..len {
                    let text: String = (0..len)
                        .map(|k| match k {
                            _ if k == at => c,
                            _ if k == at + 1 => '"',
                            _ => 'w',
                        })
                        .collect();
                    assert_eq!(s(&text), naive(&text), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn wide_blocks_agree_at_every_offset() {
        // Lengths around the LONG_FROM bytes the 32-byte path starts at, around its block
        // edges and the 64 bytes it leaves to the 16-byte path: one
        // escape, a pair, and escapes at each end of a 32-byte block, at every position; a
        // 4-byte character at every alignment, alone and next to an escape; all after
        // prefixes that shift the output's alignment.
        let mut texts = Vec::new();
        for len in (250..=262)
            .chain(286..=290)
            .chain(318..=322)
            .chain([383, 384, 385])
        {
            let plain = "w".repeat(len);
            texts.push(plain.clone());
            for at in 0..len {
                for special in ["\"", "\\", "\u{0}", "\u{1f}", "\n"] {
                    for run in [1, 2] {
                        let mut text = plain.clone();
                        let run = run.min(len - at);
                        text.replace_range(at..at + run, &special.repeat(run));
                        texts.push(text);
                    }
                }
                let mut edges = plain.clone().into_bytes();
                for k in (at % 32..len).step_by(32) {
                    edges[k] = b'\t';
                }
                texts.push(String::from_utf8(edges).unwrap());
            }
            for at in 0..len.saturating_sub(4) {
                let mut text = plain[..len - 4].to_owned();
                text.insert(at, '😀');
                texts.push(text.clone());
                text.insert(at + 4, '"');
                texts.push(text);
            }
        }
        for text in &texts {
            assert_eq!(s(text), naive(text), "{text:?}");
            for prefix in [1, 31] {
                let mut out = vec![b'x'; prefix];
                out.shrink_to_fit();
                write_str(&mut out, text);
                assert_eq!(&out[prefix..], naive(text).as_bytes(), "{text:?}");
            }
        }
    }

    #[test]
    fn windows_agree_and_grow_the_buffer() {
        // Texts of several windows: plain, escapes only (each window must grow the output
        // five-fold), and escapes at the edges of windows, after prefixes of each length.
        let mut texts = Vec::new();
        for len in [
            WINDOW + 32,
            WINDOW + 33,
            WINDOW + 48,
            2 * WINDOW + 31,
            2 * WINDOW + 32,
            2 * WINDOW + 33,
            3 * WINDOW + 47,
        ] {
            texts.push("p".repeat(len));
            texts.push("\u{1}".repeat(len));
            let mut edges = "p".repeat(len).into_bytes();
            for k in (0..len).filter(|k| k % WINDOW < 2 || k % WINDOW > WINDOW - 3) {
                edges[k] = if k % 3 == 0 { b'\n' } else { b'"' };
            }
            edges[len - 1] = b'\\';
            texts.push(String::from_utf8(edges).unwrap());
            let mut mixed = "ü".repeat(len / 2);
            mixed.push_str(&"\\".repeat(len - 2 * (len / 2)));
            texts.push(mixed);
        }
        // A long text sized to its length after its first window, with escapes only near
        // its end (checked block by block there), sparse and dense.
        for every in [1, 2, 7, 100] {
            let len = 9 * WINDOW + 21;
            let mut late = "k".repeat(len).into_bytes();
            for k in (len - 7 * WINDOW..len).step_by(every) {
                late[k] = b'\t';
            }
            texts.push(String::from_utf8(late).unwrap());
        }
        for text in &texts {
            for prefix in [0, 1, 7] {
                let mut out = vec![b'x'; prefix];
                out.shrink_to_fit();
                write_str(&mut out, text);
                assert_eq!(&out[..prefix], &b"xxxxxxx"[..prefix]);
                assert!(std::str::from_utf8(&out[prefix..]).unwrap() == naive(text));
            }
        }
    }
}
