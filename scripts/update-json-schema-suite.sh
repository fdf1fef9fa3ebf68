#!/usr/bin/env bash
# Vendors the draft2020-12 tests of the official JSON Schema Test Suite (json-schema-org/JSON-Schema-Test-Suite, MIT)
# into test/fixtures/json-schema-test-suite/, with its LICENSE and the commit it came from (COMMIT).
#
#   bash scripts/update-json-schema-suite.sh <git checkout or bare git dir> [commit]   (default commit: HEAD)
#   bash scripts/update-json-schema-suite.sh <tarball .tar.gz>                          (e.g. GitHub's /archive/<sha>.tar.gz)
#
# Only tests/draft2020-12/ is taken (the required files, optional/ and optional/format/): test/unit/json-schema-suite.test.ts
# runs them offline, so remotes/ (served by the suite's own HTTP server for refRemote.json) is not needed. Nothing is
# fetched by this script: get the checkout or tarball yourself, review the diff, commit it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/test/fixtures/json-schema-test-suite"
SRC="${1:?usage: update-json-schema-suite.sh <git checkout | bare git dir | tarball> [commit]}"
WANT="${2:-HEAD}"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/json-schema-suite-XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

if [[ -d "$SRC" ]]; then
  GIT=(git -C "$SRC")
  COMMIT="$("${GIT[@]}" rev-parse --verify "$WANT^{commit}")"
  "${GIT[@]}" archive --format=tar "$COMMIT" LICENSE tests/draft2020-12 | tar -x -C "$TMP"
elif [[ -f "$SRC" ]]; then
  # GitHub tarballs carry the commit in a pax header; `git get-tar-commit-id` reads it.
  COMMIT="$(gzip -dc "$SRC" | git get-tar-commit-id || true)"
  if [[ ! "$COMMIT" =~ ^[0-9a-f]{40}$ ]]; then
    echo "update-json-schema-suite: $SRC carries no commit id (pass a GitHub archive tarball or a git checkout)" >&2
    exit 2
  fi
  tar -xzf "$SRC" -C "$TMP"
  top="$(find "$TMP" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
  [[ -n "$top" ]] && mv "$top"/* "$TMP"/ 2>/dev/null || true
else
  echo "update-json-schema-suite: $SRC is neither a directory nor a file" >&2
  exit 2
fi

for need in LICENSE tests/draft2020-12/type.json tests/draft2020-12/optional/format; do
  if [[ ! -e "$TMP/$need" ]]; then
    echo "update-json-schema-suite: $need missing: is $SRC the JSON-Schema-Test-Suite?" >&2
    exit 2
  fi
done

rm -rf "$DEST"
mkdir -p "$DEST"
cp "$TMP/LICENSE" "$DEST/LICENSE"
cp -R "$TMP/tests/draft2020-12" "$DEST/draft2020-12"
printf '%s\n' "$COMMIT" > "$DEST/COMMIT"
echo "vendored json-schema-org/JSON-Schema-Test-Suite@$COMMIT draft2020-12 into ${DEST#"$ROOT"/}" >&2
