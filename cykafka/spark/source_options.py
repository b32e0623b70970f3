"""The read side of the `cykafka` Spark data source, its pure part: options with the names, defaults and rejections of
Spark's Kafka source, offsets JSON in Spark's format, offset ranges split for `minPartitions`, and the per-trigger
limit of a streaming read. No Spark, no I/O: the reader (cykafka/spark/source.py) asks a Consumer for offsets and
passes them in, so everything here is checked on plain values.

Offsets JSON, as Spark writes and reads it: {"topicA": {"0": 23, "1": -2}}, where -2 means earliest and -1 latest;
timestamps JSON has the same shape with milliseconds. Ranges are [start, end): end is the offset after the last record.
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from cykafka.errors import ConfigError
from cykafka.ports import TopicPartition

log = logging.getLogger("cykafka.spark")

EARLIEST = -2  # in offsets JSON: the partition's earliest offset (Spark's value)
LATEST = -1  # in offsets JSON: the partition's latest offset
KAFKA_PREFIX = "kafka."
STRATEGIES = ("subscribe", "subscribepattern", "assign")
# Spark's Kafka source options (lower case: Spark's options are case-insensitive) and what each means here
SOURCE_OPTIONS = {
    "subscribe": "comma-separated topics",
    "subscribepattern": "a Java-style regex of topics",
    "assign": 'JSON of topic partitions, {"topicA": [0, 1]}',
    "startingoffsets": '"earliest", "latest" (streaming only) or offsets JSON',
    "endingoffsets": '"latest" or offsets JSON (batch only)',
    "startingtimestamp": "ms since the epoch, for every partition",
    "endingtimestamp": "ms since the epoch, for every partition (batch only)",
    "startingoffsetsbytimestamp": "timestamps JSON per partition",
    "endingoffsetsbytimestamp": "timestamps JSON per partition (batch only)",
    "startingoffsetsbytimestampstrategy": '"error" (default) or "latest": when no offset has the timestamp',
    "failondataloss": "true (default) or false",
    "minpartitions": "split ranges so that at least this many Spark partitions read",
    "maxrecordsperpartition": "split ranges larger than this many offsets",
    "maxoffsetspertrigger": "streaming: at most this many offsets per micro-batch",
    "minoffsetspertrigger": "streaming: wait for this many new offsets (or maxTriggerDelay)",
    "maxtriggerdelay": 'streaming: the longest wait for minOffsetsPerTrigger, e.g. "15m" (default)',
    "includeheaders": "true or false (default): add the headers column",
    "groupidprefix": "accepted for compatibility; cykafka reads by assignment, without a group",
    "kafkaconsumer.polltimeoutms": "how long a task waits for one fetch (default 120000)",
    "fetchoffset.numretries": "accepted for compatibility",
    "fetchoffset.retryintervalms": "accepted for compatibility",
    "cykafka.commit.group": "streaming: commit each completed micro-batch's end offsets to this consumer group",
}
# kafka.* keys Spark's source refuses, and why (the same rules, the same advice)
REJECTED_KAFKA_KEYS = {
    "auto.offset.reset": "set the source option startingOffsets to earliest or latest instead: the source decides "
                         "where to read, and a restarted query resumes from its checkpoint",
    "key.deserializer": "keys are read as bytes; deserialize with DataFrame operations",
    "value.deserializer": "values are read as bytes; deserialize with DataFrame operations",
    "enable.auto.commit": "the source keeps offsets in the checkpoint (for commits to a group use the option "
                          "cykafka.commit.group)",
    "interceptor.classes": "interceptors could change the records read",
}
_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(frozen=True, slots=True)
class ConsumerStrategy:
    """What to read (the Spark connector's ConsumerStrategy): topics, a pattern, or fixed partitions (exactly one
    of Spark's three options)."""

    kind: Literal["subscribe", "subscribepattern", "assign"]
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: tuple[TopicPartition, ...] = ()

    def select(self, partition_counts: Mapping[str, int]) -> list[TopicPartition]:
        """The partitions to read, given each existing topic's partition count (internal topics never match a
        pattern). Assigned partitions are kept even if metadata does not show them: reading them reports the error."""
        if self.kind == "assign":
            return list(self.partitions)
        if self.kind == "subscribe":
            names = [t for t in self.topics if t in partition_counts]
        else:
            regex = re.compile(self.pattern or "")
            names = [t for t in partition_counts if not t.startswith("__") and regex.fullmatch(t)]
        return [TopicPartition(t, p) for t in sorted(names) for p in range(partition_counts[t])]


@dataclass(frozen=True, slots=True)
class Bound:
    """Where a read starts or ends: earliest, latest, offsets per partition, or by timestamp (one for every
    partition, or per partition)."""

    kind: Literal["earliest", "latest", "offsets", "timestamp", "timestamps"]
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)  # offsets (EARLIEST/LATEST allowed), or ms
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The validated options of a read, plain picklable data."""

    consumer_config: tuple[tuple[str, str], ...]  # kafka.* keys, prefix stripped
    consumer_strategy: ConsumerStrategy
    starting: Bound
    ending: Bound | None  # None: streaming
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    timestamp_strategy: Literal["error", "latest"] = "error"
    poll_timeout_ms: int = 120_000
    commit_group: str | None = None

    @property
    def consumer_config_dict(self) -> dict[str, str]:
        return dict(self.consumer_config)


@dataclass(frozen=True, slots=True, order=True)
class OffsetRange:
    """One Spark partition's work: the offsets [start, end) of one Kafka partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


