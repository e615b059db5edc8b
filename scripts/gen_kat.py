#!/usr/bin/env python3
"""Known-answer vectors for blindmatch's prime search, roots of unity and NTT,
and the worked examples of docs/FORMAT.md.

This generator is deliberately independent of the Rust code: it works from the
mathematical definitions with Python big integers and the standard library only.

  * primes: the `count` largest primes q < 2^bits with q = 1 (mod 2n), in
    descending order. Primality is decided by trial division by every prime up
    to sqrt(q) (no Miller-Rabin, unlike the Rust code).
  * roots: the smallest primitive 2n-th root of unity mod q. x is one exactly
    when x^n = -1 (mod q), since 2n is a power of two. All of them are the odd
    powers of any one of them; we take the minimum over all n of them.
  * ntt vectors: random a, b in [0, q)^n; the forward NTT of a by definition
    (output index i holds a(psi^(2*brv(i)+1)) mod q, brv = bit reversal over
    log2(n) bits, psi the root above); and the negacyclic product
    c = a*b mod (X^n + 1, q) by O(n^2) schoolbook multiplication.
  * the wire format's worked examples (scripts/format_examples.py): the
    parameter id, a seed expansion with ChaCha20 from its definition, the
    smallest object; into tests/data/kat_format.txt and into docs/FORMAT.md
    between its `format-examples` markers.

Usage:
  python3 scripts/gen_kat.py            # (re)write tests/data/kat_*.txt and FORMAT.md's examples
  python3 scripts/gen_kat.py --check    # regenerate in memory, exit 1 on any difference
  add --thorough to either to also confirm every root by a direct scan (slow)

The output is a pure function of the constants below (no clock, no hash seeds,
random numbers come from random.Random(int) via getrandbits only).
"""

from __future__ import annotations

import argparse
import random
import sys
from operator import mul
from pathlib import Path

import format_examples

SEED = 20240611

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
PREFIX = "kat_"
FORMAT_DOC = ROOT / "docs" / "FORMAT.md"

DEGREES = [1024, 2048, 4096, 8192, 16384]
# (bits, count) for every degree in DEGREES.
PRIME_CASES = [(30, 3), (29, 3), (27, 3), (20, 3)]
# A few longer runs of the search.
EXTRA_PRIME_CASES = [(30, 1024, 16), (30, 16384, 8), (24, 4096, 8)]
# Extra moduli whose roots are listed for every degree they support.
EXTRA_ROOT_MODULI = [786433, 65537, 40961, 12289]

VALUES_PER_LINE = 16


# ---------------------------------------------------------------------------
# Number theory from the definitions.

def small_primes(limit: int) -> list[int]:
    """Primes <= limit by the sieve of Eratosthenes."""
    sieve = bytearray([1]) * (limit + 1)
    sieve[0:2] = b"\x00\x00"
    for p in range(2, int(limit**0.5) + 1):
        if sieve[p]:
            sieve[p * p :: p] = bytearray(len(range(p * p, limit + 1, p)))
    return [p for p in range(limit + 1) if sieve[p]]


_TRIAL = small_primes(1 << 16)  # enough for every q < 2^32


def is_prime(q: int) -> bool:
    """Trial division; exact for q < 2^32."""
    assert q < 1 << 32
    if q < 2:
        return False
    for p in _TRIAL:
        if p * p > q:
            return True
        if q % p == 0:
            return q == p
    return True


