# The network threads' system calls (the compiled shell; adapters/socket_transport.py calls them):
# - wait_events: the blocking wait of a network thread (epoll_wait on its selector's epoll set);
# - sock_send / sock_recv_into: its non-blocking socket writes and reads;
# - yield_to_network: where the application's thread holds no cykafka lock (send(), send_batch(), poll()), it hands
#   the GIL to a network thread whose system call ended;
# - the fetch pumps' side of a wait (_pump_read): a consumer's connection with an armed FetchPump (fetch_pump.pyx)
#   that turns readable is read into the pump's stash before the GIL is asked for, and when the armed answer is
#   whole there and the pump fires, the next Fetch is written at once: a consumer's Fetch cycle does not wait for
#   the GIL (issue 32). The transport takes the stash and the fired request afterwards (take_stash, take_fired).
# Each releases the GIL for the system call, as Python's own socket methods do (an event loop or another thread runs
# meanwhile), and marks the thread as wanting it back once the call ended. Why: while the application's thread runs
# Python without pause (a computation, a spin between sends), CPython hands the GIL back to a thread that wants it
# only after a whole switch interval (sys.getswitchinterval(), 5 ms), and one record's way from send() to its
# acknowledgement crossed several such waits. With the mark, the application's next send() or poll() once the thread
# has wanted the GIL for HANDOFF_AFTER_US releases the GIL until the network thread holds it (at most HANDOFF_MAX_US;
# at once when nobody waits). HANDOFF_AFTER_US lets a caller sending flat out append a few more records per turn of
# the sender (bench/e2e_bench.py, send() records/s: 0 cost 12%, 200 µs nothing); a consumer's poll() hands over
# at once (it takes what the network thread files: waiting helps nothing). A wait with events already ready returns
# them keeping the GIL (a busy network thread gives it up only where it would block). An application thread that
# never calls cykafka gives the GIL back only after the switch interval: when a network thread's wait for it lasted
# FORCED_WAIT_US or more (CPython forced the holder off), its socket reads and writes of the next KEEP_GIL_US keep
# the GIL, so that such a thread costs a record two forced switches (the sender's wake, the broker's answer), not one
# per system call (docs/performance.md, "The busy and the spinning caller"), and its wait for an answer the caller says
# is due within ANSWER_WAIT_MAX_US (a Produce answer, going by the connection's last) keeps it too, up to that long:
# one forced switch, the wake. (Keeping the GIL through every socket
# call instead, so that a network thread released it only in its wait, starved an asyncio loop on the same process:
# its lag p99 went from 5-9 to 16-37 ms in bench/async_bench.py; after a wait under FORCED_WAIT_US, the loop's own
# turns, the calls still let it go.) A network thread kept busy (its waits find events ready at once, so it gives the
# GIL up only in socket calls, where CPython lets it take the GIL back before a waiting thread wakes) holds it until
# the forced switch; for a client whose application thread runs an asyncio loop (wait_events' share_gil), it lets the
# GIL go for BUSY_YIELD_US after each BUSY_TURNS_MAX_US of such turns (_busy_turns_yield), so the loop's lag stays
# under the switch interval.

import os as _os

from libc.errno cimport EAGAIN, EINTR, errno
from libc.stdint cimport uint32_t
from libc.stdlib cimport realloc
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.pystate cimport PyThreadState_Get


