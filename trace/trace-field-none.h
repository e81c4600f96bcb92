// trace-field-none.h - private to records.h: a generator pass that ignores
// every field (no include guard; forgets the previous pass's field macros).
#include "trace-field-undef.h"
#define TRACE_FIELD_U16(name, n)
#define TRACE_FIELD_U32(name, n)
#define TRACE_FIELD_I32(name, n)
#define TRACE_FIELD_U64(name, n)
#define TRACE_FIELD_I64(name, n)
#define TRACE_FIELD_F64(name, n)
#define TRACE_FIELD_AI32(name, n)
#define TRACE_FIELD_AI64(name, n)
#define TRACE_FIELD_AU64(name, n)
#define TRACE_FIELD_AF64(name, n)
#define TRACE_FIELD_NAME(name, n)
#define TRACE_FIELD_RES(name, n)
#define TRACE_FIELD_SUB(name, tag)
#define TRACE_FIELD_STR(name, n)
#define TRACE_FIELD_X_U32(name, n)
#define TRACE_FIELD_X_U64(name, n)
