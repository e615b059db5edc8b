//! RNS polynomials whose type says which domain they are in.
//!
//! A `RnsPoly<D>` holds `limbs` residue vectors of length `n`, limb-major: limb
//! `i` is the polynomial reduced mod the `i`-th prime of whatever basis it was
//! made for (`Params::plans_q` or `Params::plans_qp`). `D` is [`Coeff`]
//! (coefficients), [`Ntt`] (bit-reversed evaluations) or [`NttMont`]
//! (evaluations times `2^32`, the Montgomery form of an operand that many
//! products share, such as the secret key); mixing them is a type error, and
//! conversions go through [`RnsPoly::into_ntt`] / [`RnsPoly::into_coeff`].

use std::marker::PhantomData;

use zeroize::Zeroize;

use crate::arith::Modulus;
use crate::backend::Backend;
use crate::ntt::NttPlan;

/// Coefficient domain marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coeff;
/// NTT (evaluation) domain marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ntt;
/// NTT domain in Montgomery form: each residue is `x·2^32 mod q` for the
/// evaluation `x`. A product with such an operand is one Montgomery
/// multiplication ([`crate::Backend::mul_mont`]) and gives the plain
/// product, so operands used in many products (the secret key, the
/// ephemeral `u` of a public-key encryption) are kept in this form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NttMont;

/// The evaluation domains ([`Ntt`], [`NttMont`]): a product by an
/// [`NttMont`] operand keeps the other operand's domain
/// (`x · y·2^32 · 2^-32 = x·y`).
pub trait Evaluations: sealed::Sealed {}
impl Evaluations for Ntt {}
impl Evaluations for NttMont {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Ntt {}
    impl Sealed for super::NttMont {}
}

/// A polynomial in RNS form, in domain `D`.
///
/// Its buffer comes from, and goes back to, a small per-thread pool of freed
/// polynomial buffers (the module's `pool`), so a loop of homomorphic operations
/// does not hand memory back to the operating system and fault it in again
/// on every iteration.
#[derive(PartialEq, Eq)]
pub struct RnsPoly<D> {
    data: Vec<u32>,
    n: usize,
    _domain: PhantomData<D>,
}

impl<D> Clone for RnsPoly<D> {
    fn clone(&self) -> Self {
        let mut data = pool::take(self.data.len());
        data.extend_from_slice(&self.data);
        Self {
            data,
            n: self.n,
            _domain: PhantomData,
        }
    }
}

impl<D> Drop for RnsPoly<D> {
    fn drop(&mut self) {
        pool::give(std::mem::take(&mut self.data));
    }
}

/// Buffers of dropped polynomials, kept per thread for the next ones.
///
/// Holds at most [`pool::MAX_BUFFERS`] buffers of at most
/// [`pool::MAX_WORDS`] words. Secret polynomials are zeroized by their owners
/// before they are dropped, so what is kept here is what the heap would have
/// kept after a `free` anyway.
pub(crate) mod pool {
    use std::cell::RefCell;

    /// Buffers kept per thread.
    pub(crate) const MAX_BUFFERS: usize = 32;
    /// Largest buffer kept (4 MiB).
    pub(crate) const MAX_WORDS: usize = 1 << 20;

    thread_local! {
        static FREE: RefCell<Vec<Vec<u32>>> = const { RefCell::new(Vec::new()) };
    }

    /// An empty vector with room for `len` words.
    pub(crate) fn take(len: usize) -> Vec<u32> {
        let reused = FREE
            .try_with(|f| {
                let mut f = f.try_borrow_mut().ok()?;
                let i = f.iter().rposition(|b| b.capacity() >= len)?;
                Some(f.swap_remove(i))
            })
            .ok()
            .flatten();
        match reused {
            Some(mut v) => {
                v.clear();
                v
            }
            None => Vec::with_capacity(len),
        }
    }

    /// `len` zeros.
    pub(crate) fn zeroed(len: usize) -> Vec<u32> {
        let mut v = take(len);
        v.resize(len, 0);
        v
    }

