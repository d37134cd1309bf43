"""The settings table: :class:`ConsumerConfig`, whose class attributes are the settings (one
:class:`~pyconsumer.config.table.Setting` row each, in Java's names and defaults), and its
construction: spellings, Java-only settings, parsing, the cross-field checks. See the
package doc for what pyconsumer does with each kind of Java setting."""
from __future__ import annotations

import difflib
from typing import Any

from pyconsumer.config.checks import check_together
from pyconsumer.config.keystores import STORE_TYPES
from pyconsumer.config.parsers import (
    REQUIRED,
    Invalid,
    fail,
    boolean,
    int32,
    int64,
    optional_string,
    password,
    string,
    string_list,
)
from pyconsumer.config.table import Setting, java_only_action, log, warn_no_effect

from pyconsumer.config.values import (
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    TLS_PROTOCOLS,
    OffsetResetStrategy,
    check_group_instance_id,
    assignors_parser,
    auto_offset_reset_parser,
    bootstrap_servers_parser,
    deserializer_parser,
    interceptor_classes_parser,
    interceptors_parser,
    parse_auto_offset_reset,
    ssl_context_parser,
    token_provider_parser,
    optional_int,
    optional_number,
    value_schema_parser,
)

#: what value.format and key.format accept (pyconsumer.values.Format's names)
VALUE_FORMATS = ("binary", "string", "json", "avro", "protobuf")


