#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME (default 2s) on top of
# its seed corpus (testdata/fuzz). Part of `make test`; a longer run is
# `FUZZTIME=10m scripts/fuzz-short.sh`. A failing input is written to the
# package's testdata/fuzz/<target>/ and becomes a regression seed.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-2s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
n=0
for dir in $(grep -l '^func Fuzz' $(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go') | xargs -n1 dirname | sort -u); do
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //'); do
		# A real finding always writes its input ("Failing input written
		# to …"). When -fuzztime runs out while a worker is mid-execution
		# on a busy machine, the go command can instead report "context
		# deadline exceeded" with no input: that is retried (twice at most).
		tries=0
		until go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$dir" >"$log" 2>&1; do
			tries=$((tries + 1))
			if grep -q 'Failing input written' "$log" || ! grep -q 'context deadline exceeded' "$log" || [ $tries -ge 3 ]; then
				grep -v 'level=INFO' "$log" | tail -40
				echo "fuzz: $dir $target failed" >&2
				exit 1
			fi
			echo "fuzz: $dir $target: the fuzzer was stopped mid-execution (no failing input); running it again" >&2
		done
		n=$((n + 1))
	done
done
echo "fuzz: $n targets ran for $fuzztime each"
