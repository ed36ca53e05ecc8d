//! The allocator: mimalloc, asked for its plain blocks whenever the alignment asked for is
//! one every block has. (The `mimalloc` crate's allocator asks for every block through the
//! aligned entry point, whose fast path covers only blocks up to 1 KiB with a free block at
//! hand: the rest, a third of an import's allocations, took mimalloc's generic path.)

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// Every mimalloc block is aligned to the word: block sizes are multiples of it.
const WORD: usize = std::mem::size_of::<usize>();

pub struct MiMalloc;

// SAFETY: mimalloc's functions allocate and free as `GlobalAlloc` requires; plain blocks
// are only used for layouts whose alignment every block has.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: a layout of non-zero size, as `GlobalAlloc::alloc` is given.
        unsafe {
            if layout.align() <= WORD {
                libmimalloc_sys::mi_malloc(layout.size()) as *mut u8
            } else {
                libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            if layout.align() <= WORD {
                libmimalloc_sys::mi_zalloc(layout.size()) as *mut u8
            } else {
                libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator.
        unsafe { libmimalloc_sys::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe {
            if layout.align() <= WORD {
                libmimalloc_sys::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                libmimalloc_sys::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align())
                    as *mut u8
            }
        }
    }
}

// (The import's examples include this file for the allocator alone.)
/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_t` of mimalloc 3).
#[allow(dead_code)]
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

#[allow(dead_code)]
unsafe extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Called as the process is about to exit: mimalloc would otherwise hand every free page
/// back to the system on the way out (`madvise` over the whole heap, 4% of a warm `ls`),
/// pages the exit frees anyway.
#[allow(dead_code)]
pub fn no_purge_at_exit() {
    // SAFETY: sets an option; -1 is "never purge" for this one.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_have_the_alignment_asked_for() {
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [
                1, 7, 8, 16, 24, 40, 100, 1000, 1024, 1025, 5000, 70_000, 3_000_000,
            ] {
                let size = size.max(align);
                let l = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero sizes; each block is freed with the layout it was made with.
                unsafe {
                    let p = MiMalloc.alloc(l);
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "{size} {align}"
                    );
                    p.write_bytes(0xab, size);
                    let q = MiMalloc.realloc(p, l, size * 2 + 3);
                    assert!(
                        !q.is_null() && (q as usize).is_multiple_of(align),
                        "{size} {align}"
                    );
                    assert_eq!(*q.add(size - 1), 0xab);
                    MiMalloc.dealloc(q, Layout::from_size_align(size * 2 + 3, align).unwrap());
                    let z = MiMalloc.alloc_zeroed(l);
                    assert!((z as usize).is_multiple_of(align) && *z.add(size - 1) == 0);
                    MiMalloc.dealloc(z, l);
                }
            }
        }
    }
}
