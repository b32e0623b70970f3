# trace_gate.pxd: what trace_gate.pyx declares (the gate in front of send(); the module-level gate is sendpath's).

cdef class TraceGate:
    cdef object hook                    # the instrumentation's send, or None (disarmed)
    cdef bint always                    # every send goes to the hook
    cdef object context_var             # OpenTelemetry's runtime context (a ContextVar of a Context dict)
    cdef object span_key                # the current span's key in that Context
    cdef dict trace_globals             # opentelemetry.trace's module globals (_TRACER_PROVIDER)
    cdef tuple silent_providers         # provider types that record nothing (the API's NoOp and Proxy)

    cdef bint wants(self)
