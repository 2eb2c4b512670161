#!/usr/bin/env bash
# Reproduces panel/vendor/ from the npm registry at pinned versions: marked
# (Markdown → HTML) and DOMPurify (HTML sanitiser), both as plain ES modules
# with their licence headers, so the panel needs no build step and no CDN.
set -euo pipefail

MARKED_VERSION=18.2.1
DOMPURIFY_VERSION=3.5.0

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/panel/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
npm pack --silent "marked@$MARKED_VERSION" "dompurify@$DOMPURIFY_VERSION" >/dev/null
mkdir marked dompurify
tar -xzf "marked-$MARKED_VERSION.tgz" -C marked
tar -xzf "dompurify-$DOMPURIFY_VERSION.tgz" -C dompurify

mkdir -p "$out"
cp marked/package/lib/marked.esm.js "$out/marked.js"
cp marked/package/LICENSE "$out/marked.LICENSE"
cp dompurify/package/dist/purify.es.mjs "$out/purify.js"
cp dompurify/package/LICENSE "$out/purify.LICENSE"
# Source maps are not shipped; drop the trailing reference so browsers do not ask for them.
sed -i '/^\/\/# sourceMappingURL=/d' "$out/marked.js" "$out/purify.js"
echo "panel/vendor: marked $MARKED_VERSION, dompurify $DOMPURIFY_VERSION"
