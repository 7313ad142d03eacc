#!/usr/bin/env bash
# Rewrites Tests/CountersignCryptoTests/Vectors/*.txt from the fixed seeds of the vector generator
# (scripts/vectors/), then runs the vector tests against what was written. Review the diff before
# committing: an unsigned vector that changes means the format or the generator changed. Signed vectors
# get fresh ECDSA signatures on every run (swift-crypto draws the nonce), so only those bytes change there.
#   bash scripts/regenerate-vectors.sh            (SCRATCH_PATH=.build-x to build elsewhere than .build)
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=(${SCRATCH_PATH:+--scratch-path "$SCRATCH_PATH"})
swift run "${scratch[@]}" countersign-vectors Tests/CountersignCryptoTests/Vectors
swift build "${scratch[@]}" --build-tests
swift test "${scratch[@]}" --skip-build --filter 'CountersignCryptoTests.VectorTests'
git status --short Tests/CountersignCryptoTests/Vectors
