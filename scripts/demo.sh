#!/usr/bin/env bash
# Builds the tool and shows a real round trip: two identities, a signed file sealed from Alice to Bob,
# opened and verified by Bob, and a FileLock package. (The server arrives with its issue; then this
# command runs it instead.)
set -euo pipefail
cd "$(dirname "$0")/.."
# The system libraries the package links (password hashing, QR codes), installed when missing.
source scripts/lib/build-deps.sh
mapfile -t missing < <(build_deps_missing)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
swift build -c release --product countersign >&2
cs="$PWD/.build/release/countersign"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "== keygen (Alice with a passphrase, Bob without)"
echo "correct horse battery staple" > alice.pass
"$cs" keygen -o alice.key --passphrase-file alice.pass > alice.pub
"$cs" keygen -o bob.key --no-passphrase > bob.pub
echo "== seal a 5 MiB file from Alice to Bob, signed"
head -c 5242880 /dev/urandom > report.bin
"$cs" seal -r bob.pub -s alice.key --passphrase-file alice.pass --keep-name -o report.bin.cs report.bin
ls -l report.bin report.bin.cs
echo "== open as Bob, demanding Alice's signature"
"$cs" open -i bob.key --from alice.pub -o report.out report.bin.cs
cmp report.bin report.out && echo "round trip: identical"
echo "== FileLock package (the iOS app's format)"
"$cs" pubkey --format filelock bob.key > bob.filelock.pem
echo "hello, FileLock" | "$cs" seal --format filelock -r bob.filelock.pem -o encrypted_file.pkg
"$cs" open -i bob.key encrypted_file.pkg
echo "== a tampered file is refused and nothing is written"
python3 -c "import sys; b=bytearray(open('report.bin.cs','rb').read()); b[9000]^=1; open('bad.cs','wb').write(b)"
"$cs" open -i bob.key -o should-not-exist bad.cs || echo "exit status $?; should-not-exist present: $([ -e should-not-exist ] && echo yes || echo no)"
