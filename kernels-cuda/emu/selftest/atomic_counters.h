// The counters of the `atomics` kernel, shared by selftest.cu and main.cpp.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

struct AtomicCounters {
    int i_add, i_sub, i_cas, i_sub_system;
    unsigned u_add, u_inc, u_dec, u_add_block;
    unsigned short us_cas;
    unsigned long long ull_add, ull_cas;
    long long ll_or, ll_and;
    int i_max, i_min;
    unsigned u_max, u_min;
    long long ll_max, ll_min;
    unsigned long long ull_max, ull_min;
    unsigned or_bits[8];
    unsigned and_bits, xor_all, xor_three;
    int exch, exch_xor;
    float f_add, f_max_cas, f_exch;
    double d_add;
    __half h_add;
    __nv_bfloat16 b_add;
    __half2 h2_add;
    __nv_bfloat162 b2_add;
    float2 f2_add;
};
