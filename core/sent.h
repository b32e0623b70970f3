/* sent.h: the awaitable AsyncSends.send returns (core/aiofutures.pyx): done at once, `await` gives its value (the
 * record's asyncio future) or raises its error, with no frame, no StopIteration and no Python-level call: am_send
 * answers PYGEN_RETURN (CPython >= 3.10 uses it for await / yield from). It also has send / throw / close and
 * __await__, so collections.abc.Coroutine recognises it: asyncio.create_task and ensure_future take it as they take
 * the coroutine of an `async def send`. Not GC-tracked: it holds one object (a future or an exception) and nothing
 * refers back to it. */
#include <Python.h>

typedef struct {
    PyObject_HEAD
    PyObject *value;     /* what await returns (owned), NULL once taken */
    PyObject *error;     /* what await raises instead (owned), or NULL */
} CyKafkaSent;

static PyTypeObject CyKafkaSent_Type;

static PyObject *cyk_sent_new(PyObject *value, PyObject *error) {
    CyKafkaSent *sent = PyObject_New(CyKafkaSent, &CyKafkaSent_Type);
    if (sent == NULL) return NULL;
    Py_XINCREF(value);
    Py_XINCREF(error);
    sent->value = value;
    sent->error = error;
    return (PyObject *)sent;
}

static void cyk_sent_dealloc(PyObject *self) {
    CyKafkaSent *sent = (CyKafkaSent *)self;
    Py_XDECREF(sent->value);
    Py_XDECREF(sent->error);
    PyObject_Free(self);
}

static PyObject *cyk_sent_await(PyObject *self) {
    Py_INCREF(self);
    return self;
}

/* 1: *result is the value (returned); 0: the error is set (raised) */
static int cyk_sent_take(CyKafkaSent *sent, PyObject **result) {
    PyObject *error = sent->error;
    if (error != NULL) {
        sent->error = NULL;
        Py_CLEAR(sent->value);
        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
        Py_DECREF(error);
        return 0;
    }
    *result = sent->value != NULL ? sent->value : Py_NewRef(Py_None);
    sent->value = NULL;
    return 1;
}

static PySendResult cyk_sent_am_send(PyObject *self, PyObject *arg, PyObject **result) {
    if (cyk_sent_take((CyKafkaSent *)self, result)) return PYGEN_RETURN;
    *result = NULL;
    return PYGEN_ERROR;
}

/* the iterator protocol's ending: StopIteration carrying the value (asyncio's Task calls coro.send(None)) */
static PyObject *cyk_sent_stop(PyObject *self) {
    PyObject *value, *stop;
    if (!cyk_sent_take((CyKafkaSent *)self, &value)) return NULL;
    stop = PyObject_CallOneArg(PyExc_StopIteration, value);
    Py_DECREF(value);
    if (stop == NULL) return NULL;
    PyErr_SetObject(PyExc_StopIteration, stop);
    Py_DECREF(stop);
    return NULL;
}

static PyObject *cyk_sent_send(PyObject *self, PyObject *arg) {
    return cyk_sent_stop(self);
}

static PyObject *cyk_sent_throw(PyObject *self, PyObject *args) {
    PyObject *type, *value = NULL, *tb = NULL;
    CyKafkaSent *sent = (CyKafkaSent *)self;
    if (!PyArg_UnpackTuple(args, "throw", 1, 3, &type, &value, &tb)) return NULL;
    Py_CLEAR(sent->value);
    Py_CLEAR(sent->error);
    if (PyExceptionInstance_Check(type)) {
        PyErr_SetObject((PyObject *)Py_TYPE(type), type);
    } else if (PyExceptionClass_Check(type)) {
        if (value != NULL && value != Py_None) PyErr_SetObject(type, value);
        else PyErr_SetNone(type);
    } else {
        PyErr_SetString(PyExc_TypeError, "exceptions must be classes or instances deriving from BaseException");
    }
    return NULL;
}

static PyObject *cyk_sent_close(PyObject *self, PyObject *unused) {
    Py_CLEAR(((CyKafkaSent *)self)->value);
    Py_CLEAR(((CyKafkaSent *)self)->error);
    Py_RETURN_NONE;
}

static PyMethodDef cyk_sent_methods[] = {
    {"send", (PyCFunction)cyk_sent_send, METH_O, "Ends at once: StopIteration carrying the future (or raises)."},
    {"throw", (PyCFunction)cyk_sent_throw, METH_VARARGS, "Raises the exception given."},
    {"close", (PyCFunction)cyk_sent_close, METH_NOARGS, "Drops the value."},
    {NULL, NULL, 0, NULL},
};

static PyAsyncMethods cyk_sent_async = {
    .am_await = cyk_sent_await,
    .am_send = cyk_sent_am_send,
};

static PyTypeObject CyKafkaSent_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cykafka.core._core.Sent",
    .tp_basicsize = sizeof(CyKafkaSent),
    .tp_dealloc = cyk_sent_dealloc,
    .tp_as_async = &cyk_sent_async,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "What AsyncProducer.send returns: awaitable once, giving the record's asyncio future at once.",
    .tp_iter = cyk_sent_await,
    .tp_iternext = cyk_sent_stop,
    .tp_methods = cyk_sent_methods,
};

static int cyk_sent_ready(void) {
    return PyType_Ready(&CyKafkaSent_Type);
}

static PyObject *cyk_sent_type(void) {
    return Py_NewRef((PyObject *)&CyKafkaSent_Type);
}

/* An instance of a tuple subclass without __dict__ (a NamedTuple) holding items[0:n], as tuple.__new__(type, items)
 * makes it, without its Python-level __new__. */
static PyObject *cyk_tuple_as(PyObject *type, PyObject *const *items, Py_ssize_t n) {
    PyObject *made = ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, n);
    Py_ssize_t i;
    if (made == NULL) return NULL;
    for (i = 0; i < n; i++) PyTuple_SET_ITEM(made, i, Py_NewRef(items[i]));
    return made;
}

static int cyk_is_plain_tuple_type(PyObject *type) {
    PyTypeObject *t = (PyTypeObject *)type;
    return PyType_Check(type) && PyType_IsSubtype(t, &PyTuple_Type) && t->tp_basicsize == PyTuple_Type.tp_basicsize
           && t->tp_itemsize == PyTuple_Type.tp_itemsize && t->tp_dictoffset == 0;
}
