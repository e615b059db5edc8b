//! Prints the serialized sizes of blindmatch's objects at auth4096 as TSV
//! (`ours<TAB>name<TAB>bytes`), for scripts/bench.sh to set next to SEAL's.

use blindmatch::bfv::{BatchEncoder, Params, Prng, PublicKey, RelinKey, SecretKey};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let params = Params::auth4096();
    let mut rng = Prng::from_seed([9; 32]);
    let sk = SecretKey::generate_with(&params, &mut rng);
    let pk = PublicKey::new_with(&sk, &mut rng);
    let rk = RelinKey::new_with(&sk, &mut rng);
    let pt = BatchEncoder::new(&params)?.encode(&[1, 2, 3])?;
    let rows = [
        (
            "size_ct_secret_seeded",
            sk.encrypt_with(&pt, &mut rng)?.to_bytes().len(),
        ),
        (
            "size_ct_public",
            pk.encrypt_with(&pt, &mut rng)?.to_bytes().len(),
        ),
        ("size_public_key", pk.to_bytes().len()),
        ("size_relin_key", rk.to_bytes().len()),
    ];
    for (name, bytes) in rows {
        println!("ours\t{name}\t{bytes}");
    }
    Ok(())
}