cdef extern from *:
    """
    #include <sched.h>
    #include <sys/socket.h>
    #include <sys/uio.h>
    #include <sys/epoll.h>
    #include <poll.h>
    static int cyk_handoff_waiting = 0;         /* network threads whose system call ended, wanting the GIL */
    static long long cyk_handoff_since_us = 0;  /* when the first of them began to want it */
    static unsigned int cyk_handoff_taken = 0;  /* bumped by each such thread once it holds the GIL */
    static void* cyk_gil_keeper = NULL;  /* the thread state whose socket calls keep the GIL (read, set with it) */
    static long long cyk_keep_gil_until_us = 0;  /* until then */
    static long long cyk_wait_ended_us = 0;  /* when the last wait_events found its events (set with the GIL) */
    #define cyk_load(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
    #define cyk_add(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
    """
    int cyk_handoff_waiting
    long long cyk_handoff_since_us
    unsigned int cyk_handoff_taken
    void* cyk_gil_keeper
    long long cyk_keep_gil_until_us
    long long cyk_wait_ended_us
    int cyk_load(int*) nogil
    unsigned int cyk_load_u "cyk_load"(unsigned int*) nogil
    long long cyk_load_ll "cyk_load"(long long*) nogil
    void cyk_store_ll "__atomic_store_n"(long long*, long long, int) nogil
    int ATOMIC_SEQ_CST "__ATOMIC_SEQ_CST"
    int cyk_add(int*, int) nogil
    unsigned int cyk_add_u "cyk_add"(unsigned int*, unsigned int) nogil
    int sched_yield() nogil
    int EWOULDBLOCK
    ctypedef union epoll_data_t:
        int fd
    struct epoll_event:
        uint32_t events
        epoll_data_t data
    int epoll_wait(int epfd, epoll_event* events, int maxevents, int timeout) nogil
    uint32_t EPOLLIN, EPOLLOUT
    struct iovec:
        void* iov_base
        size_t iov_len
    ssize_t writev(int fd, const iovec* iov, int iovcnt) nogil
    ssize_t recv(int fd, void* buf, size_t n, int flags) nogil
    ssize_t send(int fd, const void* buf, size_t n, int flags) nogil
    int MSG_NOSIGNAL
    struct pollfd:
        int fd
        short events
        short revents
    short POLLIN
    int ppoll(pollfd* fds, unsigned long nfds, const timespec* timeout, const void* sigmask) nogil
    int nanosleep(const timespec* req, timespec* rem) nogil

cdef enum:
    HANDOFF_MAX_US = 1000
    HANDOFF_AFTER_US = 200  # a network thread wanting the GIL this long gets it at the caller's next call
    FORCED_WAIT_US = 2000  # a wait for the GIL this long: a thread that does not give it up holds it
    KEEP_GIL_US = 1000  # then the socket reads and writes of the next KEEP_GIL_US keep it
    ANSWER_WAIT_MAX_US = 1000  # and an answer due within this long is waited for keeping it (at most this long)
    BUSY_TURNS_MAX_US = 1000  # a sharing wait_events that found events ready at once this long lets the GIL go
    BUSY_YIELD_US = 50  # for this long (an event loop's thread, woken by the release, takes it meanwhile)
    SEND_MAX_BUFFERS = 64
    WAIT_MAX_EVENTS = 64
    WAIT_MAX_PUMPS = 64  # pumps a wait reads for (a consumer has one per broker it fetches from); more: the transport's
    PUMP_STASH_MIN_BYTES = 64 * 1024
    PUMP_STASH_MAX_BYTES = 1024 * 1024  # what a wait reads for a pump at most: a larger answer is the transport's to read
    PUMP_REST_WAIT_US = 1000  # how long a wait waits for the rest of an answer begun (a broker writes it in parts)
    WAIT_MAX_MS = 2147483647  # epoll_wait's int: a longer timeout waits this long
    EVENT_READ = 1  # selectors.EVENT_READ
    EVENT_WRITE = 2  # selectors.EVENT_WRITE


cdef inline int64_t _clock_us() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t>ts.tv_sec * 1000000 + ts.tv_nsec // 1000


cdef inline void yield_to_network(int64_t after_us=HANDOFF_AFTER_US) noexcept:
    """When a network thread whose system call ended has wanted the GIL for after_us: releases the GIL until it
    holds it (at most HANDOFF_MAX_US)."""
    if cyk_load(&cyk_handoff_waiting) == 0 or _clock_us() - cyk_load_ll(&cyk_handoff_since_us) < after_us:
        return
    cdef unsigned int seen = cyk_load_u(&cyk_handoff_taken)
    cdef int64_t until_us
    with nogil:
        until_us = _clock_us() + HANDOFF_MAX_US
        while (cyk_load_u(&cyk_handoff_taken) == seen and cyk_load(&cyk_handoff_waiting) > 0
               and _clock_us() < until_us):
            sched_yield()


cdef inline int64_t _wants_gil() noexcept nogil:
    """A network thread's system call ended: it wants the GIL back (yield_to_network hands it over). Returns when
    (for _holds_gil)."""
    cdef int64_t now_us = _clock_us()
    if cyk_add(&cyk_handoff_waiting, 1) == 1:
        cyk_store_ll(&cyk_handoff_since_us, now_us, ATOMIC_SEQ_CST)
    return now_us


