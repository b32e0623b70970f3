# netio.pxd: netio.pyx declares no cdef class and no struct; its C-level entry, yield_to_network (a cdef inline
# function that send() and send_batch() call), is defined in netio.pyx, included before sendpath.pyx.
