//! The twiddle tables every transform kernel reads: plain data, built once
//! per `(n, q)` by the NTT plan that owns them.

use crate::arith::{bit_reverse, Modulus, ShoupConstant};

/// Precomputed twiddles for one `(n, q)`, in the layout the kernels read.
///
/// Index `k` in `1..n` of `fwd` holds `psi^brv(k)`; index `k` of `inv` holds
/// `psi^-brv(k)` (index 0 is unused in both). Each has a Shoup companion array.
/// The forward stage with `m` groups uses entries `m..2m`; the inverse stage
/// with `h` groups uses entries `h..2h`.
pub(crate) struct NttTables {
    pub n: usize,
    pub modulus: Modulus,
    pub fwd: Vec<u32>,
    pub fwd_shoup: Vec<u32>,
    pub inv: Vec<u32>,
    pub inv_shoup: Vec<u32>,
    /// `n^-1 mod q`.
    pub n_inv: ShoupConstant,
    /// `n^-1 · psi^-brv(1) mod q`: the last inverse stage's twiddle with the
    /// final scaling folded in.
    pub n_inv_w: ShoupConstant,
    /// Extra layouts wanted by SIMD backends.
    pub simd: BackendTables,
}

/// The constants of the inverse transform's last layer: `n^-1·f` and
/// `n^-1·f·psi^-brv(1)` for an output scale `f` (1 for a plain inverse).
#[derive(Clone, Copy, Debug)]
pub(crate) struct InvScale {
    pub n_inv: ShoupConstant,
    pub n_inv_w: ShoupConstant,
}

impl NttTables {
    /// The tables of degree `n` for `psi`, a primitive `2n`-th root of
    /// unity mod the modulus: powers `psi^i` and `psi^-i` in natural order,
    /// scattered to `brv(i)`.
    pub(crate) fn for_root(modulus: Modulus, n: usize, psi: u32) -> Self {
        let psi_inv = modulus.inv(psi);
        let log_n = n.trailing_zeros();
        let mut fwd = vec![0u32; n];
        let mut inv = vec![0u32; n];
        let (mut p, mut pi) = (1u32, 1u32);
        for i in 0..n {
            let k = bit_reverse(i, log_n);
            fwd[k] = p;
            inv[k] = pi;
            p = modulus.mul(p, psi);
            pi = modulus.mul(pi, psi_inv);
        }
        Self::new(modulus, fwd, inv)
    }

    /// The tables for the twiddles `fwd` (`psi^brv(k)` at index `k`) and
    /// `inv` (`psi^-brv(k)`), of equal length `n`: their Shoup companions,
    /// the last layer's constants and every compiled backend's own layouts.
    pub(crate) fn new(modulus: Modulus, fwd: Vec<u32>, inv: Vec<u32>) -> Self {
        let n = fwd.len();
        debug_assert_eq!(inv.len(), n);
        let shoup_of = |v: &[u32]| v.iter().map(|&w| modulus.shoup(w).shoup).collect();
        let fwd_shoup = shoup_of(&fwd);
        let inv_shoup = shoup_of(&inv);
        let n_inv_value = modulus.inv(n as u32 % modulus.value());
        let n_inv = modulus.shoup(n_inv_value);
        let n_inv_w = modulus.shoup(modulus.mul(n_inv_value, inv[1]));
        let mut tables = NttTables {
            n,
            modulus,
            fwd,
            fwd_shoup,
            inv,
            inv_shoup,
            n_inv,
            n_inv_w,
            simd: BackendTables::default(),
        };
        tables.simd = BackendTables::new(&tables);
        tables
    }

    /// The last layer's constants for outputs multiplied by `factor`.
    pub(crate) fn inv_scale(&self, factor: u32) -> InvScale {
        let m = &self.modulus;
        let f = m.reduce_u32(factor);
        InvScale {
            n_inv: m.shoup(m.mul(self.n_inv.value, f)),
            n_inv_w: m.shoup(m.mul(self.n_inv_w.value, f)),
        }
    }

    /// The plain inverse's constants.
    pub(crate) fn inv_unscaled(&self) -> InvScale {
        InvScale {
            n_inv: self.n_inv,
            n_inv_w: self.n_inv_w,
        }
    }
}

/// Extra per-plan tables that SIMD backends want, built once with the plan.
#[derive(Default)]
pub(crate) struct BackendTables {
    #[cfg(bm_avx)]
    pub avx2: super::avx2::Tables,
    #[cfg(bm_avx)]
    pub avx512: super::avx512::Tables,
    #[cfg(bm_neon)]
    pub neon: super::neon::Tables,
    #[cfg(bm_simd128)]
    pub simd128: super::simd128::Tables,
}

impl BackendTables {
    #[allow(unused_variables)]
    fn new(t: &NttTables) -> Self {
        Self {
            #[cfg(bm_avx)]
            avx2: super::avx2::Tables::new(t),
            #[cfg(bm_avx)]
            avx512: super::avx512::Tables::new(t),
            #[cfg(bm_neon)]
            neon: super::neon::Tables::new(t),
            #[cfg(bm_simd128)]
            simd128: super::simd128::Tables::new(t),
        }
    }
}
