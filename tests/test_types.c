// test_types.c - type traits, fp16/bf16 conversions (exhaustive round trips,
// ties, subnormals, NaN/Inf) and the Q8_0/Q4_0 block formats.
#include "check.h"
#include "tg/types.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static void test_traits(void) {
    CHECK(tg_type_traits(TG_TYPE_F32) && tg_type_size(TG_TYPE_F32) == 4, "f32 traits, 4 bytes");
    CHECK(strcmp(tg_type_name(TG_TYPE_BF16), "bf16") == 0, "bf16 name");
    CHECK(tg_type_size(TG_TYPE_Q8_0) == 34 && tg_blck_size(TG_TYPE_Q8_0) == 32, "q8_0: 34 bytes per 32");
    CHECK(tg_type_size(TG_TYPE_Q4_0) == 18 && tg_blck_size(TG_TYPE_Q4_0) == 32, "q4_0: 18 bytes per 32");
    CHECK(tg_type_traits(TG_TYPE_Q4_0)->is_quantized && !tg_type_traits(TG_TYPE_F16)->is_quantized, "is_quantized flags");
    CHECK(tg_type_traits(TG_TYPE_I32) && tg_type_traits(TG_TYPE_I32)->to_float == NULL, "i32 supported, no to_float");
    const int bad[] = { 4, 5, 16, 17, 18, 19, 21, 22, 29, -1, 31, 1000 };
    bool all_null = true;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        all_null &= tg_type_traits((enum tg_type) bad[i]) == NULL && !tg_type_supported(bad[i]) &&
                    strcmp(tg_type_name((enum tg_type) bad[i]), "unknown") == 0;
    }
    CHECK(all_null, "unsupported ids (4, 5, 16..19, 21, 22, 29, -1, 31, 1000): NULL traits, name 'unknown'");
    CHECK(tg_row_size(TG_TYPE_Q8_0, 64) == 68, "row size q8_0 x64 = 68 (got %zu)", tg_row_size(TG_TYPE_Q8_0, 64));
    CHECK(tg_row_size(TG_TYPE_Q4_0, 64) == 36, "row size q4_0 x64 = 36");
    CHECK(tg_row_size(TG_TYPE_F16, 10) == 20 && tg_row_size(TG_TYPE_BF16, 3) == 6, "row size f16 x10 = 20, bf16 x3 = 6");
    CHECK(tg_row_size((enum tg_type) 5, 32) == 0, "row size of an unsupported type is 0");
}

