//! Line ends found 64 bytes at a time, for the fold.

/// The offsets of the '\n' bytes of a text, in order. The text is looked
/// at 64 bytes at a time: four 16-byte vector compares (`wide`, SSE2 or
/// NEON where there is one) give a bit for each '\n', and each line end
/// is then one bit found and cleared — far fewer instructions a line than
/// a search started anew for each (status lines are short).
pub(super) struct Newlines<'b> {
    /// The text's whole 64-byte chunks, and the few bytes after them.
    chunks: &'b [[u8; 64]],
    tail: &'b [u8],
    /// The chunk `found` was taken from (`chunks.len()`: the tail).
    chunk: usize,
    /// A bit for each '\n' byte of that chunk not yet handed out.
    found: u64,
}

/// A bit for each byte of `c` that is a '\n', and only those.
#[inline]
fn newline_mask(c: &[u8; 64]) -> u64 {
    let newline = wide::u8x16::splat(b'\n');
    let (parts, _) = c.as_chunks::<16>();
    let mut m = 0u64;
    for (k, part) in parts.iter().enumerate() {
        let eq = wide::u8x16::new(*part).simd_eq(newline);
        m |= u64::from(eq.to_bitmask()) << (16 * k);
    }
    m
}

impl<'b> Newlines<'b> {
    pub(super) fn new(bytes: &'b [u8]) -> Newlines<'b> {
        let (chunks, tail) = bytes.as_chunks::<64>();
        let mut n = Newlines {
            chunks,
            tail,
            chunk: 0,
            found: 0,
        };
        n.found = n.mask(0);
        n
    }

    /// The newline bits of chunk `k` (the tail padded with bytes that
    /// are no '\n'; past it, none).
    #[inline]
    fn mask(&self, k: usize) -> u64 {
        if let Some(c) = self.chunks.get(k) {
            return newline_mask(c);
        }
        if k > self.chunks.len() || self.tail.is_empty() {
            return 0;
        }
        let mut c = [0u8; 64];
        c[..self.tail.len()].copy_from_slice(self.tail);
        newline_mask(&c)
    }
}

impl Iterator for Newlines<'_> {
    type Item = usize;

    // Called once a line: a call costs as much as the rest of it.
    #[allow(clippy::inline_always, reason = "measured: a call a line")]
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        while self.found == 0 {
            if self.chunk >= self.chunks.len() {
                return None;
            }
            self.chunk += 1;
            self.found = self.mask(self.chunk);
        }
        let i = self.chunk * 64 + self.found.trailing_zeros() as usize;
        self.found &= self.found - 1;
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Newlines;

    fn positions(bytes: &[u8]) -> Vec<usize> {
        bytes
            .iter()
            .enumerate()
            .filter_map(|(i, &b)| (b == b'\n').then_some(i))
            .collect()
    }

    /// Every '\n' found, in order, wherever it falls about the 64-byte
    /// chunks and the tail: none, all, and each edge.
    #[test]
    fn newlines_are_found_at_the_chunk_edges() {
        for len in 0..200 {
            for fill in [b'x', b'\n'] {
                let mut bytes = vec![fill; len];
                assert_eq!(Newlines::new(&bytes).collect::<Vec<_>>(), positions(&bytes));
                for at in [0, 15, 16, 63, 64, 65, 127, 128, len.saturating_sub(1)] {
                    if at < len {
                        bytes[at] = if fill == b'x' { b'\n' } else { b'x' };
                    }
                }
                assert_eq!(
                    Newlines::new(&bytes).collect::<Vec<_>>(),
                    positions(&bytes),
                    "{len}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn newlines_are_every_newline_in_order(
            bytes in prop::collection::vec(prop_oneof![Just(b'\n'), any::<u8>()], 0..400),
        ) {
            prop_assert_eq!(Newlines::new(&bytes).collect::<Vec<_>>(), positions(&bytes));
        }
    }
}