    /// Returns a buffer to the pool (or to the allocator when the pool is
    /// full, the buffer is empty or too large, or the thread is exiting).
    pub(crate) fn give(v: Vec<u32>) {
        if v.capacity() == 0 || v.capacity() > MAX_WORDS {
            return;
        }
        let _ = FREE.try_with(|f| {
            if let Ok(mut f) = f.try_borrow_mut() {
                if f.len() < MAX_BUFFERS {
                    f.push(v);
                }
            }
        });
    }
}

impl<D> std::fmt::Debug for RnsPoly<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RnsPoly {{ n: {}, limbs: {} }}", self.n, self.limbs())
    }
}

impl<D> Zeroize for RnsPoly<D> {
    fn zeroize(&mut self) {
        self.data.zeroize();
    }
}

impl<D> RnsPoly<D> {
    /// The zero polynomial with `limbs` limbs of degree `n`.
    pub fn zero(n: usize, limbs: usize) -> Self {
        Self {
            data: pool::zeroed(n * limbs),
            n,
            _domain: PhantomData,
        }
    }

    /// All residues, limb-major, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u32] {
        &mut self.data
    }

    /// Wraps limb-major residues (`data.len()` a multiple of `n`).
    pub(crate) fn from_raw(data: Vec<u32>, n: usize) -> Self {
        debug_assert_eq!(data.len() % n, 0);
        Self {
            data,
            n,
            _domain: PhantomData,
        }
    }

    /// The limb-major residues, taken out (for reuse in another domain).
    pub(crate) fn into_raw(mut self) -> Vec<u32> {
        std::mem::take(&mut self.data)
    }

    /// Degree.
    pub fn degree(&self) -> usize {
        self.n
    }

    /// Number of limbs.
    pub fn limbs(&self) -> usize {
        self.data.len() / self.n
    }

    /// Limb `i`.
    pub fn limb(&self, i: usize) -> &[u32] {
        &self.data[i * self.n..(i + 1) * self.n]
    }

    /// Limb `i`, mutable.
    pub fn limb_mut(&mut self, i: usize) -> &mut [u32] {
        &mut self.data[i * self.n..(i + 1) * self.n]
    }

    /// All residues, limb-major.
    pub fn as_slice(&self) -> &[u32] {
        &self.data
    }

    /// Drops limbs past the first `k`.
    pub fn truncate_limbs(&mut self, k: usize) {
        self.data.truncate(k * self.n);
    }

    /// Moves the residues to a buffer without the room of limbs dropped by
    /// [`RnsPoly::truncate_limbs`], for a polynomial kept long (shrinking in
    /// place would leave that room as a hole in the heap).
    pub(crate) fn shrink_to_fit(&mut self) {
        if self.data.capacity() > self.data.len() {
            let mut tight = Vec::with_capacity(self.data.len());
            tight.extend_from_slice(&self.data);
            pool::give(std::mem::replace(&mut self.data, tight));
        }
    }

    /// `self += other` limb by limb.
    pub fn add_assign(&mut self, other: &Self, plans: &[NttPlan]) {
        for (i, p) in plans.iter().enumerate().take(self.limbs()) {
            let m = p.modulus();
            let n = self.n;
            for (x, &y) in self.data[i * n..(i + 1) * n].iter_mut().zip(other.limb(i)) {
                *x = m.add(*x, y);
            }
        }
    }

    /// `self -= other` limb by limb.
    pub fn sub_assign(&mut self, other: &Self, plans: &[NttPlan]) {
        for (i, p) in plans.iter().enumerate().take(self.limbs()) {
            let m = p.modulus();
            let n = self.n;
            for (x, &y) in self.data[i * n..(i + 1) * n].iter_mut().zip(other.limb(i)) {
                *x = m.sub(*x, y);
            }
        }
    }

    /// `self = -self`.
    pub fn neg_assign(&mut self, plans: &[NttPlan]) {
        for (i, p) in plans.iter().enumerate().take(self.limbs()) {
            let m = p.modulus();
            let n = self.n;
            for x in self.data[i * n..(i + 1) * n].iter_mut() {
                *x = m.neg(*x);
            }
        }
    }
}

