-- What the core API needs beyond the seed's tables: account and community deletion with
-- grace periods, the invite lifecycle, idempotent POSTs, and the change log behind sync.

-- DELETE /me schedules; a retention job anonymises the account when the grace period ends.
ALTER TABLE users ADD COLUMN deletion_requested_at TIMESTAMP WITH TIME ZONE;
CREATE INDEX idx_users_deletion_requested ON users(deletion_requested_at)
    WHERE deletion_requested_at IS NOT NULL AND deleted_at IS NULL;

-- Soft-deleted communities are restorable for 30 days, then purged.
ALTER TABLE communities ADD COLUMN deleted_by UUID REFERENCES users(id);
CREATE INDEX idx_communities_deleted ON communities(deleted_at) WHERE deleted_at IS NOT NULL;

ALTER TABLE members ADD COLUMN removed_by UUID REFERENCES users(id);
CREATE INDEX idx_members_community_joined ON members(community_id, joined_at, id) WHERE left_at IS NULL;

ALTER TABLE invites ADD COLUMN max_uses INTEGER;
ALTER TABLE invites ADD COLUMN use_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE invites ADD COLUMN revoked_at TIMESTAMP WITH TIME ZONE;
CREATE INDEX idx_invites_community ON invites(community_id, created_at DESC);

-- A POST that carries an Idempotency-Key: the first response, replayed to retries.
CREATE TABLE idempotency_keys (
    user_id UUID NOT NULL,
    key VARCHAR(255) NOT NULL,
    request_hash CHAR(64) NOT NULL,
    status_code INTEGER,
    content_type VARCHAR(255),
    location VARCHAR(1000),
    body BYTEA,
    created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    completed_at TIMESTAMP WITH TIME ZONE,
    PRIMARY KEY (user_id, key)
);
CREATE INDEX idx_idempotency_created ON idempotency_keys(created_at);
ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY idempotency_owner ON idempotency_keys FOR ALL
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system() OR user_id = app_current_user_id());

-- The change log behind GET /communities/{id}/sync. Each row records the transaction that
-- made the change (`txid`); a sync token is the reader's snapshot, and the next sync
-- returns exactly the changes whose transactions that snapshot could not see. Timestamps
-- cannot do this: a transaction that commits after a reader's snapshot may carry an
-- earlier timestamp than rows the reader already saw.
CREATE TABLE change_log (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    community_id UUID NOT NULL,
    entity_kind VARCHAR(20) NOT NULL,
    entity_id UUID NOT NULL,
    operation VARCHAR(10) NOT NULL CHECK (operation IN ('insert', 'update', 'delete')),
    txid XID8 NOT NULL DEFAULT pg_current_xact_id(),
    changed_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW()
);
-- A sync reads one community's changes from its token's xmin on: cost follows the changes.
CREATE INDEX idx_change_log_community_txid ON change_log(community_id, txid);
CREATE INDEX idx_change_log_changed ON change_log(changed_at);

ALTER TABLE change_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY change_log_members ON change_log FOR SELECT
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()));
-- Only the trigger below writes it (as the owner); the retention job prunes it.
CREATE POLICY change_log_prune ON change_log FOR DELETE USING (app_is_system());
REVOKE INSERT, UPDATE ON change_log FROM orbitcove_app;

CREATE FUNCTION log_community_change() RETURNS TRIGGER
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    kind TEXT := TG_ARGV[0];
    changed JSONB := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END);
    row_community UUID;
    row_id UUID;
    operation TEXT := lower(TG_OP);
BEGIN
    -- The row as JSON, because the tables differ: a community is its own community, and a
    -- client knows a member by user id, so that is what the log names.
    IF kind = 'community' THEN
        row_community := (changed ->> 'id')::uuid;
    ELSE
        row_community := (changed ->> 'community_id')::uuid;
    END IF;
    IF kind = 'member' THEN
        row_id := (changed ->> 'user_id')::uuid;
    ELSE
        row_id := (changed ->> 'id')::uuid;
    END IF;
    -- Soft deletion (and leaving) is deletion to a client; coming back is a new row.
    IF TG_OP <> 'DELETE' THEN
        IF kind = 'member' THEN
            IF changed ->> 'left_at' IS NOT NULL THEN
                operation := 'delete';
            ELSIF TG_OP = 'UPDATE' AND OLD.left_at IS NOT NULL THEN
                operation := 'insert';
            END IF;
        ELSIF changed ->> 'deleted_at' IS NOT NULL THEN
            operation := 'delete';
        END IF;
    END IF;
    INSERT INTO change_log (community_id, entity_kind, entity_id, operation)
    VALUES (row_community, kind, row_id, operation);
    RETURN NULL;
END;
$$;

CREATE TRIGGER trigger_change_log AFTER INSERT OR UPDATE OR DELETE ON communities
FOR EACH ROW EXECUTE FUNCTION log_community_change('community');
CREATE TRIGGER trigger_change_log AFTER INSERT OR UPDATE OR DELETE ON members
FOR EACH ROW EXECUTE FUNCTION log_community_change('member');
CREATE TRIGGER trigger_change_log AFTER INSERT OR UPDATE OR DELETE ON events
FOR EACH ROW EXECUTE FUNCTION log_community_change('event');
CREATE TRIGGER trigger_change_log AFTER INSERT OR UPDATE OR DELETE ON posts
FOR EACH ROW EXECUTE FUNCTION log_community_change('post');
CREATE TRIGGER trigger_change_log AFTER INSERT OR UPDATE OR DELETE ON transactions
FOR EACH ROW EXECUTE FUNCTION log_community_change('transaction');
