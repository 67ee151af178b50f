/* A toy in-group strategy for tests/test_strategies.py: every work-item parks its value in the
 * tile, work-item 0 adds them up one by one. Slow and simple; correct for every op. */
uint clt_hook_combine(acc_t v, __local acc_t *tile, __global acc_t *partials, idx_t unit) {
    const uint lid = get_local_id(0);
    tile[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        acc_t s = tile[0];
        for (uint j = 1; j < CLT_WG; ++j) s = OP(s, tile[j]);
        PUT_PARTIAL(partials, unit, s);
    }
    return 1;
}