# -- options -------------------------------------------------------------------------------------------------------


def _positive(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        number = int(str(raw).strip())
    except ValueError:
        raise ConfigError(f"option {key} must be a positive integer, got {raw!r}") from None
    if number <= 0:
        raise ConfigError(f"option {key} must be a positive integer, got {number}")
    return number


def _boolean(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"option {key} must be true or false, got {raw!r}")
    return text == "true"


def wants_headers(options: Mapping[str, str]) -> bool:
    """The includeHeaders option (case-insensitive key), for the schema Spark asks for before the reader exists."""
    return _boolean({str(k).lower(): str(v) for k, v in options.items()}, "includeheaders", False)


def duration_ms(key: str, text: str) -> int:
    """Spark's time strings ("15m", "30s", "500ms", "2h"; a bare number is ms)."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    if match is None or match.group(2) not in ("", *_DURATION_UNITS_MS):
        raise ConfigError(f"option {key} must be a duration such as 15m, 30s or 500ms, got {text!r}")
    return int(match.group(1)) * _DURATION_UNITS_MS.get(match.group(2) or "ms", 1)


def _consumer_strategy(options: Mapping[str, str]) -> ConsumerStrategy:
    given = [key for key in STRATEGIES if key in options]
    if len(given) != 1:
        raise ConfigError(f"exactly one of the options subscribe, subscribePattern, assign must be given, got "
                          f"{len(given)}" + (f" ({', '.join(given)})" if given else ""))
    kind = given[0]
    value = str(options[kind]).strip()
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ConfigError(f"option subscribe names no topic: {value!r}; give 'topicA,topicB'")
        return ConsumerStrategy("subscribe", topics=topics)
    if kind == "subscribepattern":
        if not value:
            raise ConfigError("option subscribePattern is empty; give a regex such as 'events-.*'")
        try:
            re.compile(value)
        except re.error as e:
            raise ConfigError(f"option subscribePattern is not a valid regex ({e}): {value!r}") from None
        return ConsumerStrategy("subscribepattern", pattern=value)
    return ConsumerStrategy("assign", partitions=tuple(parse_partitions_json("assign", value)))


def _bound(options: Mapping[str, str], *, timestamp_key: str, by_timestamp_key: str, offsets_key: str,
           default: Literal["earliest", "latest"]) -> Bound:
    """Spark's preference order: a global timestamp, then timestamps per partition, then offsets."""
    if timestamp_key in options:
        raw = str(options[timestamp_key]).strip()
        try:
            return Bound("timestamp", timestamp_ms=int(raw))
        except ValueError:
            raise ConfigError(f"option {timestamp_key} must be one integer (ms since the epoch), got {raw!r}") from None
    if by_timestamp_key in options:
        return Bound("timestamps", offsets=parse_offsets_json(by_timestamp_key, options[by_timestamp_key],
                                                              markers=False))
    raw = str(options.get(offsets_key, default)).strip()
    if raw.lower() in ("earliest", "latest"):
        return Bound(raw.lower())  # type: ignore[arg-type]
    return Bound("offsets", offsets=parse_offsets_json(offsets_key, raw, markers=True))


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validates a read's options as Spark's Kafka source does (same names, case-insensitive, same rejections);
    every error is a ConfigError naming the option and what is accepted, raised on the driver."""
    lowered = {str(key).lower(): str(value) for key, value in options.items()}
    consumer_config: dict[str, str] = {}
    for key, value in lowered.items():
        if key.startswith(KAFKA_PREFIX):
            name = key[len(KAFKA_PREFIX):]
            if name in REJECTED_KAFKA_KEYS:
                raise ConfigError(f"option {key} is not supported: {REJECTED_KAFKA_KEYS[name]}")
            consumer_config[name] = value
        elif key not in SOURCE_OPTIONS and (key.startswith("cykafka.") or _near(key)):
            hint = _near(key)
            raise ConfigError(f"unknown option {key}" + (f"; did you mean {hint}?" if hint else "")
                              + f"; the source's options are {', '.join(sorted(SOURCE_OPTIONS))}")
    if "bootstrap.servers" not in consumer_config:
        raise ConfigError("option kafka.bootstrap.servers is required, e.g. .option('kafka.bootstrap.servers', "
                          "'host1:9092,host2:9092')")
    if "group.id" in consumer_config:
        log.warning("cykafka source: kafka.group.id is set; the source reads by assignment and never joins it "
                    "(use cykafka.commit.group to commit a streaming query's offsets to a group)")
    consumer_strategy = _consumer_strategy(lowered)
    starting = _bound(lowered, timestamp_key="startingtimestamp", by_timestamp_key="startingoffsetsbytimestamp",
                      offsets_key="startingoffsets", default="latest" if streaming else "earliest")
    ending: Bound | None = None
    if streaming:
        for key in ("endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp"):
            if key in lowered:
                raise ConfigError(f"option {key} is not valid in streaming queries (a stream has no end)")
    else:
        ending = _bound(lowered, timestamp_key="endingtimestamp", by_timestamp_key="endingoffsetsbytimestamp",
                        offsets_key="endingoffsets", default="latest")
        if starting.kind == "latest" or (starting.kind == "offsets" and LATEST in starting.offsets.values()):
            raise ConfigError("option startingOffsets can't be latest for batch queries (use earliest or offsets "
                              "JSON)")
        if ending.kind == "earliest" or (ending.kind == "offsets" and EARLIEST in ending.offsets.values()):
            raise ConfigError("option endingOffsets can't be earliest for batch queries (use latest or offsets JSON)")
        _check_bounds(starting, ending)
        for key in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay", "cykafka.commit.group"):
            if key in lowered:
                log.warning("cykafka source: option %s is ignored in batch queries", key)
    max_offsets = _positive(lowered, "maxoffsetspertrigger")
    min_offsets = _positive(lowered, "minoffsetspertrigger")
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise ConfigError(f"option minOffsetsPerTrigger ({min_offsets}) is higher than maxOffsetsPerTrigger "
                          f"({max_offsets})")
    strategy = lowered.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ConfigError(f"option startingOffsetsByTimestampStrategy must be error or latest, got {strategy!r}")
    return SourceOptions(
        consumer_config=tuple(sorted(consumer_config.items())),
        consumer_strategy=consumer_strategy,
        starting=starting,
        ending=ending,
        fail_on_data_loss=_boolean(lowered, "failondataloss", True),
        include_headers=wants_headers(lowered),
        min_partitions=_positive(lowered, "minpartitions"),
        max_records_per_partition=_positive(lowered, "maxrecordsperpartition"),
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=duration_ms("maxTriggerDelay", lowered.get("maxtriggerdelay", "15m")),
        timestamp_strategy=strategy,  # type: ignore[arg-type]
        poll_timeout_ms=_positive(lowered, "kafkaconsumer.polltimeoutms") or 120_000,
        commit_group=lowered.get("cykafka.commit.group") if streaming else None,
    )


def _near(key: str) -> str | None:
    close = difflib.get_close_matches(key, SOURCE_OPTIONS, n=1, cutoff=0.85)
    return close[0] if close else None


def _check_bounds(starting: Bound, ending: Bound) -> None:
    """As Spark: per-partition starts and ends name the same partitions, and no start is after its end."""
    if starting.kind != ending.kind or starting.kind not in ("offsets", "timestamps"):
        return
    if set(starting.offsets) != set(ending.offsets):
        raise ConfigError(f"the partitions of the starting and ending options differ: "
                          f"{sorted(set(starting.offsets) ^ set(ending.offsets))}")
    for tp, start in starting.offsets.items():
        end = ending.offsets[tp]
        if start >= 0 and end >= 0 and start > end:
            raise ConfigError(f"the start of {tp.topic}-{tp.partition} ({start}) is after its end ({end})")


# -- JSON in Spark's format ------------------------------------------------------------------------------------------


def _json(key: str, text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"option {key} is not valid JSON ({e.msg} at character {e.pos}): {text!r}") from None


def parse_partitions_json(key: str, text: str) -> list[TopicPartition]:
    """{"topicA": [0, 1], "topicB": [2]} -> partitions, in the order given."""
    parsed = _json(key, text)
    if not isinstance(parsed, dict) or not parsed or not all(
            isinstance(ps, list) and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in ps)
            for ps in parsed.values()):
        raise ConfigError(f'option {key} must be JSON such as {{"topicA": [0, 1], "topicB": [2]}}, got {text!r}')
    return [TopicPartition(topic, p) for topic, ps in parsed.items() for p in ps]


def parse_offsets_json(key: str, text: str, *, markers: bool) -> dict[TopicPartition, int]:
    """{"topicA": {"0": 23, "1": -2}} -> {TopicPartition: offset}; with markers -2 (earliest) and -1 (latest) are
    allowed, other negative values never."""
    parsed = _json(key, text)
    example = '{"topicA": {"0": 23, "1": -2}}' if markers else '{"topicA": {"0": 1700000000000}}'
    if not isinstance(parsed, dict) or not parsed:
        raise ConfigError(f"option {key} must be JSON such as {example}, got {text!r}")
    result: dict[TopicPartition, int] = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            raise ConfigError(f"option {key}: topic {topic!r} must map partitions to values, as in {example}")
        for partition, value in partitions.items():
            if not str(partition).isdigit() or not isinstance(value, int) or isinstance(value, bool) \
                    or value < (EARLIEST if markers else 0):
                raise ConfigError(f"option {key}: {topic!r} partition {partition!r} -> {value!r} is not accepted; "
                                  f"partitions are numbers, values are offsets >= 0"
                                  + (" or -2 (earliest) / -1 (latest)" if markers else " (ms since the epoch)"))
            result[TopicPartition(topic, int(partition))] = value
    return result


def offsets_json(offsets: Mapping[TopicPartition, int]) -> str:
    """Spark's offsets JSON, topics and partitions sorted (what the checkpoint keeps)."""
    nested: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        nested.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return json.dumps(nested, separators=(",", ":"))


# -- planning --------------------------------------------------------------------------------------------------------


def offset_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int], *,
                  min_partitions: int | None = None,
                  max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """The ranges to read, as Spark's KafkaOffsetRangeCalculator cuts them: one per partition with data; with
    minPartitions above that count, the large partitions split in proportion to their size (small ones stay whole);
    maxRecordsPerPartition splits anything larger. Empty ranges are dropped."""
    ranges = [OffsetRange(tp.topic, tp.partition, start[tp], end[tp]) for tp in sorted(start)
              if tp in end and end[tp] > start[tp]]
    if min_partitions is not None and len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        whole = [r for r in ranges if _part_count(r.size, total, min_partitions) == 1]
        split_total = total - sum(r.size for r in whole)
        split_min = max(min_partitions - len(whole), 1)
        ranges = [piece for r in ranges
                  for piece in _split(r, 1 if r in whole else _part_count(r.size, split_total, split_min))]
    if max_records_per_partition is not None:
        ranges = [piece for r in ranges for piece in _split(r, -(-r.size // max_records_per_partition))]
    return ranges


def _part_count(size: int, total: int, parts: int) -> int:
    return max(round(size / total * parts) if total else 1, 1)


def _split(r: OffsetRange, parts: int) -> Iterable[OffsetRange]:
    """parts pieces of (nearly) equal size; the last takes the remainder."""
    remaining, begin = r.size, r.start
    for part in range(parts):
        size = remaining // (parts - part)
        remaining -= size
        if size > 0:
            yield OffsetRange(r.topic, r.partition, begin, begin + size)
        begin += size


def rate_limited(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
                 max_offsets: int) -> dict[TopicPartition, int]:
    """A micro-batch's end offsets under maxOffsetsPerTrigger, divided as Spark divides it: each partition's share
    is in proportion to its backlog, rounded down, except that a share below one offset rounds up (no partition
    starves). `start` covers every partition of `latest` (a new partition starts at its earliest offset)."""
    backlog = {tp: end - start[tp] for tp, end in latest.items() if end > start[tp]}
    total = sum(backlog.values())
    ends = dict(latest)
    for tp, size in backlog.items():
        share = max_offsets * size / total
        ends[tp] = min(start[tp] + (math.ceil(share) if share < 1 else math.floor(share)), latest[tp])
    return ends


def trigger_end(begin: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], *,
                max_offsets: int | None, min_offsets: int | None, waited_ms: int,
                max_delay_ms: int) -> dict[TopicPartition, int] | None:
    """A micro-batch's end offsets under the per-trigger options, or None to wait: fewer than minOffsetsPerTrigger
    new offsets and less than maxTriggerDelay since the last micro-batch (Spark's delay rule); maxOffsetsPerTrigger
    then caps the batch (rate_limited). `begin` covers every partition of `latest`."""
    if min_offsets is not None and waited_ms < max_delay_ms:
        if sum(max(end - begin[tp], 0) for tp, end in latest.items()) < min_offsets:
            return None
    return rate_limited(begin, latest, max_offsets) if max_offsets is not None else dict(latest)
