//! BFV operation benchmarks at the auth4096 preset (n = 4096, t = 65537).
//! Ids: `bfv/{op}`. `scripts/bench.sh` puts them next to Microsoft SEAL.

use blindmatch::bfv::{
    BatchEncoder, Evaluator, GaloisKeys, Params, Prng, PublicKey, RelinKey, SecretKey,
};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn bfv(c: &mut Criterion) {
    let params = Params::auth4096();
    let n = params.degree();
    let t = params.plaintext_modulus() as i64;
    let mut rng = Prng::from_seed([1; 32]);
    let sk = SecretKey::generate_with(&params, &mut rng);
    let pk = PublicKey::new_with(&sk, &mut rng);
    let ev = Evaluator::new(&params);
    let enc = BatchEncoder::new(&params).unwrap();
    let values: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % t - t / 2).collect();
    let pt = enc.encode(&values).unwrap();
    let ct_a = sk.encrypt_with(&pt, &mut rng).unwrap();
    let ct_b = pk.encrypt_with(&pt, &mut rng).unwrap();
    let prepared = ev.prepare_plain(&pt).unwrap();
    let rk = RelinKey::new_with(&sk, &mut rng);
    let gk = GaloisKeys::new_with(&sk, &[1], &mut rng).unwrap();
    let product = ev.multiply(&ct_a, &ct_b).unwrap();
    // Warm the lazily built multiplication tables outside the timings.
    let _ = ev.multiply(&ct_a, &ct_b).unwrap();

    let mut g = c.benchmark_group("bfv");
    g.bench_function("keygen_secret", |b| {
        b.iter(|| SecretKey::generate_with(&params, &mut rng))
    });
    g.bench_function("keygen_public", |b| {
        b.iter(|| PublicKey::new_with(&sk, &mut rng))
    });
    g.bench_function("encrypt_secret", |b| {
        b.iter(|| sk.encrypt_with(black_box(&pt), &mut rng).unwrap())
    });
    g.bench_function("encrypt_public", |b| {
        b.iter(|| pk.encrypt_with(black_box(&pt), &mut rng).unwrap())
    });
    g.bench_function("decrypt", |b| {
        b.iter(|| sk.decrypt(black_box(&ct_a)).unwrap())
    });
    g.bench_function("multiply", |b| {
        b.iter(|| ev.multiply(black_box(&ct_a), black_box(&ct_b)).unwrap())
    });
    g.bench_function("keygen_relin", |b| {
        b.iter(|| RelinKey::new_with(&sk, &mut rng))
    });
    g.bench_function("relinearize", |b| {
        b.iter(|| ev.relinearize(black_box(&product), &rk).unwrap())
    });
    g.bench_function("multiply_relin", |b| {
        b.iter(|| {
            ev.multiply_relin(black_box(&ct_a), black_box(&ct_b), &rk)
                .unwrap()
        })
    });
    g.bench_function("rotate_rows", |b| {
        b.iter(|| ev.rotate_rows(black_box(&ct_a), 1, &gk).unwrap())
    });
    // As a user calls it: the plaintext is lifted and transformed each time.
    g.bench_function("multiply_plain", |b| {
        b.iter(|| ev.multiply_plain(black_box(&ct_a), black_box(&pt)).unwrap())
    });
    // With the plaintext already in NTT form (reused across ciphertexts).
    g.bench_function("multiply_plain_ntt", |b| {
        b.iter(|| {
            let mut x = ct_a.clone();
            ev.multiply_plain_assign(&mut x, black_box(&prepared))
                .unwrap();
            x
        })
    });
    g.bench_function("add", |b| {
        b.iter(|| ev.add(black_box(&ct_a), black_box(&ct_b)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bfv);
criterion_main!(benches);