static void test_fp16(void) {
    struct { float f; uint16_t h; const char * what; } cases[] = {
        { 1.0f, 0x3C00, "1.0" }, { -2.0f, 0xC000, "-2.0" }, { 0.0f, 0x0000, "+0" }, { -0.0f, 0x8000, "-0" },
        { 65504.0f, 0x7BFF, "max finite 65504" }, { 65519.0f, 0x7BFF, "65519 rounds down" },
        { 65520.0f, 0x7C00, "65520 (tie) rounds to Inf" }, { INFINITY, 0x7C00, "+Inf" }, { -INFINITY, 0xFC00, "-Inf" },
        { 0x1p-24f, 0x0001, "smallest subnormal 2^-24" }, { 0x1p-25f, 0x0000, "2^-25 ties to even 0" },
        { 0x1.000002p-25f, 0x0001, "just above 2^-25 rounds up" }, { 0x3p-25f, 0x0002, "3*2^-25 ties to even 2" },
        { 0x1p-14f, 0x0400, "smallest normal 2^-14" }, { 0x3FFp-24f, 0x03FF, "largest subnormal" },
        { 1.0f + 0x1p-11f, 0x3C00, "1+2^-11 ties to even 1.0" }, { 1.0f + 0x3p-11f, 0x3C02, "1+3*2^-11 ties to even" },
        { 1e-10f, 0x0000, "1e-10 underflows to 0" }, { 0.1f, 0x2E66, "0.1" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint16_t h = tg_fp32_to_fp16(cases[i].f);
        CHECK(h == cases[i].h, "fp32->fp16 %s: 0x%04X (want 0x%04X)", cases[i].what, h, cases[i].h);
    }
    uint16_t hn = tg_fp32_to_fp16(NAN);
    CHECK((hn & 0x7C00) == 0x7C00 && (hn & 0x3FF) != 0, "NaN -> fp16 NaN (0x%04X)", hn);
    uint16_t hs = tg_fp32_to_fp16(from_bits(0x7F800001u));
    CHECK((hs & 0x7C00) == 0x7C00 && (hs & 0x3FF) != 0, "signalling NaN with low payload stays NaN (0x%04X)", hs);
    CHECK(isnan(tg_fp16_to_fp32(0x7E00)) && isinf(tg_fp16_to_fp32(0xFC00)) && tg_fp16_to_fp32(0xFC00) < 0, "fp16 NaN/-Inf -> fp32");
    CHECK(tg_fp16_to_fp32(0x0001) == 0x1p-24f && tg_fp16_to_fp32(0x8001) == -0x1p-24f, "fp16 subnormals -> fp32 exact");
    // exhaustive round trip
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tg_fp16_to_fp32((uint16_t) h);
        uint16_t back = tg_fp32_to_fp16(f);
        bool is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
        if (is_nan ? !(isnan(f) && (back & 0x7C00) == 0x7C00 && (back & 0x3FF)) : back != h) bad++;
    }
    CHECK(bad == 0, "all 65536 fp16 values round-trip through fp32 (%d mismatches)", bad);
    // midpoints between consecutive positive finite fp16 values round to the even one
    int tie_bad = 0;
    for (uint32_t h = 0; h < 0x7BFF; h++) {
        double lo = tg_fp16_to_fp32((uint16_t) h), hi = tg_fp16_to_fp32((uint16_t) (h + 1));
        float mid = (float) ((lo + hi) / 2);  // exact in f32
        uint16_t want = (h & 1) ? (uint16_t) (h + 1) : (uint16_t) h;
        if (tg_fp32_to_fp16(mid) != want) tie_bad++;
        if (tg_fp32_to_fp16(nextafterf(mid, INFINITY)) != h + 1) tie_bad++;
        if (tg_fp32_to_fp16(nextafterf(mid, 0.0f)) != h) tie_bad++;
    }
    CHECK(tie_bad == 0, "every fp16 midpoint ties to even, neighbours round to nearest (%d mismatches)", tie_bad);
    // row conversion (may use F16C) equals the scalar one, NaNs included
    enum { N = 4099 };
    float * x = malloc(N * sizeof(float));
    uint16_t * y = malloc(N * sizeof(uint16_t));
    float * z = malloc(N * sizeof(float));
    uint32_t s = 12345;
    for (int i = 0; i < N; i++) { s = s * 1664525u + 1013904223u; x[i] = from_bits(s); }
    x[0] = NAN; x[1] = INFINITY; x[2] = 65520.0f; x[3] = 0x3p-25f;
    tg_fp32_to_fp16_row(x, y, N);
    int row_bad = 0;
    for (int i = 0; i < N; i++) if (y[i] != tg_fp32_to_fp16(x[i])) row_bad++;
    CHECK(row_bad == 0, "fp32->fp16 row equals scalar on %d random bit patterns (%d mismatches)", N, row_bad);
    tg_fp16_to_fp32_row(y, z, N);
    row_bad = 0;
    for (int i = 0; i < N; i++) if (to_bits(z[i]) != to_bits(tg_fp16_to_fp32(y[i]))) row_bad++;
    CHECK(row_bad == 0, "fp16->fp32 row equals scalar (%d mismatches)", row_bad);
    free(x); free(y); free(z);
}

