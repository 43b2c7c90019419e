#!/usr/bin/env bash
# Builds one fuzz target with AddressSanitizer and runs it for SECONDS on a scratch copy of its
# seed corpus (fuzz/seeds/TARGET), so the repository is not written to. Exits non-zero on any
# crash, panic, leak, timeout or out-of-memory, printing the reproducer's path.
#
#   fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
#
# FUZZ_NO_BUILD=1 runs the last build (CI builds every target once with `cargo fuzz build`).
# Reproduce a finding with `RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET ARTIFACT` from fuzz/, and
# minimise it with `RUSTC_BOOTSTRAP=1 cargo fuzz tmin TARGET ARTIFACT`.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 TARGET SECONDS [libFuzzer flags...]" >&2
    exit 2
fi
target=$1
seconds=$2
shift 2

cd "$(dirname "${BASH_SOURCE[0]}")"
# cargo-fuzz passes nightly-only flags (-Zsanitizer=address, ...); stable rustc accepts them
# with RUSTC_BOOTSTRAP=1.
export RUSTC_BOOTSTRAP=1
# Allocations above 1 GiB fail (null, so our allocator returns Error::OutOfMemory, as PyTorch
# raises "not enough memory") instead of aborting: operators asked for 2^40 elements must
# report the failure, not be killed by the sanitizer. See README.md.
export ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1}"
# Registration leaks on purpose; see lsan.supp.
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$(pwd)/lsan.supp}"

if [ ! -d "seeds/${target}" ]; then
    echo "no seed corpus fuzz/seeds/${target}" >&2
    exit 2
fi

# Same flags for build and run, so `cargo fuzz run` finds the build up to date.
flags=(--sanitizer address --release --debug-assertions --codegen-units 16)
if [ -z "${FUZZ_NO_BUILD:-}" ]; then
    cargo fuzz build "${flags[@]}" "${target}"
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-${target}.XXXXXX")
trap 'rm -rf "${scratch}"' EXIT
mkdir -p "${scratch}/corpus" "artifacts/${target}"
cp seeds/"${target}"/* "${scratch}/corpus/"
before=$(ls "artifacts/${target}" | sort)

# The binary runs directly rather than through `cargo fuzz run`, which would first rebuild
# whatever changed in the workspace since the build above (minutes for aten under ASan).
binary="target/x86_64-unknown-linux-gnu/release/${target}"
status=0
"${binary}" "${scratch}/corpus" -artifact_prefix="artifacts/${target}/" \
    -max_total_time="${seconds}" -rss_limit_mb=4096 -malloc_limit_mb=2048 -timeout=60 \
    -print_final_stats=1 "$@" || status=$?

after=$(ls "artifacts/${target}" | sort)
added=$(comm -13 <(echo "${before}") <(echo "${after}") | sed '/^$/d')
# libFuzzer also saves inputs slower than 10 s (-report_slow_units) as slow-unit-*: reported,
# not failures (a unit over -timeout is a timeout-* and fails).
for f in $(echo "${added}" | grep '^slow-unit-' || true); do
    echo "note: an input slower than 10 s (not a failure; over 60 s is a timeout): $(pwd)/artifacts/${target}/${f}" >&2
done
new=$(echo "${added}" | grep -v '^slow-unit-' || true)
if [ "${status}" -ne 0 ] || [ -n "${new}" ]; then
    echo "fuzz target ${target} FAILED (exit ${status})" >&2
    for f in ${new}; do
        echo "reproducer: $(pwd)/artifacts/${target}/${f}" >&2
    done
    echo "reproduce: (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run ${flags[*]} ${target} artifacts/${target}/<file>)" >&2
    exit 1
fi
echo "fuzz target ${target}: no crash in ${seconds}s"