cdef inline void _holds_gil(int64_t wanted_us) noexcept:
    """The thread holds the GIL again, wanted since wanted_us (_wants_gil). When it waited FORCED_WAIT_US or more,
    another thread held the GIL until CPython forced it off (a thread that never gives it up): every release costs a
    whole switch interval, so this thread's socket reads and writes of the next KEEP_GIL_US keep it (_keeps_gil);
    else they release it as before. The keeper and its deadline are read and set only with the GIL held: no
    thread-local storage (which would make the extension need the dynamic loader's __tls_get_addr)."""
    global cyk_gil_keeper, cyk_keep_gil_until_us
    cdef int64_t now_us = _clock_us()
    cyk_add(&cyk_handoff_waiting, -1)
    cyk_add_u(&cyk_handoff_taken, 1)
    if now_us - wanted_us >= FORCED_WAIT_US:
        cyk_gil_keeper = <void*>PyThreadState_Get()
        cyk_keep_gil_until_us = now_us + KEEP_GIL_US
    elif cyk_gil_keeper == <void*>PyThreadState_Get():
        cyk_gil_keeper = NULL


cdef inline bint _keeps_gil() noexcept:
    return cyk_gil_keeper == <void*>PyThreadState_Get() and _clock_us() < cyk_keep_gil_until_us


cdef inline bint _awaits_answer_keeping_gil(int epoll_fd, long long answer_due_us) noexcept:
    """For a thread whose socket calls keep the GIL (_keeps_gil) and that awaits an answer due within
    ANSWER_WAIT_MAX_US: waits that long at most (a wait_events timeout is 1 ms or more) for the epoll set to turn
    ready, keeping the GIL. True when something turned ready."""
    if not 0 <= answer_due_us <= ANSWER_WAIT_MAX_US or not _keeps_gil():
        return False
    cdef timespec wait
    wait.tv_sec = 0
    wait.tv_nsec = ANSWER_WAIT_MAX_US * 1000
    cdef pollfd watched
    watched.fd = epoll_fd
    watched.events = POLLIN
    return ppoll(&watched, 1, &wait, NULL) > 0


cdef void _pump_read(PumpCore* c, bint may_wait) noexcept nogil:
    """c's connection is readable: what it has goes to c's stash (up to PUMP_STASH_MAX_BYTES); when the armed answer
    is whole there, c decides, and a Fetch it fires is written now (what the socket does not take is the
    transport's to write, take_fired). A broker writes a Fetch answer in parts (its head, then the records from the
    log): with may_wait (the GIL released) the rest of an answer begun is waited for here, PUMP_REST_WAIT_US at
    most. A read that fails or finds the connection closed stops here: the transport's own read meets it."""
    cdef ssize_t got, written
    cdef Py_ssize_t room, pos = 0, size, capacity
    cdef unsigned char* grown
    cdef int32_t correlation_id
    cdef int64_t until_us = 0
    cdef pollfd watched
    cdef timespec wait
    if c.fd < 0 or not c.idle or c.fired or cyk_load(&c.armed) != 1:
        return
    while True:
        room = c.stash_capacity - c.stash_len
        if room == 0:
            if c.stash_capacity >= PUMP_STASH_MAX_BYTES:
                return
            capacity = max(c.stash_capacity * 2, PUMP_STASH_MIN_BYTES)
            grown = <unsigned char*>realloc(c.stash, capacity)
            if grown == NULL:
                return
            c.stash, c.stash_capacity = grown, capacity
            continue
        got = recv(c.fd, c.stash + c.stash_len, <size_t>room, 0)
        if got == 0 or (got < 0 and errno != EAGAIN and errno != EWOULDBLOCK and errno != EINTR):
            return
        if got > 0:
            c.stash_len += got
            if got == room:
                continue  # more may be there
        while c.stash_len - pos >= 8:  # the frames read, in order: the armed answer's, once whole, fires
            size = <int32_t>_get_be32(c.stash + pos)
            if size < 4 or size > PUMP_STASH_MAX_BYTES:
                return
            if c.stash_len - pos - 4 < size:
                break
            correlation_id = <int32_t>_get_be32(c.stash + pos + 4)
            if correlation_id == c.answer_correlation_id:
                if c.fire(c, c.stash + pos + 4, size):
                    written = send(c.fd, c.out, <size_t>c.out_len, MSG_NOSIGNAL)
                    c.written = written if written > 0 else 0
                    c.fired = True
                return
            pos += 4 + size
        if c.stash_len == pos:
            return  # nothing of another frame begun
        if not may_wait:
            return
        # an answer begun: its rest is on its way
        if until_us == 0:
            until_us = _clock_us() + PUMP_REST_WAIT_US
        room = until_us - _clock_us()
        if room <= 0:
            return
        wait.tv_sec = room // 1000000
        wait.tv_nsec = (room % 1000000) * 1000
        watched.fd = c.fd
        watched.events = POLLIN
        if ppoll(&watched, 1, &wait, NULL) <= 0:
            return


