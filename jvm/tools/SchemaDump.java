// Prints Kafka's own message schemas (the kafka-clients jar of the version on the classpath) as JSON, one line per
// API: {"key": K, "name": ..., "oldest": V, "latest": V, "request": {"V": [field, ...]}, "response": {...}}, a field
// being {"name", "type", "nullable", "fields": [...] (a struct or an array of structs), "tag": N (tagged only)}.
// tests/test_protocol_kafka_schemas.py compares cykafka's protocol descriptions with it, version by version.
// Usage: java -cp 'kafka-lib/*:.' SchemaDump [api_key ...]   (no key: every API)
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;

public class SchemaDump {
    public static void main(String[] args) throws Exception {
        List<ApiKeys> keys = new ArrayList<>();
        if (args.length == 0) {
            for (ApiKeys key : ApiKeys.values()) keys.add(key);
        } else {
            for (String arg : args) keys.add(ApiKeys.forId(Integer.parseInt(arg)));
        }
        for (ApiKeys key : keys) {
            StringBuilder out = new StringBuilder();
            short latest = key.latestVersion(true);
            out.append("{\"key\":").append(key.id).append(",\"name\":\"").append(key.name)
               .append("\",\"oldest\":").append(key.oldestVersion()).append(",\"latest\":").append(latest);
            out.append(",\"request\":").append(versions(key.messageType.requestSchemas(), key.oldestVersion(), latest));
            out.append(",\"response\":").append(versions(key.messageType.responseSchemas(), key.oldestVersion(), latest));
            System.out.println(out.append("}"));
        }
    }

    static String versions(Schema[] schemas, short oldest, short latest) throws Exception {
        StringBuilder out = new StringBuilder("{");
        for (int v = oldest; v <= latest && v < schemas.length; v++) {
            if (schemas[v] == null) continue;
            if (out.length() > 1) out.append(",");
            out.append("\"").append(v).append("\":").append(fields(schemas[v]));
        }
        return out.append("}").toString();
    }

    static String fields(Schema schema) throws Exception {
        StringBuilder out = new StringBuilder("[");
        for (BoundField bound : schema.fields()) {
            Type type = bound.def.type;
            if (type instanceof TaggedFields) {
                Field map = TaggedFields.class.getDeclaredField("fields");
                map.setAccessible(true);
                @SuppressWarnings("unchecked")
                Map<Integer, org.apache.kafka.common.protocol.types.Field> tagged =
                    (Map<Integer, org.apache.kafka.common.protocol.types.Field>) map.get(type);
                for (Map.Entry<Integer, org.apache.kafka.common.protocol.types.Field> e : tagged.entrySet()) {
                    if (out.length() > 1) out.append(",");
                    out.append(field(e.getValue().name, e.getValue().type, e.getKey()));
                }
                continue;
            }
            if (out.length() > 1) out.append(",");
            out.append(field(bound.def.name, type, null));
        }
        return out.append("]").toString();
    }

    static String field(String name, Type type, Integer tag) throws Exception {
        StringBuilder out = new StringBuilder("{\"name\":\"").append(name).append("\"");
        out.append(",\"nullable\":").append(type.isNullable());
        if (type.isArray()) {
            Type element = type.arrayElementType().get();
            if (element instanceof Schema) {
                out.append(",\"type\":\"[]\",\"fields\":").append(fields((Schema) element));
            } else {
                out.append(",\"type\":\"[]").append(primitive(element)).append("\"");
            }
        } else if (type instanceof Schema) {
            out.append(",\"type\":\"{}\",\"fields\":").append(fields((Schema) type));
        } else {
            out.append(",\"type\":\"").append(primitive(type)).append("\"");
        }
        if (tag != null) out.append(",\"tag\":").append(tag);
        return out.append("}").toString();
    }

    static String primitive(Type type) {
        String name = type.toString();
        if (name.contains("STRING")) return "string";
        if (name.contains("BYTES")) return "bytes";
        if (name.contains("RECORDS")) return "records";
        switch (name) {
            case "INT8": return "int8";
            case "INT16": return "int16";
            case "UINT16": return "uint16";
            case "INT32": return "int32";
            case "UNSIGNED_INT32": return "uint32";
            case "INT64": return "int64";
            case "VARINT": return "varint";
            case "VARLONG": return "varlong";
            case "UUID": return "uuid";
            case "FLOAT64": return "float64";
            case "BOOLEAN": return "bool";
            default: return name;
        }
    }
}
