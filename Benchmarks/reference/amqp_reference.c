/*
 * The reference for scripts/bench/messaging.sh: the same job as `orbitcove-bench --mode amqp`
 * written directly against rabbitmq-c, with nothing in between. One thread publishes
 * persistent 200-byte messages in windows with publisher confirms, with the properties our
 * messages carry (message id, type, app id, timestamp, content type, an empty headers table);
 * another consumes with the same prefetch and one basic.ack per message. Both stamp
 * CLOCK_MONOTONIC like the Swift code.
 *
 *   amqp_reference HOST PORT USER PASSWORD VHOST QUEUE MESSAGES WINDOW PREFETCH
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *host, *user, *password, *vhost, *queue;
static int port, messages, window_size, prefetch;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void die_on_reply(amqp_rpc_reply_t reply, const char *what) {
    if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
        fprintf(stderr, "amqp_reference: %s failed (reply type %d)\n", what, reply.reply_type);
        exit(1);
    }
}

static amqp_connection_state_t open_connection(void) {
    amqp_connection_state_t conn = amqp_new_connection();
    amqp_socket_t *socket = amqp_tcp_socket_new(conn);
    if (!socket || amqp_socket_open(socket, host, port) != AMQP_STATUS_OK) {
        fprintf(stderr, "amqp_reference: cannot connect\n");
        exit(1);
    }
    die_on_reply(amqp_login(conn, vhost, 0, 131072, 30, AMQP_SASL_METHOD_PLAIN, user, password), "login");
    amqp_channel_open(conn, 1);
    die_on_reply(amqp_get_rpc_reply(conn), "channel.open");
    return conn;
}

static void *publish(void *unused) {
    (void)unused;
    amqp_connection_state_t conn = open_connection();
    amqp_confirm_select(conn, 1);
    die_on_reply(amqp_get_rpc_reply(conn), "confirm.select");
    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
                   AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_APP_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_HEADERS_FLAG;
    props.delivery_mode = 2;
    props.content_type = amqp_cstring_bytes("application/json");
    props.type = amqp_cstring_bytes("bench.message");
    props.app_id = amqp_cstring_bytes("bench");
    props.headers = amqp_empty_table;
    char body[200], message_id[37];
    uint64_t published = 0, confirmed = 0;
    while (published < (uint64_t)messages) {
        uint64_t batch_end = published + (uint64_t)window_size;
        if (batch_end > (uint64_t)messages) batch_end = (uint64_t)messages;
        for (; published < batch_end; published++) {
            memset(body, ' ', sizeof body);
            int length = snprintf(body, sizeof body, "%llu", (unsigned long long)now_ns());
            body[length] = ' ';
            snprintf(message_id, sizeof message_id, "00000000-0000-4000-8000-%012llx", (unsigned long long)published);
            props.message_id = amqp_cstring_bytes(message_id);
            props.timestamp = (uint64_t)time(NULL);
            amqp_bytes_t bytes = {sizeof body, body};
            if (amqp_basic_publish(conn, 1, amqp_empty_bytes, amqp_cstring_bytes(queue), 1, 0, &props, bytes) !=
                AMQP_STATUS_OK) {
                fprintf(stderr, "amqp_reference: publish failed\n");
                exit(1);
            }
        }
        while (confirmed < published) {
            amqp_frame_t frame;
            if (amqp_simple_wait_frame(conn, &frame) != AMQP_STATUS_OK) {
                fprintf(stderr, "amqp_reference: waiting for confirms failed\n");
                exit(1);
            }
            if (frame.frame_type != AMQP_FRAME_METHOD) continue;
            if (frame.payload.method.id == AMQP_BASIC_ACK_METHOD) {
                amqp_basic_ack_t *ack = frame.payload.method.decoded;
                confirmed = ack->delivery_tag;
            } else if (frame.payload.method.id == AMQP_BASIC_NACK_METHOD) {
                fprintf(stderr, "amqp_reference: the broker refused a message\n");
                exit(1);
            }
        }
        amqp_maybe_release_buffers(conn);
    }
    amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn);
    return NULL;
}

static int compare(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 10) {
        fprintf(stderr, "usage: %s HOST PORT USER PASSWORD VHOST QUEUE MESSAGES WINDOW PREFETCH\n", argv[0]);
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    user = argv[3];
    password = argv[4];
    vhost = argv[5];
    queue = argv[6];
    messages = atoi(argv[7]);
    window_size = atoi(argv[8]);
    prefetch = atoi(argv[9]);

    amqp_connection_state_t conn = open_connection();
    amqp_table_entry_t arguments[6] = {
        {amqp_cstring_bytes("x-queue-type"), {.kind = AMQP_FIELD_KIND_UTF8, .value.bytes = amqp_cstring_bytes("quorum")}},
        {amqp_cstring_bytes("x-delivery-limit"), {.kind = AMQP_FIELD_KIND_I64, .value.i64 = 10}},
        {amqp_cstring_bytes("x-dead-letter-exchange"),
         {.kind = AMQP_FIELD_KIND_UTF8, .value.bytes = amqp_cstring_bytes("orbitcove.dead-letter")}},
        {amqp_cstring_bytes("x-dead-letter-routing-key"), {.kind = AMQP_FIELD_KIND_UTF8, .value.bytes = amqp_cstring_bytes(queue)}},
        {amqp_cstring_bytes("x-dead-letter-strategy"),
         {.kind = AMQP_FIELD_KIND_UTF8, .value.bytes = amqp_cstring_bytes("at-least-once")}},
        {amqp_cstring_bytes("x-overflow"), {.kind = AMQP_FIELD_KIND_UTF8, .value.bytes = amqp_cstring_bytes("reject-publish")}},
    };
    amqp_table_t table = {6, arguments};
    amqp_queue_declare(conn, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0, table);
    die_on_reply(amqp_get_rpc_reply(conn), "queue.declare");
    amqp_basic_qos(conn, 1, 0, (uint16_t)prefetch, 0);
    die_on_reply(amqp_get_rpc_reply(conn), "basic.qos");
    amqp_basic_consume(conn, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    die_on_reply(amqp_get_rpc_reply(conn), "basic.consume");

    uint64_t *latencies = malloc(sizeof(uint64_t) * (size_t)messages);
    uint64_t started = now_ns();
    pthread_t publisher;
    pthread_create(&publisher, NULL, publish, NULL);
    for (int received = 0; received < messages; received++) {
        amqp_envelope_t envelope;
        amqp_maybe_release_buffers(conn);
        die_on_reply(amqp_consume_message(conn, &envelope, NULL, 0), "consume");
        latencies[received] = now_ns() - strtoull((const char *)envelope.message.body.bytes, NULL, 10);
        amqp_basic_ack(conn, 1, envelope.delivery_tag, 0);
        amqp_destroy_envelope(&envelope);
    }
    double seconds = (double)(now_ns() - started) / 1e9;
    pthread_join(publisher, NULL);
    amqp_queue_delete(conn, 1, amqp_cstring_bytes(queue), 0, 0);
    qsort(latencies, (size_t)messages, sizeof(uint64_t), compare);
    printf("client=c-reference messages=%d seconds=%.2f throughput=%.0f p50_ms=%.2f p99_ms=%.2f\n", messages, seconds,
           messages / seconds, latencies[messages / 2] / 1e6, latencies[(int)(messages * 0.99)] / 1e6);
    amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn);
    free(latencies);
    return 0;
}
