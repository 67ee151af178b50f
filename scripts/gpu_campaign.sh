#!/usr/bin/env bash
# The H200 campaign behind docs/benchmarks.md, run on the lent GPU machine from the repo root:
#   source scripts/gpu_setup.sh && bash scripts/gpu_campaign.sh tests|tune|tune-ops|bench|expr
# Results (databases, logs, plot) go to $OUT.
set -u
case "${1:-}" in
-h|--help) sed -n '2,4p' "$0" | cut -c3-; echo "usage: $0 tests|tune|tune-ops|bench|expr"; exit 0 ;;
esac
OUT=${OUT:-/tmp/cltune-out}
mkdir -p "$OUT"
D=sqlite:///$OUT/h200.db
S=sqlite:///$OUT/h200-studies.db
quiet() { grep -v -i -E "warn|lambda: self|build\(options"; }
case "${1:-}" in
tests)
    CLTUNE_TEST_DEVICE=NVIDIA timeout 240 python3 -m pytest -q -x -p no:cacheprovider \
        tests/test_kernels.py tests/test_runtime.py tests/test_plan.py tests/test_lookup.py \
        tests/test_tuner.py tests/test_seeds.py tests/test_space.py -k "not kill" 2>&1 | tail -5
    ;;
tune)  # sum/float32: more trials where the bandwidth targets are (2^24..2^28)
    timeout 170 python3 -m cltune tune --device NVIDIA --trials 25 --timeout 140 \
        --sizes 2^10,2^12,2^14,2^16,2^18,2^20,2^22 --db "$D" --storage "$S" \
        2>&1 | quiet | tail -30
    timeout 230 python3 -m cltune tune --device NVIDIA --trials 60 --timeout 200 \
        --sizes 2^24,2^26,2^28 --db "$D" --storage "$S" 2>&1 | quiet | tail -20
    ;;
tune-ops)
    for od in max/float32 min/float32 sum/int32 dot/float32 sum/float64 sum/float16; do
        timeout 60 python3 -m cltune tune --device NVIDIA --op "${od%/*}" --dtype "${od#*/}" \
            --sizes 2^16,2^20,2^24,2^28 --trials 14 --timeout 45 --db "$D" --storage "$S" \
            2>&1 | quiet | tail -18
    done
    ;;
bench)
    timeout 200 python3 scripts/bench.py --device NVIDIA --db "$D" --torch --overhead \
        --repeats 21 --plot "$OUT/bench.png" --json "$OUT/bench.json" --markdown 2>&1 | quiet
    timeout 90 python3 scripts/bench.py --device NVIDIA --db "$D" --torch --op max \
        --sizes 2^20,2^24,2^28 --repeats 15 --markdown 2>&1 | quiet
    timeout 60 python3 scripts/startup.py --device NVIDIA --db "$D" 2>&1 | quiet
    timeout 90 python3 scripts/big_index.py --device NVIDIA --db "$D" 2>&1 | quiet
    ;;
expr)  # issue 13 on the GPU: expression kernels and statistics, whole and along axes
    CLTUNE_TEST_DEVICE=NVIDIA timeout 150 python3 -m pytest -q -x -p no:cacheprovider \
        tests/test_reduction_kernel.py tests/test_stats.py tests/test_stats_axis.py \
        -k "not first_use" 2>&1 | tail -3
    timeout 150 python3 scripts/experiments/expr_profile.py --device NVIDIA --grid \
        --out "$OUT/expr_profile.txt" 2>&1 | quiet | tail -60
    timeout 200 python3 scripts/bench_expr.py --device NVIDIA --sizes 2^12,2^16,2^20,2^24,2^28 \
        --repeats 7 --tune-trials 12 --json "$OUT/expr.json" 2>&1 | quiet | tail -60
    timeout 120 python3 scripts/bench_stats_axis.py --device NVIDIA --repeats 7 2>&1 | quiet
    ;;
*) echo "usage: $0 tests|tune|tune-ops|bench|expr"; exit 2 ;;
esac
