//! The buffer canonical JSON is written into: the one trait the writers of `canonical` and
//! `string` share (re-exported as `canonical::Output`), in a module of its own so that
//! neither of them imports the other for it.

/// Where canonical JSON is written: a `Vec<u8>`, or a front end's own buffer (the Python
/// binding writes straight into the `bytes` object it returns, so the output is not copied).
///
/// # Safety
/// An implementation behaves as `Vec<u8>` does: `as_mut_ptr()` points to `capacity()`
/// writable bytes of which the first `len()` are initialised, `reserve(n)` leaves at least
/// `n` bytes of capacity past `len()` (moving the bytes if it must, or not returning), and
/// `set_len` only records a length the caller has initialised.
pub unsafe trait Output {
    fn len(&self) -> usize;
    fn capacity(&self) -> usize;
    fn as_mut_ptr(&mut self) -> *mut u8;
    fn reserve(&mut self, additional: usize);
    /// # Safety
    /// `len <= capacity()`, and the bytes below it are initialised.
    unsafe fn set_len(&mut self, len: usize);

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    fn push(&mut self, byte: u8) {
        self.reserve(1);
        let len = self.len();
        // SAFETY: one byte of capacity was reserved past the length.
        unsafe {
            *self.as_mut_ptr().add(len) = byte;
            self.set_len(len + 1);
        }
    }

    #[inline(always)]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        let len = self.len();
        // SAFETY: `bytes.len()` bytes of capacity were reserved past the length.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.as_mut_ptr().add(len), bytes.len());
            self.set_len(len + bytes.len());
        }
    }

    /// Appends `count` copies of `byte`.
    fn extend_with(&mut self, count: usize, byte: u8) {
        self.reserve(count);
        let len = self.len();
        // SAFETY: `count` bytes of capacity were reserved past the length.
        unsafe {
            std::ptr::write_bytes(self.as_mut_ptr().add(len), byte, count);
            self.set_len(len + count);
        }
    }
}

// SAFETY: each method is Vec's own.
unsafe impl Output for Vec<u8> {
    #[inline(always)]
    fn len(&self) -> usize {
        Vec::len(self)
    }
    #[inline(always)]
    fn capacity(&self) -> usize {
        Vec::capacity(self)
    }
    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut u8 {
        Vec::as_mut_ptr(self)
    }
    #[inline(always)]
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional)
    }
    #[inline(always)]
    unsafe fn set_len(&mut self, len: usize) {
        // SAFETY: the caller's promise is Vec::set_len's.
        unsafe { Vec::set_len(self, len) }
    }
    #[inline(always)]
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte)
    }
    #[inline(always)]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes)
    }
}
