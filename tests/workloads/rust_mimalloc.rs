// A Rust program whose #[global_allocator] is mimalloc, as the mimalloc
// crate sets it up: every Box, Vec and String is allocated by
// mi_malloc_aligned and freed by mi_free, never through malloc.  Runs for
// argv[1] seconds (default 3), then prints "kept 100".
use std::alloc::{GlobalAlloc, Layout};
use std::os::raw::c_void;

#[link(name = "mimalloc")]
extern "C" {
    fn mi_malloc_aligned(size: usize, alignment: usize) -> *mut c_void;
    fn mi_free(p: *mut c_void);
}

struct Mimalloc;

unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
    }
    unsafe fn dealloc(&self, p: *mut u8, _layout: Layout) {
        mi_free(p as *mut c_void)
    }
}

#[global_allocator]
static GLOBAL: Mimalloc = Mimalloc;

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let mut i = 0u64;
    while std::time::Instant::now() < end {
        for _ in 0..1000 {
            kept.push(vec![i as u8; 4096]);
            if kept.len() > 100 {
                kept.remove(0);
            }
            i += 1;
        }
    }
    println!("kept {}", kept.len());
}
