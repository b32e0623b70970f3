// Kafka's Java clients as a bench peer: the same scenarios as bench/e2e_bench.py's and bench/consume_bench.py's
// Python workers, one process per run, one JSON line on stdout (the same keys, so bench/run.py reads both alike).
// bench/java_peer.py compiles it with javac against the kafka-clients jar that jvm/pom.xml fetches (the broker's
// version) and runs it.
//
//   java -cp CLASSES:LIB/* JavaBench --worker java --mode throughput|latency|overload|consume --bootstrap H:P
//        --records N [--value-bytes B] [--codec none|lz4|...] [--linger-ms MS] [--batch-size B]
//        [--buffer-memory B] [--rate N] [--topic T] [--partitions P] [--set key=value ...]
//
// produce modes: keyed records (1,024 distinct 10-byte keys, B-byte values: e2e_bench.payloads), one send() with a
// callback per record; the clock starts once a warm-up record is acknowledged (connected, metadata known) and stops
// when every record is acknowledged and the producer is closed. latency: paced at --rate, send->ack per record from
// the callback, p50/p99 without the first 10% of acknowledgements. consume: assign every partition, seek to the
// beginning, poll until --records records, every value's length summed; the clock starts at the assignment, before
// the first fetch (as consume_bench.py's workers).
//
// JVM warm-up is reported, not hidden: startup_s / startup_cpu_s (JVM start to the warm-up record acknowledged, or
// to the assignment; outside the clock, like the Python workers' imports), and inside the clock first_tenth_s (when
// the first 10% of the records were acknowledged or read) and warmup_s, the time that first tenth took beyond the
// steady rate of the other 90% (the JIT compiling the hot paths, buffers and connections growing).
// CPU is the whole process's (every thread: the caller, the network thread, the JIT and GC threads).

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class JavaBench {
    private final Map<String, String> args = new LinkedHashMap<>();
    private final Map<String, String> overrides = new LinkedHashMap<>();
    private final Map<String, String> used = new LinkedHashMap<>();

    private long startedNs;
    private long cpuBeforeNs;
    private long rssBeforeBytes;
    private double startupS;
    private double startupCpuS;
    private volatile long firstTenthNs;

    public static void main(String[] argv) throws Exception {
        JavaBench bench = new JavaBench(argv);
        System.out.println(bench.run());
        System.out.flush();
        System.exit(0); // no lingering non-daemon thread keeps the worker alive
    }

    private JavaBench(String[] argv) {
        for (int i = 0; i + 1 < argv.length; i += 2) {
            String key = argv[i].replaceFirst("^--", "");
            if (key.equals("set")) {
                String[] kv = argv[i + 1].split("=", 2);
                overrides.put(kv[0], kv[1]);
            } else {
                args.put(key, argv[i + 1]);
            }
        }
    }

    private String arg(String key, String fallback) {
        return args.getOrDefault(key, fallback);
    }

    private int intArg(String key, int fallback) {
        return Integer.parseInt(arg(key, Integer.toString(fallback)));
    }

    private Properties config(Map<String, Object> scenario) {
        Properties props = new Properties();
        props.put("bootstrap.servers", arg("bootstrap", "127.0.0.1:9092"));
        for (Map.Entry<String, Object> e : scenario.entrySet()) {
            props.put(e.getKey(), String.valueOf(e.getValue()));
            used.put(e.getKey(), String.valueOf(e.getValue()));
        }
        for (Map.Entry<String, String> e : overrides.entrySet()) {
            props.put(e.getKey(), e.getValue());
            used.put(e.getKey(), e.getValue());
        }
        return props;
    }

    private static long cpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static long rssBytes(String field) {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
                if (line.startsWith(field + ":")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (java.io.IOException e) {
            return 0;
        }
        return 0;
    }

    /** Starts the clock: what happened before is JVM start-up and connection set-up, reported apart. */
    private void begin() {
        startupS = ManagementFactory.getRuntimeMXBean().getUptime() / 1e3;
        startupCpuS = cpuNs() / 1e9;
        rssBeforeBytes = rssBytes("VmRSS");
        cpuBeforeNs = cpuNs();
        startedNs = System.nanoTime();
    }

    private String run() throws Exception {
        String mode = arg("mode", "throughput");
        int records = intArg("records", 500_000);
        Map<String, Object> result = new LinkedHashMap<>();
        if (mode.equals("consume")) {
            result.putAll(consume(records));
        } else {
            result.putAll(produce(mode, records));
        }
        double elapsedS = (System.nanoTime() - startedNs) / 1e9;
        double cpuS = (cpuNs() - cpuBeforeNs) / 1e9;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("client", "java");
        out.put("records", result.remove("records"));
        out.put("elapsed_s", elapsedS);
        out.put("cpu_s", cpuS);
        out.putAll(result);
        out.put("startup_s", startupS);
        out.put("startup_cpu_s", startupCpuS);
        if (firstTenthNs > 0) {
            double firstTenthS = (firstTenthNs - startedNs) / 1e9;
            double steadyRate = 0.9 * records / Math.max(1e-9, elapsedS - firstTenthS);
            out.put("first_tenth_s", firstTenthS);
            out.put("warmup_s", Math.max(0.0, firstTenthS - 0.1 * records / steadyRate));
        }
        double rssGrowthMib = (rssBytes("VmHWM") - rssBeforeBytes) / (double) (1 << 20); // peak RSS - RSS at begin
        if (mode.equals("overload")) {
            out.put("rss_growth_mib", rssGrowthMib);
        }
        if (mode.equals("consume")) {
            out.put("peak_rss_growth_mib", rssGrowthMib);
        }
        out.put("java", System.getProperty("java.version"));
        out.put("config", used);
        return json(out);
    }

    // -- producer --------------------------------------------------------------------------------------------------

    private Map<String, Object> produce(String mode, int records) throws Exception {
        int valueBytes = intArg("value-bytes", 100);
        boolean latency = mode.equals("latency");
        byte[][] keys = new byte[1024][];
        byte[][] values = new byte[1024][];
        for (int i = 0; i < 1024; i++) { // bench/e2e_bench.py payloads(): the same bytes
            keys[i] = String.format("key-%06d", (i * 7919) % 1_000_000).getBytes(StandardCharsets.US_ASCII);
            byte[] value = new byte[valueBytes];
            Arrays.fill(value, (byte) 'v');
            byte[] prefix = String.format("%08d", i).getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(prefix, 0, value, 0, Math.min(prefix.length, valueBytes));
            values[i] = value;
        }
        Map<String, Object> scenario = new LinkedHashMap<>();
        scenario.put("linger.ms", intArg("linger-ms", latency ? 0 : 5));
        scenario.put("batch.size", intArg("batch-size", 16384));
        scenario.put("compression.type", arg("codec", "none"));
        scenario.put("buffer.memory", intArg("buffer-memory", 32 << 20));
        Properties props = config(scenario);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        String topic = arg("topic", "bench-java-" + System.nanoTime());
        AtomicLong errors = new AtomicLong();
        AtomicLong acked = new AtomicLong();
        long tenth = Math.max(1, records / 10);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("records", records);
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        try {
            producer.send(new ProducerRecord<>(topic, keys[0], values[0])).get(); // warm-up: metadata, connection
            begin();
            if (latency) {
                result.putAll(paced(producer, topic, keys, values, records, errors));
            } else {
                Callback callback = (metadata, exception) -> {
                    if (exception != null) {
                        errors.incrementAndGet();
                    }
                    if (acked.incrementAndGet() == tenth) {
                        firstTenthNs = System.nanoTime();
                    }
                };
                long maxBlockNs = 0;
                for (int i = 0; i < records; i++) {
                    long before = System.nanoTime();
                    producer.send(new ProducerRecord<>(topic, keys[i & 1023], values[i & 1023]), callback);
                    maxBlockNs = Math.max(maxBlockNs, System.nanoTime() - before);
                }
                producer.flush();
                if (mode.equals("overload")) {
                    result.put("max_block_s", maxBlockNs / 1e9);
                }
            }
        } finally {
            producer.close();
        }
        result.put("errors", errors.get());
        return result;
    }

    private Map<String, Object> paced(KafkaProducer<byte[], byte[]> producer, String topic, byte[][] keys,
                                      byte[][] values, int records, AtomicLong errors) {
        int rate = intArg("rate", 10_000);
        long intervalNs = 1_000_000_000L / rate;
        long[] latenciesNs = new long[records];
        AtomicLong done = new AtomicLong();
        long started = System.nanoTime();
        for (int i = 0; i < records; i++) {
            long due = started + i * intervalNs;
            long delay = due - System.nanoTime();
            while (delay > 0) {
                LockSupport.parkNanos(delay);
                delay = due - System.nanoTime();
            }
            long sent = System.nanoTime();
            producer.send(new ProducerRecord<>(topic, keys[i & 1023], values[i & 1023]), (metadata, exception) -> {
                if (exception != null) {
                    errors.incrementAndGet();
                } else {
                    latenciesNs[(int) done.getAndIncrement()] = System.nanoTime() - sent;
                }
            });
        }
        producer.flush();
        int count = (int) done.get();
        long[] kept = Arrays.copyOfRange(latenciesNs, count / 10, count); // the first 10% warm up
        Arrays.sort(kept);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("p50_ms", kept.length == 0 ? Double.NaN : kept[kept.length / 2] / 1e6);
        result.put("p99_ms", kept.length == 0 ? Double.NaN : kept[Math.min(kept.length - 1,
                (int) (kept.length * 0.99))] / 1e6);
        return result;
    }

    // -- consumer --------------------------------------------------------------------------------------------------

    private Map<String, Object> consume(int records) {
        Map<String, Object> scenario = new LinkedHashMap<>();
        scenario.put("check.crcs", "true");
        scenario.put("max.poll.records", 10_000);
        scenario.put("enable.auto.commit", "false");
        scenario.put("auto.offset.reset", "earliest");
        Properties props = config(scenario);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        String topic = arg("topic", "");
        int partitions = intArg("partitions", 4);
        List<TopicPartition> assignment = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            assignment.add(new TopicPartition(topic, p));
        }
        long seen = 0;
        long touched = 0;
        long tenth = Math.max(1, records / 10);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(assignment);
            consumer.seekToBeginning(assignment);
            begin();
            while (seen < records) {
                ConsumerRecords<byte[], byte[]> got = consumer.poll(Duration.ofSeconds(1));
                for (ConsumerRecord<byte[], byte[]> record : got) {
                    byte[] value = record.value();
                    touched += value == null ? 0 : value.length;
                }
                long before = seen;
                seen += got.count();
                if (before < tenth && seen >= tenth) {
                    firstTenthNs = System.nanoTime();
                }
            }
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("records", seen);
        result.put("value_bytes_read", touched);
        return result;
    }

    // -- JSON out --------------------------------------------------------------------------------------------------

    private static String json(Object value) {
        if (value instanceof Map<?, ?> map) {
            StringBuilder out = new StringBuilder("{");
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (out.length() > 1) {
                    out.append(", ");
                }
                out.append(json(String.valueOf(e.getKey()))).append(": ").append(json(e.getValue()));
            }
            return out.append('}').toString();
        }
        if (value instanceof Double d) {
            return d.isNaN() || d.isInfinite() ? "NaN" : d.toString();
        }
        if (value instanceof Number || value instanceof Boolean) {
            return value.toString();
        }
        String text = String.valueOf(value).replace("\\", "\\\\").replace("\"", "\\\"");
        return '"' + text + '"';
    }
}
