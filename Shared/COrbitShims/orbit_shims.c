#include "orbit_shims.h"
#ifdef __GLIBC__
#include <malloc.h>
#endif

amqp_rpc_reply_t orbit_amqp_login_plain(amqp_connection_state_t state, const char *vhost,
                                        int channel_max, int frame_max, int heartbeat,
                                        const char *user, const char *password) {
    return amqp_login(state, vhost, channel_max, frame_max, heartbeat,
                      AMQP_SASL_METHOD_PLAIN, user, password);
}

int orbit_keep_freed_heap(int bytes, int arenas) {
#ifdef __GLIBC__
    return mallopt(M_ARENA_MAX, arenas) == 1 && mallopt(M_MMAP_THRESHOLD, bytes) == 1
        && mallopt(M_TRIM_THRESHOLD, bytes) == 1;
#else
    (void)bytes;
    (void)arenas;
    return 0;
#endif
}