impl RnsPoly<Coeff> {
    /// Small signed coefficients (|c| < every prime) reduced into each limb.
    /// Any signed integer type will do (`i8` samples need no widening).
    pub fn from_small<T: Copy + Into<i64>>(coeffs: &[T], plans: &[NttPlan]) -> Self {
        let n = coeffs.len();
        let mut p = Self::zero(n, plans.len());
        for (i, plan) in plans.iter().enumerate() {
            // Primes are below 2^30, so |c| < q fits in i32, and 32-bit lanes
            // vectorize best; a negative c gets q added through its sign mask.
            let q = plan.modulus().value() as i32;
            for (x, &c) in p.limb_mut(i).iter_mut().zip(coeffs) {
                let v = c.into() as i32;
                *x = (v + (q & (v >> 31))) as u32;
            }
        }
        p
    }

    /// The evaluations of ternary coefficients (each -1, 0 or 1) in
    /// Montgomery form: the coefficients are lifted as `c·2^32 mod q`, and
    /// the transform is linear, so this costs no more than
    /// `from_small(..).into_ntt(..)`.
    ///
    /// # Panics
    /// If a coefficient is not ternary.
    pub fn ternary_to_ntt_mont(coeffs: &[i8], plans: &[NttPlan]) -> RnsPoly<NttMont> {
        assert!(
            coeffs.iter().all(|c| (-1..=1).contains(c)),
            "ternary_to_ntt_mont: a coefficient is not -1, 0 or 1"
        );
        let n = coeffs.len();
        let mut p = Self::zero(n, plans.len());
        for (i, plan) in plans.iter().enumerate() {
            let m = plan.modulus();
            let plus = m.r();
            let minus = m.neg(plus);
            // Branch-free (the coefficients are secret, and random signs
            // would defeat a branch predictor anyway).
            for (x, &c) in p.limb_mut(i).iter_mut().zip(coeffs) {
                let pos = 0u32.wrapping_sub((c > 0) as u32);
                let neg = 0u32.wrapping_sub((c < 0) as u32);
                *x = (plus & pos) | (minus & neg);
            }
            plan.forward(p.limb_mut(i));
        }
        RnsPoly::from_raw(std::mem::take(&mut p.data), n)
    }

    /// Forward NTT of every limb.
    pub fn into_ntt(mut self, plans: &[NttPlan]) -> RnsPoly<Ntt> {
        for (i, plan) in plans.iter().enumerate().take(self.limbs()) {
            plan.forward(self.limb_mut(i));
        }
        RnsPoly::from_raw(std::mem::take(&mut self.data), self.n)
    }

    /// The evaluations in Montgomery form (coefficients below each prime):
    /// each limb times `2^32 mod q` (one vector pass), then transformed,
    /// since the transform is linear.
    pub fn into_ntt_mont(mut self, plans: &[NttPlan]) -> RnsPoly<NttMont> {
        let mut row = vec![0u32; self.n];
        for (i, plan) in plans.iter().enumerate().take(self.limbs()) {
            let m = plan.modulus();
            plan.backend()
                .lincomb(m, &[self.limb(i)], &[m.shoup(m.r())], &mut row);
            let limb = self.limb_mut(i);
            limb.copy_from_slice(&row);
            plan.forward(limb);
        }
        RnsPoly::from_raw(std::mem::take(&mut self.data), self.n)
    }
}

impl RnsPoly<Ntt> {
    /// Inverse NTT of every limb.
    pub fn into_coeff(mut self, plans: &[NttPlan]) -> RnsPoly<Coeff> {
        for (i, plan) in plans.iter().enumerate().take(self.limbs()) {
            plan.inverse(self.limb_mut(i));
        }
        RnsPoly::from_raw(std::mem::take(&mut self.data), self.n)
    }