cdef void _pumps_read(const epoll_event* ready, int count, PumpCore** cores, int pump_count,
                      bint may_wait) noexcept nogil:
    """_pump_read for each pump whose connection the wait found readable."""
    cdef int i, j
    for i in range(count if pump_count else 0):
        if ready[i].events & EPOLLIN:
            for j in range(pump_count):
                if cores[j].fd == ready[i].data.fd:
                    _pump_read(cores[j], may_wait)


def wait_events(int epoll_fd, long long timeout_ms, long long answer_due_us=-1, list pumps=None,
                bint share_gil=False):
    """wait_events(epoll_fd, timeout_ms, answer_due_us=-1, pumps=None, share_gil=False)\n--\n
    The ready descriptors of the epoll set epoll_fd as [(fd, selectors.EVENT_READ | EVENT_WRITE bits)], as
    selectors.EpollSelector.select reports them (at most WAIT_MAX_EVENTS; the rest are there on the next call). With
    timeout_ms > 0 (-1: no limit) and nothing ready yet it waits that long with the GIL released, which comes back
    through the application's next send() or poll() (module comment); what is ready at once is returned keeping it.
    answer_due_us (>= 0): an answer the caller awaits is due in that many microseconds; a thread whose socket calls
    keep the GIL (gil_kept()) waits for one due within ANSWER_WAIT_MAX_US (1 ms) keeping it, that long at most.
    pumps: FetchPumps attached to connections of this epoll set: one turned readable is read for before the GIL is
    asked for (_pump_read). share_gil: the client's application thread runs an asyncio event loop, which must not
    wait a switch interval (5 ms) for a network thread kept busy with events ready at once: _busy_turns_yield."""
    global cyk_wait_ended_us, _busy_thread
    cdef epoll_event ready[WAIT_MAX_EVENTS]
    cdef PumpCore* cores[WAIT_MAX_PUMPS]
    cdef int count, code, i, pump_count = 0
    cdef int64_t wanted_us = 0
    cdef int wait_ms = <int>min(timeout_ms, WAIT_MAX_MS) if timeout_ms >= 0 else -1
    cdef uint32_t mask
    cdef FetchPump pump
    if pumps:
        for pump in pumps:
            if pump_count == WAIT_MAX_PUMPS:
                break
            cores[pump_count] = &pump._c
            pump_count += 1
    count = epoll_wait(epoll_fd, ready, WAIT_MAX_EVENTS, 0)  # what is ready now, keeping the GIL
    code = errno
    if count == 0 and wait_ms != 0 and _awaits_answer_keeping_gil(epoll_fd, answer_due_us):
        count = epoll_wait(epoll_fd, ready, WAIT_MAX_EVENTS, 0)
        code = errno
    if count == 0 and wait_ms != 0:
        with nogil:
            count = epoll_wait(epoll_fd, ready, WAIT_MAX_EVENTS, wait_ms)
            code = errno
            _pumps_read(ready, count, cores, pump_count, True)
            wanted_us = _wants_gil()
        _holds_gil(wanted_us)
        cyk_wait_ended_us = wanted_us
        _busy_thread = NULL
    else:
        cyk_wait_ended_us = _clock_us()
        _pumps_read(ready, count, cores, pump_count, False)
        if share_gil:
            _busy_turns_yield(cyk_wait_ended_us)
    if count < 0:
        if code == EINTR:
            return []
        raise OSError(code, _os.strerror(code))
    events = []
    for i in range(count):
        mask = ready[i].events
        events.append((ready[i].data.fd, (EVENT_WRITE if mask & ~EPOLLIN else 0) | (EVENT_READ if mask & ~EPOLLOUT else 0)))
    return events


cdef void* _busy_thread = NULL  # the thread state whose waits found events ready at once since _busy_since_us
cdef int64_t _busy_since_us = 0  # (read and set with the GIL held, as cyk_gil_keeper)


