"""The read side's pure part (cykafka/spark/source_options.py): Spark's Kafka source options, rejections, offsets JSON,
ranges split for minPartitions / maxRecordsPerPartition and the maxOffsetsPerTrigger share, checked on plain values."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_consumer import _OneLeader, _ScriptedFetches

from cykafka import TopicPartition
from cykafka.errors import ConfigError
from cykafka.spark.source_options import (
    EARLIEST,
    LATEST,
    Bound,
    ConsumerStrategy,
    OffsetRange,
    offset_ranges,
    offsets_json,
    parse_offsets_json,
    parse_source_options,
    rate_limited,
)

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def batch(**options: Any) -> Any:
    return parse_source_options({**BOOT, **options}, streaming=False)


def stream(**options: Any) -> Any:
    return parse_source_options({**BOOT, **options}, streaming=True)


def test_defaults_as_spark() -> None:
    b = batch(subscribe="a, b,")
    assert b.consumer_strategy == ConsumerStrategy("subscribe", topics=("a", "b"))
    assert (b.starting, b.ending) == (Bound("earliest"), Bound("latest"))
    assert (b.fail_on_data_loss, b.include_headers, b.min_partitions, b.max_trigger_delay_ms) == (
        True, False, None, 15 * 60_000)
    assert b.consumer_config_dict == {"bootstrap.servers": "127.0.0.1:9092"}
    s = stream(subscribePattern="ev-.*")
    assert (s.starting, s.ending) == (Bound("latest"), None)


def test_options_are_case_insensitive_and_parsed() -> None:
    o = stream(SUBSCRIBE="t", startingOffsets='{"t": {"0": 5, "1": -2}}', MAXOFFSETSPERTRIGGER="100",
               minOffsetsPerTrigger="10", maxTriggerDelay="30s", includeHeaders="TRUE", failOnDataLoss="false",
               **{"kafka.fetch.max.bytes": "1000", "cykafka.commit.group": "lag"})
    assert o.starting == Bound("offsets", offsets={TopicPartition("t", 0): 5, TopicPartition("t", 1): EARLIEST})
    assert (o.max_offsets_per_trigger, o.min_offsets_per_trigger, o.max_trigger_delay_ms) == (100, 10, 30_000)
    assert (o.include_headers, o.fail_on_data_loss, o.commit_group) == (True, False, "lag")
    assert o.consumer_config_dict["fetch.max.bytes"] == "1000"
    assert batch(assign='{"x": [2, 0]}').consumer_strategy.partitions == (TopicPartition("x", 2),
                                                                          TopicPartition("x", 0))
    assert batch(subscribe="t", startingTimestamp="1700000000000").starting == Bound(
        "timestamp", timestamp_ms=1_700_000_000_000)
    assert batch(subscribe="t", endingOffsetsByTimestamp='{"t": {"0": 7}}').ending == Bound(
        "timestamps", offsets={TopicPartition("t", 0): 7})


@pytest.mark.parametrize(("options", "streaming", "message"), [
    ({}, False, "exactly one of the options subscribe, subscribePattern, assign"),
    ({"subscribe": "a", "assign": '{"a": [0]}'}, False, r"got 2 \(subscribe, assign\)"),
    ({"subscribe": " , "}, False, "subscribe names no topic"),
    ({"subscribePattern": "("}, False, "not a valid regex"),
    ({"assign": "[0, 1]"}, False, "assign must be JSON such as"),
    ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, False, "startingOffsets"),
    ({"subscribe": "t", "kafka.value.deserializer": "x"}, False, "values are read as bytes"),
    ({"subscribe": "t", "kafka.enable.auto.commit": "true"}, True, "kafka.enable.auto.commit is not supported"),
    ({"subscribe": "t", "kafka.interceptor.classes": "x"}, True, "interceptor"),
    ({"subscribe": "t", "startingOffsets": "latest"}, False, "can't be latest for batch"),
    ({"subscribe": "t", "startingOffsets": '{"t": {"0": -1}}'}, False, "can't be latest for batch"),
    ({"subscribe": "t", "endingOffsets": "earliest"}, False, "can't be earliest for batch"),
    ({"subscribe": "t", "endingOffsets": '{"t": {"0": 5}}'}, True, "endingoffsets is not valid in streaming"),
    ({"subscribe": "t", "endingTimestamp": "5"}, True, "endingtimestamp is not valid in streaming"),
    ({"subscribe": "t", "startingOffsets": '{"t": {"0": 9}}', "endingOffsets": '{"t": {"0": 5}}'}, False,
     r"start of t-0 \(9\) is after its end \(5\)"),
    ({"subscribe": "t", "startingOffsets": '{"t": {"0": 1}}', "endingOffsets": '{"t": {"1": 5}}'}, False,
     "partitions of the starting and ending options differ"),
    ({"subscribe": "t", "startingOffsets": '{"t": {"0": -3}}'}, False, "partition '0' -> -3 is not accepted"),
    ({"subscribe": "t", "startingOffsets": "{not json"}, False, "startingoffsets is not valid JSON"),
    ({"subscribe": "t", "startingTimestamp": "noon"}, False, "startingtimestamp must be one integer"),
    ({"subscribe": "t", "minPartitions": "0"}, False, "minpartitions must be a positive integer"),
    ({"subscribe": "t", "maxOffsetsPerTrigger": "5", "minOffsetsPerTrigger": "9"}, True,
     r"minOffsetsPerTrigger \(9\) is higher than maxOffsetsPerTrigger \(5\)"),
    ({"subscribe": "t", "maxTriggerDelay": "soon"}, True, "maxTriggerDelay must be a duration"),
    ({"subscribe": "t", "includeHeaders": "yes"}, False, "includeheaders must be true or false"),
    ({"subscribe": "t", "startingOffset": "earliest"}, False, "did you mean startingoffsets"),
    ({"subscribe": "t", "cykafka.comit.group": "g"}, True, "unknown option cykafka.comit.group"),
    ({"subscribe": "t", "startingOffsetsByTimestampStrategy": "first"}, False, "must be error or latest"),
])
def test_bad_options_raise_config_errors_naming_the_option(options: dict[str, str], streaming: bool,
                                                           message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_source_options({**BOOT, **options}, streaming=streaming)


def test_bootstrap_servers_is_required() -> None:
    with pytest.raises(ConfigError, match=r"kafka\.bootstrap\.servers is required"):
        parse_source_options({"subscribe": "t"}, streaming=False)


def test_unknown_spark_side_options_are_ignored_as_spark_does() -> None:
    assert batch(subscribe="t", path="/x", someOtherReaderSetting="1").consumer_strategy.topics == ("t",)


def test_subscription_selects_partitions_from_metadata() -> None:
    counts = {"ev-1": 2, "ev-2": 1, "other": 3, "__consumer_offsets": 50}
    assert ConsumerStrategy("subscribepattern", pattern="ev-.*").select(counts) == [
        TopicPartition("ev-1", 0), TopicPartition("ev-1", 1), TopicPartition("ev-2", 0)]
    assert ConsumerStrategy("subscribepattern", pattern=".*").select(counts)[-1] == TopicPartition("other", 2)
    assert ConsumerStrategy("subscribe", topics=("other", "missing")).select(counts) == [
        TopicPartition("other", p) for p in range(3)]


def test_offsets_json_round_trips_in_sparks_format() -> None:
    offsets = {TopicPartition("b", 1): 7, TopicPartition("a", 10): LATEST, TopicPartition("a", 2): 0}
    text = offsets_json(offsets)
    assert text == '{"a":{"2":0,"10":-1},"b":{"1":7}}'
    assert parse_offsets_json("x", text, markers=True) == offsets
    with pytest.raises(ConfigError, match="ms since the epoch"):
        parse_offsets_json("x", '{"a": {"0": -1}}', markers=False)


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def test_ranges_one_per_partition_and_empty_dropped() -> None:
    start = {tp("t", 0): 0, tp("t", 1): 5, tp("t", 2): 3}
    end = {tp("t", 0): 10, tp("t", 1): 5, tp("t", 2): 4}
    assert offset_ranges(start, end) == [OffsetRange("t", 0, 0, 10), OffsetRange("t", 2, 3, 4)]
    assert offset_ranges(start, end, min_partitions=2) == offset_ranges(start, end)  # already enough


def test_min_partitions_splits_the_large_partitions_in_proportion() -> None:
    # 4 and 20 offsets, minPartitions 4: the small one stays whole, the large one is cut in 3 (6, 7, 7)
    start, end = {tp("a", 0): 1, tp("b", 0): 1}, {tp("a", 0): 5, tp("b", 0): 21}
    assert offset_ranges(start, end, min_partitions=4) == [
        OffsetRange("a", 0, 1, 5), OffsetRange("b", 0, 1, 7), OffsetRange("b", 0, 7, 14), OffsetRange("b", 0, 14, 21)]
    assert offset_ranges({tp("a", 0): 1}, {tp("a", 0): 5}, min_partitions=3) == [
        OffsetRange("a", 0, 1, 2), OffsetRange("a", 0, 2, 3), OffsetRange("a", 0, 3, 5)]


def test_max_records_per_partition_splits_what_is_larger() -> None:
    assert offset_ranges({tp("a", 0): 0}, {tp("a", 0): 12}, max_records_per_partition=5) == [
        OffsetRange("a", 0, 0, 4), OffsetRange("a", 0, 4, 8), OffsetRange("a", 0, 8, 12)]


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 5000)), min_size=1, max_size=8),
       st.none() | st.integers(1, 40), st.none() | st.integers(1, 3000))
def test_ranges_cover_every_offset_once(spans: list[tuple[int, int]], min_partitions: int | None,
                                        max_records: int | None) -> None:
    start = {tp("t", i): s for i, (s, _) in enumerate(spans)}
    end = {tp("t", i): s + n for i, (s, n) in enumerate(spans)}
    ranges = offset_ranges(start, end, min_partitions=min_partitions, max_records_per_partition=max_records)
    for i, (s, n) in enumerate(spans):
        mine = [r for r in ranges if r.partition == i]
        if n == 0:
            assert mine == []  # empty ranges are dropped
            continue
        assert sum(r.size for r in mine) == n and all(r.size > 0 for r in mine)
        assert [r.start for r in mine] == [s, *[r.end for r in mine[:-1]]]  # contiguous, in order
        if max_records is not None:
            assert all(r.size <= max_records for r in mine)


def test_rate_limit_shares_by_backlog_and_never_starves_a_partition() -> None:
    start = {tp("t", 0): 0, tp("t", 1): 0, tp("t", 2): 50}
    latest = {tp("t", 0): 100, tp("t", 1): 1, tp("t", 2): 50}
    assert rate_limited(start, latest, 10) == {tp("t", 0): 9, tp("t", 1): 1, tp("t", 2): 50}
    assert rate_limited(start, latest, 1000) == latest


def test_options_are_plain_picklable_data() -> None:
    import pickle

    o = stream(subscribe="t", startingOffsets='{"t": {"0": 1}}')
    assert pickle.loads(pickle.dumps(o)) == o
    json.dumps(o.consumer_config)  # what a task gets is plain strings


def test_trigger_end_waits_for_min_offsets_until_the_delay_then_caps_at_max() -> None:
    from cykafka.spark.source_options import trigger_end

    begin = {tp("t", 0): 0, tp("t", 1): 0}
    latest = {tp("t", 0): 3, tp("t", 1): 2}
    assert trigger_end(begin, latest, max_offsets=None, min_offsets=10, waited_ms=1000, max_delay_ms=60_000) is None
    assert trigger_end(begin, latest, max_offsets=None, min_offsets=10, waited_ms=60_000,
                       max_delay_ms=60_000) == latest  # waited long enough: whatever there is
    assert trigger_end(begin, latest, max_offsets=None, min_offsets=5, waited_ms=0, max_delay_ms=60_000) == latest
    assert trigger_end(begin, latest, max_offsets=2, min_offsets=None, waited_ms=0,
                       max_delay_ms=60_000) == {tp("t", 0): 1, tp("t", 1): 1}


# -- timestamp bounds: the driver's offset resolution with a real Consumer ----------------------------------------
# Neither broker the tests run can look offsets up by record timestamp: Tansu answers by its own append time, and
# librdkafka's mock cluster answers -1 for every timestamp (docs/spark.md). So the driver's plan is checked with a
# Consumer against a broker stand-in that answers ListOffsets as Kafka documents it (the first offset whose record
# timestamp is >= the one asked; -1 when none) and Fetch with the high watermark.


class _TimeIndexedLog(_ScriptedFetches):
    """test_consumer's one-broker Transport (node 1), whose partitions of topic "t" hold records with these
    timestamps (offset = index): answers ListOffsets (earliest, latest, by time) and Fetch (watermarks, no data)."""

    def __init__(self, timestamps_ms: dict[int, list[int]]) -> None:
        super().__init__({})
        self.timestamps_ms = timestamps_ms

    def _offset(self, partition: int, timestamp_ms: int) -> dict[str, Any]:
        log = self.timestamps_ms[partition]
        if timestamp_ms in (-1, -2):  # latest, earliest
            return {"offset": len(log) if timestamp_ms == -1 else 0, "timestamp": -1}
        found = next((offset for offset, ts in enumerate(log) if ts >= timestamp_ms), None)
        return {"offset": -1, "timestamp": -1} if found is None else {"offset": found, "timestamp": log[found]}

    def send(self, node_id: int, request: Any, now_ms: int, handler: Any = None, expect_response: bool = True) -> None:
        from cykafka.errors import UnsupportedVersionError
        from cykafka.ports import ClientResponse
        from cykafka.protocol.apis import FETCH, LIST_OFFSETS

        if request.api_key not in (LIST_OFFSETS.key, FETCH.key):  # KIP-714's telemetry, asked by default
            raise UnsupportedVersionError(f"node {node_id} answers ListOffsets and Fetch only")
        if request.api_key == LIST_OFFSETS.key:
            body: dict[str, Any] = {"topics": [{"name": t["name"], "partitions": [
                {"partition_index": p["partition_index"], "error_code": 0, "leader_epoch": 0,
                 **self._offset(p["partition_index"], p["timestamp"])} for p in t["partitions"]]}
                for t in request.body["topics"]]}
        else:  # Fetch: the high watermark, no records
            body = {"error_code": 0, "responses": [{"topic": t["topic"], "partitions": [
                {"partition_index": p["partition"], "error_code": 0, "last_stable_offset": -1, "log_start_offset": 0,
                 "high_watermark": len(self.timestamps_ms[p["partition"]]), "aborted_transactions": None,
                 "records": b""} for p in t["partitions"]]} for t in request.body["topics"]]}
        self._answered.append(ClientResponse(node_id, request, handler, body, None, now_ms, now_ms))


# t-0 holds a record every 10 ms from 1000, t-1 one every 25 ms from 1005
_LOG_MS = {0: [1000 + 10 * i for i in range(10)], 1: [1005 + 25 * i for i in range(6)]}


def _plan(**options: str) -> list[OffsetRange]:
    pytest.importorskip("pyspark")
    from cykafka import Consumer
    from cykafka.adapters.clock import ManualClock
    from cykafka.ports import Ports
    from cykafka.spark import _Offsets

    source = parse_source_options({**BOOT, "subscribe": "t", **options}, streaming=False)
    ports = Ports(transport=_TimeIndexedLog(_LOG_MS), metadata=_OneLeader("t"),  # type: ignore[arg-type]
                  clock=ManualClock(auto_tick_ms=1), start_sender=False)
    lookups = _Offsets(source, Consumer({"bootstrap.servers": "fake:1"}, ports=ports))
    try:
        return [p.range for p in lookups.batch_ranges()]
    finally:
        lookups.close()


def test_a_batch_read_bounded_by_timestamps_plans_the_offsets_of_those_times() -> None:
    # the first record at or after each time: t-0 1025 -> offset 3 (1030), 1065 -> 7 (1070); t-1 1025 -> 1 (1030),
    # 1065 -> 3 (1080)
    assert _plan(startingTimestamp="1025", endingTimestamp="1065") == [OffsetRange("t", 0, 3, 7),
                                                                        OffsetRange("t", 1, 1, 3)]
    # per partition; an end later than every record is the partition's end (its high watermark)
    assert _plan(startingOffsetsByTimestamp='{"t": {"0": 1000, "1": 1056}}',
                 endingOffsetsByTimestamp='{"t": {"0": 1050, "1": 9999}}') == [OffsetRange("t", 0, 0, 5),
                                                                              OffsetRange("t", 1, 3, 6)]
    # a timestamp bound on one side, offsets on the other
    assert _plan(startingTimestamp="1081", endingOffsets='{"t": {"0": 10, "1": 5}}') == [
        OffsetRange("t", 0, 9, 10), OffsetRange("t", 1, 4, 5)]


def test_a_start_later_than_every_record_fails_or_starts_at_the_end() -> None:
    from cykafka.errors import KafkaError

    # t-0's last record is at 1090; t-1 has 1105 (offset 4) and 1130
    with pytest.raises(KafkaError, match=r"no offset of t-0 has a timestamp >= 1100; set "
                                         r"startingOffsetsByTimestampStrategy=latest"):
        _plan(startingTimestamp="1100")
    assert _plan(startingTimestamp="1100", startingOffsetsByTimestampStrategy="latest") == [
        OffsetRange("t", 1, 4, 6)]  # t-0 starts (and ends) at its end: nothing to read there
