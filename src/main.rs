//! The `rudder` command line: a thin shell over the `rudder` library.
use std::process::ExitCode;

mod cli;

// Rendering allocates many small strings, maps and trees; mimalloc serves
// them faster than glibc's malloc and returns less fragmented memory.
#[global_allocator]
static ALLOC: Mimalloc = Mimalloc;

/// mimalloc without the aligned entry points where they are not needed.
/// `mimalloc::MiMalloc` sends every request through `mi_malloc_aligned`,
/// whose checks cost about twice the plain fast path; every mimalloc block
/// is aligned to at least 8 bytes, which is all that most Rust types ask.
struct Mimalloc;

/// The alignment every mimalloc block has (its pointer size).
const PLAIN_ALIGN: usize = std::mem::size_of::<usize>();

// SAFETY: each call goes to mimalloc with a layout it serves: the plain
// functions only when the layout asks for no more than the alignment all
// mimalloc blocks have, `MiMalloc` otherwise; blocks from either are freed
// and resized by mimalloc alike.
unsafe impl std::alloc::GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            libmimalloc_sys::mi_malloc(layout.size()).cast()
        } else {
            mimalloc::MiMalloc.alloc(layout)
        }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            libmimalloc_sys::mi_zalloc(layout.size()).cast()
        } else {
            mimalloc::MiMalloc.alloc_zeroed(layout)
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        mimalloc::MiMalloc.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast()
        } else {
            mimalloc::MiMalloc.realloc(ptr, layout, new_size)
        }
    }
}

fn main() -> ExitCode {
    // The crash and fault tests drive this binary with RUDDER_CRASH_AT and
    // RUDDER_SIM_*; the library ignores them unless told.
    rudder::enable_env_faults();
    cli::main()
}
