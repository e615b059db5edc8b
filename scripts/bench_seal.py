#!/usr/bin/env python3
"""Microsoft SEAL (native, via TenSEAL's `tenseal.sealapi` bindings) peer benchmark.

BFV at N=4096, plaintext modulus t=65537 (batching), SEAL's default 128-bit
coefficient modulus for N=4096 (CoeffModulus.BFVDefault(4096) = 36+36+37 bits,
the 37-bit prime being the special key-switching prime), one thread (SEAL itself
does not multithread these operations).

Run with the venv python from scripts/seal_env.sh:

    PY="$(bash scripts/seal_env.sh)" && "$PY" scripts/bench_seal.py [--quick]

stdout, one TSV line per figure (nothing else goes to stdout):
    seal<TAB>op<TAB>microseconds     median time per call
    seal<TAB>size_...<TAB>bytes       serialized sizes
    seal<TAB>noise_...<TAB>bits       Decryptor.invariant_noise_budget
stderr: `# ...` lines with versions, spreads and notes.

Timings are medians over batches of back-to-back calls timed with
time.perf_counter (wall clock; with --cpu-time, time.thread_time instead: on
a loaded machine a 2 ms call is often preempted, which skews wall-clock
medians of the longer ops, while thread CPU time stays put); every figure includes the pybind11 call overhead (well
under a microsecond per call, only visible in `add`). Inputs and outputs are
allocated once and reused, as a tuned application would do.

API notes (tenseal 0.3.18, checked with dir() and the binding sources):
  * every `save(path)` binding calls SEAL's save with its default compression,
    which in this build is zstd; there is no way to pass compr_mode. The
    compr_mode-none size is measured by unpacking those very bytes (header +
    zstd frame) with the `zstandard` module and re-adding the 16-byte header,
    which is exactly what SEAL writes with compr_mode none.
  * Serializable<Ciphertext> and Serializable<RelinKeys> are bound (so seeded
    symmetric ciphertexts and seeded relin keys can be saved);
    Serializable<PublicKey> is not: `create_public_key()` without an argument
    raises TypeError, so the public key size is that of the ordinary
    (unseeded) PublicKey.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse
import gc
import random
import statistics
import sys
import tempfile
import time

import tenseal
import tenseal.sealapi as seal

try:
    import zstandard
except ImportError:  # only the compr_mode-none sizes need it
    zstandard = None

N = 4096
T = 65537
NOISE_BOUND = 175  # coefficient-packed noise-test inputs are uniform in [-175, 175]


def note(msg):
    print(f"# note: {msg}", file=sys.stderr, flush=True)


def info(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


def row(op, value):
    print(f"seal\t{op}\t{value}", flush=True)


class Timer:
    """Median per-call time of fn(); fast calls are timed in batches."""

    def __init__(self, budget_s, min_batches, max_batches, cpu_time=False):
        self.cpu_time = cpu_time
        self.budget_s = budget_s
        self.min_batches = min_batches
        self.max_batches = max_batches

    def run(self, op, fn, setup=None):
        # Warm up (and estimate the per-call time).
        for _ in range(3):
            if setup:
                setup()
            t0 = time.perf_counter()
            fn()
            est = time.perf_counter() - t0
        # Batches of at least ~1 ms so timer and loop overhead do not matter;
        # calls that need a per-call setup are timed one by one. Batches run
        # until the time budget is spent (at least min_batches, at most
        # max_batches), so a loaded machine does not stretch the run much.
        inner = 1 if setup else max(1, int(1e-3 / max(est, 1e-7)))
        samples = []
        cpu_samples = []
        gc_was = gc.isenabled()
        gc.disable()
        try:
            deadline = time.perf_counter() + self.budget_s
            while len(samples) < self.min_batches or (
                len(samples) < self.max_batches and time.perf_counter() < deadline
            ):
                if setup:
                    setup()
                c0 = time.thread_time()
                t0 = time.perf_counter()
                for _ in range(inner):
                    fn()
                t1 = time.perf_counter()
                c1 = time.thread_time()
                samples.append((t1 - t0) / inner)
                cpu_samples.append((c1 - c0) / inner)
        finally:
            if gc_was:
                gc.enable()
        n = len(samples)
        samples.sort()
        med = statistics.median(samples) * 1e6
        p10 = samples[len(samples) // 10] * 1e6
        p90 = samples[min(n - 1, (n * 9) // 10)] * 1e6
        cpu_med = statistics.median(cpu_samples) * 1e6
        info(
            f"{op}: median {med:.2f} us (p10 {p10:.2f}, p90 {p90:.2f}; {n} batches x {inner}); "
            f"thread CPU time median {cpu_med:.2f} us"
        )
        value = cpu_med if self.cpu_time else med
        row(op, f"{value:.2f}")
        return value


# 100 000 templates of dimension 128, 32 per ciphertext.
GALLERY_CTS = 3125
# The encrypted-probe gallery: 3 200 templates (benches/matching.rs).
HIDDEN_PROBE_CTS = 100


def make_context():
    parms = seal.EncryptionParameters(seal.SCHEME_TYPE.BFV)
    parms.set_poly_modulus_degree(N)
    parms.set_coeff_modulus(seal.CoeffModulus.BFVDefault(N, seal.SEC_LEVEL_TYPE.TC128))
    parms.set_plain_modulus(seal.Modulus(T))
    ctx = seal.SEALContext(parms, True, seal.SEC_LEVEL_TYPE.TC128)
    if not ctx.parameters_set():
        raise SystemExit(f"SEAL rejected the parameters: {ctx.parameters_error_message()}")
    q = ctx.first_context_data().qualifiers()
    if not (q.using_batching and q.using_ntt):
        raise SystemExit("SEAL context does not support batching/NTT")
    return ctx


def coeff_plaintext(coeffs):
    """Plaintext whose polynomial coefficients are `coeffs` (signed, reduced mod t)."""
    terms = []
    for i in range(len(coeffs) - 1, -1, -1):
        c = coeffs[i] % T
        if c:
            terms.append(f"{c:X}x^{i}" if i else f"{c:X}")
    return seal.Plaintext(" + ".join(terms) if terms else "0")


def plaintext_coeffs(pt):
    cc = pt.coeff_count()
    return [pt[i] if i < cc else 0 for i in range(N)]


def negacyclic_mul_mod_t(a, b):
    try:
        import numpy as np

        full = np.convolve(np.array(a, dtype=np.int64), np.array(b, dtype=np.int64))
        res = full[:N].copy()
        res[: N - 1] -= full[N:]
        return [int(x) % T for x in res]
    except ImportError:
        res = [0] * N
        for i, x in enumerate(a):
            if x:
                for j, y in enumerate(b):
                    k = i + j
                    if k < N:
                        res[k] += x * y
                    else:
                        res[k - N] -= x * y
        return [x % T for x in res]


def saved_bytes(obj, tmpdir, name):
    path = os.path.join(tmpdir, name)
    obj.save(path)
    with open(path, "rb") as f:
        data = f.read()
    hdr = seal.Serialization.SEALHeader()
    seal.Serialization.LoadHeader(path, hdr, False)
    if hdr.size != len(data):
        raise RuntimeError(f"{name}: SEAL header size {hdr.size} != file size {len(data)}")
    return data, hdr


def uncompressed_size(data, hdr):
    """Size SEAL writes with compr_mode none for the object saved as `data`."""
    if hdr.compr_mode == seal.COMPR_MODE_TYPE.NONE:
        return len(data)
    hs = hdr.header_size
    if hdr.compr_mode == seal.COMPR_MODE_TYPE.ZSTD:
        if zstandard is None:
            return None
        with zstandard.ZstdDecompressor().stream_reader(data[hs:]) as r:
            body = r.read()
    else:  # ZLIB
        import zlib

        body = zlib.decompress(data[hs:])
    return hs + len(body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short run (under ~20 s)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random test inputs")
    ap.add_argument(
        "--cpu-time",
        action="store_true",
        help="print the median thread CPU time (time.thread_time) instead of wall time "
        "(perf_counter); robust when other processes compete for the CPUs",
    )
    args = ap.parse_args()
    if args.quick:
        timer = Timer(budget_s=0.6, min_batches=11, max_batches=400, cpu_time=args.cpu_time)
    else:
        timer = Timer(budget_s=3.0, min_batches=31, max_batches=3000, cpu_time=args.cpu_time)
    rng = random.Random(args.seed)
    t_start = time.perf_counter()
    try:
        load1 = os.getloadavg()[0]
        ncpu = os.cpu_count() or 1
        if load1 > 0.75 * ncpu:
            note(
                f"load average {load1:.1f} on {ncpu} CPUs: wall-clock timings are contended"
                + ("" if args.cpu_time else " (consider --cpu-time)")
            )
    except OSError:
        pass

    ctx = make_context()
    parms_id = ctx.first_parms_id()
    cm = ctx.key_context_data().parms().coeff_modulus()
    info(
        f"tenseal {tenseal.__version__}; N={N}, t={T}, coeff modulus "
        f"{'+'.join(str(m.bit_count()) for m in cm)} bits (BFVDefault, TC128); "
        f"python {sys.version.split()[0]}"
    )

    # ----------------------------------------------------------------- keys
    keygen = seal.KeyGenerator(ctx)
    sk = keygen.secret_key()
    pk = seal.PublicKey()
    keygen.create_public_key(pk)
    rk = seal.RelinKeys()
    keygen.create_relin_keys(rk)
    gk = seal.GaloisKeys()
    # A list of non-negative ints binds to the galois-element overload (uint32
    # vector); the element of a one-step row rotation is 3.
    keygen.create_galois_keys([3], gk)
    if not gk.has_key(3):
        raise SystemExit("Galois key for one-step row rotation missing")

    encoder = seal.BatchEncoder(ctx)
    assert encoder.slot_count() == N
    enc_pk = seal.Encryptor(ctx, pk)
    enc_sk = seal.Encryptor(ctx, sk)
    dec = seal.Decryptor(ctx, sk)
    ev = seal.Evaluator(ctx)

    # Batch-encoded random inputs (slots uniform mod t).
    va = [rng.randrange(T) for _ in range(N)]
    vb = [rng.randrange(T) for _ in range(N)]
    pa, pb = seal.Plaintext(), seal.Plaintext()
    encoder.encode(va, pa)
    encoder.encode(vb, pb)
    ca, cb = seal.Ciphertext(ctx), seal.Ciphertext(ctx)
    enc_pk.encrypt(pa, ca)
    enc_pk.encrypt(pb, cb)

    def decode(ct):
        p = seal.Plaintext()
        dec.decrypt(ct, p)
        return list(encoder.decode_uint64(p))

    # Correctness checks of everything timed below (before timing).
    out = seal.Ciphertext(ctx)
    prod3 = seal.Ciphertext(ctx)
    ev.multiply(ca, cb, prod3)
    assert prod3.size() == 3
    want_mul = [(x * y) % T for x, y in zip(va, vb)]
    assert decode(prod3) == want_mul, "multiply"
    ev.relinearize(prod3, rk, out)
    assert out.size() == 2 and decode(out) == want_mul, "relinearize"
    ev.add(ca, cb, out)
    assert decode(out) == [(x + y) % T for x, y in zip(va, vb)], "add"
    ev.multiply_plain(ca, pb, out)
    assert decode(out) == want_mul, "multiply_plain"
    ev.rotate_rows(ca, 1, gk, out)
    half = N // 2
    want_rot = va[1:half] + va[:1] + va[half + 1 :] + va[half : half + 1]
    assert decode(out) == want_rot, "rotate_rows"
    ct_sym = seal.Ciphertext(ctx)
    enc_sk.encrypt_symmetric(pa, ct_sym)
    assert decode(ct_sym) == va, "encrypt_symmetric"
    # NTT-form operands for multiply_plain_ntt.
    ca_ntt = seal.Ciphertext(ctx)
    enc_pk.encrypt(pa, ca_ntt)
    ev.transform_to_ntt_inplace(ca_ntt)
    pb_ntt = seal.Plaintext(pb)
    ev.transform_to_ntt_inplace(pb_ntt, parms_id)
    assert ca_ntt.is_ntt_form() and pb_ntt.is_ntt_form()
    out_ntt = seal.Ciphertext(ctx)
    ev.multiply_plain(ca_ntt, pb_ntt, out_ntt)
    chk = seal.Ciphertext(ctx)
    ev.transform_from_ntt(out_ntt, chk)
    assert decode(chk) == want_mul, "multiply_plain_ntt"
    info("correctness checks passed (multiply, relinearize, add, multiply_plain[_ntt], rotate_rows, encrypt_symmetric)")

    # ---------------------------------------------------------------- timings
    timer.run("keygen_secret", lambda: seal.KeyGenerator(ctx))
    timer.run("keygen_public", lambda: keygen.create_public_key(pk))
    rk_tmp = seal.RelinKeys()
    timer.run("keygen_relin", lambda: keygen.create_relin_keys(rk_tmp))
    timer.run("encrypt_public", lambda: enc_pk.encrypt(pa, out))
    timer.run("encrypt_secret", lambda: enc_sk.encrypt_symmetric(pa, out))
    pt_out = seal.Plaintext()
    timer.run("decrypt", lambda: dec.decrypt(ca, pt_out))
    timer.run("multiply", lambda: ev.multiply(ca, cb, out))
    timer.run("relinearize", lambda: ev.relinearize(prod3, rk, out))

    def mul_relin():
        ev.multiply(ca, cb, out)
        ev.relinearize_inplace(out, rk)

    timer.run("multiply_relin", mul_relin)
    timer.run("multiply_plain", lambda: ev.multiply_plain(ca, pb, out))
    timer.run("multiply_plain_ntt", lambda: ev.multiply_plain(ca_ntt, pb_ntt, out_ntt))
    timer.run("rotate_rows", lambda: ev.rotate_rows(ca, 1, gk, out))

    # The packed 1:N computation: a plaintext probe (in NTT form) times every
    # ciphertext of a gallery of 100 000 templates at d = 128 (3 125
    # ciphertexts in NTT form, 32 templates each), one core.
    # tenseal binds no copy constructor: negate() writes an independent
    # ciphertext of the same shape (NTT form kept).
    gallery = []
    for _ in range(GALLERY_CTS):
        g = seal.Ciphertext(ctx)
        ev.negate(ca_ntt, g)
        gallery.append(g)
    assert gallery[0].is_ntt_form()
    scores = [seal.Ciphertext(ctx) for _ in range(GALLERY_CTS)]

    def identify_scores():
        for g, o in zip(gallery, scores):
            ev.multiply_plain(g, pb_ntt, o)

    timer.run("identify_scores_1core", identify_scores)

    # The key holder's whole job on the same gallery: each score ciphertext
    # back from NTT form and decrypted (SEAL decrypts BFV only in coefficient
    # form); the scores are read from the plaintexts. About half a second a
    # pass, so a timer with fewer batches.
    dec_pt = seal.Plaintext()

    def identify_full():
        for g, o in zip(gallery, scores):
            ev.multiply_plain(g, pb_ntt, o)
            ev.transform_from_ntt_inplace(o)
            dec.decrypt(o, dec_pt)

    slow = Timer(budget_s=timer.budget_s, min_batches=5, max_batches=31, cpu_time=args.cpu_time)
    slow.run("identify_full_1core", identify_full)
    del gallery, scores

    # A probe encrypted under the service key against 100 gallery
    # ciphertexts (3 200 templates): one multiply + relinearize per
    # ciphertext (SEAL multiplies BFV ciphertexts in coefficient form, as it
    # keeps them).
    hidden = []
    for _ in range(HIDDEN_PROBE_CTS):
        g = seal.Ciphertext(ctx)
        ev.negate(ca, g)
        hidden.append(g)
    hidden_out = [seal.Ciphertext(ctx) for _ in range(HIDDEN_PROBE_CTS)]

    def identify_encrypted_probe():
        for g, o in zip(hidden, hidden_out):
            ev.multiply(g, cb, o)
            ev.relinearize_inplace(o, rk)

    slow.run("identify_encrypted_probe_1core", identify_encrypted_probe)
    del hidden, hidden_out
    timer.run("add", lambda: ev.add(ca, cb, out))

    # ------------------------------------------------------------------ sizes
    with tempfile.TemporaryDirectory(prefix="bench_seal_") as tmp:
        data, hdr = saved_bytes(ca, tmp, "ct_public")
        info(
            f"SEAL {hdr.version_major}.{hdr.version_minor} (version in its serialization header); "
            f"default save compression: {hdr.compr_mode.name}"
        )
        raw = uncompressed_size(data, hdr)
        if raw is None:
            note("size_ct_public omitted: zstandard module missing, cannot unpack SEAL's zstd save")
        else:
            # What Ciphertext::save(compr_mode_type::none) writes for a fresh
            # public-key ciphertext (2 polys x 2 RNS primes x 4096 x u64 + metadata).
            row("size_ct_public", raw)
        if hdr.compr_mode == seal.COMPR_MODE_TYPE.ZSTD:
            row("size_ct_public_zstd", len(data))

        # encrypt_symmetric(plain) -> Serializable<Ciphertext>; its save writes
        # c0 plus the 64-byte PRNG seed in place of c1, compressed with SEAL's
        # default compr_mode (zstd in this build; checked via the header).
        ser_ct = enc_sk.encrypt_symmetric(pa)
        data, hdr = saved_bytes(ser_ct, tmp, "ct_secret_seeded")
        if hdr.compr_mode == seal.COMPR_MODE_TYPE.ZSTD:
            row("size_ct_secret_seeded_zstd", len(data))
        else:
            note(f"size_ct_secret_seeded_zstd omitted: default compression is {hdr.compr_mode.name}, not zstd")
        raw = uncompressed_size(data, hdr)
        if raw is not None:
            row("size_ct_secret_seeded", raw)
        # Check the seeded file really loads back to the right ciphertext.
        loaded = seal.Ciphertext()
        loaded.load(ctx, os.path.join(tmp, "ct_secret_seeded"))
        assert loaded.size() == 2 and decode(loaded) == va, "seeded ciphertext round trip"

        # Public key: ordinary PublicKey (unseeded), default (zstd) compression.
        # The seeded form would need Serializable<PublicKey>, which tenseal does not bind.
        data, hdr = saved_bytes(pk, tmp, "pk")
        if hdr.compr_mode == seal.COMPR_MODE_TYPE.ZSTD:
            row("size_public_key", len(data))
            note("size_public_key is the unseeded PublicKey, zstd: tenseal.sealapi does not bind Serializable<PublicKey>")
        else:
            note(f"size_public_key omitted: default compression is {hdr.compr_mode.name}, not zstd")

        # Relin keys: create_relin_keys() -> Serializable<RelinKeys> (seeded), zstd.
        data, hdr = saved_bytes(keygen.create_relin_keys(), tmp, "rk_seeded")
        if hdr.compr_mode == seal.COMPR_MODE_TYPE.ZSTD:
            row("size_relin_key", len(data))
        else:
            note(f"size_relin_key omitted: default compression is {hdr.compr_mode.name}, not zstd")

    # ------------------------------------------------------------------ noise
    # Coefficient-packed random inputs, coefficients uniform in [-175, 175].
    ma = [rng.randint(-NOISE_BOUND, NOISE_BOUND) for _ in range(N)]
    mb = [rng.randint(-NOISE_BOUND, NOISE_BOUND) for _ in range(N)]
    qa, qb = coeff_plaintext(ma), coeff_plaintext(mb)
    assert plaintext_coeffs(qa) == [x % T for x in ma]
    na, nb = seal.Ciphertext(ctx), seal.Ciphertext(ctx)
    enc_pk.encrypt(qa, na)
    enc_pk.encrypt(qb, nb)
    fresh = min(dec.invariant_noise_budget(na), dec.invariant_noise_budget(nb))
    nprod = seal.Ciphertext(ctx)
    ev.multiply(na, nb, nprod)
    after_mul = dec.invariant_noise_budget(nprod)
    nrel = seal.Ciphertext(ctx)
    ev.relinearize(nprod, rk, nrel)
    after_relin = dec.invariant_noise_budget(nrel)
    want = negacyclic_mul_mod_t(ma, mb)
    for ct, what in ((nprod, "multiply"), (nrel, "relinearize")):
        p = seal.Plaintext()
        dec.decrypt(ct, p)
        assert plaintext_coeffs(p) == want, f"coefficient-packed {what} decrypts wrong"
    row("noise_fresh", fresh)
    row("noise_multiply", after_mul)
    row("noise_relinearize", after_relin)

    info(f"total {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
