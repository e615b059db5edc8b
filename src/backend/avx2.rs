//! avx2 kernels. PLACEHOLDER: delegates to scalar until the vector kernels land.

use crate::arith::Modulus;
use crate::backend::scalar;
use crate::ntt::NttTables;

/// Per-plan tables in the layout these kernels read.
#[derive(Default)]
pub(crate) struct Tables {}

impl Tables {
    pub(crate) fn new(_t: &NttTables) -> Self {
        Self {}
    }
}

#[target_feature(enable = "avx2")]
pub(crate) unsafe fn forward(t: &NttTables, a: &mut [u32]) {
    scalar::forward(t, a)
}

#[target_feature(enable = "avx2")]
pub(crate) unsafe fn inverse(t: &NttTables, a: &mut [u32]) {
    scalar::inverse(t, a)
}

#[target_feature(enable = "avx2")]
pub(crate) unsafe fn mul(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
    scalar::mul(m, a, b, out)
}

#[target_feature(enable = "avx2")]
pub(crate) unsafe fn mul_acc(m: &Modulus, a: &[u32], b: &[u32], acc: &mut [u32]) {
    scalar::mul_acc(m, a, b, acc)
}
