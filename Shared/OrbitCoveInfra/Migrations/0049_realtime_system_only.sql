-- The realtime feed's functions read and prune every community's changes: like every other
-- cross-community read they are system work (`app.system`, set by a `.system` transaction),
-- not merely something the services' role may call. A user's transaction, or a statement
-- outside any scope, is refused, so a service that runs the wrong statement in a user's
-- context learns nothing of other communities (the second wall, as for the tables).

CREATE FUNCTION app_require_system(what text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF NOT app_is_system() THEN
        RAISE EXCEPTION 'only system work may %', what USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN true;
END
$$;

CREATE OR REPLACE FUNCTION realtime_changes(since text)
RETURNS TABLE (
    snapshot text, read_at timestamptz, change_id bigint, community_id uuid, entity_kind text,
    entity_id uuid, operation text, txid text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    WITH now_ AS (
        SELECT pg_current_snapshot()::text AS snapshot, clock_timestamp() AS read_at
        WHERE app_require_system('read the realtime feed')
    ),
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

CREATE OR REPLACE FUNCTION realtime_prune() RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
    DELETE FROM stream_user_changes
    WHERE app_require_system('prune the realtime feed') AND changed_at < NOW() - INTERVAL '10 minutes'
$$;
