"""The request layer: how every client's requests find their broker, wait for its connection, come back and are
asked again. One home for what each client once wrote for itself (issue 26).

- `routes`: where a request goes (`Route`: the least loaded broker, a given broker, a partition's leader, the
  controller, a group's or transactional id's coordinator) and `ready_node`, the one "is the node ready, else wait
  for its connection" check every sender of requests uses (the Sender's Produce, the fetcher, the calls below, the
  transactional queue); `Router` turns a route into a node id from the metadata and the coordinator cache.
- `coordinators`: the one coordinator cache (franz-go's loadCoordinators): groups' and transactional ids'
  coordinators, looked up by one FindCoordinator builder and reader, one lookup in flight per key, retried after
  retry.backoff.ms, forgotten when an answer says the coordinator moved.
- `calls`: `Call`, the one record of a request a caller waits for (its route, deadline, answer or error), and
  `CallQueue`, the request source that sends each when its route resolves and its connection is ready;
  `NetworkLoop`, one turn of a client's network loop (metadata, its request sources, one transport poll).
- `ask`: `Asker.ask(request, route, deadline_ms)`, a request's answer, asked again after a retriable failure by the
  error table's kinds (a stale leader refreshes metadata, a moved coordinator is looked up again) until the deadline.
- `offsets`: the one OffsetCommit, OffsetFetch and ListOffsets: request builders and answer readers.
- `fanout`: Java's AdminApiDriver: a call on many items (partitions, groups, topics) split by route (a leader, a
  coordinator, the controller), one request per broker, per-item results, the retriable items asked again.

A new API lands here, not in a client: a body builder and an answer reader next to its peers (`offsets` is the
model), a route for it, and `Asker.ask` (one request) or `Fanout` (per item) to send it. docs/architecture.md, "The
request layer", says where each kind of API goes.
"""
