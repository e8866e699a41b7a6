-- A deleted account's access token acts for nobody. Tokens are checked by signature and expiry
-- alone, so one issued before the account was deleted (refresh tokens are revoked then) kept
-- working until it expired: it could join a community again, make one, a calendar feed that
-- read the calendar for good, family members, devices and uploads. Every user's transaction
-- enters through app_enter_as_user, which now refuses a deleted account with SQLSTATE OCA01
-- (answered 401 ACCOUNT_DELETED by the services). One look-up by primary key per transaction.
CREATE OR REPLACE FUNCTION app_enter_as_user(caller uuid) RETURNS void
LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM users u WHERE u.id = caller AND u.deleted_at IS NOT NULL) THEN
        RAISE EXCEPTION 'this account has been deleted' USING ERRCODE = 'OCA01';
    END IF;
    PERFORM set_config('app.current_user_id', caller::text, true);
    PERFORM app_cache_communities();
END $$;
