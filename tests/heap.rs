//! The server's heap pad (`blindmatch::server::heap`): with it, a thread
//! that allocates and frees a few megabytes of polynomials per request
//! keeps its pages between requests instead of taking them back from the
//! kernel, a page fault each. Its own test binary: malloc's settings are
//! the whole process's.
#![cfg(all(feature = "server", target_os = "linux", target_env = "gnu"))]

use blindmatch::server::heap::{keep_pad, DEFAULT_PAD_MIB};

/// The calling thread's minor page faults so far.
fn minor_faults() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` writes a `rusage` into the pointer it is given.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage");
    // SAFETY: written by the successful call above.
    unsafe { usage.assume_init() }.ru_minflt
}

/// Minor faults of ten "requests" on a new thread, each 64 polynomial
/// limbs of 64 KiB written and then freed (4 MiB), after one to warm up.
fn faults_of_ten_requests() -> i64 {
    std::thread::spawn(|| {
        let request = |seed: u32| {
            let limbs: Vec<Vec<u32>> = (0..64).map(|i| vec![seed + i; 16 * 1024]).collect();
            std::hint::black_box(&limbs);
        };
        request(0);
        let before = minor_faults();
        for r in 1..=10 {
            request(r);
        }
        minor_faults() - before
    })
    .join()
    .expect("the request thread")
}

#[test]
fn the_heap_keeps_its_pages_between_requests() {
    let default = faults_of_ten_requests();
    assert!(keep_pad(DEFAULT_PAD_MIB), "mallopt refused the pad");
    let padded = faults_of_ten_requests();
    // 4 MiB is 1,024 pages a request: a heap that gives them back faults
    // on each again.
    assert!(
        default >= 5_000 && padded * 10 <= default,
        "minor faults over ten requests: {default} with malloc's defaults, {padded} with the pad"
    );
}

#[test]
fn a_pad_of_zero_changes_nothing() {
    assert!(!keep_pad(0));
}
