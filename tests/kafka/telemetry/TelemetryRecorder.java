// A broker metrics reporter that receives the clients' KIP-714 pushes (the broker offers the
// telemetry APIs only when a reporter implements ClientTelemetry) and writes one line per push
// to the file named by the broker setting pyconsumer.telemetry.file, for the test to read:
// client instance id, client id, terminating, content type, the metric names the broker's own
// OTLP classes decode from the payload (comma-separated), the payload in base64.
// Compiled by tests/kafka/test_telemetry_on_kafka.py against the broker's jars.

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.Metric;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ScopeMetrics;

@SuppressWarnings("removal")
public class TelemetryRecorder implements MetricsReporter, ClientTelemetry {
    private String path;

    @Override
    public void configure(Map<String, ?> configs) {
        Object file = configs.get("pyconsumer.telemetry.file");
        path = file == null ? null : file.toString();
    }

    @Override
    public void init(List<KafkaMetric> metrics) { }

    @Override
    public void metricChange(KafkaMetric metric) { }

    @Override
    public void metricRemoval(KafkaMetric metric) { }

    @Override
    public void close() { }

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return this::record;
    }

    private synchronized void record(AuthorizableRequestContext context, ClientTelemetryPayload payload) {
        ByteBuffer data = payload.data().duplicate();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        List<String> names = new ArrayList<>();
        String decoded;
        try {
            MetricsData parsed = MetricsData.parseFrom(bytes);
            for (ResourceMetrics rm : parsed.getResourceMetricsList())
                for (ScopeMetrics sm : rm.getScopeMetricsList())
                    for (Metric m : sm.getMetricsList())
                        names.add(m.getName());
            decoded = String.join(",", names);
        } catch (IOException e) {
            decoded = "!" + e.getClass().getSimpleName();
        }
        String line = payload.clientInstanceId() + "\t" + context.clientId() + "\t"
            + payload.isTerminating() + "\t" + payload.contentType() + "\t" + decoded + "\t"
            + Base64.getEncoder().encodeToString(bytes) + "\n";
        if (path == null)
            return;
        try (FileOutputStream out = new FileOutputStream(path, true)) {
            out.write(line.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
