//! Portable kernels: compiled on every target, the oracle for the SIMD ones.

use crate::arith::csub;
use crate::arith::{Modulus, ShoupConstant};
use crate::ntt::NttTables;

/// Forward negacyclic NTT (Cooley–Tukey, Harvey lazy butterflies in `[0, 4q)`).
pub(crate) fn forward(t: &NttTables, a: &mut [u32]) {
    let m = &t.modulus;
    let two_q = 2 * m.value();
    let n = t.n;
    let mut gap = n;
    let mut groups = 1;
    while groups < n {
        gap >>= 1;
        for i in 0..groups {
            let w = ShoupConstant {
                value: t.fwd[groups + i],
                shoup: t.fwd_shoup[groups + i],
            };
            let (lo, hi) = a[2 * i * gap..2 * (i + 1) * gap].split_at_mut(gap);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let u = csub(*x, two_q);
                let v = m.mul_shoup_lazy(*y, w);
                *x = u + v;
                *y = u + two_q - v;
            }
        }
        groups <<= 1;
    }
    for x in a.iter_mut() {
        *x = m.reduce_4q(*x);
    }
}

/// Inverse negacyclic NTT (Gentleman–Sande, lazy in `[0, 2q)`, scaling by
/// `n^-1` folded into the last stage).
pub(crate) fn inverse(t: &NttTables, a: &mut [u32]) {
    let m = &t.modulus;
    let two_q = 2 * m.value();
    let n = t.n;
    let mut gap = 1;
    let mut groups = n >> 1;
    while groups > 1 {
        for i in 0..groups {
            let w = ShoupConstant {
                value: t.inv[groups + i],
                shoup: t.inv_shoup[groups + i],
            };
            let (lo, hi) = a[2 * i * gap..2 * (i + 1) * gap].split_at_mut(gap);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let (u, v) = (*x, *y);
                *x = csub(u + v, two_q);
                *y = m.mul_shoup_lazy(u + two_q - v, w);
            }
        }
        gap <<= 1;
        groups >>= 1;
    }
    let (lo, hi) = a.split_at_mut(n / 2);
    for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
        let (u, v) = (*x, *y);
        *x = m.mul_shoup(u + v, t.n_inv);
        *y = m.mul_shoup(u + two_q - v, t.n_inv_w);
    }
}

/// `out = a · b mod q`.
pub(crate) fn mul(m: &Modulus, a: &[u32], b: &[u32], out: &mut [u32]) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = m.mul(x, y);
    }
}

/// `acc = acc + a · b mod q`.
pub(crate) fn mul_acc(m: &Modulus, a: &[u32], b: &[u32], acc: &mut [u32]) {
    for ((c, &x), &y) in acc.iter_mut().zip(a).zip(b) {
        *c = m.add(*c, m.mul(x, y));
    }
}
