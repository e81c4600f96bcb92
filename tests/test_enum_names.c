// test_enum_names.c - every value of the engine's named enums (ops, types,
// statuses, placement causes) has a non-empty, unique name, the enum and the
// names come from the same .def list (counts agree), and out-of-range values
// get the documented placeholder instead of NULL.
#include "check.h"
#include "tg/core.h"
#include "tg/sched.h"
#include "tg/status.h"
#include "tg/types.h"

#include <stdbool.h>
#include <string.h>

// Checks names[0..n) are non-NULL, non-empty and pairwise distinct.
static void check_names(const char * what, const char * const * names, int n) {
    for (int i = 0; i < n; i++) {
        CHECK(names[i] != NULL, "%s %d has a name", what, i);
        if (!names[i]) continue;
        CHECK(names[i][0] != '\0', "%s %d has a non-empty name", what, i);
        for (int j = 0; j < i; j++)
            if (names[j]) CHECK(strcmp(names[i], names[j]) != 0, "%s %d and %d share the name '%s'", what, j, i, names[i]);
    }
}

// The .def lists, expanded here independently of the engine's tables.
static const int def_ops[] = {
#define TG_OP_DEF(e, name) TG_OP_##e,
#include "tg/ops.def"
#undef TG_OP_DEF
};
static const char * const def_op_names[] = {
#define TG_OP_DEF(e, name) name,
#include "tg/ops.def"
#undef TG_OP_DEF
};
static const int def_types[] = {
#define TG_TYPE_DEF(e, id, ...) TG_TYPE_##e,
#include "tg/types.def"
#undef TG_TYPE_DEF
};
static const int def_statuses[] = {
#define TG_STATUS_DEF(e, name) e,
#include "tg/status.def"
#undef TG_STATUS_DEF
};
static const int def_causes[] = {
#define TG_CAUSE_DEF(e, name) TG_CAUSE_##e,
#include "tg/causes.def"
#undef TG_CAUSE_DEF
};
#define N(a) ((int) (sizeof(a) / sizeof((a)[0])))

int main(void) {
    // ops: values 0..COUNT-1 in list order, named by the list's names
    CHECK(N(def_ops) == TG_OP_COUNT, "ops.def has %d lines for %d ops", N(def_ops), TG_OP_COUNT);
    const char * ops[TG_OP_COUNT];
    for (int i = 0; i < TG_OP_COUNT; i++) {
        ops[i] = tg_op_name((enum tg_op) i);
        CHECK(def_ops[i] == i, "op line %d has value %d", i, def_ops[i]);
        CHECK(ops[i] && strcmp(ops[i], def_op_names[i]) == 0, "op %d is named '%s' (list says '%s')", i,
              ops[i] ? ops[i] : "(null)", def_op_names[i]);
    }
    check_names("op", ops, TG_OP_COUNT);
    CHECK(strcmp(tg_op_name(TG_OP_MUL_MAT), "MUL_MAT") == 0, "MUL_MAT keeps its name");
    CHECK(strcmp(tg_op_name(TG_OP_COUNT), "UNKNOWN") == 0 && strcmp(tg_op_name((enum tg_op) -1), "UNKNOWN") == 0,
          "out-of-range ops are UNKNOWN");

    // types: every listed id is supported, has traits and a unique name; ids
    // not listed are unsupported and named "unknown"
    const char * types[TG_TYPE_COUNT];
    int n_types = 0;
    bool listed[TG_TYPE_COUNT] = { false };
    for (int i = 0; i < N(def_types); i++) {
        int t = def_types[i];
        CHECK(t >= 0 && t < TG_TYPE_COUNT, "type id %d is below TG_TYPE_COUNT", t);
        if (t < 0 || t >= TG_TYPE_COUNT) continue;
        CHECK(!listed[t], "type id %d listed once", t);
        listed[t] = true;
        CHECK(tg_type_supported(t), "type %d is supported", t);
        const struct tg_type_traits * tt = tg_type_traits((enum tg_type) t);
        CHECK(tt && tt->blck_size > 0 && tt->type_size > 0, "type %d has traits", t);
        CHECK(tt && tt->name && strcmp(tt->name, tg_type_name((enum tg_type) t)) == 0, "type %d: traits name = tg_type_name", t);
        types[n_types++] = tg_type_name((enum tg_type) t);
    }
    check_names("type", types, n_types);
    for (int t = 0; t < TG_TYPE_COUNT; t++)
        if (!listed[t]) {
            CHECK(!tg_type_supported(t), "unlisted type id %d is unsupported", t);
            CHECK(strcmp(tg_type_name((enum tg_type) t), "unknown") == 0, "unlisted type id %d is 'unknown'", t);
        }
    CHECK(strcmp(tg_type_name(TG_TYPE_COUNT), "unknown") == 0, "TG_TYPE_COUNT is 'unknown'");
    CHECK(strcmp(tg_type_name(TG_TYPE_Q8_0), "q8_0") == 0 && tg_row_size(TG_TYPE_Q8_0, 64) == 68, "q8_0 traits");

    // statuses
    CHECK(N(def_statuses) == TG_STATUS_COUNT && TG_OK == 0, "status.def has one line per status, TG_OK first");
    const char * st[TG_STATUS_COUNT];
    for (int i = 0; i < TG_STATUS_COUNT; i++) {
        st[i] = tg_status_str((enum tg_status) i);
        CHECK(def_statuses[i] == i, "status line %d has value %d", i, def_statuses[i]);
    }
    check_names("status", st, TG_STATUS_COUNT);
    CHECK(strcmp(tg_status_str(TG_ERR_SHAPE), "shape error") == 0, "TG_ERR_SHAPE is 'shape error'");
    CHECK(strcmp(tg_status_str(TG_STATUS_COUNT), "unknown status") == 0, "out-of-range status");

    // placement causes
    CHECK(N(def_causes) == TG_CAUSE_COUNT, "causes.def has one line per cause");
    const char * cs[TG_CAUSE_COUNT];
    for (int i = 0; i < TG_CAUSE_COUNT; i++) {
        cs[i] = tg_cause_name((enum tg_cause) i);
        CHECK(def_causes[i] == i, "cause line %d has value %d", i, def_causes[i]);
        CHECK(cs[i] && strcmp(cs[i], "?") != 0, "cause %d has its own name", i);
    }
    check_names("cause", cs, TG_CAUSE_COUNT);
    CHECK(strcmp(tg_cause_name(TG_CAUSE_WEIGHT_BUFFER), "weight_buffer") == 0, "weight_buffer");
    CHECK(strcmp(tg_cause_name(TG_CAUSE_COUNT), "?") == 0, "out-of-range cause is '?'");

    return tg_check_finish("test_enum_names");
}