class ConsumerConfig:
    """Validated consumer settings. Every setting is a snake_case attribute; see the package doc.

    ``ConsumerConfig(**settings)`` with Java names or snake_case keys; ``cfg["fetch.max.bytes"]``;
    ``cfg.as_dict()`` (Java name -> value); ``ConsumerConfig.settings()`` (the table).
    """

    # ---- connection and metadata
    bootstrap_servers = Setting(
        "bootstrap.servers",
        REQUIRED,
        bootstrap_servers_parser,
        "Initial brokers to discover the cluster from, parsed to [(host, port)]",
    )
    client_dns_lookup = Setting(
        "client.dns.lookup",
        "use_all_dns_ips",
        string(("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")),
        "use_all_dns_ips: a connection tries each address its host resolves to, in turn "
        "(all address families, where Java keeps the first one's); "
        "resolve_canonical_bootstrap_servers_only: when the bootstrap hosts are resolved "
        "(see bootstrap.resolve.timeout.ms: by default when the consumer is built), each "
        "bootstrap host is replaced by the "
        "canonical (reverse DNS) names of its addresses, and a host that does not resolve is "
        "a ConfigurationError, as in Java",
    )
    bootstrap_resolve_timeout_ms = Setting(
        "bootstrap.resolve.timeout.ms",
        0,
        int64(0),
        "As Java (KIP-909). 0: the bootstrap hosts are resolved when the consumer is built; "
        "a host that does not resolve is dropped with a WARNING, and none resolving is a "
        "ConfigurationError naming them. > 0: the consumer is built without resolving them; "
        "the first calls that need the cluster look them up (reconnect.backoff.ms apart) for "
        "at most this long, then raise a ConfigurationError naming them, on that call and "
        "every later one (close the consumer and build a new one, as Java's "
        "BootstrapResolutionException asks). Either way each connection resolves its host "
        "again when it connects",
        unit="ms",
    )
    client_id = Setting(
        "client.id",
        "",
        string(),
        "Name sent with every request; empty means consumer-{group.id}-{group.instance.id or "
        "a per-process sequence number}, as Java generates it",
    )
    client_rack = Setting(
        "client.rack", "", string(), "Rack of this consumer, for fetching from the closest replica"
    )
    metadata_max_age_ms = Setting(
        "metadata.max.age.ms",
        300000,
        int64(0),
        "Refresh metadata at least this often, even without errors",
        unit="ms",
    )
    metadata_recovery_strategy = Setting(
        "metadata.recovery.strategy",
        "rebootstrap",
        string(("none", "rebootstrap"), case_insensitive=True),
        "When no known broker can be reached (or no metadata came for "
        "metadata.recovery.rebootstrap.trigger.ms), start again from bootstrap.servers, "
        "looked up again (Java's rebootstrap); none: keep asking the known brokers",
    )
    metadata_recovery_rebootstrap_trigger_ms = Setting(
        "metadata.recovery.rebootstrap.trigger.ms",
        300000,
        int64(0),
        "With metadata.recovery.strategy=rebootstrap: rebootstrap after this long without "
        "being able to get metadata",
        unit="ms",
    )
    metadata_cluster_check_enable = Setting(
        "metadata.cluster.check.enable",
        True,
        boolean,
        "Java (KIP-1242): send cluster and node ids when connecting, so brokers can detect a "
        "misrouted connection",
        no_effect="pyconsumer sends ApiVersions v4 at most, which carries no cluster or node "
        "id (the check needs v5)",
    )
    request_timeout_ms = Setting(
        "request.timeout.ms",
        30000,
        int32(0),
        "Fail (and maybe retry) a request that gets no response within this time",
        unit="ms",
    )
    default_api_timeout_ms = Setting(
        "default.api.timeout.ms",
        60000,
        int32(0),
        "Timeout of blocking calls that take no timeout argument (commit, position...)",
        unit="ms",
    )
    connections_max_idle_ms = Setting(
        "connections.max.idle.ms",
        540000,
        int64(),
        "Close connections idle for longer than this; negative: never",
        unit="ms",
    )
    reconnect_backoff_ms = Setting(
        "reconnect.backoff.ms",
        50,
        int64(0),
        "First wait before reconnecting to a broker (grows exponentially per failure)",
        unit="ms",
    )
    reconnect_backoff_max_ms = Setting(
        "reconnect.backoff.max.ms",
        1000,
        int64(0),
        "Largest reconnect wait; if only reconnect.backoff.ms is given it also becomes this "
        "(no exponential growth), as in Java",
        unit="ms",
    )
    retry_backoff_ms = Setting(
        "retry.backoff.ms",
        100,
        int64(0),
        "Wait before retrying a failed request (coordinator lookup, commits, offset "
        "lookups...); also the first metadata refresh backoff, which doubles while refreshes "
        "fail or change nothing",
        unit="ms",
    )
    retry_backoff_max_ms = Setting(
        "retry.backoff.max.ms",
        1000,
        int64(0),
        "Largest retry backoff: metadata refreshes and the retries of blocking calls (commit, "
        "committed, offsets lookups, finding the coordinator) wait retry.backoff.ms doubling "
        "up to this, with jitter; below retry.backoff.ms it is a constant backoff, as in Java",
        unit="ms",
    )
    socket_connection_setup_timeout_ms = Setting(
        "socket.connection.setup.timeout.ms",
        10000,
        int64(0),
        "Timeout of the first attempt to set a connection up (TCP, TLS, ApiVersions), with "
        "+-20 % jitter; it doubles per attempt that failed while connecting and falls back "
        "once a connection is up (Java ClusterConnectionStates)",
        unit="ms",
    )
    socket_connection_setup_timeout_max_ms = Setting(
        "socket.connection.setup.timeout.max.ms",
        30000,
        int64(0),
        "Largest connection setup timeout; below socket.connection.setup.timeout.ms it is a "
        "constant timeout, as in Java",
        unit="ms",
    )
    send_buffer_bytes = Setting(
        "send.buffer.bytes", 131072, int32(-1), "SO_SNDBUF; -1: the OS default", unit="bytes"
    )
    receive_buffer_bytes = Setting(
        "receive.buffer.bytes", -1, int32(-1),
        "SO_RCVBUF; -1: the OS default (autotuned). Java's default is 65536, which pins the TCP "
        "window at 64 KiB: the broker then stalls on a large Fetch response while the consumer "
        "decodes the previous one", unit="bytes"
    )
    max_in_flight_requests_per_connection = Setting(
        "max.in.flight.requests.per.connection",
        5,
        int32(1),
        "Most requests sent to one broker and not yet answered",
        java=False,
    )
    max_response_size = Setting(
        "max.response.size",
        256 * 1024 * 1024,
        int32(1),
        "Largest response frame accepted; a larger size prefix is a KafkaProtocolError and "
        "closes the connection. Must be >= fetch.max.bytes and max.partition.fetch.bytes",
        unit="bytes",
        java=False,
    )

    # ---- group membership
    group_id = Setting(
        "group.id",
        None,
        optional_string(),
        "Consumer group; None: no group (assign() only, no commits to Kafka)",
    )
    group_instance_id = Setting(
        "group.instance.id",
        None,
        optional_string(check_group_instance_id, "None or a non-empty id of [a-zA-Z0-9._-]"),
        "Static membership id (KIP-345); needs group.id",
    )
    group_protocol = Setting(
        "group.protocol",
        "classic",
        string(("classic", "consumer"), case_insensitive=True),
        "classic: JoinGroup/SyncGroup rebalances; consumer: the KIP-848 protocol",
    )
    group_remote_assignor = Setting(
        "group.remote.assignor",
        None,
        optional_string(),
        "Server-side assignor for group.protocol=consumer (uniform, range); None: the "
        "broker's default",
    )
    session_timeout_ms = Setting(
        "session.timeout.ms",
        45000,
        int32(1),
        "Classic protocol: the member is removed if no heartbeat arrives within this time",
        unit="ms",
    )
    heartbeat_interval_ms = Setting(
        "heartbeat.interval.ms",
        3000,
        int32(1),
        "Classic protocol: time between heartbeats; must be below session.timeout.ms",
        unit="ms",
    )
    max_poll_interval_ms = Setting(
        "max.poll.interval.ms",
        300000,
        int32(1),
        "Leave the group if poll() is not called within this time (also the rebalance timeout)",
        unit="ms",
    )
    partition_assignment_strategy = Setting(
        "partition.assignment.strategy",
        ["range", "cooperative-sticky"],
        assignors_parser,
        "Classic protocol: assignors in order of preference (Java default RangeAssignor, "
        "CooperativeStickyAssignor)",
    )
    enable_auto_commit = Setting(
        "enable.auto.commit",
        True,
        boolean,
        "Commit consumed offsets every auto.commit.interval.ms; forced to False without a "
        "group.id unless explicitly set (then an error), as in Java",
    )
    auto_commit_interval_ms = Setting(
        "auto.commit.interval.ms", 5000, int32(0), "Auto-commit period", unit="ms"
    )

    # ---- fetching
    auto_offset_reset = Setting(
        "auto.offset.reset",
        "latest",
        auto_offset_reset_parser,
        "Where to start without a valid committed offset; see offset_reset_strategy",
    )
    fetch_min_bytes = Setting(
        "fetch.min.bytes",
        1,
        int32(0),
        "The broker waits (up to fetch.max.wait.ms) until this much data is available",
        unit="bytes",
    )
    fetch_max_bytes = Setting(
        "fetch.max.bytes",
        52428800,
        int32(0),
        "Most data per fetch response (the first batch is returned even if larger)",
        unit="bytes",
    )
    fetch_max_wait_ms = Setting(
        "fetch.max.wait.ms",
        500,
        int32(0),
        "Longest the broker holds a fetch waiting for fetch.min.bytes",
        unit="ms",
    )
    max_partition_fetch_bytes = Setting(
        "max.partition.fetch.bytes",
        1048576,
        int32(0),
        "Most data per partition in a fetch response (the first batch is returned even if "
        "larger)",
        unit="bytes",
    )
    max_poll_records = Setting(
        "max.poll.records", 500, int32(1), "Most records returned by one poll()"
    )
    isolation_level = Setting(
        "isolation.level",
        "read_uncommitted",
        string(("read_committed", "read_uncommitted")),
        "read_committed: only committed transactional records, up to the last stable offset",
    )
    check_crcs = Setting(
        "check.crcs", True, boolean, "Verify the CRC of every record batch consumed"
    )
    decode_threads = Setting(
        "decode.threads",
        0,
        int32(0, 64),
        "Threads poll_arrow() decodes on, besides the polling thread (the GIL is released "
        "while a batch is filled): a large answer's CRCs checked as it arrives, one large "
        "response's compressed batches decompressed in runs, typed values (value.format) of "
        "buffered partitions side by side when all their records fit in the call's "
        "max_records; the result is the same as one thread's. 1 decodes in the polling thread "
        "only; 0 picks one per core, at most 4",
        java=False,
    )
    exclude_internal_topics = Setting(
        "exclude.internal.topics",
        True,
        boolean,
        "Pattern subscriptions do not match internal topics (__consumer_offsets...)",
    )
    allow_auto_create_topics = Setting(
        "allow.auto.create.topics",
        True,
        boolean,
        "Let the broker create subscribed topics if it allows auto creation",
    )
    key_deserializer = Setting(
        "key.deserializer",
        None,
        deserializer_parser,
        "Turns key bytes into the record key; None keeps bytes (Java has no default: required)",
    )
    value_deserializer = Setting(
        "value.deserializer",
        None,
        deserializer_parser,
        "Turns value bytes into the record value; None keeps bytes (Java has no default: "
        "required)",
    )

    # ---- typed values: key/value decoded by pyconsumer.values.TypedValues (poll_arrow and poll)
    value_format = Setting(
        "value.format",
        "binary",
        string(VALUE_FORMATS, case_insensitive=True),
        "How poll_arrow() and poll() hand out record values: binary (the bytes), string (UTF-8 "
        "checked), json (a struct column per value.schema, Spark from_json results) or avro "
        "(Confluent-framed, writer schemas from schema.registry.url by id; or unframed with "
        "value.avro.framing=none) or protobuf (a message as Spark's from_protobuf gives it, "
        "see value.protobuf.*); bad values follow bad.records.mode. Excludes "
        "value.deserializer",
        java=False,
    )
    key_format = Setting(
        "key.format",
        "binary",
        string(VALUE_FORMATS, case_insensitive=True),
        "As value.format, for the record keys (key.schema, key.subject, key.avro.framing)",
        java=False,
    )
    value_schema = Setting(
        "value.schema",
        None,
        value_schema_parser,
        "json: the schema (a Spark DDL string, a pyspark StructType or a pyarrow Schema; "
        "required). avro: the reader schema (Avro JSON); unset, the latest schema of "
        "value.subject (or of the subject value.subject.name.strategy names for the topic), "
        "fixed at the first use; with value.avro.framing=none, the writer's schema (required). "
        "Checked when the consumer is built",
        java=False,
    )
    key_schema = Setting(
        "key.schema", None, value_schema_parser, "As value.schema, for the keys", java=False,
    )
    value_subject = Setting(
        "value.subject",
        None,
        optional_string(),
        "avro: the registry subject whose latest schema is the reader schema (default: the "
        "subject value.subject.name.strategy gives for each topic)",
        java=False,
    )
    key_subject = Setting(
        "key.subject", None, optional_string(), "As value.subject, for the keys", java=False,
    )
    value_avro_framing = Setting(
        "value.avro.framing",
        "confluent",
        string(("confluent", "none"), case_insensitive=True),
        "avro: confluent (0x00 + 4-byte schema id, 0x01 + 16-byte GUID, or the "
        "__value_schema_id header) or none (bare Avro bodies written with value.schema)",
        java=False,
    )
    key_avro_framing = Setting(
        "key.avro.framing",
        "confluent",
        string(("confluent", "none"), case_insensitive=True),
        "As value.avro.framing, for the keys (header __key_schema_id)",
        java=False,
    )
    value_protobuf_framing = Setting(
        "value.protobuf.framing",
        None,
        optional_string(),
        "protobuf: confluent (the default: 0x00 + 4-byte schema id + message-index array, or "
        "the id in the __value_schema_id header) or none (bare messages: needs "
        "value.protobuf.descriptor.file or value.schema)",
        java=False,
    )
    key_protobuf_framing = Setting(
        "key.protobuf.framing", None, optional_string(), "As value.protobuf.framing, for the keys",
        java=False,
    )
    value_protobuf_message = Setting(
        "value.protobuf.message",
        None,
        optional_string(),
        "protobuf: the full name of the message the values are (default: the schema file's "
        "first message)",
        java=False,
    )
    key_protobuf_message = Setting(
        "key.protobuf.message", None, optional_string(), "As value.protobuf.message, for the keys",
        java=False,
    )
    value_protobuf_descriptor_file = Setting(
        "value.protobuf.descriptor.file",
        None,
        optional_string(),
        "protobuf: a descriptor set file with the message and its imports (protoc "
        "--include_imports --descriptor_set_out, as Spark's from_protobuf takes); unset, the "
        "registry's latest schema of the value subject",
        java=False,
    )
    key_protobuf_descriptor_file = Setting(
        "key.protobuf.descriptor.file", None, optional_string(),
        "As value.protobuf.descriptor.file, for the keys", java=False,
    )
    value_protobuf_enums_as_ints = Setting(
        "value.protobuf.enums.as.ints",
        False,
        boolean,
        "protobuf: enums as their numbers (int) instead of their names (Spark's enums.as.ints)",
        java=False,
    )
    key_protobuf_enums_as_ints = Setting(
        "key.protobuf.enums.as.ints", False, boolean, "As value.protobuf.enums.as.ints, for the keys",
        java=False,
    )
    value_protobuf_emit_default_values = Setting(
        "value.protobuf.emit.default.values",
        False,
        boolean,
        "protobuf: unset proto3 scalars (without presence) give their defaults instead of null "
        "(Spark's emit.default.values)",
        java=False,
    )
    key_protobuf_emit_default_values = Setting(
        "key.protobuf.emit.default.values", False, boolean,
        "As value.protobuf.emit.default.values, for the keys", java=False,
    )
    value_subject_name_strategy = Setting(
        "value.subject.name.strategy",
        None,
        optional_string(),
        "avro without value.schema or value.subject: how the reader's subject is named from "
        "the topic: TopicNameStrategy (the default, '<topic>-value'), RecordNameStrategy, "
        "TopicRecordNameStrategy (Java class or confluent-kafka function names accepted)",
        java=False,
    )
    key_subject_name_strategy = Setting(
        "key.subject.name.strategy",
        None,
        optional_string(),
        "As value.subject.name.strategy, for the keys (TopicNameStrategy: '<topic>-key')",
        java=False,
    )
    bad_records_mode = Setting(
        "bad.records.mode",
        "PERMISSIVE",
        string(("PERMISSIVE", "DROPMALFORMED", "FAILFAST"), case_insensitive=True),
        "A key or value that does not decode (Spark's modes): PERMISSIVE gives null and its "
        "raw bytes in corrupt.record.column; DROPMALFORMED drops the record (counted in "
        "records-dropped-total); FAILFAST raises a MalformedValueError naming topic, "
        "partition and offset, after the records before it were returned, and keeps raising "
        "(the position stays on the bad record) until a seek moves past it",
        java=False,
    )
    corrupt_record_column = Setting(
        "corrupt.record.column",
        "_corrupt_record",
        optional_string(),
        "PERMISSIVE: poll_arrow()'s binary column of the raw bytes of bad values (null for "
        "good rows), '<name>_key' for bad keys (Spark's columnNameOfCorruptRecord); None or "
        "'' for no such column",
        java=False,
    )
    schema_registry_url = Setting(
        "schema.registry.url",
        None,
        optional_string(),
        "Schema Registry base URL(s), comma-separated (confluent-kafka's name): writer schemas "
        "by id, the latest reader schemas of subjects",
        java=False,
    )
    schema_registry_basic_auth_user_info = Setting(
        "schema.registry.basic.auth.user.info",
        None,
        password,
        "Schema Registry basic auth, 'user:password'",
        java=False,
    )
    schema_registry_basic_auth_credentials_source = Setting(
        "schema.registry.basic.auth.credentials.source",
        None,
        optional_string(),
        "USER_INFO (schema.registry.basic.auth.user.info, the default) or URL (credentials "
        "in the URL)",
        java=False,
    )
    schema_registry_bearer_auth_token = Setting(
        "schema.registry.bearer.auth.token",
        None,
        password,
        "Schema Registry bearer token (exclusive with basic auth)",
        java=False,
    )
    schema_registry_bearer_auth_credentials_source = Setting(
        "schema.registry.bearer.auth.credentials.source",
        None,
        optional_string(),
        "STATIC_TOKEN (schema.registry.bearer.auth.token, the default) or OAUTHBEARER (tokens "
        "from schema.registry.bearer.auth.issuer.endpoint.url)",
        java=False,
    )
    schema_registry_bearer_auth_issuer_endpoint_url = Setting(
        "schema.registry.bearer.auth.issuer.endpoint.url",
        None,
        optional_string(),
        "OAUTHBEARER source: the OAuth token endpoint the registry's bearer tokens come from "
        "(client-credentials grant)",
        java=False,
    )
    schema_registry_bearer_auth_client_id = Setting(
        "schema.registry.bearer.auth.client.id",
        None,
        optional_string(),
        "OAUTHBEARER source: the client id of the token request",
        java=False,
    )
    schema_registry_bearer_auth_client_secret = Setting(
        "schema.registry.bearer.auth.client.secret",
        None,
        password,
        "OAUTHBEARER source: the client secret of the token request",
        java=False,
    )
    schema_registry_bearer_auth_scope = Setting(
        "schema.registry.bearer.auth.scope",
        None,
        optional_string(),
        "OAUTHBEARER source: the scope of the token request",
        java=False,
    )
    schema_registry_bearer_auth_scope_claim_name = Setting(
        "schema.registry.bearer.auth.scope.claim.name",
        None,
        optional_string(),
        "OAUTHBEARER source: the token's scope claim; None: scope",
        java=False,
    )
    schema_registry_bearer_auth_sub_claim_name = Setting(
        "schema.registry.bearer.auth.sub.claim.name",
        None,
        optional_string(),
        "OAUTHBEARER source: the token's subject claim; None: sub",
        java=False,
    )
    schema_registry_bearer_auth_logical_cluster = Setting(
        "schema.registry.bearer.auth.logical.cluster",
        None,
        optional_string(),
        "the registry's logical cluster id, sent with a bearer token (Confluent Cloud's target-sr-cluster header)",
        java=False,
    )
    schema_registry_bearer_auth_identity_pool_id = Setting(
        "schema.registry.bearer.auth.identity.pool.id",
        None,
        optional_string(),
        "the identity pool id, sent with a bearer token (Confluent Cloud's Confluent-Identity-Pool-Id header)",
        java=False,
    )
    schema_registry_ssl_ca_location = Setting(
        "schema.registry.ssl.ca.location",
        None,
        optional_string(),
        "PEM file of the CA certificates the registry's certificate is checked against",
        java=False,
    )
    schema_registry_ssl_certificate_location = Setting(
        "schema.registry.ssl.certificate.location",
        None,
        optional_string(),
        "PEM client certificate for mutual TLS with the registry",
        java=False,
    )
    schema_registry_ssl_key_location = Setting(
        "schema.registry.ssl.key.location",
        None,
        optional_string(),
        "PEM private key of schema.registry.ssl.certificate.location",
        java=False,
    )
    schema_registry_ssl_key_password = Setting(
        "schema.registry.ssl.key.password",
        None,
        password,
        "Password of schema.registry.ssl.key.location",
        java=False,
    )
    schema_registry_timeout = Setting(
        "schema.registry.timeout",
        None,
        optional_number(0),
        "Seconds one registry request may take (None: the client's default)",
        unit="s",
        java=False,
    )
    schema_registry_max_retries = Setting(
        "schema.registry.max.retries",
        None,
        optional_int(0),
        "Retries of a registry request that failed to connect or got a 5xx/429 (None: the "
        "client's default); after them the poll raises, no record lost",
        java=False,
    )
    schema_registry_retries_wait_ms = Setting(
        "schema.registry.retries.wait.ms",
        None,
        optional_int(0),
        "First wait before a registry retry, doubling per retry (None: the client's default)",
        unit="ms",
        java=False,
    )
    schema_registry_retries_max_wait_ms = Setting(
        "schema.registry.retries.max.wait.ms",
        None,
        optional_int(0),
        "Longest wait between registry retries (None: the client's default)",
        unit="ms",
        java=False,
    )

    # ---- metrics and interceptors
    metrics_sample_window_ms = Setting(
        "metrics.sample.window.ms",
        30000,
        int64(1),
        "The window of one sample of the windowed metrics (avg, max, min, rate) of "
        "KafkaConsumer.metrics() (Java allows 0, which breaks its rates: >= 1 here)",
        unit="ms",
    )
    metrics_num_samples = Setting(
        "metrics.num.samples",
        2,
        int32(1),
        "How many samples the windowed metrics keep: they cover the last "
        "metrics.num.samples * metrics.sample.window.ms",
    )
    interceptor_classes = Setting(
        "interceptor.classes",
        [],
        interceptor_classes_parser,
        "Consumer interceptors, by import path ('module:Class' or 'module.Class') or class: "
        "each is built with no arguments, then configure(settings) if it defines it; see "
        "pyconsumer.consumer.interceptors. They run before those of 'interceptors'",
    )
    interceptors = Setting(
        "interceptors",
        [],
        interceptors_parser,
        "Consumer interceptor objects (on_consume, on_consume_arrow, on_commit, close, "
        "configure, each optional); they run after those of interceptor.classes",
        java=False,
    )

    # ---- security
    security_protocol = Setting(
        "security.protocol",
        "PLAINTEXT",
        string(SECURITY_PROTOCOLS, case_insensitive=True),
        "Transport: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT (SASL authentication) or SASL_SSL "
        "(SASL over TLS)",
    )
    ssl_context = Setting(
        "ssl.context",
        None,
        ssl_context_parser,
        "A ready ssl.SSLContext; when given, the other ssl.* settings must not be",
        java=False,
    )
    ssl_protocol = Setting(
        "ssl.protocol",
        "TLSv1.3",
        string(("TLS",) + TLS_PROTOCOLS),
        "Highest TLS version used (TLS: no limit): as in Java, TLSv1.2 never speaks TLSv1.3 "
        "even if ssl.enabled.protocols lists it; none of those at or below it is an error",
    )
    ssl_enabled_protocols = Setting(
        "ssl.enabled.protocols",
        "TLSv1.2,TLSv1.3",
        string_list(TLS_PROTOCOLS, allow_empty=False),
        "TLS versions allowed (min and max of this list bound the handshake)",
    )
    ssl_cipher_suites = Setting(
        "ssl.cipher.suites",
        [],
        string_list(),
        "Cipher suites, in OpenSSL names; empty: OpenSSL's defaults",
    )
    ssl_endpoint_identification_algorithm = Setting(
        "ssl.endpoint.identification.algorithm",
        "https",
        optional_string(),
        "https: check the broker's certificate matches its host name; empty: do not check",
    )
    ssl_truststore_type = Setting(
        "ssl.truststore.type",
        "JKS",
        string(STORE_TYPES, case_insensitive=True),
        "Format of ssl.truststore.location: JKS or PKCS12 (either reads both formats, as in "
        "Java) or PEM; left at the default, a PEM file is read as PEM",
    )
    ssl_truststore_location = Setting(
        "ssl.truststore.location",
        None,
        optional_string(),
        "Trust store: a JKS or PKCS12 store or a PEM file of CA certificates; None and no "
        "ssl.truststore.certificates: the system's CAs",
    )
    ssl_truststore_certificates = Setting(
        "ssl.truststore.certificates", None, password, "CA certificates as PEM text"
    )
    ssl_truststore_password = Setting(
        "ssl.truststore.password",
        None,
        password,
        "Password of a JKS/PKCS12 trust store (a JKS one is read unchecked without it, as in "
        "Java; a PEM file has none)",
    )
    ssl_keystore_type = Setting(
        "ssl.keystore.type",
        "JKS",
        string(STORE_TYPES, case_insensitive=True),
        "Format of ssl.keystore.location: JKS or PKCS12 (either reads both formats, as in "
        "Java) or PEM; left at the default, a PEM file is read as PEM",
    )
    ssl_keystore_location = Setting(
        "ssl.keystore.location",
        None,
        optional_string(),
        "Key store for mutual TLS: a JKS or PKCS12 store with one private key, or a PEM file "
        "with the client certificate chain and private key",
    )
    ssl_keystore_password = Setting(
        "ssl.keystore.password",
        None,
        password,
        "Password of a JKS/PKCS12 key store (required with one, as in Java); for a PEM key, "
        "used if ssl.key.password is unset",
    )
    ssl_key_password = Setting(
        "ssl.key.password", None, password,
        "Password of the private key: inside a JKS store (unset: ssl.keystore.password), or "
        "of an encrypted PEM key; a PKCS12 store uses ssl.keystore.password for both"
    )
    ssl_keystore_key = Setting(
        "ssl.keystore.key",
        None,
        password,
        "Client private key as PEM text (with ssl.keystore.certificate.chain)",
    )
    ssl_keystore_certificate_chain = Setting(
        "ssl.keystore.certificate.chain",
        None,
        password,
        "Client certificate chain as PEM text (with ssl.keystore.key)",
    )
    sasl_mechanism = Setting(
        "sasl.mechanism",
        "GSSAPI",
        string(),
        f"SASL mechanism for SASL_* protocols: one of {', '.join(SASL_MECHANISMS)} "
        f"(Java's default GSSAPI is Kerberos)",
    )
    sasl_jaas_config = Setting(
        "sasl.jaas.config",
        None,
        password,
        "A JAAS login module line (PlainLoginModule, ScramLoginModule, OAuthBearerLoginModule, "
        "Krb5LoginModule) matching sasl.mechanism; a Plain/Scram one gives the user name and "
        "password (instead of sasl.username/sasl.password)",
    )
    sasl_username = Setting(
        "sasl.username",
        None,
        optional_string(),
        "SASL PLAIN/SCRAM user name (or from sasl.jaas.config)",
        java=False,
    )
    sasl_password = Setting(
        "sasl.password",
        None,
        password,
        "SASL PLAIN/SCRAM password (or from sasl.jaas.config); never shown",
        java=False,
    )
    sasl_kerberos_service_name = Setting(
        "sasl.kerberos.service.name",
        None,
        optional_string(),
        "GSSAPI: the Kerberos service name of the brokers (their principal is "
        "<service>/<broker host>), or serviceName in sasl.jaas.config",
    )
    sasl_kerberos_principal = Setting(
        "sasl.kerberos.principal",
        None,
        optional_string(),
        "GSSAPI: the client principal (or principal in a Krb5LoginModule sasl.jaas.config); "
        "unset: the default of the keytab or ticket cache",
        java=False,
    )
    sasl_kerberos_keytab = Setting(
        "sasl.kerberos.keytab",
        None,
        optional_string(),
        "GSSAPI: a keytab file to get the client's tickets from (or keyTab with useKeyTab=true "
        "in a Krb5LoginModule sasl.jaas.config); unset: the ticket cache (kinit, KRB5CCNAME)",
        java=False,
    )
    sasl_oauth_token_provider = Setting(
        "sasl.oauth.token.provider",
        None,
        token_provider_parser,
        "OAUTHBEARER: a callable returning a token (a str, or (token, lifetime ms)), or an "
        "object with a token() method; called for each authentication",
        java=False,
    )
    sasl_oauthbearer_token_endpoint_url = Setting(
        "sasl.oauthbearer.token.endpoint.url",
        None,
        optional_string(),
        "OAUTHBEARER: an OAuth 2 token endpoint; tokens come from a client-credentials grant "
        "with sasl.oauthbearer.client.credentials.client.id/secret (or clientId, clientSecret "
        "from an OAuthBearerLoginModule sasl.jaas.config)",
    )
    sasl_oauthbearer_client_credentials_client_id = Setting(
        "sasl.oauthbearer.client.credentials.client.id",
        None,
        optional_string(),
        "OAUTHBEARER: the client id of the client-credentials grant; unset: clientId in "
        "sasl.jaas.config",
    )
    sasl_oauthbearer_client_credentials_client_secret = Setting(
        "sasl.oauthbearer.client.credentials.client.secret",
        None,
        password,
        "OAUTHBEARER: the client secret of the client-credentials grant; unset: clientSecret "
        "in sasl.jaas.config",
    )
    sasl_oauthbearer_scope = Setting(
        "sasl.oauthbearer.scope",
        None,
        optional_string(),
        "OAUTHBEARER: the scope parameter of the token request; unset: scope in "
        "sasl.jaas.config, or none",
    )
    sasl_oauthbearer_scope_claim_name = Setting(
        "sasl.oauthbearer.scope.claim.name",
        "scope",
        string(),
        "OAUTHBEARER: the JWT claim holding the token's scope (a string or a list of strings)",
    )
    sasl_oauthbearer_sub_claim_name = Setting(
        "sasl.oauthbearer.sub.claim.name",
        "sub",
        string(),
        "OAUTHBEARER: the JWT claim holding the token's subject; a token from the endpoint "
        "without it is refused before it is sent",
    )
    sasl_oauthbearer_header_urlencode = Setting(
        "sasl.oauthbearer.header.urlencode",
        False,
        boolean,
        "OAUTHBEARER: URL-encode the client id and secret in the token request's Basic "
        "authorization header (RFC 6749 2.3.1)",
    )
    sasl_oauthbearer_jwt_retriever_class = Setting(
        "sasl.oauthbearer.jwt.retriever.class",
        "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
        string(tuple(p + c for c in ("DefaultJwtRetriever", "ClientCredentialsJwtRetriever",
                                     "JwtBearerJwtRetriever")
                     for p in ("org.apache.kafka.common.security.oauthbearer.", ""))),
        "OAUTHBEARER: how tokens are got from sasl.oauthbearer.token.endpoint.url: "
        "DefaultJwtRetriever and ClientCredentialsJwtRetriever: the client-credentials grant; "
        "JwtBearerJwtRetriever: the JWT-bearer grant with a signed assertion (KIP-1139)",
    )
    sasl_oauthbearer_assertion_algorithm = Setting(
        "sasl.oauthbearer.assertion.algorithm",
        "RS256",
        string(("RS256", "ES256")),
        "JWT-bearer grant: the assertion's signature algorithm",
    )
    sasl_oauthbearer_assertion_private_key_file = Setting(
        "sasl.oauthbearer.assertion.private.key.file",
        None,
        optional_string(),
        "JWT-bearer grant: the PEM private key (PKCS#8, maybe encrypted) signing the assertion",
    )
    sasl_oauthbearer_assertion_private_key_passphrase = Setting(
        "sasl.oauthbearer.assertion.private.key.passphrase",
        None,
        password,
        "JWT-bearer grant: the passphrase of an encrypted private key",
    )
    sasl_oauthbearer_assertion_template_file = Setting(
        "sasl.oauthbearer.assertion.template.file",
        None,
        optional_string(),
        "JWT-bearer grant: a JSON file of static 'header' and 'payload' values of the assertion",
    )
    sasl_oauthbearer_assertion_file = Setting(
        "sasl.oauthbearer.assertion.file",
        None,
        optional_string(),
        "JWT-bearer grant: a file holding a ready assertion, read for each token request "
        "(instead of signing one)",
    )
    sasl_oauthbearer_assertion_claim_aud = Setting(
        "sasl.oauthbearer.assertion.claim.aud",
        None,
        optional_string(),
        "JWT-bearer grant: the assertion's aud claim",
    )
    sasl_oauthbearer_assertion_claim_iss = Setting(
        "sasl.oauthbearer.assertion.claim.iss",
        None,
        optional_string(),
        "JWT-bearer grant: the assertion's iss claim",
    )
    sasl_oauthbearer_assertion_claim_sub = Setting(
        "sasl.oauthbearer.assertion.claim.sub",
        None,
        optional_string(),
        "JWT-bearer grant: the assertion's sub claim",
    )
    sasl_oauthbearer_assertion_claim_exp_seconds = Setting(
        "sasl.oauthbearer.assertion.claim.exp.seconds",
        300,
        int32(1),
        "JWT-bearer grant: the assertion expires this long after it is made",
        unit="s",
    )
    sasl_oauthbearer_assertion_claim_nbf_seconds = Setting(
        "sasl.oauthbearer.assertion.claim.nbf.seconds",
        60,
        int32(0),
        "JWT-bearer grant: the assertion's nbf is this long before it is made",
        unit="s",
    )
    sasl_oauthbearer_assertion_claim_jti_include = Setting(
        "sasl.oauthbearer.assertion.claim.jti.include",
        False,
        boolean,
        "JWT-bearer grant: give the assertion a unique jti claim",
    )
    sasl_oauthbearer_expected_audience = Setting(
        "sasl.oauthbearer.expected.audience",
        None,
        optional_string(),
        "Java: the audiences a broker accepts in a token's aud claim",
        no_effect="a broker-side check: Java's clients do not apply it either",
    )
    sasl_oauthbearer_expected_issuer = Setting(
        "sasl.oauthbearer.expected.issuer",
        None,
        optional_string(),
        "Java: the issuer a broker accepts in a token's iss claim",
        no_effect="a broker-side check: Java's clients do not apply it either",
    )
    sasl_login_connect_timeout_ms = Setting(
        "sasl.login.connect.timeout.ms",
        None,
        optional_int(0),
        "OAUTHBEARER: the connect timeout of the token endpoint calls; unset: 10 s (Java: "
        "the JDK's, no limit)",
        unit="ms",
    )
    sasl_login_read_timeout_ms = Setting(
        "sasl.login.read.timeout.ms",
        None,
        optional_int(0),
        "OAUTHBEARER: the read timeout of the token endpoint calls; unset: 10 s (Java: the "
        "JDK's, no limit)",
        unit="ms",
    )
    sasl_login_retry_backoff_ms = Setting(
        "sasl.login.retry.backoff.ms",
        100,
        int64(0),
        "OAUTHBEARER: the first wait before retrying the token endpoint after a connection "
        "error, a timeout or an HTTP 5xx (never after a 4xx); the waits double",
        unit="ms",
    )
    sasl_login_retry_backoff_max_ms = Setting(
        "sasl.login.retry.backoff.max.ms",
        10000,
        int64(0),
        "OAUTHBEARER: the longest wait between token endpoint attempts, and the time after "
        "which the attempts stop",
        unit="ms",
    )

    # ------------------------------------------------------------------ construction

    _values: dict[str, Any]
    _originals: dict[str, Any]  # Java name -> value as given, including ignored settings
    #: Java names given explicitly (either spelling)
    explicitly_set: frozenset[str]
    #: accepted-and-ignored Java-only settings (Java name -> value as given)
    ignored_settings: dict[str, Any]

    def __init__(self, **settings: Any) -> None:
        table = self._table()
        given: dict[str, Any] = {}
        spelled: dict[str, str] = {}
        ignored: dict[str, Any] = {}
        for key, raw in settings.items():
            name = key.replace("_", ".")
            if name in spelled:
                fail(
                    f"Setting {name} is given twice, as {spelled[name]!r} and {key!r}; "
                    "give one spelling only"
                )
            spelled[name] = key
            if name in table:
                given[name] = raw
                continue
            java_only = java_only_action(name)
            if java_only is None:
                fail(self._unknown_message(key))
            action, reason = java_only
            if action == "ignore":
                ignored[name] = raw
                log.info("pyconsumer ignores Java-only setting %s (%s)", name, reason)
            elif raw not in (None, "", [], ()):
                fail(f"Setting {name} is not supported by pyconsumer: {reason}")

        values: dict[str, Any] = {}
        for name, setting in table.items():
            if name in given:
                raw = given[name]
            elif setting.required:
                fail(f"Missing required setting {name} ({setting.attr}), which has no default")
            else:
                raw = setting.default
            try:
                values[name] = setting.validator(raw)
            except Invalid as exc:
                shown = "<hidden>" if setting.validator is password else repr(raw)
                fail(
                    f"Invalid value {shown} for setting {name} ({setting.attr}): {exc}; "
                    f"accepted: {setting.validator.accepted}"
                )

        given_values = {name: values[name] for name in given}   # before the cross-checks
        object.__setattr__(self, "_originals", {**given, **ignored})
        object.__setattr__(self, "explicitly_set", frozenset(given))
        object.__setattr__(self, "ignored_settings", ignored)
        object.__setattr__(self, "_values", values)
        check_together(values, self.explicitly_set)
        # only for a config that stands: a refused one says what is wrong instead
        for name in given:
            setting = table[name]
            if setting.no_effect is not None and not setting.is_quiet(given_values[name]):
                warn_no_effect(setting)

    @staticmethod
    def _unknown_message(key: str) -> str:
        snake = "." not in key
        candidates = [s.attr if snake else s.name for s in ConsumerConfig.settings()]
        close = difflib.get_close_matches(key, candidates, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        return f"Unknown setting {key!r}{hint}"

    # ------------------------------------------------------------------ access

    @classmethod
    def settings(cls) -> tuple[Setting[Any], ...]:
        """The settings table, in declaration order."""
        return tuple(cls._table().values())

    @classmethod
    def _table(cls) -> dict[str, Setting[Any]]:
        return _TABLE

    def __getitem__(self, key: str) -> Any:
        name = key.replace("_", ".")
        if name not in self._values:
            raise KeyError(self._unknown_message(key))
        return self._values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ConsumerConfig is immutable; use with_overrides()")

    def as_dict(self) -> dict[str, Any]:
        """Java name -> value, for every setting."""
        return dict(self._values)

    def with_overrides(self, **settings: Any) -> ConsumerConfig:
        """A new config from the settings given to this one, updated by ``settings``."""
        base = dict(self._originals)
        for key, value in settings.items():
            base[key.replace("_", ".")] = value
        return ConsumerConfig(**base)

    @property
    def offset_reset_strategy(self) -> OffsetResetStrategy:
        """``auto.offset.reset`` parsed: kind and, for by_duration, duration_ms."""
        return parse_auto_offset_reset(self._values["auto.offset.reset"])

    def __repr__(self) -> str:
        secret = {n for n, s in self._table().items() if s.validator is password}
        shown = {
            n: ("********" if n in secret and val is not None else val)
            for n, val in self._values.items()
            if n in self.explicitly_set or n == "client.id"
        }
        return f"ConsumerConfig({shown})"


#: Java name -> Setting, in declaration order
_TABLE: dict[str, Setting[Any]] = {
    v.name: v for v in vars(ConsumerConfig).values() if isinstance(v, Setting)
}
