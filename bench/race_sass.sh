#!/usr/bin/env bash
# bench/race_sass.sh — racecheck of one gpu test case with every report (racecheck-report all) and the SASS of
# the kernels it compiled (kept in a cache database: KILN_TEST_KEEP_CUBINS=1), to map report offsets to
# instructions. Device side: RACE_FILTER="gtest filter" RACE_CONFIG="bm128_bn128_bk256_s3" bash bench/race_sass.sh
# -> $OUT/race.txt, $OUT/sass_*.txt (written, not yet run to the end: a first run dumped every kernel).
X=$(mktemp -d); tar -C $X -xJf carry-all/bundle.tar.xz; export LD_LIBRARY_PATH=/usr/local/cuda/lib64
C=$(mktemp -d)
KILN_TEST_KEEP_CUBINS=1 KILN_CACHE_DIR=$C compute-sanitizer --tool racecheck --racecheck-report all $X/gpu_sm90_gemm_gpu_test --gtest_filter="${RACE_FILTER:?}" > $OUT/race.txt 2>&1
python3 - $C/kiln.db $OUT <<'PY'
import sqlite3, sys, subprocess
db = sqlite3.connect(sys.argv[1])
# Only the kernels whose config text contains RACE_CONFIG (the test binary's setup compiles every kernel
# it will load: hundreds), at most 6 of them (8 files come back from a device call).
import os
want = os.environ.get("RACE_CONFIG", "")
rows = [r for r in db.execute("select key, entry, spec, config, cubin from kernels") if want in (r[3] or "")][:6]
for i, (key, entry, spec, config, cubin) in enumerate(rows):
    f = f"/tmp/k{i}.cubin"; open(f, "wb").write(cubin)
    sass = subprocess.run(["cuobjdump", "--dump-sass", f], capture_output=True, text=True).stdout
    open(f"{sys.argv[2]}/sass_{i}.txt", "w").write(f"// {entry} {spec} {config}\n" + sass)
    print(i, entry, spec, config, len(sass))
PY
grep -c "Race reported" $OUT/race.txt; grep -A3 "Race reported" $OUT/race.txt | head -30