def ntt_primes(bits: int, n: int, count: int) -> list[int]:
    """The `count` largest primes q < 2^bits with q = 1 mod 2n, descending."""
    m = 2 * n
    out = []
    q = ((2**bits - 2) // m) * m + 1  # largest value < 2^bits that is 1 mod m
    while len(out) < count and q > 1:
        if is_prime(q):
            out.append(q)
        q -= m
    if len(out) < count:
        raise ValueError(f"only {len(out)} primes below 2^{bits} are 1 mod {m}")
    return out


def smallest_primitive_root(n: int, q: int) -> int:
    """min{x in [1, q) : x^n = -1 mod q}, i.e. the smallest primitive 2n-th root."""
    m = 2 * n
    assert is_prime(q) and (q - 1) % m == 0
    # Some primitive 2n-th root: g^((q-1)/2n) for the first g that gives one.
    g = 2
    while True:
        r = pow(g, (q - 1) // m, q)
        if pow(r, n, q) == q - 1:
            break
        g += 1
    # All n primitive 2n-th roots are r^k for odd k.
    r2 = r * r % q
    roots = []
    x = r
    for _ in range(n):
        roots.append(x)
        x = x * r2 % q
    assert len(set(roots)) == n
    best = min(roots)
    assert pow(best, n, q) == q - 1
    return best


def brv(i: int, bits: int) -> int:
    return int(format(i, f"0{bits}b")[::-1], 2) if bits else 0


def ntt_by_definition(a: list[int], psi: int, q: int) -> list[int]:
    """out[i] = sum_j a[j] * psi^((2*brv(i)+1)*j) mod q."""
    n = len(a)
    log_n = n.bit_length() - 1
    assert 1 << log_n == n
    m = 2 * n
    powers = [pow(psi, k, q) for k in range(m)]  # psi has order 2n
    out = []
    for i in range(n):
        e = 2 * brv(i, log_n) + 1
        row = [powers[(e * j) % m] for j in range(n)]
        out.append(sum(map(mul, a, row)) % q)
    return out


def negacyclic_schoolbook(a: list[int], b: list[int], q: int) -> list[int]:
    """c[k] = sum_{i+j=k} a_i b_j - sum_{i+j=k+n} a_i b_j mod q (X^n = -1)."""
    n = len(a)
    rb = b[::-1]  # rb[t] = b[n-1-t]
    out = []
    for k in range(n):
        # i in 0..=k, j = k-i: rb index n-1-k+i.
        pos = sum(map(mul, a[: k + 1], rb[n - 1 - k :]))
        # i in k+1..n, j = k+n-i: rb index i-k-1.
        neg = sum(map(mul, a[k + 1 :], rb[: n - k - 1]))
        out.append((pos - neg) % q)
    return out


def naive_negacyclic(a: list[int], b: list[int], q: int) -> list[int]:
    n = len(a)
    c = [0] * n
    for i in range(n):
        for j in range(n):
            if i + j < n:
                c[i + j] += a[i] * b[j]
            else:
                c[i + j - n] -= a[i] * b[j]
    return [x % q for x in c]


def self_test() -> None:
    """Cheap checks of the generator's own building blocks."""
    naive = [x for x in range(2000) if x > 1 and all(x % d for d in range(2, x))]
    assert [x for x in range(2000) if is_prime(x)] == naive
    assert is_prime(65537) and is_prime(2**31 - 1) and not is_prime(3215031751)
    assert brv(1, 3) == 4 and brv(6, 3) == 3 and brv(1, 10) == 512
    rng = random.Random(SEED)
    for n, q in [(4, 17), (8, 17), (8, 97), (16, 97)]:
        a = [below(rng, q) for _ in range(n)]
        b = [below(rng, q) for _ in range(n)]
        assert negacyclic_schoolbook(a, b, q) == naive_negacyclic(a, b, q)
        psi = smallest_primitive_root(n, q)
        assert psi == min(x for x in range(1, q) if pow(x, n, q) == q - 1)
        fa = ntt_by_definition(a, psi, q)
        fb = ntt_by_definition(b, psi, q)
        fc = ntt_by_definition(negacyclic_schoolbook(a, b, q), psi, q)
        assert fc == [x * y % q for x, y in zip(fa, fb)]
    # Prime search against brute force: all primes < 2^10 that are 1 mod 16.
    want = sorted((x for x in naive if x < 1024 and x % 16 == 1), reverse=True)
    assert ntt_primes(10, 8, len(want)) == want


def below(rng: random.Random, q: int) -> int:
    """Uniform in [0, q) by rejection on getrandbits (stable across Pythons)."""
    k = q.bit_length()
    while True:
        x = rng.getrandbits(k)
        if x < q:
            return x


# ---------------------------------------------------------------------------
# Output files.

def fmt_values(tag: str, values: list[int]) -> list[str]:
    return [
        " ".join([tag] + [str(v) for v in values[i : i + VALUES_PER_LINE]])
        for i in range(0, len(values), VALUES_PER_LINE)
    ]


def gen_primes() -> tuple[str, list[tuple[int, int]]]:
    lines = [
        "# Known answers for blindmatch::arith::ntt_primes. Generated by scripts/gen_kat.py; do not edit.",
        "# Format: one case per line,",
        "#   primes <bits> <n> <p1> <p2> ... <pk>",
        "# meaning ntt_primes(bits, n, k) == [p1, ..., pk]: the k largest primes",
        "# q < 2^bits with q = 1 (mod 2n), in descending order.",
    ]
    cases = [(bits, n, count) for bits, count in PRIME_CASES for n in DEGREES]
    cases += EXTRA_PRIME_CASES
    pairs = []
    for bits, n, count in cases:
        ps = ntt_primes(bits, n, count)
        lines.append(" ".join(str(v) for v in ["primes", bits, n, *ps]))
        pairs += [(n, p) for p in ps]
    return "\n".join(lines) + "\n", pairs


def gen_roots(prime_pairs: list[tuple[int, int]]) -> str:
    lines = [
        "# Known answers for blindmatch::arith::primitive_root. Generated by scripts/gen_kat.py; do not edit.",
        "# Format: one case per line,",
        "#   root <n> <q> <psi>",
        "# meaning primitive_root(n, q) == psi: the smallest x in [1, q) with x^n = -1 (mod q),",
        "# i.e. the smallest primitive 2n-th root of unity mod q.",
    ]
    # Every prime from the prime search, at its own degree and at every smaller
    # supported degree (q = 1 mod 2n implies q = 1 mod 2n' for n' | n).
    qs: dict[int, int] = {}
    for n, q in prime_pairs:
        qs[q] = max(qs.get(q, 0), n)
    for q in EXTRA_ROOT_MODULI:
        qs[q] = max(n for n in DEGREES if (q - 1) % (2 * n) == 0)
    seen = set()
    for q in sorted(qs, reverse=True):
        for n in DEGREES:
            if n <= qs[q] and (n, q) not in seen:
                seen.add((n, q))
                lines.append(f"root {n} {q} {smallest_primitive_root(n, q)}")
    return "\n".join(lines) + "\n"


def vector_cases() -> list[tuple[int, int]]:
    return [
        (1024, ntt_primes(30, 1024, 1)[0]),
        (2048, ntt_primes(29, 2048, 1)[0]),
        (4096, ntt_primes(27, 4096, 1)[0]),
        (1024, 65537),
    ]


def gen_vector(n: int, q: int) -> str:
    psi = smallest_primitive_root(n, q)
    rng = random.Random(SEED ^ (n << 32) ^ q)
    a = [below(rng, q) for _ in range(n)]
    b = [below(rng, q) for _ in range(n)]
    fa = ntt_by_definition(a, psi, q)
    c = negacyclic_schoolbook(a, b, q)
    # Spot check the convolution theorem at a few evaluation points.
    log_n = n.bit_length() - 1
    for i in [0, 1, n // 2, n - 1]:
        x = pow(psi, 2 * brv(i, log_n) + 1, q)
        ev = lambda p: sum(v * pow(x, j, q) for j, v in enumerate(p)) % q  # noqa: E731
        assert ev(a) == fa[i] and ev(c) == ev(a) * ev(b) % q
    lines = [
        "# NTT known answers. Generated by scripts/gen_kat.py; do not edit.",
        "# Format:",
        "#   ntt <n> <q> <psi>      header, first non-comment line; psi = smallest primitive 2n-th root",
        "#   a <v> <v> ...          input a, natural order (values concatenate over lines)",
        "#   b <v> <v> ...          input b, natural order",
        "#   fwd <v> <v> ...        forward NTT of a: index i holds a(psi^(2*brv(i)+1)) mod q",
        "#   c <v> <v> ...          a*b mod (X^n + 1, q), natural order",
        f"# Inputs: random.Random({SEED} ^ (n << 32) ^ q), uniform in [0, q) by rejection.",
        f"ntt {n} {q} {psi}",
    ]
    lines += fmt_values("a", a)
    lines += fmt_values("b", b)
    lines += fmt_values("fwd", fa)
    lines += fmt_values("c", c)
    return "\n".join(lines) + "\n"


def generate() -> dict[str, str]:
    self_test()
    files = {}
    primes_text, pairs = gen_primes()
    files[f"{PREFIX}primes.txt"] = primes_text
    files[f"{PREFIX}roots.txt"] = gen_roots(pairs)
    for n, q in vector_cases():
        files[f"{PREFIX}ntt_n{n}_q{q}.txt"] = gen_vector(n, q)
    files[f"{PREFIX}format.txt"] = format_examples.kat_text()
    return files


def thorough_roots(text: str) -> None:
    """Second, slower method for the roots: the first x with x^n = -1."""
    count = 0
    for line in text.splitlines():
        if line.startswith("root "):
            n, q, psi = map(int, line.split()[1:])
            first = next(x for x in range(1, q) if pow(x, n, q) == q - 1)
            assert first == psi, (n, q, psi, first)
            count += 1
    print(f"thorough: {count} roots confirmed by direct scan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with tests/data instead of writing")
    ap.add_argument(
        "--thorough",
        action="store_true",
        help="also confirm every root by a direct scan of 1, 2, ..., psi (slow, ~15 s)",
    )
    args = ap.parse_args()
    files = generate()
    doc = FORMAT_DOC.read_text()
    new_doc = format_examples.splice(doc, format_examples.doc_block())
    if args.thorough:
        thorough_roots(files[f"{PREFIX}roots.txt"])
    if args.check:
        bad = []
        for name, text in files.items():
            path = DATA / name
            if not path.exists():
                bad.append(f"missing: {path}")
            elif path.read_text() != text:
                bad.append(f"differs: {path}")
        for path in sorted(DATA.glob(f"{PREFIX}*.txt")):
            if path.name not in files:
                bad.append(f"not generated by this script (stale?): {path}")
        if new_doc != doc:
            bad.append(f"worked examples differ: {FORMAT_DOC}")
        for line in bad:
            print(line, file=sys.stderr)
        if bad:
            print("KAT files are out of date: run python3 scripts/gen_kat.py", file=sys.stderr)
            return 1
        print(f"ok: {len(files)} KAT files and the examples of {FORMAT_DOC.name} match")
        return 0
    DATA.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (DATA / name).write_text(text)
        print(f"wrote {DATA / name} ({len(text)} bytes)")
    if new_doc != doc:
        FORMAT_DOC.write_text(new_doc)
        print(f"updated the worked examples in {FORMAT_DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
