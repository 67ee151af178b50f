#!/usr/bin/env bash
# The H200 campaign behind docs/logs/benchmarks-2026-11-30-to-2026-12-06.md, run on the lent GPU machine from the repo root:
#   source scripts/gpu_setup.sh && bash scripts/gpu_campaign.sh tests|tune|tune-ops|bench|expr|axis-scan|suite|closing-1d|closing-axis
# Results (databases, logs, plot) go to $OUT.
set -u
case "${1:-}" in
-h|--help) sed -n '2,4p' "$0" | cut -c3-; echo "usage: $0 tests|tune|tune-ops|bench|expr|axis-scan|suite|closing-1d|closing-axis"; exit 0 ;;
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
axis-scan)  # issues 21/22: strided scans (the GPU cut, rows loaded in batches), the small scan
    # call, axis sums and statistics on shapes nobody tuned (docs/logs/benchmarks-2026-11-30-to-2026-12-06.md, 2026-12-03)
    timeout 200 python3 scripts/bench_scan.py --device NVIDIA --sizes 2^12,2^16,2^20,2^24,2^26 \
        --axis --shapes 1048576x16,65536x256,4096x4096,3000x5000,100000x77 --repeats 5 2>&1 | quiet
    N=4000x3000,1500x1500,6000x777,250000x40,40x250000,123x45678,65432x123,9999x999,20000x20
    N=$N,1000000x7,7x1000000,500x500,2500x6400,800x20000,31x31
    timeout 200 python3 scripts/bench_axis.py --device NVIDIA --no-segments --repeats 5 \
        --shapes "$N" --json "$OUT/axis_unseen.json" 2>&1 | quiet
    timeout 200 python3 scripts/bench_stats_axis.py --device NVIDIA --repeats 5 --ops var,argmax \
        --shapes 3000x5000,524288x24,1000x1000,16x1048576 2>&1 | quiet
    ;;
suite)  # the whole suite on the H200 (#22 item 7): no PostgreSQL or Oclgrind there
    CLTUNE_TEST_DEVICE=NVIDIA timeout 530 python3 -m pytest -v -n 16 -p no:cacheprovider \
        -m "not postgres and not oclgrind" --durations=15 tests > "$OUT/suite.txt" 2>&1
    tail -25 "$OUT/suite.txt"
    ;;
closing-1d)  # #21/#22's closing tables, whole arrays: powers of two and sizes that are not
    Z=2^12,2^16,2^20,2^24,2^28,1000,100003,1000003,1e7,123456789
    timeout 150 python3 -m cltune bench --device NVIDIA --sizes "$Z" --repeats 5 --json \
        > "$OUT/bench-sum.json" 2> "$OUT/bench-sum.err"; echo "sum rc=$?"
    for op in argmax var norm mean; do
        timeout 75 python3 -m cltune bench --device NVIDIA --op $op --repeats 5 --json \
            --sizes 2^12,2^20,2^24,2^28,100003,1e7 > "$OUT/bench-$op.json" 2> "$OUT/bench-$op.err"
        echo "$op rc=$?"
    done
    timeout 60 python3 scripts/bench_many.py --device NVIDIA --ks 16,64,256 --op norm \
        > "$OUT/many.txt" 2>&1; echo "many rc=$?"
    timeout 100 python3 scripts/bench_scan.py --device NVIDIA --repeats 5 \
        --sizes 2^12,2^16,2^20,2^24,2^26,2^28,1000003,1e7 > "$OUT/scan.txt" 2>&1; echo "scan rc=$?"
    timeout 70 python3 scripts/bench_compact.py --device NVIDIA --repeats 5 \
        --sizes 2^20,2^24,2^26,1e7 > "$OUT/compact.txt" 2>&1; echo "compact rc=$?"
    ;;
closing-axis)  # the issue's axis cases and shapes nobody tuned: sums, statistics, scans
    A=3000x5000,1024x16384,16x1048576,4096x4096,524288x24,65536x256,1048576x16,16384x16384
    N=4000x3000,1500x1500,6000x777,250000x40,40x250000,123x45678,65432x123,9999x999
    N=$N,20000x20,1000000x7,7x1000000,500x500,2500x6400,800x20000,31x31
    timeout 200 python3 scripts/bench_axis.py --device NVIDIA --no-segments --repeats 5 \
        --shapes "$A,$N" --json "$OUT/axis.json" > "$OUT/axis.txt" 2>&1; echo "axis rc=$?"
    timeout 200 python3 scripts/bench_stats_axis.py --device NVIDIA --repeats 5 \
        --ops argmax,var,norm,mean --json "$OUT/stats-axis.json" \
        --shapes 16x1048576,4096x4096,1048576x16,65536x256,3000x5000,777x12345,250000x40,40x250000,9999x999,31x31 \
        > "$OUT/stats-axis.txt" 2>&1; echo "stats-axis rc=$?"
    timeout 80 python3 scripts/bench_scan.py --device NVIDIA --repeats 5 --sizes 2^20 --axis \
        --shapes 1048576x16,65536x256,4096x4096,3000x5000,100000x77 > "$OUT/scan-axis.txt" 2>&1
    echo "scan-axis rc=$?"
    ;;
*) echo "usage: $0 tests|tune|tune-ops|bench|expr|axis-scan|suite|closing-1d|closing-axis"; exit 2 ;;
esac
