-- An Idempotency-Key now knows whether its request's writes committed (found by a review: the
-- key was claimed, the writes committed and the response kept in three transactions, so a
-- response that could not be kept, or a server error after the commit, left a key that a
-- retry ran again, writing twice).
--
-- `claim` is the request that holds the key; a retry that takes over an abandoned key (its
-- holder never answered in two minutes) gives it a new claim. `applied_at` is set by
-- app_idempotency_applied in every transaction of the holder that wrote, just before its
-- commit, and only while the claim is still the holder's: a key whose writes committed is
-- never run again (a retry hears its kept response, or that the response was lost), and a
-- holder whose key was taken over cannot commit after all (its transaction fails instead).
ALTER TABLE idempotency_keys ADD COLUMN claim uuid, ADD COLUMN applied_at timestamptz;

-- Whether the calling transaction wrote anything (it has a transaction id), and if so marks
-- the key applied; fails with OCI01 if the key is no longer this claim's. SECURITY DEFINER:
-- it touches only the key it is given, whatever the transaction's scope (a request's writes
-- may run as the system, as redeeming an invite does).
CREATE FUNCTION app_idempotency_applied(owner uuid, idempotency_key text, claimed uuid) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF pg_current_xact_id_if_assigned() IS NULL THEN
        RETURN false;
    END IF;
    UPDATE idempotency_keys SET applied_at = NOW()
    WHERE user_id = owner AND key = idempotency_key AND claim = claimed;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the Idempotency-Key was taken over by a retry' USING ERRCODE = 'OCI01';
    END IF;
    RETURN true;
END $$;
REVOKE EXECUTE ON FUNCTION app_idempotency_applied(uuid, text, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_idempotency_applied(uuid, text, uuid) TO orbitcove_app;
