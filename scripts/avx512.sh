#!/usr/bin/env bash
# Runs the library's unit tests and the shared suite (tests/native.rs) with
# every kernel family on the avx512 backend: natively when this CPU has
# AVX-512F, otherwise on an emulated one. CI machines often lack AVX-512, and
# without this the AVX-512 kernels would ship tested only on the machines
# that happen to have it.
#
# The emulator is Bochs (Debian's build, which has EVEX) with its Skylake-X
# model (AVX-512 F/CD/BW/DQ/VL), booting Debian's kernel into a busybox
# initramfs that holds the two test binaries and their libraries. Bochs
# reports a wrong compacted XSAVE size, on which Linux turns off XSAVE and
# with it every AVX state; the kernel command line clears XSAVES and XSAVEC
# so the standard layout, whose size Bochs reports right, is used.
#
# The binaries are built with BLINDMATCH_REQUIRE_BACKEND=avx512, so a run
# where AVX-512 was not there (an emulator without it, a kernel that turned
# it off) fails instead of testing scalar against itself, and run with
# BLINDMATCH_BACKEND=avx512, so no family's calibration moves to AVX2.
#
#   scripts/avx512.sh            what scripts/test.sh's avx512 step runs
#   AVX512_EMULATE=1 scripts/avx512.sh
#                                emulate even on a CPU that has AVX-512F
#
# Prints the binaries' libtest output (with cargo's "Running" lines), then
# one line saying where it ran. Exits non-zero if a binary failed or the
# emulated machine stopped before the last binary finished. Needs the
# Debian packages scripts/setup.sh installs (bochs, busybox-static,
# isolinux, genisoimage, cpio); fetches the kernel package itself, once,
# into target/avx512/emulator/.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="$PWD/target/avx512"
export BLINDMATCH_REQUIRE_BACKEND=avx512
EMU="$CARGO_TARGET_DIR/emulator"

# --- the two test binaries -------------------------------------------------------
# Release: emulation runs a few hundred times slower than the host.
status=0
built="$(cargo test --release --lib --test native --no-run 2>&1)" || status=$?
printf '%s\n' "$built" >&2
[ "$status" = 0 ] || exit "$status"
mapfile -t BUILT < <(sed -n 's/^ *Executable \(.*\) (\(.*\))$/\1\t\2/p' <<<"$built")
if [ "${#BUILT[@]}" != 2 ]; then
  echo "avx512: expected two test binaries from cargo, got ${#BUILT[@]}" >&2
  exit 1
fi

if grep -qw avx512f /proc/cpuinfo && [ "${AVX512_EMULATE:-0}" != 1 ]; then
  rc=0
  for b in "${BUILT[@]}"; do
    printf '     Running %s (%s)\n' "${b%%$'\t'*}" "${b#*$'\t'}"
    BLINDMATCH_BACKEND=avx512 "${b#*$'\t'}" || rc=1
  done
  echo "avx512: ran natively on this CPU"
  exit "$rc"
fi

# --- the kernel ----------------------------------------------------------------
mkdir -p "$EMU"
kernel="$(ls "$EMU"/vmlinuz-* 2>/dev/null | head -n1 || true)"
if [ -z "$kernel" ]; then
  # The image package linux-image-amd64 points at, unpacked, not installed.
  image_pkg() { apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | grep -m1 .; }
  # Runs "$@", and once more after refreshing the package index if it fails.
  fresh() { "$@" || { apt-get update -q >&2 && "$@"; }; }
  pkg="$(fresh image_pkg)"
  rm -rf "$EMU/deb" && mkdir -p "$EMU/deb"
  (cd "$EMU/deb" && fresh apt-get download "$pkg" >&2)
  dpkg-deb --fsys-tarfile "$EMU"/deb/*.deb | tar -x -C "$EMU/deb" --wildcards './boot/vmlinuz-*'
  mv "$EMU"/deb/boot/vmlinuz-* "$EMU/"
  rm -rf "$EMU/deb"
  kernel="$(ls "$EMU"/vmlinuz-* | head -n1)"
fi

# Emulation runs a few hundred times slower than the host, so it leaves out
# the tests whose time goes to scalar references or to protocol logic rather
# than to kernels (the naive O(n^2) transforms and products; the
# well-formedness proofs, whose attack test alone is 10 000 probes): the
# native step runs those. Every test that compares kernels with scalar runs,
# and the scheme and matching end to end on the avx512 kernels.
SKIP="--skip matching::wellformed:: --skip suite::ntt::"

# --- the initramfs: busybox, the binaries, their libraries, /init ------------------
ROOTFS="$EMU/rootfs"
ISO="$EMU/iso"
rm -rf "$ROOTFS" "$ISO"
mkdir -p "$ROOTFS"/{bin,tests,proc,sys,dev,tmp} "$ISO/isolinux"
cp /bin/busybox "$ROOTFS/bin/busybox"
for b in "${BUILT[@]}"; do
  path="${b#*$'\t'}"
  cp "$path" "$ROOTFS/tests/${path##*/}"
  # The loader and libraries, at the paths the binary asks for.
  for lib in $(ldd "$path" | grep -o '/[^ ]*'); do
    mkdir -p "$ROOTFS$(dirname "$lib")"
    cp -L "$lib" "$ROOTFS$lib"
  done
