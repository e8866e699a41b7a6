-- An Idempotency-Key's claim, its kept response and its release each took a transaction of
-- their own entered as the user (BEGIN, the entry, the statement, COMMIT): eight round trips
-- around a keyed request's own, which an offline client's queued writes all pay. Each is now
-- one statement outside a transaction, a function that enters as the key's owner and then does
-- what the transaction did, under the same row-level security (SECURITY INVOKER: the key's
-- owner is whoever the services' role enters as, as it may anyway).

-- Claims `idempotency_key` for `claimed`: 'owned' when the request now holds it (a new key,
-- or one taken over from a holder that wrote nothing and never answered in two minutes);
-- 'held' with the kept response; 'reused' for another request's key; 'lost' when the key's
-- request wrote and its response is gone; 'in_progress' while its holder runs. A key released
-- between the insert and the read is claimed again (three tries). Its waits are bounded as a
-- transaction's statements are (Database.statementTimeout): outside a transaction nothing else
-- bounds them.
CREATE FUNCTION app_idempotency_claim(owner uuid, idempotency_key text, hash text, claimed uuid)
RETURNS TABLE (outcome text, status_code integer, content_type text, location text, body bytea)
LANGUAGE plpgsql SET search_path = public AS $$
DECLARE
    stored record;
BEGIN
    PERFORM app_enter_as_user(owner), set_config('lock_timeout', '30s', true);
    FOR attempt IN 1..3 LOOP
        INSERT INTO idempotency_keys (user_id, key, request_hash, claim)
        VALUES (owner, idempotency_key, hash, claimed)
        ON CONFLICT DO NOTHING;
        IF FOUND THEN
            RETURN QUERY SELECT 'owned', NULL::integer, NULL::text, NULL::text, NULL::bytea;
            RETURN;
        END IF;
        -- Waits for a holder committing its writes right now, and then sees them applied.
        SELECT k.request_hash, k.status_code, k.content_type, k.location, k.body,
               k.created_at < NOW() - INTERVAL '2 minutes' AS abandoned,
               k.applied_at IS NOT NULL AS applied, k.completed_at IS NOT NULL AS completed
        INTO stored
        FROM idempotency_keys k
        WHERE k.user_id = owner AND k.key = idempotency_key
        FOR UPDATE;
        CONTINUE WHEN NOT FOUND;
        IF stored.request_hash <> hash THEN
            RETURN QUERY SELECT 'reused', NULL::integer, NULL::text, NULL::text, NULL::bytea;
        ELSIF stored.status_code IS NULL AND stored.applied AND (stored.completed OR stored.abandoned) THEN
            RETURN QUERY SELECT 'lost', NULL::integer, NULL::text, NULL::text, NULL::bytea;
        ELSIF stored.status_code IS NULL AND stored.abandoned THEN
            -- The request that took the key never finished (its process died, say) and wrote
            -- nothing: this one takes over rather than the client being refused for a day. If
            -- the first commits after all, its transaction fails (app_idempotency_applied).
            UPDATE idempotency_keys k SET request_hash = hash, created_at = NOW(), claim = claimed
            WHERE k.user_id = owner AND k.key = idempotency_key;
            RETURN QUERY SELECT 'owned', NULL::integer, NULL::text, NULL::text, NULL::bytea;
        ELSIF stored.status_code IS NULL THEN
            RETURN QUERY SELECT 'in_progress', NULL::integer, NULL::text, NULL::text, NULL::bytea;
        ELSE
            RETURN QUERY SELECT 'held', stored.status_code, stored.content_type::text, stored.location::text, stored.body;
        END IF;
        RETURN;
    END LOOP;
    RETURN QUERY SELECT 'in_progress', NULL::integer, NULL::text, NULL::text, NULL::bytea;
END $$;

-- Keeps the final response of the request that holds the key (nothing if it no longer does).
CREATE FUNCTION app_idempotency_keep(
    owner uuid, idempotency_key text, claimed uuid, status integer, type text, place text, kept bytea
) RETURNS void
LANGUAGE plpgsql SET search_path = public AS $$
BEGIN
    PERFORM app_enter_as_user(owner);
    UPDATE idempotency_keys k
    SET status_code = status, content_type = type, location = place, body = kept, completed_at = NOW()
    WHERE k.user_id = owner AND k.key = idempotency_key AND k.claim = claimed;
END $$;

-- Gives the key up after a response that is not kept: deleted, so that a retry runs, unless
-- `keep_if_applied` and the request's writes committed; then kept as applied with no response,
-- so that a retry hears so.
CREATE FUNCTION app_idempotency_release(owner uuid, idempotency_key text, claimed uuid, keep_if_applied boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = public AS $$
BEGIN
    PERFORM app_enter_as_user(owner);
    DELETE FROM idempotency_keys k
    WHERE k.user_id = owner AND k.key = idempotency_key AND k.claim = claimed
      AND (k.applied_at IS NULL OR NOT keep_if_applied);
    IF NOT FOUND THEN
        UPDATE idempotency_keys k SET completed_at = NOW()
        WHERE k.user_id = owner AND k.key = idempotency_key AND k.claim = claimed;
    END IF;
END $$;

REVOKE EXECUTE ON FUNCTION app_idempotency_claim(uuid, text, text, uuid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION app_idempotency_keep(uuid, text, uuid, integer, text, text, bytea) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION app_idempotency_release(uuid, text, uuid, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_idempotency_claim(uuid, text, text, uuid) TO orbitcove_app;
GRANT EXECUTE ON FUNCTION app_idempotency_keep(uuid, text, uuid, integer, text, text, bytea) TO orbitcove_app;
GRANT EXECUTE ON FUNCTION app_idempotency_release(uuid, text, uuid, boolean) TO orbitcove_app;