cdef inline void _busy_turns_yield(int64_t now_us) noexcept:
    """A network thread whose waits found events ready at once (keeping the GIL) for BUSY_TURNS_MAX_US lets the GIL
    go for BUSY_YIELD_US, then wants it back as after a system call (the application's next call hands it over).
    Why: such a thread gives the GIL up only in its socket calls, and CPython lets the thread that releases it for a
    system call take it back before a waiting thread wakes, so an event loop on the same process waited for the
    forced switch, 5 ms and more (bench/async_bench.py on Apache Kafka at ~750k records/s: loop lag max 3.7-10.8 ms).
    The pause is a sleep, not a release and retake, for that reason."""
    global _busy_thread, _busy_since_us
    cdef void* me = <void*>PyThreadState_Get()
    cdef timespec pause
    cdef int64_t wanted_us
    if _busy_thread != me:
        _busy_thread = me
        _busy_since_us = now_us
        return
    if now_us - _busy_since_us < BUSY_TURNS_MAX_US:
        return
    pause.tv_sec = 0
    pause.tv_nsec = BUSY_YIELD_US * 1000
    with nogil:
        nanosleep(&pause, NULL)
        wanted_us = _wants_gil()
    _holds_gil(wanted_us)
    _busy_since_us = _clock_us()


def gil_kept():
    """gil_kept()\n--\n
    Whether this thread's socket calls keep the GIL now (the module comment): when a network thread awaits an answer,
    it says how soon it is due (wait_events' answer_due_us)."""
    return _keeps_gil()


def wait_ended_us():
    """wait_ended_us()\n--\n
    When the last wait_events found its events (CLOCK_MONOTONIC µs, as time.monotonic_ns() // 1000): before any
    wait for the GIL after it, so an answer's round trip measured to it leaves out the GIL's turn to come back."""
    return cyk_wait_ended_us


def gil_releases():
    """gil_releases()\n--\n
    How many times the network threads' system calls (and hand-back lock waits) gave the GIL up and took it back, in
    this process: what a test counts to see a call keep the GIL."""
    return cyk_load_u(&cyk_handoff_taken)


def network_yield():
    """network_yield()\n--\n
    yield_to_network() for Python callers (the consumers' poll()), handing over at once."""
    yield_to_network(0)


cdef inline object _io_error(int code):
    """None for a call that would block (or was interrupted), else the OSError to raise."""
    if code == EAGAIN or code == EWOULDBLOCK or code == EINTR:
        return None
    return OSError(code, _os.strerror(code))


def sock_send(int fd, object buffers):
    """sock_send(fd, buffers)\n--\n
    Writes the first SEND_MAX_BUFFERS of buffers (bytes-like) to the non-blocking socket fd in one writev (the GIL
    released, handed back as the module comment says). Returns the bytes written, -1 when the socket's buffer is
    full; raises OSError on a failure."""
    cdef Py_buffer views[SEND_MAX_BUFFERS]
    cdef iovec vectors[SEND_MAX_BUFFERS]
    cdef int count = 0, i, code = 0
    cdef ssize_t written
    cdef int64_t wanted_us = 0
    try:
        for buffer in buffers:
            if count == SEND_MAX_BUFFERS:
                break
            PyObject_GetBuffer(buffer, &views[count], PyBUF_SIMPLE)
            vectors[count].iov_base = views[count].buf
            vectors[count].iov_len = <size_t>views[count].len
            count += 1
        if _keeps_gil():
            written = writev(fd, vectors, count)
            code = errno
        else:
            with nogil:
                written = writev(fd, vectors, count)
                code = errno
                wanted_us = _wants_gil()
            _holds_gil(wanted_us)
    finally:
        for i in range(count):
            PyBuffer_Release(&views[i])
    if written < 0:
        error = _io_error(code)
        if error is None:
            return -1
        raise error
    return written


def sock_recv_into(int fd, object buffer):
    """sock_recv_into(fd, buffer)\n--\n
    Reads what the non-blocking socket fd has, up to len(buffer) bytes, into buffer (the GIL released, handed back as
    the module comment says). Returns the bytes read (0: the peer closed the connection), -1 when nothing is there;
    raises OSError on a failure."""
    cdef Py_buffer view
    cdef ssize_t got
    cdef int64_t wanted_us = 0
    cdef int code = 0
    PyObject_GetBuffer(buffer, &view, PyBUF_WRITABLE)
    try:
        if _keeps_gil():
            got = recv(fd, view.buf, <size_t>view.len, 0)
            code = errno
        else:
            with nogil:
                got = recv(fd, view.buf, <size_t>view.len, 0)
                code = errno
                wanted_us = _wants_gil()
            _holds_gil(wanted_us)
    finally:
        PyBuffer_Release(&view)
    if got < 0:
        error = _io_error(code)
        if error is None:
            return -1
        raise error
    return got
