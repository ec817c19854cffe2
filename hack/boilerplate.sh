#!/usr/bin/env bash
# Shared by hack/verify-boilerplate.sh and hack/update-boilerplate.sh: which
# Go files are hand-written and whether one starts with the license header.
#
# A hand-written file is every Go file git tracks or would track, except the
# generators' output (zz_generated.*, generated.pb.go, pkg/generated/), which
# takes its header from hack/boilerplate.go.txt through hack/update-codegen.sh.
# It has the header when, after any build constraint lines and the blank
# line that ends them, it starts with hack/boilerplate.go.txt byte for byte
# (the header, then a blank line).

BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

# boilerplate::files prints the hand-written Go files, relative to ROOT.
boilerplate::files() {
  git -C "${ROOT}" ls-files -co --exclude-standard -- '*.go' |
    grep -v -E '(^|/)zz_generated\.[^/]*\.go$|(^|/)generated\.pb\.go$|^pkg/generated/' || true
}

# boilerplate::constraint_lines prints how many lines of file are build
# constraints and the blank line after them (0 when it has none).
boilerplate::constraint_lines() {
  awk '/^\/\/(go:build|[[:space:]]*\+build)[[:space:]]/ { n++; next }
       /^$/ && n > 0 { n++ } { exit } END { print n + 0 }' "$1"
}

# boilerplate::has_header tells whether file starts with the header.
boilerplate::has_header() {
  local skip
  skip="$(boilerplate::constraint_lines "$1")"
  # cmp reads what it compares, so no pipe can be cut short (pipefail).
  cmp -s -n "$(wc -c <"${BOILERPLATE}")" <(tail -n "+$((skip + 1))" "$1") "${BOILERPLATE}"
}