static void test_bf16(void) {
    CHECK(tg_fp32_to_bf16(1.0f) == 0x3F80, "bf16(1.0) = 0x3F80");
    CHECK(tg_fp32_to_bf16(from_bits(0x3F808000u)) == 0x3F80, "bf16 tie rounds to even (down)");
    CHECK(tg_fp32_to_bf16(from_bits(0x3F818000u)) == 0x3F82, "bf16 tie rounds to even (up)");
    CHECK(tg_fp32_to_bf16(from_bits(0x3F808001u)) == 0x3F81, "bf16 above tie rounds up");
    CHECK(tg_fp32_to_bf16(INFINITY) == 0x7F80 && tg_fp32_to_bf16(-INFINITY) == 0xFF80, "bf16 +-Inf");
    CHECK(tg_fp32_to_bf16(from_bits(0x7F7FFFFFu)) == 0x7F80, "bf16 of FLT_MAX rounds to Inf");
    tg_bf16_t n = tg_fp32_to_bf16(from_bits(0x7F800001u));
    CHECK((n & 0x7F80) == 0x7F80 && (n & 0x7F), "NaN with low payload stays NaN in bf16 (0x%04X)", n);
    CHECK(tg_fp32_to_bf16(from_bits(0x00010000u)) == 0x0001, "bf16 keeps f32 subnormals");
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tg_bf16_to_fp32((uint16_t) h);
        bool is_nan = (h & 0x7F80) == 0x7F80 && (h & 0x7F);
        tg_bf16_t back = tg_fp32_to_bf16(f);
        if (is_nan ? !isnan(tg_bf16_to_fp32(back)) : back != h) bad++;
    }
    CHECK(bad == 0, "all 65536 bf16 values round-trip (%d mismatches)", bad);
    float x[5] = { 1.0f, -3.5f, 0.1f, 1e30f, -0.0f }, y[5];
    tg_bf16_t b[5];
    tg_fp32_to_bf16_row(x, b, 5);
    tg_bf16_to_fp32_row(b, y, 5);
    CHECK(y[0] == 1.0f && y[1] == -3.5f && fabsf(y[2] - 0.1f) < 1e-3f && fabsf(y[3] / 1e30f - 1) < 1e-2f && signbit(y[4]),
          "bf16 row round trip");
}

// Round-trip errors of n values (blocks of 32) relative to each block's
// largest magnitude: how many exceed bound; *worst gets the largest.
static int block_errors(const float * r, const float * d, int n, float bound, float * worst) {
    int bad = 0;
    for (int blk = 0; blk < n / 32; blk++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(r[blk * 32 + j]));
        for (int j = 0; j < 32; j++) {
            float e = fabsf(r[blk * 32 + j] - d[blk * 32 + j]) / amax;
            *worst = fmaxf(*worst, e);
            if (e > bound) bad++;
        }
    }
    return bad;
}

static void test_q8_0(void) {
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float) (j * 8 - 127);   // -127 .. 121, amax 127 -> d = 1
    x[5] = 2.5f; x[6] = -2.5f; x[7] = 63.5f;
    tg_block_q8_0 b;
    tg_quantize_row_q8_0(x, &b, 32);
    unsigned char bytes[34];
    memcpy(bytes, &b, 34);
    bool ok = bytes[0] == 0x00 && bytes[1] == 0x3C;
    for (int j = 0; j < 32; j++) {
        int want = j == 5 ? 2 : j == 6 ? -2 : j == 7 ? 64 : j * 8 - 127;  // halves round to even
        ok &= (int8_t) bytes[2 + j] == want;
    }
    CHECK(ok, "q8_0 block bytes: d = fp16(1.0) = 00 3C little endian, qs = round(x), halves to even (2.5 -> 2, -2.5 -> -2, 63.5 -> 64)");
    float y[32];
    tg_dequantize_row_q8_0(&b, y, 32);
    CHECK(y[0] == -127.0f && y[5] == 2.0f && y[31] == 121.0f, "q8_0 dequantize: d * q");
    // zero block
    float zero[32] = { 0 };
    tg_quantize_row_q8_0(zero, &b, 32);
    memcpy(bytes, &b, 34);
    int nz = 0;
    for (int j = 0; j < 34; j++) nz += bytes[j] != 0;
    CHECK(nz == 0, "q8_0 of zeros is all-zero bytes");
    // error bound on random data, several blocks
    enum { N = 32 * 64 };
    float * r = malloc(N * sizeof(float)), * d = malloc(N * sizeof(float));
    tg_block_q8_0 * q = malloc(N / 32 * sizeof(*q));
    uint32_t s = 7;
    for (int i = 0; i < N; i++) { s = s * 1664525u + 1013904223u; r[i] = ((s >> 8) / 16777216.0f * 2 - 1) * (1 + i / 256); }
    tg_quantize_row_q8_0(r, q, N);
    tg_type_traits(TG_TYPE_Q8_0)->to_float(q, d, N);
    float worst = 0;
    int bad = block_errors(r, d, N, 0.5f / 127 + 1e-3f, &worst);
    CHECK(bad == 0, "q8_0 round trip error <= amax/254 (+fp16 scale rounding): worst %.5f of amax", (double) worst);
    free(r); free(d); free(q);
}

