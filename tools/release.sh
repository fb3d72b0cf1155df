#!/usr/bin/env bash
# Release builds (issue 18 part 3): static grasp binaries for linux/amd64 and
# linux/arm64 with the version and commit stamped, and their SHA256SUMS, in dist/.
#
#   tools/release.sh                   version from the newest v* tag (git describe)
#   VERSION=v1.2.0 tools/release.sh    an explicit version
#   tools/release.sh --libsecp256k1    also dist/grasp-linux-<host arch>-libsecp256k1:
#                                      signature checks in C (cgo, needs gcc; the C
#                                      library is compiled in, still a static binary)
#
# `grasp version` then prints "grasp <version> (commit <full hash>)", and
# grasp_build_info on /metrics carries both. tools/check-release.sh checks that.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

libsecp=0
for arg in "$@"; do
  case $arg in
    --libsecp256k1) libsecp=1 ;;
    *) echo "usage: $0 [--libsecp256k1]" >&2; exit 2 ;;
  esac
done

dist=${DIST:-dist}
commit=$(git rev-parse HEAD)
dirty=""
git diff --quiet HEAD -- || dirty="+dirty"
if [ -z "${VERSION:-}" ]; then
  if tag=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
    VERSION="$tag$dirty"
  else
    # No release tag yet: a Go-style pseudo-version from the commit.
    VERSION="v0.0.0-$(TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd)-${commit:0:12}$dirty"
  fi
fi

mkdir -p "$dist"
rm -f "$dist"/grasp-linux-* "$dist/SHA256SUMS"
ldflags="-s -w -X main.version=$VERSION -X main.commit=$commit"
# -buildvcs=false: the stamp above is the version; VCS stamping needs the
# .git directory, which release builders do not always have.
for arch in amd64 arm64; do
  echo "release: grasp-linux-$arch ($VERSION)"
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -buildvcs=false \
    -ldflags "$ldflags" -o "$dist/grasp-linux-$arch" ./cmd/grasp
done
if [ $libsecp = 1 ]; then
  arch=$(go env GOHOSTARCH)
  echo "release: grasp-linux-$arch-libsecp256k1 ($VERSION)"
  # netgo and osusergo keep glibc's NSS out, so the cgo binary links statically.
  CGO_ENABLED=1 go build -trimpath -buildvcs=false -tags 'libsecp256k1 netgo osusergo' \
    -ldflags "$ldflags -linkmode external -extldflags -static" \
    -o "$dist/grasp-linux-$arch-libsecp256k1" ./cmd/grasp
fi
(cd "$dist" && sha256sum grasp-linux-* > SHA256SUMS)
cat "$dist/SHA256SUMS"
