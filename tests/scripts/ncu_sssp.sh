source .whl/setup.sh > /dev/null 2>&1
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,sm__warps_active.avg.pct_of_peak_sustained_active,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum
T="--warmup 0 --min-samples 1 --max-samples 1 --min-time 0 --sources 1 --source 1000000"
for order in source destination random; do for v in edges edges_atomic; do
  timeout 80 ncu --kernel-name $v --launch-skip 300 --launch-count 1 --metrics $M --csv python3 -m gpubench run sssp -v $v --weights uniform --edge-order $order $T > $OUT/ncu-$v-$order.csv 2> $OUT/ncu-$v-$order.err; echo "$v $order rc $?"
done; done
timeout 60 ncu --kernel-name pull --launch-skip 300 --launch-count 1 --metrics $M --csv python3 -m gpubench run sssp -v pull --weights uniform $T > $OUT/ncu-pull.csv 2>$OUT/ncu-pull.err; echo "pull rc $?"
for v in frontier near_far near_far_local; do
  timeout 80 ncu --kernel-name worklist_sssp --launch-count 1 --metrics $M --csv python3 -m gpubench run sssp -v $v --weights uniform $T > $OUT/ncu-$v.csv 2> $OUT/ncu-$v.err; echo "$v rc $?"
done
cd $OUT && for f in ncu-*.csv; do echo "== $f"; grep -E '^"[0-9]' $f | awk -F'","' '{print $(NF-2), $NF}' | tr -d '"' ; done