static void test_q4_0(void) {
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float) ((j % 16) - 8);   // -8..7, max magnitude -8 -> d = 1
    x[31] = 7.9f;                                                  // 16.4 -> 16 -> clamped to 15
    tg_block_q4_0 b;
    tg_quantize_row_q4_0(x, &b, 32);
    unsigned char bytes[18];
    memcpy(bytes, &b, 18);
    bool ok = bytes[0] == 0x00 && bytes[1] == 0x3C;
    for (int j = 0; j < 16; j++) {
        int lo = j, hi = j == 15 ? 15 : j;
        ok &= bytes[2 + j] == (lo | (hi << 4));
    }
    CHECK(ok, "q4_0 block bytes: d = max/-8 = 1 (00 3C), q = x + 8 in nibbles (low = first half), clamp at 15");
    // positive max: d = max / -8 is negative
    for (int j = 0; j < 32; j++) x[j] = 0.0f;
    x[0] = 8.0f; x[1] = -7.0f; x[16] = 4.0f;
    tg_quantize_row_q4_0(x, &b, 32);
    memcpy(bytes, &b, 18);
    CHECK(bytes[0] == 0x00 && bytes[1] == 0xBC, "q4_0 d = fp16(-1.0) when the largest magnitude is +8");
    CHECK((bytes[2] & 0xF) == 0 && (bytes[3] & 0xF) == 15 && (bytes[2] >> 4) == 4 && (bytes[4] & 0xF) == 8,
          "q4_0 nibbles: 8 -> 0, -7 -> 15, 4 -> 4, 0 -> 8");
    float y[32];
    tg_dequantize_row_q4_0(&b, y, 32);
    CHECK(y[0] == 8.0f && y[1] == -7.0f && y[16] == 4.0f && y[2] == 0.0f, "q4_0 dequantize restores exact values");
    enum { N = 32 * 64 };
    float * r = malloc(N * sizeof(float)), * d = malloc(N * sizeof(float));
    tg_block_q4_0 * q = malloc(N / 32 * sizeof(*q));
    uint32_t s = 99;
    for (int i = 0; i < N; i++) { s = s * 1664525u + 1013904223u; r[i] = ((s >> 8) / 16777216.0f * 2 - 1) * 3; }
    tg_type_traits(TG_TYPE_Q4_0)->from_float(r, q, N);
    tg_dequantize_row_q4_0(q, d, N);
    float worst = 0;
    int bad = block_errors(r, d, N, 1.0f / 8 + 1e-3f, &worst);
    CHECK(bad == 0, "q4_0 round trip error <= amax/8: worst %.4f of amax", (double) worst);
    free(r); free(d); free(q);
}

// Converts `xname` (f32) with type's from_float and compares the bytes with
// `refname`, written by the reference runtime.
static void check_reference(const char * xname, const char * refname, enum tg_type type) {
    size_t nx = 0, nr = 0;
    float * x = tg_test_read_data(xname, &nx);
    unsigned char * ref = tg_test_read_data(refname, &nr);
    int64_t n = (int64_t) (nx / sizeof(float));
    bool sized = x && ref && nr == tg_row_size(type, n);
    size_t diff = 0, first = 0;
    if (sized) {
        unsigned char * mine = malloc(nr);
        tg_type_traits(type)->from_float(x, mine, n);
        for (size_t i = 0; i < nr; i++) if (mine[i] != ref[i] && diff++ == 0) first = i;
        free(mine);
    }
    CHECK(sized && diff == 0, "%s of %s (%lld values) byte-exact with the reference %s: %zu of %zu bytes differ (first at %zu)",
          tg_type_name(type), xname, (long long) n, refname, diff, nr, first);
    free(x); free(ref);
}

static void test_reference(void) {
    check_reference("quant-ref/attn_q.f32", "quant-ref/attn_q.f16", TG_TYPE_F16);
    check_reference("quant-ref/attn_q.f32", "quant-ref/attn_q.q8_0", TG_TYPE_Q8_0);
    check_reference("quant-ref/attn_q.f32", "quant-ref/attn_q.q4_0", TG_TYPE_Q4_0);
    check_reference("quant-ref/ties.f32", "quant-ref/ties.q8_0", TG_TYPE_Q8_0);
}

int main(void) {
    test_traits();
    test_fp16();
    test_bf16();
    test_q8_0();
    test_q4_0();
    test_reference();
    return tg_check_finish("test_types");
}
