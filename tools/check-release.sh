#!/usr/bin/env bash
# CI check of the release build (issue 18 part 3): runs tools/release.sh with the
# libsecp256k1 option and checks what it produced: both static binaries, the
# stamped version and commit in `grasp version`, and SHA256SUMS.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
command -v file >/dev/null || { echo "check-release: 'file' not found (apt-get install file)" >&2; exit 1; }

version=v0.0.0-releasecheck.1
VERSION=$version tools/release.sh --libsecp256k1
dist=${DIST:-dist}
commit=$(git rev-parse HEAD)
host=$(go env GOHOSTARCH)
fail=0
check() { # check WHAT COND...: report one outcome
  local what=$1; shift
  if "$@"; then echo "check-release: ok    $what"; else echo "check-release: FAIL  $what"; fail=1; fi
}
want="grasp $version (commit $commit)"
for bin in "grasp-linux-$host" "grasp-linux-$host-libsecp256k1"; do
  got=$("$dist/$bin" version)
  check "$bin version prints \"$want\" (got \"$got\")" [ "$got" = "$want" ]
done
declare -A elf=([amd64]="x86-64" [arm64]="ARM aarch64")
for bin in grasp-linux-amd64 grasp-linux-arm64 "grasp-linux-$host-libsecp256k1"; do
  arch=${bin#grasp-linux-}; arch=${arch%-libsecp256k1}
  desc=$(file -b "$dist/$bin")
  check "$bin is a static ${elf[$arch]} ELF ($desc)" \
    bash -c '[[ $1 == *"ELF 64-bit LSB executable, $2"* && $1 == *"statically linked"* ]]' _ "$desc" "${elf[$arch]}"
done
tags=$(go version -m "$dist/grasp-linux-$host-libsecp256k1" | awk '$1 == "build" && $2 ~ /^-tags=/ {sub(/^-tags=/, "", $2); print $2}')
check "grasp-linux-$host-libsecp256k1 was built with the libsecp256k1 tag (-tags $tags)" \
  bash -c '[[ ,$1, == *,libsecp256k1,* ]]' _ "$tags"
check "SHA256SUMS matches the binaries" bash -c "cd '$dist' && sha256sum --quiet -c SHA256SUMS"
check "SHA256SUMS lists the three binaries" [ "$(wc -l < "$dist/SHA256SUMS")" = 3 ]
exit $fail