done
{
  echo '#!/bin/busybox sh'
  echo '/bin/busybox mount -t proc proc /proc'
  echo '/bin/busybox mount -t sysfs sys /sys'
  echo '/bin/busybox mount -t devtmpfs dev /dev'
  echo 'exec > /dev/ttyS1 2>&1'
  echo 'cd /tmp'
  echo 'export BLINDMATCH_BACKEND=avx512 RUST_BACKTRACE=1'
  echo 'echo "=== cpu: $(/bin/busybox grep -m1 "model name" /proc/cpuinfo)"'
  for b in "${BUILT[@]}"; do
    name="${b##*/}"
    echo "echo '     Running ${b%%$'\t'*} ($name)'"
    echo "/tests/$name --test-threads=1 $SKIP; echo \"=== exit \$?\""
  done
  echo 'echo "=== done"'
  # Power off only once the serial port has sent everything.
  echo '/bin/busybox sleep 2'
  echo '/bin/busybox poweroff -f'
} > "$ROOTFS/init"
chmod +x "$ROOTFS/init"
(cd "$ROOTFS" && find . | cpio -o -H newc --quiet | gzip -1 > "$ISO/isolinux/initrd.gz")

# --- a boot CD: isolinux, the kernel, the initramfs ----------------------------------
cp "$kernel" "$ISO/isolinux/vmlinuz"
cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$ISO/isolinux/"
cat > "$ISO/isolinux/isolinux.cfg" <<'EOF'
DEFAULT tests
PROMPT 0
TIMEOUT 0
LABEL tests
  KERNEL vmlinuz
  APPEND initrd=initrd.gz console=ttyS0,115200 quiet mitigations=off clearcpuid=xsaves,xsavec
EOF
genisoimage -quiet -o "$EMU/boot.iso" -b isolinux/isolinux.bin -c isolinux/boot.cat \
  -no-emul-boot -boot-load-size 4 -boot-info-table -R -J "$ISO"

# --- the emulated machine ------------------------------------------------------------
# Kernel messages go to com1, the tests' output to com2. Debian's Bochs is
# built with its debugger, which waits at a prompt unless told to continue,
# and its text display wants a terminal (script(1) gives it one).
cat > "$EMU/bochsrc" <<EOF
display_library: term
megs: 2048
cpu: model=corei7_skylake_x, count=1, ips=200000000, reset_on_triple_fault=1
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/bochs/VGABIOS-lgpl-latest
ata0: enabled=1, ioaddr1=0x1f0, ioaddr2=0x3f0, irq=14
ata0-master: type=cdrom, path=$EMU/boot.iso, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev=$EMU/console.txt
com2: enabled=1, mode=file, dev=$EMU/tests.txt
log: $EMU/bochs.log
panic: action=fatal
error: action=report
info: action=ignore
debug: action=ignore
clock: sync=none, time0=local
EOF
echo continue > "$EMU/debugger.rc"
rm -f "$EMU"/{console,tests}.txt
echo "avx512: booting the emulated Skylake-X (a minute or two), then the tests" >&2
# At most 25 minutes (about four times a run's length): script(1) puts Bochs
# in a session of its own, which a caller's timeout would not reach.
TERM=xterm timeout -k 10 1500 script -qefc "bochs -q -f '$EMU/bochsrc' -rc '$EMU/debugger.rc'" /dev/null \
  > "$EMU/bochs.out" 2>&1 < /dev/null || true

out="$(tr -d '\r' < "$EMU/tests.txt" 2>/dev/null || true)"
printf '%s\n' "$out"
exits="$(sed -n 's/^=== exit \([0-9]*\)$/\1/p' <<<"$out")"
if ! grep -qx '=== done' <<<"$out" || [ "$(wc -l <<<"$exits")" != 2 ]; then
  echo "avx512: the emulated machine stopped before the tests finished; its console:" >&2
  tr -d '\r' < "$EMU/console.txt" 2>/dev/null | tail -n 40 >&2 || true
  tail -n 20 "$EMU/bochs.out" >&2 || true
  exit 1
fi
echo "avx512: ran in Bochs, CPU model corei7_skylake_x"
! grep -qvx 0 <<<"$exits"
