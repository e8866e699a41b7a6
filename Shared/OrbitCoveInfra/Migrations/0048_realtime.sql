-- The realtime stream (issue 26; docs/ARCHITECTURE.md, "Realtime").
--
-- One process at a time (the notifications instance holding an advisory lock) reads what the
-- change log gained since its last read, by snapshot as sync does, and fans it out through
-- Redis; every instance serves its own sockets from that, and reads the log itself whenever
-- it cannot prove from Redis that it saw everything (a missed publication, a client that
-- resumes from an older token).

-- The poll reads every community's changes from the previous snapshot's xmin on.
CREATE INDEX change_log_txid ON change_log(txid);

-- A user's own notifications are theirs alone, so they are not in the community change log
-- (every member of the community reads that). What the stream needs of them is the user's
-- unread count: each statement that writes a user's notifications logs the user here, and the
-- stream sends that user a fresh count. Rows are read once, by the next poll, and pruned
-- after ten minutes (realtime_prune).
CREATE TABLE stream_user_changes (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id UUID NOT NULL,
    txid XID8 NOT NULL DEFAULT pg_current_xact_id(),
    changed_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW()
);
CREATE INDEX stream_user_changes_txid ON stream_user_changes(txid);
CREATE INDEX stream_user_changes_changed ON stream_user_changes(changed_at);
-- Written by the trigger below and read by the functions below (as the owner), nobody else.
ALTER TABLE stream_user_changes ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON stream_user_changes FROM orbitcove_app;

CREATE FUNCTION log_unread_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    INSERT INTO stream_user_changes (user_id) SELECT DISTINCT user_id FROM changed_rows;
    RETURN NULL;
END $$;
CREATE TRIGGER notifications_stream_inserted AFTER INSERT ON notifications
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION log_unread_change();
CREATE TRIGGER notifications_stream_updated AFTER UPDATE ON notifications
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION log_unread_change();

-- What the change log gained between the snapshot `since` and the caller's own: the rows
-- committed by transactions `since` could not see. With `since` NULL, only the snapshot (the
-- first poll of a new leader). The statement's snapshot is the one returned, so the rows are
-- exactly those it makes visible; STABLE keeps the caller's snapshot inside the function.
-- Every community's changes, so only the services' role may call it, and only the stream's
-- leader does (it forwards each change to the members of its community alone). A user whose
-- notifications changed comes as entity_kind `unread` with the user's id and no community.
CREATE FUNCTION realtime_changes(since text)
RETURNS TABLE (
    snapshot text, read_at timestamptz, change_id bigint, community_id uuid, entity_kind text,
    entity_id uuid, operation text, txid text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    WITH now_ AS (SELECT pg_current_snapshot()::text AS snapshot, clock_timestamp() AS read_at),
    changed AS (
        SELECT c.id, c.community_id, c.entity_kind::text AS entity_kind, c.entity_id, c.operation::text AS operation,
               c.txid
        FROM change_log c
        WHERE since IS NOT NULL
          AND c.txid >= pg_snapshot_xmin(since::pg_snapshot)
          AND NOT pg_visible_in_snapshot(c.txid, since::pg_snapshot)
        UNION ALL
        SELECT NULL, NULL, 'unread', u.user_id, 'update', u.txid
        FROM stream_user_changes u
        WHERE since IS NOT NULL
          AND u.txid >= pg_snapshot_xmin(since::pg_snapshot)
          AND NOT pg_visible_in_snapshot(u.txid, since::pg_snapshot)
    )
    SELECT n.snapshot, n.read_at, c.id, c.community_id, c.entity_kind, c.entity_id, c.operation, c.txid::text
    FROM now_ n LEFT JOIN changed c ON true
    ORDER BY c.id NULLS LAST
$$;
REVOKE EXECUTE ON FUNCTION realtime_changes(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION realtime_changes(text) TO orbitcove_app;

CREATE FUNCTION realtime_prune() RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
    DELETE FROM stream_user_changes WHERE changed_at < NOW() - INTERVAL '10 minutes'
$$;
REVOKE EXECUTE ON FUNCTION realtime_prune() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION realtime_prune() TO orbitcove_app;

-- What a member's screen shows that was not in the change log: answers (and with them an
-- event's counts and line), reactions and poll votes. Each logs its event or post under a kind
-- of its own (`answers`, `reactions`, `votes`): the stream tells clients to read that event's
-- answers or that post's counts again; sync registers no such kind, so it skips them (a sync
-- reads the event or post whole). A comment already logs its post (its count moves).
CREATE FUNCTION log_activity_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    kind text := TG_ARGV[0];
    changed jsonb := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END);
    subject uuid;
BEGIN
    IF kind = 'answers' THEN
        subject := (changed ->> 'event_id')::uuid;
        INSERT INTO change_log (community_id, entity_kind, entity_id, operation)
        SELECT e.community_id, kind, e.id, 'update' FROM events e WHERE e.id = subject;
    ELSE
        subject := (changed ->> 'post_id')::uuid;
        INSERT INTO change_log (community_id, entity_kind, entity_id, operation)
        SELECT p.community_id, kind, p.id, 'update' FROM posts p WHERE p.id = subject;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER trigger_activity_log AFTER INSERT OR UPDATE OR DELETE ON rsvps
    FOR EACH ROW EXECUTE FUNCTION log_activity_change('answers');
CREATE TRIGGER trigger_activity_log AFTER INSERT OR UPDATE OR DELETE ON reactions
    FOR EACH ROW EXECUTE FUNCTION log_activity_change('reactions');
CREATE TRIGGER trigger_activity_log AFTER INSERT OR UPDATE OR DELETE ON poll_votes
    FOR EACH ROW EXECUTE FUNCTION log_activity_change('votes');
