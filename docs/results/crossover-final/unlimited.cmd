build/tpch/exec/spillbench --sf=1 --data-dir=tpch-data/sf1 --temp-dir=tmp --work-mem=4MB --block-size=8K --codec=none,auto --rounds=10 --queries=3,4,5,7,8,9,10,12,13,14,16,18,21,22 --format=json
