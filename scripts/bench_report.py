#!/usr/bin/env python3
"""Turns criterion's estimates and the wasm bench rows into bench/results.tsv
and bench/REPORT.md. Called by scripts/bench.sh; reads WASM_ROWS and COMMAND
from the environment (and SEAL_ROWS, SIZE_ROWS, SERVER_ROWS, HTTP_ROWS, HOSTILE_ROWS, SCALE_ROWS,
NODESEAL_ROWS, TRANSFORM_ROWS, FACE_ROWS)."""
import datetime
import json
import os
import pathlib
import platform
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRIT = ROOT / "target" / "criterion"


def median_us(group, func, n):
    f = CRIT / group / func / str(n) / "new" / "estimates.json"
    if n == "":
        f = CRIT / group / func / "new" / "estimates.json"
    if not f.exists():
        return None
    return json.loads(f.read_text())["median"]["point_estimate"] / 1000.0


def backends(group, n):
    d = CRIT / group
    if not d.exists():
        return []
    return sorted(p.name for p in d.iterdir() if (p / str(n)).is_dir() and p.name != "report")


def cmd(*args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()
    except Exception:
        return "unknown"


rows = []  # (area, op, ours_us, peer, peer_us)

# Our matching benchmark -> the SEAL figure it is compared with.
MATCHING_PEERS = [
    ("verify", "multiply_relin"),
    ("verify_compact", "multiply_relin"),
    ("verify_unprepared", "multiply_relin"),
    ("verify_no_relin", "multiply"),
    ("identify_scores_1core", "identify_scores_1core"),
    # The key holder's whole identification: scores decrypted (and, on our
    # side, ranked) against SEAL's multiply_plain + from-NTT + decrypt.
    ("identify_full_1core", "identify_full_1core"),
    # A probe encrypted under the service key, 3 200 templates: relinearized
    # products against SEAL's multiply + relinearize per ciphertext.
    ("identify_encrypted_probe_1core", "identify_encrypted_probe_1core"),
    # The key holder's side: quantize + pack + encrypt a probe, and reading
    # the scores of a reply (ciphertext or compact form), next to SEAL's
    # encrypt and decrypt of one ciphertext.
    ("client_encrypt_probe", "encrypt_secret"),
    ("client_decrypt_scores", "decrypt"),
    ("client_decrypt_score_reply", "decrypt"),
]
butterflies = []
for n in (2048, 4096, 8192):
    log_n = n.bit_length() - 1
    for group in ("forward", "inverse", "mul_acc"):
        peer = median_us(group, "tfhe-ntt", n)
        for b in backends(group, n):
            if b == "tfhe-ntt":
                continue
            ours = median_us(group, b, n)
            area = "ntt" if group != "mul_acc" else "pointwise"
            rows.append((area, f"{group}/{n}/{b}", ours, "tfhe-ntt", peer))
            if group != "mul_acc":
                butterflies.append((group, n, b, ours * 1000.0 / (n // 2 * log_n)))
    scalar = median_us("mul", "scalar", n)
    for b in backends("mul", n):
        if b != "scalar":
            rows.append(("pointwise", f"mul/{n}/{b}", median_us("mul", b, n), "scalar", scalar))
scalar = median_us("lincomb5", "scalar", 4096)
for b in backends("lincomb5", 4096):
    if b != "scalar" and scalar is not None:
        rows.append(("rns", f"lincomb5/4096/{b}", median_us("lincomb5", b, 4096), "scalar", scalar))
scalar = median_us("dot2_blocks", "scalar", 4096)
for b in backends("dot2_blocks", 4096):
    if b != "scalar" and scalar is not None:
        rows.append(("pointwise", f"dot2_blocks/4096/{b}", median_us("dot2_blocks", b, 4096), "scalar", scalar))
# Two ciphertexts against one read of the probe, per ciphertext, next to
# the same backend's one-ciphertext call.
for b in backends("dot2_blocks_pair", 4096):
    pair, one = median_us("dot2_blocks_pair", b, 4096), median_us("dot2_blocks", b, 4096)
    if pair is not None and one is not None:
        rows.append(("pointwise", f"dot2_blocks_pair/4096/{b}", pair / 2, f"dot2_blocks/{b}", one))

# BFV against Microsoft SEAL: criterion's bfv/{op} next to SEAL's figure.
for line in os.environ.get("SEAL_ROWS", "").splitlines():
    parts = line.split("\t")
    if len(parts) != 3 or parts[0] != "seal" or parts[1].startswith(("size_", "noise_")):
        continue
    ours = median_us("bfv", parts[1], "")
    if ours is not None:
        rows.append(("bfv", parts[1], ours, "seal", float(parts[2])))
    # Matching rows: our circuit next to SEAL's closest computation.
    for ours_op, seal_op in MATCHING_PEERS:
        if parts[1] == seal_op:
            ours = median_us("matching", ours_op, "")
            if ours is not None:
                rows.append(("matching", ours_op, ours, f"seal:{seal_op}", float(parts[2])))

# Login mode: the matcher's part, the decider's and both, next to SEAL's
# multiply + relinearize (the target: the total at least 5x faster).
LOGIN_OPS = ("matcher", "decider", "total",
             "hardened_matcher", "hardened_decider", "hardened_total")
seal_mul_relin = None
for line in os.environ.get("SEAL_ROWS", "").splitlines():
    parts = line.split("\t")
    if len(parts) == 3 and parts[1] == "multiply_relin":
        seal_mul_relin = float(parts[2])
for op in LOGIN_OPS:
    ours = median_us("login", op, "")
    if ours is not None and seal_mul_relin is not None:
        rows.append(("login", op, ours, "seal:multiply_relin", seal_mul_relin))
# 1:N in login mode, 32 gallery ciphertexts: next to 32 of SEAL's
# multiply + relinearize (the matcher's part is one per ciphertext).
IDENTIFY_CTS = 32
for op in ("identify_1k_matcher", "identify_1k_decider"):
    ours = median_us("login", op, "")
    if ours is not None and seal_mul_relin is not None:
        rows.append(("login", op, ours, "seal:multiply_relin_x32", IDENTIFY_CTS * seal_mul_relin))
LOGIN_BATCH = 64  # benches/login.rs: logins per total_allcores_x64 iteration
login_allcores = median_us("login", "total_allcores_x64", "")
if login_allcores is not None and seal_mul_relin is not None:
    # Per verdict on every core, next to SEAL's one-core multiply + relinearize.
    rows.append(("login", "total_allcores_per_verdict", login_allcores / LOGIN_BATCH,
                 "seal:multiply_relin", seal_mul_relin))

for line in os.environ.get("WASM_ROWS", "").splitlines():
    area, op, ours, peer_us, _ = line.split("\t")
    peer = "wasm-baseline-build" if "baseline" in op else "wasm-scalar-kernels"
    rows.append((area, op, float(ours), peer, float(peer_us)))

# The npm package against node-seal (Microsoft SEAL in wasm), and our two
# wasm builds against each other, in Node 22 and in headless Chromium; and
# one transform's time on each engine (for the floors below).
node_seal = {}  # (engine, op) -> (ours_us, node_seal_us)
transform_us = {}  # (engine, "ntt_forward" | "ntt_inverse") -> us
for line in os.environ.get("NODESEAL_ROWS", "").splitlines():
    parts = line.split("\t")
    if len(parts) != 4:
        continue
    kind, op, ours, theirs = parts
    where = "chromium" if kind.startswith("chromium") else "node"
    try:
        ours = float(ours)
        if kind.endswith("transform-time"):
            transform_us[(where, op)] = ours
            continue
        theirs = float(theirs)
    except ValueError:
        continue
    if kind.endswith("node-seal"):
        node_seal[(where, op)] = (ours, theirs)
        rows.append((f"wasm-{where}", op, ours, "node-seal", theirs))
    elif kind.endswith("wasm-builds"):
        rows.append((f"wasm-{where}", op, ours, "our-baseline-build", theirs))

# The 1:N passes against the memory floor of the same bytes on one core
# (ratio near 1: the pass runs at the speed of the memory, not of its
# arithmetic). Each floor is the faster of two ways to move the bytes,
# timed in the same run: a plain loop, and the same asking for each line
# 8 KiB ahead (where the hardware's own prefetching stops at page
# boundaries, the plain loop is no floor: the pass, which prefetches,
# would beat it).
memory_floors = []  # (ours_op, what, ours_us, floor_us, floor_op)
for ours_op, floor_ops, what in (
        ("identify_scores_1core", ("gallery_copy_1core", "gallery_copy_prefetched_1core"),
         "copying the gallery's bytes once"),
        ("identify_full_1core", ("gallery_read_1core", "gallery_read_prefetched_1core"),
         "reading the gallery's bytes once"),
        ("identify_full_1core", ("gallery_read_stored_1core", "gallery_read_stored_prefetched_1core"),
         "reading the gallery's own stored ciphertexts once")):
    ours = median_us("matching", ours_op, "")
    timed = [(us, op) for op in floor_ops if (us := median_us("matching", op, "")) is not None]
    if ours is not None and timed:
        floor, floor_op = min(timed)
        memory_floors.append((ours_op, what, ours, floor, floor_op))
        rows.append(("matching", ours_op, ours, f"memory:{floor_op}", floor))

# Floors: an operation can be no faster than its transforms (counted by
# examples/transforms.rs, pinned by a unit test in src/transforms.rs) on the
# engine that runs it (one transform timed in the same process as the
# node-seal comparison). The budget is node-seal's time over the issue's
# target ratio.
counts = {}
for line in os.environ.get("TRANSFORM_ROWS", "").splitlines():
    parts = line.split("\t")
    if len(parts) == 4 and parts[0] == "transforms":
        counts[parts[1]] = (int(parts[2]), int(parts[3]))
TARGETS = [("node", op, 20) for op in ("keygen", "encrypt_secret", "encrypt_public", "decrypt")]
TARGETS += [("node", "multiply_relin", 5)]
TARGETS += [("chromium", op, 10) for op in ("keygen", "encrypt_secret", "encrypt_public", "decrypt", "multiply_relin")]
floors = []  # (where, op, target, seal_us, budget_us, fwd, inv, floor_us, ours_us)
for where, op, target in TARGETS:
    fwd_us, inv_us = transform_us.get((where, "ntt_forward")), transform_us.get((where, "ntt_inverse"))
    if op not in counts or (where, op) not in node_seal or fwd_us is None or inv_us is None:
        continue
    fwd, inv = counts[op]
    floor = fwd * fwd_us + inv * inv_us
    ours_us, seal_us = node_seal[(where, op)]
    budget = seal_us / target
    floors.append((where, op, target, seal_us, budget, fwd, inv, floor, ours_us))
    rows.append(("floor", f"wasm-{where}/{op}", floor, f"node-seal/{target}", budget))

out = ROOT / "bench"
out.mkdir(exist_ok=True)
tsv = ["area\top\tours_us\tpeer\tpeer_us\tratio"]
for area, op, ours, peer, peer_us in rows:
    if ours is None or peer_us is None:
        continue
    tsv.append(f"{area}\t{op}\t{ours:.3f}\t{peer}\t{peer_us:.3f}\t{peer_us / ours:.2f}")

def cpu_flag(flag):
    try:
        return any(flag in line.split() for line in open("/proc/cpuinfo") if line.startswith("flags"))
    except OSError:
        return False


def avx512_cpu():
    return cpu_flag("avx512f")


def avx2_cpu():
    return cpu_flag("avx2")


cpu = "unknown"
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
except OSError:
    pass

# The kernel set the server bench ran and its calibration timings.
server_rows = os.environ.get("SERVER_ROWS", "").strip().splitlines()
kernel_set = next((l[len("kernels "):] for l in server_rows if l.startswith("kernels ")), "")
calibration = [l.split("\t")[1:] for l in server_rows if l.startswith("calibration\t")]
preferred = {l.split("\t")[1]: l.split("\t")[2:] for l in server_rows if l.startswith("preferred\t")}

md = [
    "# blindmatch benchmark report",
    "",
    f"Produced by `{os.environ.get('COMMAND', 'scripts/bench.sh')}` on "
    f"{datetime.date.today().isoformat()}.",
    "",
    f"Machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}; "
    f"{cmd('rustc', '--version')}; node {cmd('node', '--version')}.",
    "",
    "Native kernels: "
    + (f"`{os.environ['BLINDMATCH_BACKEND']}` (chosen with BLINDMATCH_BACKEND)."
       if os.environ.get("BLINDMATCH_BACKEND")
       else "per family, the measured-faster backend of the one-time calibration"
            + (f" (in the server bench: `{kernel_set}`; each bench process calibrates for itself)."
               if kernel_set else ".")),
    "",
    "Times are criterion medians (native) or medians of batched runs inside wasm (Node).",
    "`ratio` = peer time / our time: above 1 means blindmatch is faster. The peer runs in",
    "the same process and the same run, on the same prime (the largest 30-bit NTT prime",
    "for each n). tfhe-ntt's `inv` leaves out the final scaling by n^-1, which ours includes.",
    "",
    "| area | op | ours (µs) | peer | peer (µs) | ratio |",
    "|---|---|---:|---|---:|---:|",
]
for line in tsv[1:]:
    area, op, ours, peer, peer_us, ratio = line.split("\t")
    md.append(f"| {area} | {op} | {ours} | {peer} | {peer_us} | {ratio} |")
seal = {}
for line in os.environ.get("SEAL_ROWS", "").splitlines():
    parts = line.split("\t")
    if len(parts) == 3:
        seal[parts[1]] = parts[2]
ours_sizes = {}
for line in os.environ.get("SIZE_ROWS", "").splitlines():
    parts = line.split("\t")
    if len(parts) == 3:
        ours_sizes[parts[1]] = parts[2]

login_us = {op: median_us("login", op, "") for op in LOGIN_OPS}
if all(login_us.values()):
    md += ["", "## Login mode: one verification through matcher and decider (benches/login.rs)", "",
           "The matcher's part (multiply, relinearize, mask, flood for the decider, re-randomize, the compact",
           "reply's bytes) and the decider's (parse, derive the user's key, decrypt the score positions, the",
           "policy, an Ed25519-signed JWS), on one core, next to SEAL's multiply + relinearize alone.",
           "The first three rows are the score part alone (plain verify); the hardened rows are a login as it",
           "runs, with the probe's well-formedness checks (docs/PROTOCOL.md, \"Well-formed embeddings\"):",
           "target, hardened total faster than SEAL's multiply + relinearize.", "",
           "| part | ours (µs) | SEAL multiply + relinearize (µs) | SEAL / ours | target |",
           "|---|---:|---:|---:|---|"]
    for op in LOGIN_OPS:
        peer = f"{seal_mul_relin:.1f}" if seal_mul_relin else "n/a"
        ratio = f"{seal_mul_relin / login_us[op]:.2f}" if seal_mul_relin else "n/a"
        md.append(f"| {op} | {login_us[op]:.1f} | {peer} | {ratio} | {'5x' if op == 'total' else '1x' if op == 'hardened_total' else ''} |")
    if login_allcores:
        md += ["", f"Verdicts per second on all {os.cpu_count()} cores (64 logins spread with rayon): "
               f"{LOGIN_BATCH / (login_allcores / 1e6):,.0f}; on one core: {1e6 / login_us['hardened_total']:,.0f}."]
    im = median_us("login", "identify_1k_matcher", "")
    idc = median_us("login", "identify_1k_decider", "")
    if im and idc:
        md += ["", "1:N in login mode, a gallery of 1,024 templates (32 ciphertexts) on one core: the matcher's "
               f"part {im / 1000:.2f} ms ({im / 1024:.1f} µs per template), the decider's {idc / 1000:.2f} ms "
               f"({idc / 1024:.2f} µs per template)"
               + (f"; 32 of SEAL's multiply + relinearize alone take {IDENTIFY_CTS * seal_mul_relin / 1000:.1f} ms "
                  f"({IDENTIFY_CTS * seal_mul_relin / (im + idc):.1f}x)." if seal_mul_relin else ".")]
    am = median_us("login", "append_32_matcher", "")
    ad = median_us("login", "append_32_decider", "")
    if am and ad:
        md += ["", "A login-mode gallery append of 32 templates, its well-formedness checks on one core: the "
               f"matcher's {am / 1000:.2f} ms, the decider's {ad / 1000:.2f} ms "
               f"({(am + ad) / 32 / 1000:.2f} ms per template)."]

login_e2e = os.environ.get("LOGIN_E2E_ROWS", "").strip()
if login_e2e:
    md += ["", "## A login in headless Chromium on loopback (tests/js/login.test.mjs, release server)", "",
           "The page's own timings of one genuine login: the relying party's challenge, the user's public key,",
           "the probe encrypted in the Web Worker, matcher and decider, the relying party's jose check.", "",
           "| step | ms |", "|---|---:|"]
    for line in login_e2e.splitlines():
        step, _, ms = line.removesuffix(" ms").rpartition(" ")
        md.append(f"| {step} | {ms} |")

FACE_OPS = {
    "load_code_page_thread": "load: face-api and the tfjs wasm backend (page thread)",
    "load_weights_page_thread": "load: detector, landmark and recognition weights (page thread)",
    "load_worker_total": "load in the Worker, all of it",
    "frame_page_thread": "one 640x480 frame: detect, landmarks, descriptor (page thread)",
    "frame_worker": "the same in the Worker",
    "frame_worker_round_trip": "the same in the Worker, with the frame's transfer and the answer",
}
face_rows = [line.split("\t") for line in os.environ.get("FACE_ROWS", "").splitlines()]
face_rows = [r for r in face_rows if len(r) == 4 and r[0] == "face-model"]
if face_rows:
    md += ["", "## The demo's face model in headless Chromium (bench/face_model.mjs, release server)", "",
           "face-api 1.7.15 (SSD MobileNet v1, 68 landmarks, 128-number descriptor) on the tfjs wasm backend,",
           "frames made from face-api's sample photos; a login reads one frame, a registration one per sample.", "",
           "| step | median ms | min ms |", "|---|---:|---:|"]
    for _, op, med, mn in face_rows:
        md.append(f"| {FACE_OPS.get(op, op)} | {med} | {mn} |")

md += ["", "## 1:N identify throughput (100 000 templates, d = 128, plaintext probe)", "",
       "| who | cores | time for the gallery (ms) | template comparisons per second |",
       "|---|---:|---:|---:|"]
for op, who, cores in (("identify_scores_1core", "blindmatch, encrypted scores", "1"),
                       ("identify_scores_allcores", "blindmatch, encrypted scores", str(os.cpu_count())),
                       ("identify_full_1core", "blindmatch, scores decrypted and ranked", "1"),
                       ("identify_full_allcores", "blindmatch, scores decrypted and ranked", str(os.cpu_count()))):
    us = median_us("matching", op, "")
    if us:
        md.append(f"| {who} | {cores} | {us / 1000:.1f} | {100000 / (us / 1e6):,.0f} |")
for op, who in (("identify_scores_1core", "Microsoft SEAL, encrypted scores (multiply_plain, NTT form)"),
                ("identify_full_1core", "Microsoft SEAL, scores decrypted (multiply_plain, from NTT, decrypt)")):
    if op in seal:
        us = float(seal[op])
        md.append(f"| {who} | 1 | {us / 1000:.1f} | {100000 / (us / 1e6):,.0f} |")

md += ["", "## 1:N with an encrypted probe (3 200 templates, 100 ciphertexts, one core)", "",
       "| who | time for the gallery (ms) | template comparisons per second |",
       "|---|---:|---:|"]
us = median_us("matching", "identify_encrypted_probe_1core", "")
if us:
    md.append(f"| blindmatch (relinearized product, switched to 2 primes) | {us / 1000:.1f} | {3200 / (us / 1e6):,.0f} |")
if "identify_encrypted_probe_1core" in seal:
    us = float(seal["identify_encrypted_probe_1core"])
    md.append(f"| Microsoft SEAL (multiply + relinearize) | {us / 1000:.1f} | {3200 / (us / 1e6):,.0f} |")

# The native floor of multiply + relinearize: its transforms at the speed of
# the transform kernels the calibration chose (criterion's ntt rows of this
# run), against 10x SEAL's time in the same run.
kernels_of = dict(kv.split("=", 1) for kv in kernel_set.split())
native_kind = kernels_of.get("transforms") or next(
    (k for k in ("avx512", "avx2", "neon", "scalar") if median_us("forward", k, 4096)), None)
for op, ours_op, seal_op, target in (("multiply_relin", ("bfv", "multiply_relin"), "multiply_relin", 10),
                                     ("verify", ("matching", "verify"), "multiply_relin", 10)):
    fwd_us = median_us("forward", native_kind, 4096) if native_kind else None
    inv_us = median_us("inverse", native_kind, 4096) if native_kind else None
    ours_us = median_us(ours_op[0], ours_op[1], "")
    count = counts.get("multiply_relin")
    if None in (fwd_us, inv_us, ours_us, count) or seal_op not in seal:
        continue
    fwd, inv = count
    seal_us = float(seal[seal_op])
    budget = seal_us / target
    floor = fwd * fwd_us + inv * inv_us
    floors.append((f"native ({native_kind})", op, target, seal_us, budget, fwd, inv, floor, ours_us))
    tsv.append(f"floor\tnative/{op}\t{floor:.3f}\tseal/{target}\t{budget:.3f}\t{budget / floor:.2f}")
    transform_us[(f"native {native_kind}", "ntt_forward")] = fwd_us
    transform_us[(f"native {native_kind}", "ntt_inverse")] = inv_us

md += ["", "## Floors: what no implementation of this design can beat on this machine", "",
       "An operation cannot take less than its number-theoretic transforms on the engine that runs it,",
       "nor a pass over the gallery less than the memory traffic it needs. The transforms per operation are",
       "counted by `cargo run --release --example transforms --features count-transforms` (pinned by a unit",
       "test in `src/transforms.rs`); one transform (n = 4096, simd128) is timed on the same engine in the same",
       "process as node-seal, and natively by criterion with the kernels the calibration chose (verify's",
       "transforms are those of multiply + relinearize, its peer SEAL's multiply + relinearize). The budget is",
       "the peer's time divided by the target ratio of the issue; a floor",
       "above 100% of it means the target cannot be reached by any faster code for the rest of the operation.", "",
       "| engine | op | target | peer (µs) | budget (µs) | transforms (forward + inverse) | their time (µs) | share of budget | ours (µs) | ours / peer |",
       "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for where, op, target, seal_us, budget, fwd, inv, floor, ours_us in floors:
    md.append(f"| {where} | {op} | {target}x | {seal_us:.1f} | {budget:.1f} | {fwd} + {inv} | {floor:.1f} | "
              f"{100 * floor / budget:.0f}% | {ours_us:.1f} | {seal_us / ours_us:.2f}x |")
t_rows = [f"{where} {op[4:]} {us:.2f} µs" for (where, op), us in sorted(transform_us.items())]
if t_rows:
    md += ["", "One transform (n = 4096): " + "; ".join(t_rows) + "."]
if memory_floors and "identify_scores_1core" in seal:
    budget = float(seal["identify_scores_1core"]) / 20
    md += ["", "1:N on one core, 100 000 templates (3 125 ciphertexts of two primes, 195 MiB): "
           "the budget is SEAL's multiply_plain over the same ciphertexts divided by 20.", "",
           "| pass | ours (ms) | floor | floor (ms) | faster way | 20x budget (ms) | floor / budget |",
           "|---|---:|---|---:|---|---:|---:|"]
    for ours_op, what, ours, floor, floor_op in memory_floors:
        way = "prefetching" if "prefetched" in floor_op else "plain"
        md.append(f"| {ours_op} | {ours / 1000:.2f} | {what} | {floor / 1000:.2f} | {way} | {budget / 1000:.2f} | "
                  f"{100 * floor / budget:.0f}% |")

timed = [c for c in calibration if len(c) == 3]
if timed:
    fams = list(dict.fromkeys(c[0] for c in timed))
    kinds = list(dict.fromkeys(c[1] for c in timed))
    chosen = dict(kv.split("=", 1) for kv in kernel_set.split())
    md += ["", "## Kernel choice per family (the server bench's one-time calibration)", "",
           "Each family's kernels timed once per backend on auth4096-sized inputs (fastest of",
           "15 runs, µs); the widest backend stays unless another is at least 10% faster.", "",
           "| family | " + " | ".join(kinds) + " | chosen |",
           "|---|" + "---:|" * len(kinds) + "---|"]
    for f in fams:
        cells = {c[1]: c[2].replace(" us", "") for c in timed if c[0] == f}
        why = f" (per-CPU table: {preferred[f][1]})" if f in preferred else ""
        md.append(f"| {f} | " + " | ".join(cells.get(k, "-") for k in kinds) + f" | {chosen.get(f, '?')}{why} |")
    if preferred:
        md += ["", "A family marked per-CPU table runs on the backend measured faster in the whole operation",
               "on this CPU (`PREFERENCES` in src/backend/calibrate.rs), not the one faster in cache."]
    total = [c for c in calibration if len(c) == 2 and c[0] == "total"]
    if total:
        md += ["", f"The calibration took {total[0][1]} in all."]

server = os.environ.get("SERVER_ROWS", "").strip()
if server:
    md += ["", "## blindmatch-server bench (this machine)", "", "```", server, "```"]
    for line in server.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0] in ("verify_1to1", "identify_1toN", "memory_1toN"):
            # ours_us: microseconds per verification, or per template
            # comparison; no peer on these rows.
            rate = [p for p in parts if p.endswith("/s") or "/s " in p]
            try:
                per_s = float(rate[0].split()[0])
            except (IndexError, ValueError):
                continue
            tsv.append(f"server\t{parts[0]}/{parts[1]}\t{1e6 / per_s:.4f}\t-\t-\t-")

http = os.environ.get("HTTP_ROWS", "").strip()
if http:
    md += ["", "## Verify over HTTP on loopback (tests/server.rs load test, release)", "", "```", http, "```"]
hostile = os.environ.get("HOSTILE_ROWS", "").strip()
if hostile:
    md += ["", "## Under hostile traffic (tests/server/hostile.rs, release)", "",
           "Corrupted bodies, stalled sockets, requests cut off by a disconnect and bursts past the",
           "verification queue at once, with a valid client timed throughout; then a SIGTERM with",
           "requests in flight, `PRAGMA integrity_check` and every acknowledged write checked.", "",
           "```", hostile, "```"]
    import re
    m = re.search(r"load: (\d+) verifications from (\d+) clients .*?: ([0-9.]+)/s, p50 ([0-9.]+) ms, p99 ([0-9.]+) ms", http)
    if m:
        n, clients, rate, p50, p99 = m.groups()
        tsv.append(f"http\tverify/{clients}clients/rate\t{1e6 / float(rate):.1f}\t-\t-\t-")
        tsv.append(f"http\tverify/{clients}clients/p50\t{float(p50) * 1000:.1f}\t-\t-\t-")
        tsv.append(f"http\tverify/{clients}clients/p99\t{float(p99) * 1000:.1f}\t-\t-\t-")

scale = os.environ.get("SCALE_ROWS", "").strip()
if scale:
    md += ["", "## PostgreSQL, replicas and sharded galleries (tests/server/scale.rs, release)", "",
           "Verifications through one SQLite server, one and two PostgreSQL replicas (all on this",
           "machine's 2 cores, with PostgreSQL and the clients); identify over a gallery in one process",
           "and split over two shards on two replicas (docs/SCALE.md).", "",
           "```", scale, "```"]

sizes_tsv = ROOT / "target" / "wasm-sizes.tsv"
if sizes_tsv.exists():
    md += ["", "## npm package sizes (scripts/build-wasm.sh; budget for the simd128 .wasm: 400 KB raw, 150 KB gzipped; node-seal's .wasm is 1.27 MB raw)", "",
           "| file | raw bytes | gzip -9 bytes |", "|---|---:|---:|"]
    for line in sizes_tsv.read_text().splitlines()[1:]:
        f, raw, gz = line.split("\t")
        md.append(f"| {f} | {raw} | {gz} |")

md += ["", "## Sizes on the wire (bytes, auth4096 vs SEAL at its default 128-bit modulus)", "",
       "| object | blindmatch | SEAL |", "|---|---:|---:|"]
for name, seal_name in (("size_ct_secret_seeded", "size_ct_secret_seeded_zstd"),
                        ("size_ct_public", "size_ct_public_zstd"),
                        ("size_public_key", "size_public_key"),
                        ("size_relin_key", "size_relin_key")):
    if name in ours_sizes:
        md.append(f"| {name[5:]} | {ours_sizes[name]} | {seal.get(seal_name, 'n/a')} ({seal_name[5:]}) |")
if any(k.startswith("noise_") for k in seal):
    md += ["", "SEAL's invariant noise budgets for the same inputs (bits): " +
           ", ".join(f"{k[6:]} {v}" for k, v in seal.items() if k.startswith("noise_")) +
           "; ours are in docs/PARAMETERS.md."]

md += ["", "## ns per butterfly (n/2 · log2 n butterflies per transform)", "",
       "| transform | n | backend | ns/butterfly |", "|---|---:|---|---:|"]
for group, n, b, ns in butterflies:
    md.append(f"| {group} | {n} | {b} | {ns:.3f} |")
# The targets of a speed pass on every CPU model a run was made on: this
# run's line in bench/cpus.tsv replaces the last one of its CPU (model and
# widest vector extension), the others stay, so the table keeps each CPU
# seen. Ratios only: each is measured against a peer or floor of its run.
def ratio(num, den):
    return f"{num / den:.2f}" if num and den else "-"


wide = "avx512" if avx512_cpu() else "avx2" if avx2_cpu() else platform.machine()
mul_us = median_us("bfv", "multiply_relin", "")
verify_us = median_us("matching", "verify", "")
seal_mul = float(seal["multiply_relin"]) if "multiply_relin" in seal else None
# Each pass against its first floor (the fresh buffers the targets name).
by_op = {}
for op, _, ours, floor, _ in memory_floors:
    by_op.setdefault(op, (ours, floor))
cpu_line = "\t".join([
    f"{cpu} ({wide})", datetime.date.today().isoformat(),
    os.environ.get("COMMAND", "scripts/bench.sh"), kernels_of.get("transforms", native_kind or "-"),
    ratio(seal_mul, mul_us), ratio(seal_mul, verify_us),
    ratio(by_op.get("identify_full_1core", (0, 0))[1], by_op.get("identify_full_1core", (0, 0))[0]),
    ratio(by_op.get("identify_scores_1core", (0, 0))[1], by_op.get("identify_scores_1core", (0, 0))[0]),
])
cpus_tsv = out / "cpus.tsv"
header = "cpu\tdate\tcommand\ttransforms\tmultiply_relin_vs_seal\tverify_vs_seal\tidentify_full_of_read_floor\tidentify_scores_of_copy_floor"
kept = [l for l in (cpus_tsv.read_text().splitlines()[1:] if cpus_tsv.exists() else [])
        if l and l.split("\t")[0] != cpu_line.split("\t")[0]]
cpus_tsv.write_text("\n".join([header, *kept, cpu_line]) + "\n")
md += ["", "## Targets per CPU model seen (bench/cpus.tsv, the last run on each)", "",
       "SEAL's multiply + relinearize over ours (target 10x for both rows), and the fraction of the",
       "memory floor the 1:N passes reach (target 0.8), each measured in its own run.", "",
       "| CPU | date | command | transform kernels | multiply + relinearize | verify | identify / read floor | scores / copy floor |",
       "|---|---|---|---|---:|---:|---:|---:|"]
for line in [*kept, cpu_line]:
    md.append("| " + " | ".join(line.split("\t")) + " |")

(out / "REPORT.md").write_text("\n".join(md) + "\n")
(out / "results.tsv").write_text("\n".join(tsv) + "\n")
