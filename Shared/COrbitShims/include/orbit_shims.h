#ifndef ORBIT_SHIMS_H
#define ORBIT_SHIMS_H
#include <amqp.h>
#include <amqp_framing.h>

/// `amqp_login` is variadic, which Swift cannot call: this wraps the PLAIN mechanism.
amqp_rpc_reply_t orbit_amqp_login_plain(amqp_connection_state_t state, const char *vhost,
                                        int channel_max, int frame_max, int heartbeat,
                                        const char *user, const char *password);

// rabbitmq-c defines these as macros with casts and shifts; constants give Swift one spelling.
static const amqp_method_number_t ORBIT_AMQP_BASIC_ACK = AMQP_BASIC_ACK_METHOD;
static const amqp_method_number_t ORBIT_AMQP_BASIC_NACK = AMQP_BASIC_NACK_METHOD;
static const amqp_method_number_t ORBIT_AMQP_BASIC_RETURN = AMQP_BASIC_RETURN_METHOD;
static const amqp_method_number_t ORBIT_AMQP_BASIC_CANCEL = AMQP_BASIC_CANCEL_METHOD;
static const amqp_method_number_t ORBIT_AMQP_BASIC_GET_OK = AMQP_BASIC_GET_OK_METHOD;
static const amqp_method_number_t ORBIT_AMQP_CHANNEL_CLOSE = AMQP_CHANNEL_CLOSE_METHOD;
static const amqp_method_number_t ORBIT_AMQP_CONNECTION_CLOSE = AMQP_CONNECTION_CLOSE_METHOD;
static const amqp_flags_t ORBIT_AMQP_FLAG_CONTENT_TYPE = AMQP_BASIC_CONTENT_TYPE_FLAG;
static const amqp_flags_t ORBIT_AMQP_FLAG_DELIVERY_MODE = AMQP_BASIC_DELIVERY_MODE_FLAG;
static const amqp_flags_t ORBIT_AMQP_FLAG_MESSAGE_ID = AMQP_BASIC_MESSAGE_ID_FLAG;
static const amqp_flags_t ORBIT_AMQP_FLAG_TYPE = AMQP_BASIC_TYPE_FLAG;
static const amqp_flags_t ORBIT_AMQP_FLAG_TIMESTAMP = AMQP_BASIC_TIMESTAMP_FLAG;
static const amqp_flags_t ORBIT_AMQP_FLAG_HEADERS = AMQP_BASIC_HEADERS_FLAG;
static const amqp_flags_t ORBIT_AMQP_FLAG_APP_ID = AMQP_BASIC_APP_ID_FLAG;
static const uint8_t ORBIT_AMQP_FRAME_METHOD = AMQP_FRAME_METHOD;
static const int ORBIT_AMQP_REPLY_SUCCESS = AMQP_REPLY_SUCCESS;

/// glibc's `mallopt` (`<malloc.h>`, which Swift's Glibc module leaves out): at most `arenas`
/// arenas, and `M_MMAP_THRESHOLD` and `M_TRIM_THRESHOLD` both `bytes`. 1 when all were set, 0
/// otherwise (and always 0 on a C library other than glibc).
int orbit_keep_freed_heap(int bytes, int arenas);
#endif
