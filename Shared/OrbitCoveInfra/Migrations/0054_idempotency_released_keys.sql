-- app_idempotency_applied (0052) refused a transaction whose key no longer exists, as it does
-- one whose key a retry took over. A key that is gone was released by its own request (a
-- response that is not kept) or expired: nothing can run beside it, so there is nothing to
-- refuse, and work that outlives its request (a task that inherited the request's claim) must
-- not fail for it. Only a key held by another claim refuses.
CREATE OR REPLACE FUNCTION app_idempotency_applied(owner uuid, idempotency_key text, claimed uuid) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    holder uuid;
BEGIN
    IF pg_current_xact_id_if_assigned() IS NULL THEN
        RETURN false;
    END IF;
    SELECT claim INTO holder FROM idempotency_keys WHERE user_id = owner AND key = idempotency_key FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF holder IS DISTINCT FROM claimed THEN
        RAISE EXCEPTION 'the Idempotency-Key was taken over by a retry' USING ERRCODE = 'OCI01';
    END IF;
    UPDATE idempotency_keys SET applied_at = NOW() WHERE user_id = owner AND key = idempotency_key;
    RETURN true;
END $$;
