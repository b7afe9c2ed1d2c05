//! The addon's allocator: mimalloc for small blocks, the system's (glibc) for large ones.
//!
//! The write path allocates on one thread what another frees: a request's documents, built on
//! the JS thread, are freed on the committer. glibc serves that badly for small blocks (a freed
//! block returns to its arena under the arena's lock, and `malloc_consolidate`, run whenever a
//! large block is asked for, walks every small one freed since): 64 concurrent hard writers
//! spent ~10% of the JS thread in glibc's malloc, and mimalloc, built for this pattern, took
//! 5–20% off their cycle. But for large blocks glibc is the better one: a growing `Vec` is moved
//! by `mremap`, and mimalloc touched fresh, zeroed pages instead (1M documents through
//! `insertNdjson` −6.5% with mimalloc alone; BENCHMARKS, *Session 15*). Splitting by size keeps
//! both: a block is freed by the allocator that made it, since Rust passes its layout back.
use std::alloc::{GlobalAlloc, Layout, System};

use mimalloc::MiMalloc;

pub struct SplitAllocator;

/// The largest block mimalloc serves (a small document, a key, a boxed callback).
const SMALL: usize = 1024;

fn small(size: usize) -> bool {
    size <= SMALL
}

unsafe impl GlobalAlloc for SplitAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if small(layout.size()) {
            MiMalloc.alloc(layout)
        } else {
            System.alloc(layout)
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if small(layout.size()) {
            MiMalloc.alloc_zeroed(layout)
        } else {
            System.alloc_zeroed(layout)
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if small(layout.size()) {
            MiMalloc.dealloc(ptr, layout)
        } else {
            System.dealloc(ptr, layout)
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match (small(layout.size()), small(new_size)) {
            (true, true) => MiMalloc.realloc(ptr, layout, new_size),
            (false, false) => System.realloc(ptr, layout, new_size),
            // Crossing the line: a new block from the other allocator.
            _ => {
                let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                let new = self.alloc(new_layout);
                if !new.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                new
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_keeps_its_bytes_when_it_grows_or_shrinks_across_the_line() {
        let a = SplitAllocator;
        unsafe {
            let small_layout = Layout::from_size_align(100, 8).unwrap();
            let p = a.alloc(small_layout);
            for i in 0..100 {
                *p.add(i) = i as u8;
            }
            let p = a.realloc(p, small_layout, 5000); // to the system's
            let large_layout = Layout::from_size_align(5000, 8).unwrap();
            assert!((0..100).all(|i| *p.add(i) == i as u8));
            let p = a.realloc(p, large_layout, 50); // back to mimalloc
            assert!((0..50).all(|i| *p.add(i) == i as u8));
            a.dealloc(p, Layout::from_size_align(50, 8).unwrap());
        }
    }
}