    /// `self = a · b` pointwise.
    pub fn mul_from(&mut self, a: &Self, b: &Self, plans: &[NttPlan]) {
        let n = self.n;
        for (i, plan) in plans.iter().enumerate().take(self.limbs()) {
            plan.multiply_pointwise(a.limb(i), b.limb(i), &mut self.data[i * n..(i + 1) * n]);
        }
    }

    /// `self += a · b` pointwise.
    pub fn mul_acc(&mut self, a: &Self, b: &Self, plans: &[NttPlan]) {
        let n = self.n;
        for (i, plan) in plans.iter().enumerate().take(self.limbs()) {
            plan.multiply_accumulate(a.limb(i), b.limb(i), &mut self.data[i * n..(i + 1) * n]);
        }
    }
}

impl<D: Evaluations> RnsPoly<D> {
    /// `self = a · b` pointwise, for `b` in Montgomery form (the result is in
    /// `a`'s domain). Reads the first `self.limbs()` limbs of `a` and `b`.
    pub fn mul_from_mont(&mut self, a: &Self, b: &RnsPoly<NttMont>, plans: &[NttPlan]) {
        self.limbwise_mont(a, b, plans, Backend::mul_mont);
    }

    /// [`RnsPoly::mul_from_mont`] for a result that is not read again soon
    /// (see [`crate::Backend::mul_mont_streaming`]).
    pub fn mul_from_mont_streaming(&mut self, a: &Self, b: &RnsPoly<NttMont>, plans: &[NttPlan]) {
        self.limbwise_mont(a, b, plans, Backend::mul_mont_streaming);
    }

    /// `self += a · b` pointwise, for `b` in Montgomery form.
    pub fn mul_acc_mont(&mut self, a: &Self, b: &RnsPoly<NttMont>, plans: &[NttPlan]) {
        self.limbwise_mont(a, b, plans, Backend::mul_acc_mont);
    }

    /// `self -= a · b` pointwise, for `b` in Montgomery form.
    pub fn mul_sub_mont(&mut self, a: &Self, b: &RnsPoly<NttMont>, plans: &[NttPlan]) {
        self.limbwise_mont(a, b, plans, Backend::mul_sub_mont);
    }

    /// Applies one of the backend's Montgomery product kernels limb by limb
    /// (`self` is its output or accumulator).
    fn limbwise_mont(
        &mut self,
        a: &Self,
        b: &RnsPoly<NttMont>,
        plans: &[NttPlan],
        kernel: fn(Backend, &Modulus, &[u32], &[u32], &mut [u32]),
    ) {
        let n = self.n;
        for (i, plan) in plans.iter().enumerate().take(self.limbs()) {
            let out = &mut self.data[i * n..(i + 1) * n];
            kernel(plan.backend(), plan.modulus(), a.limb(i), b.limb(i), out);
        }
    }
}

impl RnsPoly<Ntt> {
    /// `self = self · b` pointwise.
    pub fn mul_assign(&mut self, b: &Self, plans: &[NttPlan]) {
        self.assign_limbwise(b, plans, Backend::mul);
    }

    /// `self = self · b` pointwise, for `b` in Montgomery form.
    pub fn mul_assign_mont(&mut self, b: &RnsPoly<NttMont>, plans: &[NttPlan]) {
        self.assign_limbwise(b, plans, Backend::mul_mont);
    }

    /// `self = kernel(self, b)` limb by limb, through one scratch row (the
    /// kernels write apart from their inputs).
    fn assign_limbwise<E>(
        &mut self,
        b: &RnsPoly<E>,
        plans: &[NttPlan],
        kernel: fn(Backend, &Modulus, &[u32], &[u32], &mut [u32]),
    ) {
        let n = self.n;
        let mut tmp = vec![0u32; n];
        for (i, plan) in plans.iter().enumerate().take(self.limbs()) {
            let limb = &mut self.data[i * n..(i + 1) * n];
            kernel(plan.backend(), plan.modulus(), limb, b.limb(i), &mut tmp);
            limb.copy_from_slice(&tmp);
        }
    }
}
