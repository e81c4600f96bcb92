// trace-field-undef.h - private to records.h: forgets the per-kind field
// macros of a generator pass (included between passes; no include guard).
#undef TRACE_FIELD_U16
#undef TRACE_FIELD_U32
#undef TRACE_FIELD_I32
#undef TRACE_FIELD_U64
#undef TRACE_FIELD_I64
#undef TRACE_FIELD_F64
#undef TRACE_FIELD_AI32
#undef TRACE_FIELD_AI64
#undef TRACE_FIELD_AU64
#undef TRACE_FIELD_AF32
#undef TRACE_FIELD_AF64
#undef TRACE_FIELD_NAME
#undef TRACE_FIELD_RES
#undef TRACE_FIELD_SUB
#undef TRACE_FIELD_STR
#undef TRACE_FIELD_X_U32
#undef TRACE_FIELD_X_U64
