use blindmatch::bfv::*;
use blindmatch::matching::*;
#[test]
fn enc_probe_noise() {
    let params = Params::auth4096();
    let mut rng = Prng::from_seed([3; 32]);
    let sk = SecretKey::generate_with(&params, &mut rng);
    let pk = PublicKey::new_with(&sk, &mut rng);
    let rk = RelinKey::new_with(&sk, &mut rng);
    let q = Quantizer::new(&params, 128).unwrap();
    let ev = Evaluator::new(&params);
    // worst case: every template equals the probe, all coordinates equal magnitude
    let e: Vec<f32> = (0..128)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let embs: Vec<&[f32]> = (0..32).map(|_| e.as_slice()).collect();
    let g = client::encrypt_templates_public(&pk, &q, &embs, &mut rng).unwrap();
    println!("gallery fresh budget {}", sk.noise_budget(&g).unwrap());
    for limbs in [3usize, 2] {
        let g2 = ev.mod_switch_to(&g, limbs).unwrap();
        let pt = pack::pack_probe(&params, &q.quantize(&e).unwrap()).unwrap();
        let p = pk.encrypt_with(&pt, &mut rng).unwrap();
        let p2 = ev.mod_switch_to(&p, limbs).unwrap();
        println!(
            "limbs {limbs}: gallery {} probe {}",
            sk.noise_budget(&g2).unwrap(),
            sk.noise_budget(&p2).unwrap()
        );
        let r = ev.multiply_relin(&g2, &p2, &rk).unwrap();
        println!(
            "limbs {limbs}: product budget {}",
            sk.noise_budget(&r).unwrap()
        );
        let s = client::decrypt_scores(&sk, &q, &r, 32).unwrap();
        println!("scores {:?}", &s.scores[..4]);
    }
}
