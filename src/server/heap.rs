//! How much free memory the process's heaps keep instead of giving it back
//! to the kernel (glibc's malloc; elsewhere nothing is changed).
//!
//! A hardened login's checks and a login-mode append allocate and free a few
//! megabytes of polynomials per request. With glibc's defaults each heap
//! shrank back after the request and grew again in the next, and every page
//! it grew by came back from the kernel zeroed, a page fault each: on a
//! 2-core Intel Xeon the matcher's checks of a 32-template append took
//! 19.4 ms where they take 16.3 with 16 MiB kept at the top of the heap
//! (bench/HISTORY.md). Setting the pad turns off malloc's sliding threshold
//! for serving a request from `mmap` (it then stays at 128 KiB), so the
//! threshold is set too: allocations below 4 MiB come from the heap.
//!
//! The cost is memory: up to the pad, free, in each malloc arena (glibc
//! makes up to eight per core, one per thread while threads are few).

/// The pad `blindmatch-server` keeps by default, in MiB.
pub const DEFAULT_PAD_MIB: usize = 16;

/// Keeps `mib` MiB free at the top of each heap when it shrinks (and grows
/// it by as much more when it grows), and serves allocations below 4 MiB
/// from the heap. `0` leaves malloc's defaults. Returns whether the
/// settings were applied: only where the C library is glibc, and only for
/// a pad below 2 GiB.
pub fn keep_pad(mib: usize) -> bool {
    if mib == 0 {
        return false;
    }
    set(mib)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set(mib: usize) -> bool {
    let Some(pad) = mib
        .checked_mul(1 << 20)
        .and_then(|b| libc::c_int::try_from(b).ok())
    else {
        return false;
    };
    // Allocations from 4 MiB up are mapped on their own.
    let threshold: libc::c_int = 4 << 20;
    // SAFETY: `mallopt` only sets malloc's parameters; glibc takes its
    // arena lock to do so, so it is sound from any thread at any time.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, pad) == 1
            && libc::mallopt(libc::M_MMAP_THRESHOLD, threshold) == 1
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set(_mib: usize) -> bool {
    false
}
