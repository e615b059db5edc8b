//! Negacyclic number-theoretic transform over one 32-bit prime.
//!
//! [`NttPlan::new`]`(n, q)` precomputes everything for the ring `Z_q[X]/(X^n + 1)`.
//!
//! # Output order
//!
//! [`NttPlan::forward`] takes coefficients in natural order and returns the
//! evaluations in **bit-reversed order**: output index `i` holds
//! `a(psi^(2·brv(i) + 1)) mod q`, where `psi` is [`NttPlan::psi`] (the smallest
//! primitive `2n`-th root of unity mod `q`) and `brv` reverses the low
//! `log2(n)` bits. Pointwise products do not care about the order, and
//! [`NttPlan::inverse`] takes the same order back to natural coefficients.
//!
//! # Lazy reduction
//!
//! Forward butterflies (Cooley–Tukey) keep values in `[0, 4q)`, inverse
//! butterflies (Gentleman–Sande) in `[0, 2q)`; twiddles are Shoup constants, so a
//! butterfly costs one lazy Shoup product and no division. Values are fully
//! reduced once, at the end. Inputs must be in `[0, q)`; outputs are in `[0, q)`.

use crate::arith::primes::check_ntt_prime;
use crate::arith::{primitive_root, Modulus};
use crate::backend::tables::NttTables;
use crate::backend::Backend;
use crate::error::ArithError;

pub(crate) mod count;

pub use crate::arith::bit_reverse;

/// A negacyclic NTT for one ring degree `n` and one prime `q`.
pub struct NttPlan {
    tables: NttTables,
    psi: u32,
    backend: Backend,
}

impl std::fmt::Debug for NttPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NttPlan")
            .field("n", &self.tables.n)
            .field("q", &self.tables.modulus.value())
            .field("backend", &self.backend)
            .finish()
    }
}

impl NttPlan {
    /// A plan for degree `n` (a power of two in 1024..=16384) and a prime
    /// `q < 2^30` with `q ≡ 1 (mod 2n)`, using the fastest backend this CPU has.
    pub fn new(n: usize, q: u64) -> Result<Self, ArithError> {
        Self::with_backend(n, q, Backend::detect())
    }

    /// A plan that runs on the given backend (see [`Backend::available`]).
    pub fn with_backend(n: usize, q: u64, backend: Backend) -> Result<Self, ArithError> {
        check_ntt_prime(n, q)?;
        let modulus = Modulus::new(q)?;
        let psi = primitive_root(n, q)?;
        let tables = NttTables::for_root(modulus, n, psi);
        Ok(Self {
            tables,
            psi,
            backend,
        })
    }

    /// Ring degree `n`.
    pub fn degree(&self) -> usize {
        self.tables.n
    }

    /// The prime `q`.
    pub fn modulus(&self) -> &Modulus {
        &self.tables.modulus
    }

    /// The primitive `2n`-th root of unity the transform evaluates at.
    pub fn psi(&self) -> u32 {
        self.psi
    }

    /// The backend this plan runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// In-place forward transform: natural-order coefficients in `[0, q)` to
    /// bit-reversed evaluations in `[0, q)`.
    ///
    /// # Panics
    /// If `a.len() != n`.
    pub fn forward(&self, a: &mut [u32]) {
        assert_eq!(a.len(), self.tables.n, "NttPlan::forward: wrong length");
        count::record_forward();
        self.backend.forward(&self.tables, a);
    }

    /// In-place inverse transform: bit-reversed evaluations in `[0, q)` to
    /// natural-order coefficients in `[0, q)`.
    ///
    /// # Panics
    /// If `a.len() != n`.
    pub fn inverse(&self, a: &mut [u32]) {
        assert_eq!(a.len(), self.tables.n, "NttPlan::inverse: wrong length");
        count::record_inverse();
        self.backend
            .inverse(&self.tables, a, &self.tables.inv_unscaled());
    }

    /// [`Self::inverse`] with every output multiplied by `factor` mod q, at
    /// no extra cost: the factor joins the `n^-1` of the last layer.
    ///
    /// # Panics
    /// If `a.len() != n`.
    pub fn inverse_scaled(&self, a: &mut [u32], factor: u32) {
        assert_eq!(
            a.len(),
            self.tables.n,
            "NttPlan::inverse_scaled: wrong length"
        );
        count::record_inverse();
        self.backend
            .inverse(&self.tables, a, &self.tables.inv_scale(factor));
    }

    /// [`Self::inverse_scaled`] of `from` into `a` (`from` unchanged), with
    /// no copy where the backend's first pass can read `from`.
    ///
    /// # Panics
    /// If `from` or `a` is not of length `n`.
    pub fn inverse_scaled_from(&self, from: &[u32], a: &mut [u32], factor: u32) {
        assert!(
            from.len() == self.tables.n && a.len() == self.tables.n,
            "NttPlan::inverse_scaled_from: wrong length"
        );
        count::record_inverse();
        self.backend
            .inverse_from(&self.tables, from, a, &self.tables.inv_scale(factor));
    }

    /// `out[i] = a[i] · b[i] mod q`, inputs in `[0, q)`.
    ///
    /// # Panics
    /// If the three lengths differ.
    pub fn multiply_pointwise(&self, a: &[u32], b: &[u32], out: &mut [u32]) {
        self.backend.mul(&self.tables.modulus, a, b, out);
    }

    /// `acc[i] = acc[i] + a[i] · b[i] mod q`, inputs in `[0, q)`.
    ///
    /// # Panics
    /// If the three lengths differ.
    pub fn multiply_accumulate(&self, a: &[u32], b: &[u32], acc: &mut [u32]) {
        self.backend.mul_acc(&self.tables.modulus, a, b, acc);
    }
}
