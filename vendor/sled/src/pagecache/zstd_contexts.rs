//! Herald: zstd contexts kept per thread (see HERALD.md).
//!
//! Upstream made a new context for every page it compressed
//! (`zstd::block::compress`) or read back (`zstd::stream::decode_all`, which
//! also allocates a streaming window and read buffer). Making one allocates
//! and zeroes tens to hundreds of KiB, more than the work on a small page. A
//! context per thread, reused, writes and reads the same frames.

use std::cell::RefCell;
use std::io;

use zstd::block::{Compressor, Decompressor};

thread_local! {
    static COMPRESSOR: RefCell<Compressor> = RefCell::new(Compressor::new());
    static DECOMPRESSOR: RefCell<Decompressor> = RefCell::new(Decompressor::new());
}

/// Frames said to be larger than this, or of unknown size, are streamed
/// (as upstream read all of them), rather than read into a buffer of that size.
const MAX_ONE_SHOT: u64 = 64 << 20;

/// One zstd frame of `data` at `level`, as `zstd::block::compress` makes it.
pub(crate) fn compress(data: &[u8], level: i32) -> io::Result<Vec<u8>> {
    COMPRESSOR
        .try_with(|c| c.borrow_mut().compress(data, level))
        // This thread's locals are gone (it is exiting): a context of its own.
        .unwrap_or_else(|_| Compressor::new().compress(data, level))
}

/// What `frames` decompresses to, as `zstd::stream::decode_all` reads it.
pub(crate) fn decompress(frames: &[u8]) -> io::Result<Vec<u8>> {
    // Above `MAX_ONE_SHOT` are the "unknown" and "error" answers too.
    let size = zstd::zstd_safe::get_frame_content_size(frames);
    if size > MAX_ONE_SHOT {
        return zstd::stream::decode_all(frames);
    }
    let one_shot = DECOMPRESSOR
        .try_with(|d| d.borrow_mut().decompress(frames, size as usize))
        .unwrap_or_else(|_| Decompressor::new().decompress(frames, size as usize));
    // Several frames in a row do not fit the first one's size: stream them.
    one_shot.or_else(|_| zstd::stream::decode_all(frames))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_upstream_wrote_and_upstream_reads_what_it_writes() {
        let page: Vec<u8> = (0..10_000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
        let other: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let upstream = zstd::block::compress(&page, 5).unwrap();
        // The second use of this thread's contexts, after a larger page.
        assert_eq!(decompress(&compress(&other, 5).unwrap()).unwrap(), other);
        let ours = compress(&page, 5).unwrap();
        assert_eq!(ours, upstream);
        assert_eq!(decompress(&upstream).unwrap(), page);
        assert_eq!(zstd::stream::decode_all(&ours[..]).unwrap(), page);
        // Two frames in a row, and an empty page.
        let two = [upstream.clone(), upstream].concat();
        assert_eq!(decompress(&two).unwrap(), [page.clone(), page].concat());
        assert_eq!(decompress(&compress(&[], 5).unwrap()).unwrap(), Vec::<u8>::new());
    }
}
