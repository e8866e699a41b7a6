-- Transactional outbox and per-consumer inbox.
--
-- A change and the message announcing it commit together in one transaction (outbox);
-- the relay publishes rows in `seq` order with publisher confirms. Consumers record each
-- message id in the inbox in the same transaction as their side effects, so a redelivered
-- message is acknowledged without being applied twice.
CREATE TABLE outbox (
    id UUID PRIMARY KEY,
    seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    queue VARCHAR(100) NOT NULL,
    message_type VARCHAR(100) NOT NULL,
    message_version INTEGER NOT NULL,
    occurred_at TIMESTAMP WITH TIME ZONE NOT NULL,
    community_id UUID,
    actor_id UUID,
    data JSONB NOT NULL,
    traceparent VARCHAR(55),
    created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    attempts INTEGER NOT NULL DEFAULT 0,
    claimed_until TIMESTAMP WITH TIME ZONE,
    published_at TIMESTAMP WITH TIME ZONE,
    last_error TEXT
);

CREATE INDEX idx_outbox_unpublished ON outbox(seq) WHERE published_at IS NULL;
CREATE INDEX idx_outbox_published ON outbox(published_at) WHERE published_at IS NOT NULL;

-- Wakes relays listening on the channel; they also poll, so a lost notification only delays.
CREATE OR REPLACE FUNCTION notify_outbox()
RETURNS TRIGGER AS $$
BEGIN
    PERFORM pg_notify('orbitcove_outbox', '');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER trigger_outbox_notify
AFTER INSERT ON outbox
FOR EACH STATEMENT EXECUTE FUNCTION notify_outbox();

CREATE TABLE inbox (
    consumer VARCHAR(100) NOT NULL,
    message_id UUID NOT NULL,
    message_type VARCHAR(100) NOT NULL,
    processed_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    PRIMARY KEY (consumer, message_id)
);

CREATE INDEX idx_inbox_processed ON inbox(processed_at);
