#!/usr/bin/env bash
# Install tileport from this offline bundle (made by `tileport offline pack`), with no network at all.
# Sets up what scripts/setup.sh sets up on a connected machine: the tileport tree in DEST, a venv in DEST/.venv
# with tileport, cuda-tile, tileiras/tileirdisasm, CUDA headers, libclang and the dev tools (pip --no-index, from
# wheels/ only), the vendored cutile crates with a cargo source replacement (DEST/.offline/cargo, tileport's
# CARGO_HOME for builds), the Rust toolchain setup.sh expects to find (DEST/.offline/rust, from rust/ when packed),
# and bubblewrap from system/ when it is missing (root, dpkg). Every file is checked against manifest.json first.
# Usage: bash install.sh [DEST]        (default: the bundle's tileport/; PYTHON=/path/to/python@PYTHON_VERSION@ to pick one)
# Then:  DEST/.venv/bin/tileport doctor
set -euo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "install.sh: $*" >&2; exit 2; }
[[ $# -le 1 ]] || die "usage: bash install.sh [DEST] (one directory at most)"
dest=${1:-$bundle/tileport}
want=@PYTHON_VERSION@

pyver() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
py=${PYTHON:-}
if [[ -z $py ]]; then
  for cand in "python$want" python3; do
    if command -v "$cand" >/dev/null && [[ $(pyver "$cand") == "$want" ]]; then py=$cand; break; fi
  done
  [[ -n $py ]] || die "the bundle's wheels are for Python $want and no python$want was found; set PYTHON=/path/to/python$want (or pack again with --python-version X.Y)"
fi
have=$(pyver "$py") || die "PYTHON=$py does not run; set PYTHON=/path/to/python$want"
[[ $have == "$want" ]] || die "$py is Python $have but the bundle's wheels are for Python $want; set PYTHON=/path/to/python$want (or pack again with --python-version $have)"

# 1. the bundle itself: every file present with its sha256 (one line naming the first bad file)
"$py" -I "$bundle/verify.py" "$bundle" >/dev/null || exit 2

# 2. DEST: new, empty, or an earlier install from a bundle (never someone's directory)
if [[ -L $dest ]]; then die "$dest is a symbolic link; pass a real directory"; fi
if [[ -e $dest && ! -f $dest/.tileport-offline-install ]]; then
  [[ -d $dest ]] || die "$dest exists and is not a directory; pass a new DEST"
  [[ -z $(ls -A "$dest") ]] || die "$dest is not empty and is not an earlier tileport offline install; pass a new DEST"
fi
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
tar -xzf "$bundle/src/tileport-src.tar.gz" -C "$dest" --strip-components=1 --no-same-owner
touch "$dest/.tileport-offline-install"

# 4 and 5 unpack while pip installs (3): tar and pip each keep a CPU busy
# 4. the cutile crates: vendored sources + the cargo config tileport passes to every build (no network)
# 5. Rust: the packing machine's toolchain (cargo, rustc, std), which tileport's builds use from here
rust=$(ls "$bundle"/rust/rust-*.tar.gz 2>/dev/null | head -n1 || true)
unpack_log=$(mktemp)
trap 'wait; rm -f "$unpack_log"' EXIT  # a refusal below still lets the unpacking end before install.sh does
(
  set -euo pipefail
  rm -rf "$dest/.offline/cargo" "$dest/.offline/rust"
  mkdir -p "$dest/.offline/cargo"
  tar -xzf "$bundle/cargo/vendor.tar.gz" -C "$dest/.offline/cargo" --no-same-owner
  if [[ -n $rust ]]; then
    mkdir -p "$dest/.offline/rust"
    tar -xzf "$rust" -C "$dest/.offline/rust" --strip-components=1 --no-same-owner
  fi
) >"$unpack_log" 2>&1 &
unpack=$!

# 3. the venv, from the wheelhouse only (no index, no pip config from this machine)
offline_pip() {
  env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$dest/.venv/bin/python" -m pip "$@" --no-index --find-links "$bundle/wheels"
}
[[ -x $dest/.venv/bin/python ]] || "$py" -m venv "$dest/.venv"
offline_pip install -q --upgrade pip setuptools || die "pip could not install pip/setuptools from $bundle/wheels"
PYTHONWARNINGS=ignore offline_pip install -q --no-build-isolation -e "$dest[dev]" ||
  die "pip could not install tileport from $bundle/wheels (see above); is this the bundle's platform ($(uname -m))?"
touch "$dest/.venv/.tileport-setup"

wait "$unpack" || die "unpacking the vendored crates or the bundled Rust into $dest/.offline failed: $(tail -n 3 "$unpack_log" | tr '\n' ' ')"
if [[ -n $rust ]]; then
  "$dest/.offline/rust/bin/rustc" -V >/dev/null 2>&1 ||
    die "the bundled Rust ($rust) does not run on this machine ($(uname -m)); pack with --no-rust and bring Rust >= 1.89"
  command -v cc >/dev/null ||
    echo "install.sh: note: no C compiler (cc): cargo links with it; install gcc (build-essential) before build-rust" >&2
elif ! command -v cargo >/dev/null && [[ ! -x ${CARGO_HOME:-$HOME/.cargo}/bin/cargo ]]; then
  echo "install.sh: note: no cargo found and the bundle carries none; the Rust build stage needs Rust >= 1.89 (copy a rustup toolchain across)" >&2
fi
"$dest/.venv/bin/python" -I "$bundle/verify.py" record "$bundle" "$dest" >/dev/null || exit 2

# 6. what the bundle cannot carry everywhere: bubblewrap where its .deb does not fit
if ! command -v bwrap >/dev/null; then
  deb=$(ls "$bundle"/system/bubblewrap_*.deb 2>/dev/null | head -n1 || true)
  if [[ -n $deb && $(id -u) == 0 ]] && command -v dpkg >/dev/null; then
    dpkg -i "$deb" >/dev/null 2>&1 || echo "install.sh: note: dpkg -i $deb failed; install bubblewrap by hand" >&2
  fi
  command -v bwrap >/dev/null ||
    echo "install.sh: note: bubblewrap (bwrap) is missing: build-rust is BLOCKED until it is installed (system/ has the packing machine's .deb)" >&2
fi
echo "tileport installed offline in $dest: $dest/.venv/bin/tileport doctor"
