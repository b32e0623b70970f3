// Kafka's KafkaShareConsumer as a bench peer for bench/share_bench.py: one share group member per process, implicit
// acknowledgement (each poll accepts the previous poll's records), polling until no record came for --idle-ms after
// the first one. One JSON line on stdout: records read, the wall-clock ms of the first and the last record (the
// driver takes the group's rate from the earliest first and the latest last of its members), the process's CPU.
//
//   java -cp CLASSES:LIB/* ShareBench --bootstrap H:P --group G --topic T [--max-poll-records N] [--idle-ms MS]

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class ShareBench {
    public static void main(String[] argv) {
        String bootstrap = null, group = null, topic = null;
        int maxPollRecords = 500;
        long idleMs = 3000;
        for (int i = 0; i + 1 < argv.length; i += 2) {
            switch (argv[i]) {
                case "--bootstrap": bootstrap = argv[i + 1]; break;
                case "--group": group = argv[i + 1]; break;
                case "--topic": topic = argv[i + 1]; break;
                case "--max-poll-records": maxPollRecords = Integer.parseInt(argv[i + 1]); break;
                case "--idle-ms": idleMs = Long.parseLong(argv[i + 1]); break;
                default: throw new IllegalArgumentException("unknown argument " + argv[i]);
            }
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("max.poll.records", Integer.toString(maxPollRecords));
        props.put("share.acknowledgement.mode", "implicit");
        long records = 0, bytes = 0, firstMs = 0, lastMs = 0;
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(
                props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            long giveUpMs = System.currentTimeMillis() + 60_000;
            while (true) {
                ConsumerRecords<byte[], byte[]> got = consumer.poll(Duration.ofMillis(200));
                long now = System.currentTimeMillis();
                if (!got.isEmpty()) {
                    if (records == 0) firstMs = now;
                    lastMs = now;
                    for (ConsumerRecord<byte[], byte[]> r : got) {
                        records++;
                        bytes += r.value() == null ? 0 : r.value().length;
                    }
                } else if (records > 0 ? now - lastMs >= idleMs : now >= giveUpMs) {
                    break;
                }
            }
            consumer.commitSync();
        }
        long cpuNs = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime();
        System.out.println("{\"client\": \"java\", \"records\": " + records + ", \"bytes\": " + bytes
            + ", \"first_ms\": " + firstMs + ", \"last_ms\": " + lastMs + ", \"cpu_s\": " + (cpuNs / 1e9) + "}");
    }
}
