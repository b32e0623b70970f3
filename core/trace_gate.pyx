# TraceGate: whether Producer.send goes through the OpenTelemetry instrumentation's Python send, decided in C so an
# instrumented producer with nothing to trace pays ~50 ns, not a Python call (issue 30's overhead goal).
# cykafka/instrumentation arms it (arm_send_trace) with its send hook and OpenTelemetry's state: the runtime context's
# ContextVar, the current-span key, and opentelemetry.trace's module globals (the global tracer provider).
# The decision: a provider that records spans (given to instrument(), or set globally) → the hook, always; the API
# alone → the hook only while the current context holds a span (the caller's trace, whose context the hook injects).
# The hook decides the rest in Python (a span's validity, whether it records).

from cpython.contextvars cimport get_value_no_default


cdef class TraceGate:

    cdef bint wants(self):
        """True when send() must call the hook (module comment)."""
        if self.hook is None:
            return False
        if self.always:
            return True
        provider = self.trace_globals.get("_TRACER_PROVIDER")
        if provider is not None and not isinstance(provider, self.silent_providers):
            return True
        context = get_value_no_default(self.context_var, None)
        return context is not None and self.span_key in context


cdef TraceGate _send_trace_gate = TraceGate()


def send_trace_wanted():
    """Whether a send now must be traced (the gate's decision, for the sends that are not the compiled send():
    AsyncProducer.send's wrapper)."""
    return _send_trace_gate.wants()


def arm_send_trace(hook, bint always=False, context_var=None, span_key=None, dict trace_globals=None,
                   tuple silent_providers=()):
    """send() calls hook(producer, topic, value, key, partition, timestamp_ms, headers, on_delivery) instead of its
    own path when the gate wants it (module comment); hook None disarms. always: every send (a recording provider was
    given, or OpenTelemetry's context is not the ContextVar one the gate can read)."""
    gate = _send_trace_gate
    if hook is not None and not always and (context_var is None or trace_globals is None):
        raise InvalidArgumentError("arm_send_trace: context_var and trace_globals are needed unless always")
    gate.hook = hook
    gate.always = always
    gate.context_var = context_var
    gate.span_key = span_key
    gate.trace_globals = trace_globals
    gate.silent_providers = silent_providers
