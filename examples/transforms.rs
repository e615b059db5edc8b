//! Prints how many transforms each BFV operation makes at auth4096, one TSV
//! line per operation: `transforms<TAB>op<TAB>forward<TAB>inverse`. The bench
//! report multiplies them by the transform's time on each engine, measured
//! in the same run, for its table of floors.
//!
//!     cargo run --release --example transforms --features count-transforms

use blindmatch::bfv::Params;
use blindmatch::transforms::per_operation;

fn main() {
    for (op, t) in per_operation(&Params::auth4096()) {
        println!("transforms\t{op}\t{}\t{}", t.forward, t.inverse);
    }
}
