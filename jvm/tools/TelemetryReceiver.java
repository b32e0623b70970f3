// A broker plugin for cykafka's KIP-714 test (tests/test_telemetry.py): a MetricsReporter with a ClientTelemetry
// receiver, which is what makes a broker advertise GetTelemetrySubscriptions and PushTelemetry. Every push a client
// makes is decoded with the OTLP classes kafka-clients carries (shaded) and written, one file per push, to the
// directory the broker config `cykafka.telemetry.dir` names: NNNNN.txt, first the lines
// "client_instance_id <uuid>", "client_id <id>", "content_type <type>", "terminating <bool>",
// "resource <key>=<value>" (each attribute), then one "<metric name> <gauge|sum> <value> [<temporality>]" per data
// point. A file appears whole (written aside, then renamed).
// Build: javac -cp 'kafka-lib/*' -d out TelemetryReceiver.java; broker config metric.reporters=TelemetryReceiver.
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;
import org.apache.kafka.shaded.io.opentelemetry.proto.common.v1.KeyValue;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.Metric;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ScopeMetrics;

@SuppressWarnings({"deprecation", "removal"})  // ClientTelemetry: Kafka 4.4 adds ClientTelemetryExporterProvider
public class TelemetryReceiver implements MetricsReporter, ClientTelemetry, ClientTelemetryReceiver {
    private volatile Path dir;
    private final AtomicInteger pushes = new AtomicInteger();

    @Override public void configure(Map<String, ?> configs) {
        Object where = configs.get("cykafka.telemetry.dir");
        if (where != null) dir = Paths.get(where.toString());
    }

    @Override public void init(List<KafkaMetric> metrics) { }
    @Override public void metricChange(KafkaMetric metric) { }
    @Override public void metricRemoval(KafkaMetric metric) { }
    @Override public void close() { }
    @Override public ClientTelemetryReceiver clientReceiver() { return this; }

    @Override public void exportMetrics(AuthorizableRequestContext context, ClientTelemetryPayload payload) {
        Path into = dir;
        if (into == null) return;
        StringBuilder out = new StringBuilder();
        out.append("client_instance_id ").append(payload.clientInstanceId()).append('\n');
        out.append("client_id ").append(context.clientId()).append('\n');
        out.append("content_type ").append(payload.contentType()).append('\n');
        out.append("terminating ").append(payload.isTerminating()).append('\n');
        try {
            ByteBuffer data = payload.data().duplicate();
            byte[] bytes = new byte[data.remaining()];
            data.get(bytes);
            for (ResourceMetrics resource : MetricsData.parseFrom(bytes).getResourceMetricsList()) {
                for (KeyValue attribute : resource.getResource().getAttributesList())
                    out.append("resource ").append(attribute.getKey()).append('=')
                       .append(attribute.getValue().getStringValue()).append('\n');
                for (ScopeMetrics scope : resource.getScopeMetricsList()) {
                    for (Metric metric : scope.getMetricsList()) {
                        if (metric.hasGauge()) {
                            for (NumberDataPoint point : metric.getGauge().getDataPointsList())
                                out.append(metric.getName()).append(" gauge ").append(point.getAsDouble()).append('\n');
                        } else if (metric.hasSum()) {
                            for (NumberDataPoint point : metric.getSum().getDataPointsList())
                                out.append(metric.getName()).append(" sum ").append(point.getAsDouble()).append(' ')
                                   .append(metric.getSum().getAggregationTemporality()).append('\n');
                        } else {
                            out.append(metric.getName()).append(" other\n");
                        }
                    }
                }
            }
            String name = String.format("%05d.txt", pushes.incrementAndGet());
            Path aside = into.resolve(name + ".part");
            Files.write(aside, out.toString().getBytes(StandardCharsets.UTF_8));
            Files.move(aside, into.resolve(name), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
